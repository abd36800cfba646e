import { Readable } from 'node:stream';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { principalOf, type TokenVerifier } from '../../core/http/index.ts';
import { formatSelector, refOf } from '../../core/catalog/index.ts';
import { countRows, entityText, parseKey, splitKey } from './entities.ts';
import { withODataErrorMember } from './error-body.ts';
import { odataError } from './errors.ts';
import { requireODataAuth, type ClientAuthenticator } from './auth.ts';
import { metadataDocumentChunks, entitySetName, llmsTxt, serviceDocumentChunks } from './metadata/index.ts';
import { checkFormat, ieee754Compatible, parseRowsOptions, type RowsOptions } from './options.ts';
import type { RowPages } from './pages.ts';
import * as S from './schemas.ts';
import { entityOf, parseAddress, type DatasetAddress, type ODataService } from './service.ts';


/** Sends generated text: a document of one piece as one string (a stream costs more than it saves), a longer one streamed piece by piece. */
function sendPieces(reply: FastifyReply, pieces: Generator<string>): FastifyReply {
  const first = pieces.next();
  if (first.done) return reply.send('');
  const second = pieces.next();
  if (second.done) return reply.send(first.value);
  function* all() {
    yield first.value;
    yield second.value;
    yield* pieces;
  }
  return reply.send(Readable.from(all()));
}

export interface ODataRouteDeps {
  odata: ODataService;
  verifier: TokenVerifier;
  clients: ClientAuthenticator;
  /** The public URL of the OData prefix, e.g. https://lakeport.example.com/odata. */
  baseUrl: () => string;
  pages: RowPages;
}

const JSON_TYPE = 'application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=false;charset=utf-8';
const JSON_TYPE_IEEE754 = 'application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=true;charset=utf-8';
const XML_TYPE = 'application/xml;charset=utf-8';
const TEXT_TYPE = 'text/plain;charset=utf-8';

/** `@label` as the client wrote the address, or nothing for the default. */
function formatLabel(address: DatasetAddress): string {
  return address.label === undefined ? '' : formatSelector(address.selector);
}

interface DatasetParams {
  workspace: string;
  collection: string;
  dataset: string;
}

function query(request: FastifyRequest): Record<string, unknown> {
  return (request.query ?? {}) as Record<string, unknown>;
}

/** The rows options of a request, with IEEE754Compatible from `$format` or its headers. */
function rowsOptions(request: FastifyRequest): RowsOptions {
  const options = parseRowsOptions(query(request));
  return ieee754Compatible(query(request), request.headers) ? { ...options, ieee754: true } : options;
}

const jsonType = (options: RowsOptions) => (options.ieee754 ? JSON_TYPE_IEEE754 : JSON_TYPE);

