import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { parseByteRange } from '../../core/http/byte-range.ts';
import { principalOf, requireAuth, type TokenVerifier } from '../../core/http/index.ts';
import { BlobNotFoundError, type BlobStore } from '../../core/storage/index.ts';
import { ERROR_CODE_HEADER, icebergError, icebergErrorBody } from './errors.ts';
import * as S from './schemas.ts';
import type { IcebergCatalog, ServedFile } from './service.ts';

/** A token request's form and the token answer, as the auth service's token endpoint takes and gives them. */
export interface TokenGrant {
  grantToken(request: FastifyRequest, form: { grant_type: string; client_id?: string; client_secret?: string; scope?: string }): Promise<{
    access_token: string;
    expires_in: number;
    scope: string;
    refresh_token?: string;
  }>;
}

export interface IcebergRouteDeps {
  iceberg: IcebergCatalog;
  verifier: TokenVerifier;
  tokens: TokenGrant;
  blobs: BlobStore;
}

/** The one warehouse: `GET /v1/config?warehouse=lakeport` answers prefix `lakeport`; no warehouse, no prefix. */
export const WAREHOUSE = 'lakeport';
/** Lakeport's read scope, which the Iceberg catalog needs as OData does (docs/auth.md, "Scopes"). */
const SCOPE = 'odata';

/** The read side, as `CatalogConfig.endpoints` names it: clients call nothing else. */
const ENDPOINTS = [
  'GET /v1/{prefix}/namespaces',
  'GET /v1/{prefix}/namespaces/{namespace}',
  'HEAD /v1/{prefix}/namespaces/{namespace}',
  'GET /v1/{prefix}/namespaces/{namespace}/tables',
  'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}',
];

/** A namespace as the spec encodes it in a path or `parent`: its parts joined by the unit separator (0x1F). */
const namespaceParts = (text: string) => text.split('\u001f');

/** Whether an If-None-Match header names `etag`. */
function matches(header: string | undefined, etag: string): boolean {
  return header !== undefined && header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*');
}

