import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf, requireAuth, type TokenVerifier } from '../../core/http/index.ts';
import type { WorkspaceService } from './workspace-service.ts';
import * as S from './workspace-schemas.ts';

export interface WorkspaceRouteDeps {
  workspaces: WorkspaceService;
  verifier: TokenVerifier;
}

/** Workspace routes; `flavor` selects the /billing or the /control subset of the spec. */
export const workspaceRoutes =
  (deps: WorkspaceRouteDeps, flavor: 'billing' | 'control'): FastifyPluginAsyncZod =>
  async (app) => {
    const { workspaces } = deps;
    app.addHook('onRequest', requireAuth(deps.verifier, 'accounts'));

    app.put(
      '/v1/workspaces/:name',
      {
        schema: {
          summary: 'Create a workspace (idempotent; 200 whether created or found)',
          params: S.WorkspaceNameParams,
          body: flavor === 'control' ? S.ControlWorkspaceCreateRequest : S.BillingWorkspaceCreateRequest,
          response: { 200: S.WorkspaceView },
        },
      },
      async (request) => workspaces.create(principalOf(request), request.params.name, request.body),
    );

    app.get(
      '/v1/accounts/:account_id/workspaces',
      { schema: { summary: "The account's workspaces (active members)", params: S.AccountParams, response: { 200: z.array(S.WorkspaceView) } } },
      async (request) => workspaces.listForAccount(principalOf(request), request.params.account_id, { requireNamespace: flavor === 'control' }),
    );

    if (flavor === 'billing') {
      app.delete(
        '/v1/workspaces/:name',
        { schema: { summary: 'Soft-delete a workspace (24-hour grace; 423 while locked)', params: S.WorkspaceNameParams, response: { 200: S.WorkspaceView } } },
        async (request) => workspaces.delete(principalOf(request), request.params.name),
      );
      app.post(
        '/v1/workspaces/:name/restore',
        { schema: { summary: 'Restore a soft-deleted workspace within its grace window (owner)', params: S.WorkspaceNameParams, response: { 200: S.WorkspaceView } } },
        async (request) => workspaces.restore(principalOf(request), request.params.name),
      );
    } else {
      app.get(
        '/v1/workspaces/:name/properties',
        { schema: { summary: 'The lock and protection guards as resolved booleans (owner or admin)', params: S.WorkspaceNameParams, response: { 200: S.GuardProperties } } },
        async (request) => workspaces.guardProperties(principalOf(request), request.params.name),
      );
    }
  };