export const odataRoutes =
  (deps: ODataRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const { odata } = deps;
    const root = () => `${deps.baseUrl()}/api/v4`;

    app.get('/.well-known/llms.txt', { schema: { summary: 'Directives for automated agents (no authentication)', response: { 200: S.LlmsTxt } } }, async (_request, reply) =>
      reply.type('text/plain; charset=utf-8').send(llmsTxt(deps.baseUrl())),
    );

    await app.register(async (api) => {
      api.addHook('onRequest', requireODataAuth(deps.verifier, deps.clients));
      api.addHook('onSend', async (_request, reply, payload) => {
        reply.header('odata-version', '4.0');
        // Every answer depends on who asks (their grants, role and policies).
        reply.header('cache-control', 'private');
        const json = String(reply.getHeader('content-type') ?? '').startsWith('application/json');
        return reply.statusCode >= 400 && json && typeof payload === 'string' ? withODataErrorMember(payload) : payload;
      });

      const serviceDocument = async (request: FastifyRequest, reply: FastifyReply) => {
        checkFormat(query(request), 'json');
        const readable = await odata.readableRefs(principalOf(request));
        // Streamed: at thousands of datasets the document is large (same text as the schema's serializer writes).
        return sendPieces(reply.type(JSON_TYPE), serviceDocumentChunks(`${root()}/$metadata`, readable));
      };
      api.get('/api/v4', { schema: { summary: 'Service document: the entity sets the caller may read', response: { 200: S.ServiceDocument } } }, serviceDocument);
      api.get('/api/v4/', { schema: { hide: true, response: { 200: S.ServiceDocument } } }, serviceDocument);

      api.get('/api/v4/$metadata', { schema: { summary: 'EDMX for every dataset the caller may read', response: { 200: S.Metadata } } }, async (request, reply) => {
        checkFormat(query(request), 'xml');
        const versions = await odata.currentVersions(principalOf(request));
        // Streamed as it is written: at thousands of datasets the document runs to megabytes.
        return sendPieces(reply.type(XML_TYPE), metadataDocumentChunks(versions));
      });

      const datasetMetadata = async (request: FastifyRequest, reply: FastifyReply, address: DatasetAddress) => {
        checkFormat(query(request), 'xml');
        const version = await odata.version(principalOf(request), address, { tags: true });
        return sendPieces(reply.type(XML_TYPE), metadataDocumentChunks([version]));
      };

      const datasetRows = async (request: FastifyRequest, reply: FastifyReply, address: DatasetAddress) => {
        const options = rowsOptions(request);
        const caller = principalOf(request);
        const shaped = options.select !== undefined || options.apply !== undefined;
        const { body, closed } = await deps.pages.open({
          caller,
          version: odata.version(caller, address, { rows: true }),
          options,
          url: request.url,
          publicUrl: (url) => `${deps.baseUrl()}${url.replace(/^\/odata/, '')}`,
          // The dataset's own $metadata, where its entity set always has the plain name.
          contextUrl: ({ ref }, columns) =>
            `${root()}/${ref.workspace}/${ref.collection}/${encodeURIComponent(ref.dataset + formatLabel(address))}/$metadata#${entitySetName(ref)}` +
            (shaped ? `(${columns.join(',')})` : ''),
        });
        // Stops the query when the client goes away mid-page, or lets the page's buffer be reused.
        reply.raw.once('close', closed);
        return reply.type(jsonType(options)).send(body);
      };

      /** `…/$count`: the matching rows' number, as text; the same access check as a page of rows. */
      const datasetCount = async (request: FastifyRequest, reply: FastifyReply, address: DatasetAddress) => {
        const options = parseRowsOptions(query(request));
        const version = await odata.version(principalOf(request), address, { rows: true });
        return reply.type(TEXT_TYPE).send(await countRows(odata, version, options));
      };

      /** `Set(5)`: the row numbered 5 in the version (the key of $metadata), through the same access check as a page of rows. */
      const datasetEntity = async (request: FastifyRequest, reply: FastifyReply, address: DatasetAddress, key: string) => {
        const options = rowsOptions(request);
        const version = await odata.version(principalOf(request), address, { rows: true });
        const rowId = parseKey(key, entityOf(version.dataset).rowId);
        const { ref } = version;
        const body = await entityText(odata, version, rowId, options, (columns) =>
          `${root()}/${ref.workspace}/${ref.collection}/${encodeURIComponent(ref.dataset + formatLabel(address))}/$metadata#${entitySetName(ref)}` +
          (options.select !== undefined ? `(${columns.join(',')})` : '') +
          '/$entity',
        );
        return reply.type(jsonType(options)).send(body);
      };

      const byPath = (request: FastifyRequest<{ Params: DatasetParams }>, segment = request.params.dataset) => parseAddress(request.params.workspace, request.params.collection, segment);
      const bySetName = (request: FastifyRequest<{ Params: { entitySet: string } }>, segment = request.params.entitySet) => odata.addressOfEntitySet(principalOf(request), segment);

      api.get<{ Params: DatasetParams }>('/api/v4/:workspace/:collection/:dataset/$metadata', { schema: { summary: 'EDMX for one dataset (at a version: ds@tag)', response: { 200: S.Metadata } } }, async (request, reply) =>
        datasetMetadata(request, reply, byPath(request)),
      );
      api.get<{ Params: DatasetParams }>('/api/v4/:workspace/:collection/:dataset/$count', { schema: { summary: 'How many rows match $filter (text/plain)', response: { 200: S.Count } } }, async (request, reply) =>
        datasetCount(request, reply, byPath(request)),
      );
      api.get<{ Params: DatasetParams }>(
        '/api/v4/:workspace/:collection/:dataset',
        { schema: { summary: 'Rows: $filter, $select, $orderby, $top, $skip, $count, $apply; pages through @odata.nextLink. ds(5): the row numbered 5', response: { 200: S.RowsPage } } },
        async (request, reply) => {
          const { segment, key } = splitKey(request.params.dataset);
          return key === undefined ? datasetRows(request, reply, byPath(request)) : datasetEntity(request, reply, byPath(request, segment), key);
        },
      );
      // The same, addressed by entity set name (ws__coll__ds[@label]), as clients that build URLs from $metadata do.
      api.get<{ Params: { entitySet: string } }>('/api/v4/:entitySet/$metadata', { schema: { summary: 'EDMX for one dataset, by entity set name', response: { 200: S.Metadata } } }, async (request, reply) =>
        datasetMetadata(request, reply, await bySetName(request)),
      );
      api.get<{ Params: { entitySet: string } }>('/api/v4/:entitySet/$count', { schema: { summary: 'How many rows match $filter, by entity set name', response: { 200: S.Count } } }, async (request, reply) =>
        datasetCount(request, reply, await bySetName(request)),
      );
      api.get<{ Params: { entitySet: string } }>('/api/v4/:entitySet', { schema: { summary: 'Rows of one dataset, by entity set name; Set(5): the row numbered 5', response: { 200: S.RowsPage } } }, async (request, reply) => {
        const { segment, key } = splitKey(request.params.entitySet);
        return key === undefined ? datasetRows(request, reply, await bySetName(request)) : datasetEntity(request, reply, await bySetName(request, segment), key);
      });

      api.all('/api/v4/*', { schema: { hide: true } }, async (request) => {
        if (request.method !== 'GET' && request.method !== 'HEAD') throw odataError('METHOD_NOT_ALLOWED', 'The OData service is read-only: use GET');
        throw odataError('NOT_FOUND', `No OData resource at ${request.url.split('?')[0]}`);
      });
    });
  };