/** Streams a file, or the byte range the request asks for (206), with its length; HEAD gets the headers only. */
async function sendFile(request: FastifyRequest, reply: FastifyReply, blobs: BlobStore, file: ServedFile) {
  const range = parseByteRange(request.headers.range, file.size);
  if (range === 'unsatisfiable') {
    throw icebergError('RANGE_NOT_SATISFIABLE', `The range ${request.headers.range} is outside the file's ${file.size} bytes`, { headers: { 'content-range': `bytes */${file.size}` } });
  }
  reply.headers({ 'accept-ranges': 'bytes', 'content-type': file.contentType });
  if (range) reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${file.size}`);
  reply.header('content-length', String(range ? range.end - range.start + 1 : file.size));
  if (request.method === 'HEAD') return reply.send();
  try {
    return reply.send(await blobs.get(file.key, range));
  } catch (error) {
    if (error instanceof BlobNotFoundError) throw icebergError('FILE_NOT_FOUND', 'The file is no longer stored');
    throw error;
  }
}

/** The catalog routes, under `/v1` and under `/v1/{prefix}` (the prefix must be the warehouse). */
function catalogRoutes(api: FastifyInstance, base: '' | '/:prefix', iceberg: IcebergCatalog) {
  const z = api.withTypeProvider<ZodTypeProvider>();
  const prefixed = base !== '';
  const params = <T extends typeof S.NamespaceParams | typeof S.TableParams>(schema: T) => (prefixed ? schema.extend(S.PrefixParams.shape) : schema);
  const checkPrefix = async (request: FastifyRequest) => {
    const { prefix } = request.params as { prefix?: string };
    if (prefix !== undefined && prefix !== WAREHOUSE) throw icebergError('WAREHOUSE_NOT_FOUND', `No warehouse '${prefix}': Lakeport has one, '${WAREHOUSE}'`);
  };
  const tags = ['Catalog API'];

  z.get(
    `/v1${base}/namespaces`,
    {
      preHandler: checkPrefix,
      schema: { tags, summary: 'List namespaces: the workspaces the caller may read in, or the collections of `parent`', ...(prefixed ? { params: S.PrefixParams } : {}), querystring: S.ListNamespacesQuery, response: { 200: S.ListNamespacesResponse } },
    },
    async (request) => {
      const { parent } = request.query as { parent?: string };
      return { namespaces: await iceberg.listNamespaces(principalOf(request), parent ? namespaceParts(parent) : undefined) };
    },
  );
  // HEAD before GET, so Fastify does not make one from the GET.
  z.head(`/v1${base}/namespaces/:namespace`, { preHandler: checkPrefix, schema: { tags, summary: 'Whether a namespace exists (and the caller may read in it)', params: params(S.NamespaceParams), response: { 204: S.NoContent } } }, async (request, reply) => {
    await iceberg.loadNamespace(principalOf(request), namespaceParts((request.params as { namespace: string }).namespace));
    return reply.code(204).send(null);
  });
  z.get(`/v1${base}/namespaces/:namespace`, { preHandler: checkPrefix, schema: { tags, summary: 'Load a namespace', params: params(S.NamespaceParams), response: { 200: S.GetNamespaceResponse } } }, async (request) =>
    iceberg.loadNamespace(principalOf(request), namespaceParts((request.params as { namespace: string }).namespace)),
  );
  z.get(
    `/v1${base}/namespaces/:namespace/tables`,
    { preHandler: checkPrefix, schema: { tags, summary: 'List the tables of a workspace.collection namespace the caller may read', params: params(S.NamespaceParams), querystring: S.ListNamespacesQuery.omit({ parent: true }), response: { 200: S.ListTablesResponse } } },
    async (request) => ({ identifiers: await iceberg.listTables(principalOf(request), namespaceParts((request.params as { namespace: string }).namespace)) }),
  );
  z.head(`/v1${base}/namespaces/:namespace/tables/:table`, { preHandler: checkPrefix, schema: { tags, summary: 'Whether a table exists (and the caller may read it)', params: params(S.TableParams), response: { 204: S.NoContent } } }, async (request, reply) => {
    const { namespace, table } = request.params as { namespace: string; table: string };
    await iceberg.table(principalOf(request), namespaceParts(namespace), table);
    return reply.code(204).send(null);
  });
  z.get(
    `/v1${base}/namespaces/:namespace/tables/:table`,
    {
      preHandler: checkPrefix,
      schema: { tags, summary: 'Load a table: its metadata (format version 2) and metadata location; name@label loads an earlier state', params: params(S.TableParams), querystring: S.LoadTableQuery, response: { 200: S.LoadTableResponse, 304: S.NoContent } },
    },
    async (request, reply) => {
      const { namespace, table } = request.params as { namespace: string; table: string };
      const refsOnly = (request.query as { snapshots?: string }).snapshots === 'refs';
      const { location, built } = await iceberg.loadTable(principalOf(request), namespaceParts(namespace), table);
      const etag = `"${built.name}${refsOnly ? ';refs' : ''}"`;
      reply.header('etag', etag);
      if (matches(request.headers['if-none-match'], etag)) return reply.code(304).send(null);
      // The stored file's text as it is (a table of 1 000 snapshots is some 600 KiB of JSON); `refs` filters its snapshots.
      let metadata = built.text;
      if (refsOnly) {
        const referenced = new Set(Object.values(built.json.refs).map((r) => r['snapshot-id']));
        metadata = JSON.stringify({ ...built.json, snapshots: built.json.snapshots.filter((s) => referenced.has(s['snapshot-id'] as number)) });
      }
      return reply.type('application/json; charset=utf-8').send(`{"metadata-location":${JSON.stringify(location)},"metadata":${metadata},"config":{}}`);
    },
  );
}

export const icebergRoutes =
  (deps: IcebergRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    // Every error under /iceberg in the Iceberg shape (errors.ts), from Lakeport's one error handler.
    app.addHook('onSend', async (_request, reply, payload) => {
      if (reply.statusCode < 400 || typeof payload !== 'string') return payload;
      const rewritten = icebergErrorBody(reply.statusCode, payload);
      if (!rewritten) return payload;
      reply.code(rewritten.status);
      if (rewritten.code) reply.header(ERROR_CODE_HEADER, rewritten.code);
      return rewritten.body;
    });

    app.post(
      '/v1/oauth/tokens',
      {
        schema: {
          tags: ['OAuth2 API'],
          summary: 'Exchange a Lakeport client credential for an access token (client_credentials; deprecated in the Iceberg spec, kept for its clients)',
          consumes: ['application/x-www-form-urlencoded'],
          body: S.TokenForm,
          response: { 200: S.TokenResponse },
        },
      },
      async (request, reply) => {
        reply.headers({ 'cache-control': 'no-store', pragma: 'no-cache' });
        const form = request.body;
        // The Iceberg clients ask for scope `catalog`: Lakeport's read scope is `odata`.
        const scope = form.scope === undefined ? SCOPE : [...new Set(form.scope.trim().split(/\s+/).map((s) => (s === 'catalog' ? SCOPE : s)))].join(' ');
        const token = await deps.tokens.grantToken(request, { ...form, grant_type: form.grant_type, scope });
        return {
          access_token: token.access_token,
          token_type: 'bearer' as const,
          expires_in: token.expires_in,
          issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' as const,
          ...(token.refresh_token ? { refresh_token: token.refresh_token } : {}),
          scope: token.scope,
        };
      },
    );

    await app.register(async (api) => {
      api.addHook('onRequest', requireAuth(deps.verifier, SCOPE));
      api.addHook('onSend', async (_request, reply, payload) => {
        // Every answer depends on who asks (their grants).
        if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'private');
        return payload;
      });

      api.get('/v1/config', { schema: { tags: ['Configuration API'], summary: 'Catalog configuration: the prefix of the warehouse, the endpoints served', querystring: S.ConfigQuery, response: { 200: S.CatalogConfig } } }, async (request) => {
        const { warehouse } = request.query as { warehouse?: string };
        if (warehouse && warehouse !== WAREHOUSE) throw icebergError('WAREHOUSE_NOT_FOUND', `No warehouse '${warehouse}': Lakeport has one, '${WAREHOUSE}' (or send none)`);
        return { defaults: {}, overrides: warehouse ? { prefix: WAREHOUSE } : {}, endpoints: ENDPOINTS };
      });

      catalogRoutes(api, '', deps.iceberg);
      catalogRoutes(api, '/:prefix', deps.iceberg);

      const fileRoute = (area: 'metadata' | 'data') => async (request: FastifyRequest, reply: FastifyReply) => {
        const { dataset_id, file } = request.params as { dataset_id: string; file: string };
        return sendFile(request, reply, deps.blobs, await deps.iceberg.file(principalOf(request), dataset_id, area, file));
      };
      for (const area of ['metadata', 'data'] as const) {
        const summary = area === 'data' ? 'A data file of the table (Parquet), by its id; Range requests answer 206' : 'A metadata file of the table (metadata JSON, manifest list, manifest); Range requests answer 206';
        const schema = { tags: ['Files'], summary, params: S.FileParams, response: { 200: S.FileResponse, 206: S.FileResponse } };
        api.head(`/v1/files/:dataset_id/${area}/:file`, { schema: { ...schema, hide: true } }, fileRoute(area));
        api.get(`/v1/files/:dataset_id/${area}/:file`, { schema }, fileRoute(area));
      }

      // Everything else: the catalog is read-only (the spec's 406 for writes), and nothing else is here.
      api.all('/*', { schema: { hide: true } }, async (request) => {
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          throw icebergError('UNSUPPORTED_OPERATION', `Lakeport's Iceberg catalog is read-only: ${request.method} ${request.url.split('?')[0]} is not supported (write through Lakeport's upload and jobs services)`);
        }
        throw icebergError('NOT_FOUND', `No Iceberg resource at ${request.url.split('?')[0]}`);
      });
    });
  };
