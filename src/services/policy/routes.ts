import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireManage } from '../../core/authz/index.ts';
import { authenticateScoped, principalOf, requireAuth, type AdminToken, type TokenVerifier } from '../../core/http/index.ts';
import * as S from './schemas.ts';
import type { PolicyService } from './service.ts';

export interface PolicyRouteDeps {
  policies: PolicyService;
  verifier: TokenVerifier;
  adminToken: AdminToken;
}

/** The genesis endpoint; served by the policy service and, with the same rules, by /control. */
export const genesisRoute =
  (deps: PolicyRouteDeps, scope: string): FastifyPluginAsyncZod =>
  async (app) => {
    app.post(
      '/v1/access/workspace/:workspace/genesis',
      {
        schema: {
          summary: "Bootstrap a workspace's first policies (admin token, or the billing_admin creating it)",
          params: S.WorkspaceParams,
          body: S.GenesisGrantRequest,
          response: { 201: S.GenesisGrantResponse },
        },
      },
      async (request, reply) => {
        let caller: Parameters<PolicyService['genesis']>[0];
        if (deps.adminToken.presentIn(request)) caller = { kind: 'admin' };
        else {
          const principal = await authenticateScoped(deps.verifier, request, scope);
          // Bootstrapping a workspace is part of creating one: not for a narrowed credential.
          requireManage(principal, 'workspace.create');
          caller = { kind: 'identity', identity: principal.identity };
        }
        const result = await deps.policies.genesis(caller, request.params.workspace, request.body.grants);
        return reply.status(201).send(result);
      },
    );
  };

export const policyRoutes =
  (deps: PolicyRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { policies } = deps;
    await app.register(genesisRoute(deps, 'policy'));

    await app.register(async (context) => {
      const authed = context.withTypeProvider<ZodTypeProvider>();
      authed.addHook('onRequest', requireAuth(deps.verifier, 'policy'));

      authed.get(
        '/v1/access/workspace/:workspace',
        { schema: { summary: "List a workspace's policies (owner or admin)", params: S.WorkspaceParams, response: { 200: S.WorkspacePoliciesResponse } } },
        async (request) => policies.list(principalOf(request), request.params.workspace),
      );

      authed.get(
        '/v1/access/workspace/:workspace/effective-permissions.csv',
        { schema: { summary: 'Effective permissions per dataset as CSV (owner)', params: S.WorkspaceParams, response: { 200: S.EffectivePermissionsCsv } } },
        async (request, reply) => {
          const csv = await policies.effectivePermissionsCsv(principalOf(request), request.params.workspace);
          return reply
            .type('text/csv; charset=utf-8')
            .header('content-disposition', `attachment; filename="${request.params.workspace}-effective-permissions.csv"`)
            .send(csv);
        },
      );

      authed.post(
        '/v1/access/workspace/:workspace/policies',
        {
          schema: {
            summary: 'Grant a role on a pattern (admin there; never above your own role)',
            params: S.WorkspaceParams,
            querystring: S.DryRunQuery,
            body: S.CreatePolicyRequest,
            response: { 201: S.PolicyDetail, 200: S.PolicyPlanResponse },
          },
        },
        async (request, reply) => {
          const dryRun = request.query.dry_run;
          const result = await policies.create(principalOf(request), request.params.workspace, request.body, { dryRun });
          return reply.status(dryRun ? 200 : 201).send(result);
        },
      );

      authed.get(
        '/v1/access/workspace/:workspace/policies/:policy_id',
        { schema: { summary: 'Read a policy', params: S.PolicyParams, response: { 200: S.PolicyDetail } } },
        async (request) => policies.get(principalOf(request), request.params.workspace, request.params.policy_id),
      );

      authed.put(
        '/v1/access/workspace/:workspace/policies/:policy_id',
        {
          schema: {
            summary: "Change a policy's role and pattern",
            params: S.PolicyParams,
            querystring: S.DryRunQuery,
            body: S.UpdatePolicyRequest,
            response: { 200: z.union([S.PolicyDetail, S.PolicyPlanResponse]) },
          },
        },
        async (request) => policies.update(principalOf(request), request.params.workspace, request.params.policy_id, request.body, { dryRun: request.query.dry_run }),
      );

      authed.delete(
        '/v1/access/workspace/:workspace/policies/:policy_id',
        {
          schema: {
            summary: 'Delete a policy',
            params: S.PolicyParams,
            querystring: S.DryRunQuery,
            response: { 200: z.union([S.DeletePolicyResponse, S.PolicyPlanResponse]) },
          },
        },
        async (request) => policies.remove(principalOf(request), request.params.workspace, request.params.policy_id, { dryRun: request.query.dry_run }),
      );
    });
  };
