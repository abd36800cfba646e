import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf, requireAuth, type TokenVerifier } from '../../core/http/index.ts';
import type { ServiceAccountService } from './service-account-service.ts';
import * as S from './service-account-schemas.ts';

export interface ServiceAccountRouteDeps {
  serviceAccounts: ServiceAccountService;
  verifier: TokenVerifier;
}

/** Service accounts and their credentials; /control only (docs/accounts.md "Service accounts"). */
export const serviceAccountRoutes =
  (deps: ServiceAccountRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { serviceAccounts } = deps;
    app.addHook('onRequest', requireAuth(deps.verifier, 'accounts'));
    const base = '/v1/accounts/:account_id/service-accounts';

    app.get(
      base,
      { schema: { summary: "The account's service accounts and its quota (active member)", params: S.AccountParams, response: { 200: S.ServiceAccountList } } },
      async (request) => serviceAccounts.list(principalOf(request), request.params.account_id),
    );

    app.post(
      base,
      {
        schema: {
          summary: 'Add a service account (active member); 402 when the plan has no room',
          params: S.AccountParams,
          body: S.AddServiceAccountRequest,
          response: { 201: S.ServiceAccount },
        },
      },
      async (request, reply) => reply.status(201).send(await serviceAccounts.add(principalOf(request), request.params.account_id, request.body.identity)),
    );

    app.delete(
      `${base}/:identity`,
      {
        schema: {
          summary: 'Remove a service account and revoke its credentials (active member; never the service account itself)',
          params: S.ServiceAccountParams,
          response: { 200: S.RemoveServiceAccountResponse },
        },
      },
      async (request) => serviceAccounts.remove(principalOf(request), request.params.account_id, request.params.identity),
    );

    app.get(
      `${base}/:identity/credentials`,
      {
        schema: {
          summary: "List a service account's credentials, never their secrets (billing_admin)",
          params: S.ServiceAccountParams,
          response: { 200: z.array(S.CredentialMetadata) },
        },
      },
      async (request) => serviceAccounts.listCredentials(principalOf(request), request.params.account_id, request.params.identity),
    );

    app.post(
      `${base}/:identity/credentials`,
      {
        schema: {
          summary: 'Create a credential for a service account (billing_admin); the secret is shown only in this response',
          params: S.ServiceAccountParams,
          body: S.CreateCredentialRequest,
          response: { 201: S.CreateCredentialResponse },
        },
      },
      async (request, reply) => {
        reply.headers({ 'cache-control': 'no-store', pragma: 'no-cache' });
        return reply
          .status(201)
          .send(await serviceAccounts.createCredential(principalOf(request), request.params.account_id, request.params.identity, request.body));
      },
    );

    app.delete(
      `${base}/:identity/credentials/:credential_id`,
      {
        schema: {
          summary: "Revoke a service account's credential and its refresh tokens (billing_admin)",
          params: S.ServiceAccountCredentialParams,
          response: { 200: S.RevokeCredentialResponse },
        },
      },
      async (request) =>
        serviceAccounts.revokeCredential(principalOf(request), request.params.account_id, request.params.identity, request.params.credential_id),
    );
  };
