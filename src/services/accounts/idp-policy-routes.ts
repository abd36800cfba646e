import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { requireManage } from '../../core/authz/index.ts';
import { principalOf, requireAuth, type TokenVerifier } from '../../core/http/index.ts';
import { AccountParams } from './account-schemas.ts';
import * as S from './idp-policy-schemas.ts';
import type { IdpPolicyService } from './idp-policy-service.ts';

export interface IdpPolicyRouteDeps {
  idpPolicies: IdpPolicyService;
  verifier: TokenVerifier;
}

/** The account sign-in (IdP) policy (docs/idp-policy.md); /control only. */
export const idpPolicyRoutes =
  (deps: IdpPolicyRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { idpPolicies } = deps;
    const onRequest = requireAuth(deps.verifier, 'accounts');
    const security = [{ bearer: [] }];
    const url = '/v1/accounts/:account_id/idp-policy';
    /** The caller, once its credential may write account settings (a narrowed one may not). */
    const writer = (request: Parameters<typeof principalOf>[0]) => {
      const principal = principalOf(request);
      requireManage(principal, 'idp_policy.write');
      return principal;
    };

    app.get(
      url,
      { onRequest, schema: { summary: 'The sign-in (IdP) policy; the defaults with version 0 when none was written (active member)', security, params: AccountParams, response: { 200: S.IdpPolicy } } },
      async (request) => idpPolicies.get(principalOf(request).identity, request.params.account_id),
    );

    app.put(
      url,
      {
        onRequest,
        schema: {
          summary: 'Replace the whole policy (billing_admin); 409 when it would deny your own sign-in, unless force=true',
          security,
          params: AccountParams,
          querystring: S.PutQuery,
          body: S.IdpPolicyRequest,
          response: { 200: S.IdpPolicy },
        },
      },
      async (request) => idpPolicies.put(writer(request), request.params.account_id, request.body, request.query.force),
    );

    app.delete(
      url,
      {
        onRequest,
        schema: {
          summary: 'Remove the policy (billing_admin with an interactive sign-in from the last 10 minutes); the version still increments',
          security,
          params: AccountParams,
          response: { 200: S.IdpPolicy },
        },
      },
      async (request) => idpPolicies.remove(writer(request), request.params.account_id),
    );

    app.get(
      `${url}/denials`,
      {
        onRequest,
        schema: { summary: 'Recent refused sign-ins, newest first; an empty list when none (active member)', security, params: AccountParams, querystring: S.DenialsQuery, response: { 200: S.DenialList } },
      },
      async (request) => idpPolicies.denials(principalOf(request).identity, request.params.account_id, request.query.limit),
    );

    app.post(
      `${url}/preview`,
      {
        onRequest,
        schema: {
          summary: "Judge a candidate policy against the members' last sign-ins; writes nothing (billing_admin)",
          security,
          params: AccountParams,
          body: S.IdpPolicyRequest,
          response: { 200: S.PreviewResponse },
        },
      },
      async (request) => idpPolicies.preview(principalOf(request).identity, request.params.account_id, request.body),
    );
  };
