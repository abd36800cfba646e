import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { principalOf, requireAuth, type TokenVerifier } from '../../core/http/index.ts';
import { AccountParams } from './account-schemas.ts';
import { managerOf } from './manager.ts';
import * as S from './domain-schemas.ts';
import type { DomainService } from './domain-service.ts';

export interface DomainRouteDeps {
  domains: DomainService;
  verifier: TokenVerifier;
}

/** Claimed and verified domains of an account (docs/domains.md); /control only. */
export const domainRoutes =
  (deps: DomainRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { domains } = deps;
    const onRequest = requireAuth(deps.verifier, 'accounts');
    const security = [{ bearer: [] }];

    app.get(
      '/v1/accounts/:account_id/domains',
      {
        onRequest,
        schema: { summary: "The account's claimed domains and their verification state (active member)", security, params: AccountParams, response: { 200: S.DomainList } },
      },
      async (request) => ({ account_id: request.params.account_id, domains: await domains.list(principalOf(request).identity, request.params.account_id) }),
    );

    app.post(
      '/v1/accounts/:account_id/domains',
      {
        onRequest,
        schema: {
          summary: 'Claim a domain (billing_admin); returns the TXT record to publish. Re-claiming returns the same token and keeps verification',
          security,
          params: AccountParams,
          body: S.DomainClaimRequest,
          response: { 201: S.Domain },
        },
      },
      async (request, reply) =>
        reply.status(201).send(await domains.claim(managerOf(request, 'domain.claim'), request.params.account_id, request.body.domain)),
    );

    app.delete(
      '/v1/accounts/:account_id/domains/:domain',
      {
        onRequest,
        schema: { summary: 'Release a claimed domain, verified or not (billing_admin)', security, params: S.DomainParams, response: { 200: S.ReleaseDomainResponse } },
      },
      async (request) => domains.release(managerOf(request, 'domain.release'), request.params.account_id, request.params.domain),
    );

    app.post(
      '/v1/accounts/:account_id/domains/:domain/verify',
      {
        onRequest,
        schema: {
          summary: 'Look the TXT record up in DNS and record the outcome (active member); 200 with check.outcome verified, record_missing or dns_unavailable',
          security,
          params: S.DomainParams,
          response: { 200: S.VerifyDomainResponse },
        },
      },
      async (request) => domains.verify(managerOf(request, 'domain.verify'), request.params.account_id, request.params.domain),
    );
  };
