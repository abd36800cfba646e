import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf, requireAuth, sendJsonText, type TokenVerifier } from '../../core/http/index.ts';
import type { CatalogBindingService } from './catalog-binding-service.ts';
import * as S from './catalog-binding-schemas.ts';
import { CATALOG_KINDS_CACHE_CONTROL, CATALOG_KINDS_DOCUMENT, CATALOG_KINDS_ETAG, matchesEtag } from './catalog-kinds.ts';
import { WorkspaceNameParams } from './workspace-schemas.ts';

export interface CatalogBindingRouteDeps {
  bindings: CatalogBindingService;
  verifier: TokenVerifier;
}

/** Catalog kinds, bindings, tests and sync (/control only; docs/catalog-bindings.md). */
export const catalogBindingRoutes =
  (deps: CatalogBindingRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { bindings } = deps;
    app.addHook('onRequest', requireAuth(deps.verifier, 'accounts'));

    app.get(
      '/v1/catalog-kinds',
      { schema: { summary: 'The catalog kinds a workspace may be bound to, with their config and auth fields (any signed-in caller; cached privately 5 minutes, ETag)', response: { 200: S.CatalogKindsResponse, 304: z.null().describe('Not modified: the If-None-Match ETag is current') } } },
      async (request, reply) => {
        reply.header('cache-control', CATALOG_KINDS_CACHE_CONTROL).header('etag', CATALOG_KINDS_ETAG);
        if (matchesEtag(request.headers['if-none-match'], CATALOG_KINDS_ETAG)) return reply.status(304).send(null);
        // As text: the bytes the ETag was computed over.
        return sendJsonText(reply, S.CatalogKindsResponse, CATALOG_KINDS_DOCUMENT);
      },
    );

    app.post(
      '/v1/catalog-connections/test',
      { schema: { summary: "Test a draft catalog connection: 200 with ok false when the catalog fails (the caller's own errors stay 4xx)", body: S.CatalogTestRequest, response: { 200: S.CatalogTestResult } } },
      async (request) => bindings.testDraft(principalOf(request), request.body),
    );

    app.get(
      '/v1/workspaces/:name/catalog',
      { schema: { summary: "The workspace's catalog binding, its credential redacted; kind native when unbound (any role on the workspace)", params: WorkspaceNameParams, response: { 200: S.CatalogBindingView } } },
      async (request) => bindings.read(principalOf(request), request.params.name),
    );

    app.put(
      '/v1/workspaces/:name/catalog',
      { schema: { summary: 'Bind the workspace to a catalog, replacing any binding (owner or admin)', params: WorkspaceNameParams, body: S.CatalogBindingRequest, response: { 200: S.CatalogBindingView } } },
      async (request) => bindings.put(principalOf(request), request.params.name, request.body),
    );

    app.delete(
      '/v1/workspaces/:name/catalog',
      { schema: { summary: 'Revert the workspace to the native catalog; the stubs the binding listed go (owner or admin)', params: WorkspaceNameParams, response: { 200: S.CatalogBindingView } } },
      async (request) => bindings.remove(principalOf(request), request.params.name),
    );

    app.post(
      '/v1/workspaces/:name/catalog/sync',
      { schema: { summary: "List the external catalog into stub datasets; 502/504 when it fails, the stored listing unchanged (owner or admin)", params: WorkspaceNameParams, response: { 200: S.CatalogSyncResult } } },
      async (request) => bindings.sync(principalOf(request), request.params.name),
    );

    app.post(
      '/v1/workspaces/:name/catalog/test',
      { schema: { summary: 'Test the saved catalog binding (body ignored): 200 with ok false when the catalog fails (owner or admin)', params: WorkspaceNameParams, response: { 200: S.CatalogTestResult } } },
      async (request) => bindings.testSaved(principalOf(request), request.params.name),
    );
  };
