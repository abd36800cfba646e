import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RequestValidationError } from '../../core/errors/index.ts';
import { jsonTooDeep, mediaResponse, principalOf, refuseNul, requireAuth, jsonTooDeepError, type TokenVerifier } from '../../core/http/index.ts';
import { uploadError } from './errors.ts';
import * as S from './schemas.ts';
import type { Sample, UploadService } from './service.ts';

export interface UploadRouteDeps {
  uploads: UploadService;
  verifier: TokenVerifier;
  scratchDir: string;
}

/** Reads the negotiation's multipart body: the `contract` JSON part and one sample file per part. */
async function readNegotiation(request: FastifyRequest, scratch: string, sampleMaxBytes: number) {
  let contract: unknown;
  const samples: Sample[] = [];
  if (!request.isMultipart()) throw RequestValidationError.at(['body'], 'send multipart/form-data with a contract part and one sample part per file', 'multipart_required');
  for await (const part of request.parts()) {
    if (part.type === 'field') {
      if (part.fieldname !== 'contract') continue;
      // The edge's rules for JSON bodies hold for this part too: no deep nesting, no NUL.
      if (jsonTooDeep(String(part.value))) throw jsonTooDeepError(['body', 'contract']);
      try {
        contract = JSON.parse(String(part.value));
      } catch {
        throw RequestValidationError.at(['body', 'contract'], 'the contract part must be JSON', 'json_invalid');
      }
      refuseNul(contract, ['body', 'contract']);
      continue;
    }
    refuseNul(`${part.fieldname}${part.filename ?? ''}`, ['body', part.fieldname]);
    const name = path.basename(part.filename || part.fieldname);
    const file = path.join(scratch, `sample-${crypto.randomUUID()}`);
    await pipeline(part.file, fs.createWriteStream(file));
    if (part.file.truncated) throw uploadError('SAMPLE_TOO_LARGE', `The sample of ${name} is over ${sampleMaxBytes} bytes; send a prefix (CSV/JSONL) or the footer (Parquet)`);
    samples.push({ name, path: file });
  }
  const parsed = S.ContractRequest.safeParse(contract);
  if (!parsed.success) {
    throw new RequestValidationError(
      contract === undefined
        ? [{ loc: ['body', 'contract'], msg: 'Field required', type: 'missing' }]
        : parsed.error.issues.map((i) => ({ loc: ['body', 'contract', ...i.path.map((p) => (typeof p === 'number' ? p : String(p)))], msg: i.message, type: i.code })),
    );
  }
  return { contract: parsed.data, samples };
}

export const uploadRoutes =
  (deps: UploadRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { uploads } = deps;
    await app.register(multipart, { limits: { fileSize: uploads.sampleMaxBytes, files: 1000, fields: 20, fieldSize: 1024 * 1024 } });
    app.addHook('onRequest', requireAuth(deps.verifier, 'upload'));

    app.post('/v2/contracts', { schema: { summary: 'Negotiate a contract from samples (multipart: contract + one sample per file)', bodyMedia: { 'multipart/form-data': S.NegotiationForm }, response: { 201: S.Contract } } }, async (request, reply) => {
      const scratch = path.join(deps.scratchDir, `negotiation-${crypto.randomUUID()}`);
      await fsp.mkdir(scratch, { recursive: true });
      try {
        const { contract, samples } = await readNegotiation(request, scratch, uploads.sampleMaxBytes);
        return reply.status(201).send(await uploads.negotiate(principalOf(request), contract, samples));
      } finally {
        await fsp.rm(scratch, { recursive: true, force: true });
      }
    });

    app.get('/v2/contracts/:contract_id', { schema: { summary: 'The contract: plan, issues, every write and running totals', params: S.ContractParams, response: { 200: S.Contract } } }, async (request) =>
      uploads.get(principalOf(request), request.params.contract_id),
    );

    app.patch('/v2/contracts/:contract_id', { schema: { summary: 'Retype or decline columns (re-plans the whole contract), or change its commit_mode or on_error', params: S.ContractParams, body: S.PatchRequest, response: { 200: S.Contract } } }, async (request) =>
      uploads.replan(principalOf(request), request.params.contract_id, request.body.columns, request.body.commit_mode, request.body.on_error),
    );

    app.get(
      '/v2/contracts/:contract_id/rejects',
      {
        schema: {
          summary: "The values the contract's on_error policy did not store, as CSV (file, record, line, column, value, reason, action)",
          params: S.ContractParams,
          querystring: S.RejectsQuery,
          response: { 200: mediaResponse('One line per rejected value, in file order (the first 100 000 of each write)', { 'text/csv': z.string() }) },
        },
      },
      async (request, reply) => {
        const stream = await uploads.rejects(principalOf(request), request.params.contract_id, request.query.file);
        const name = `${request.params.contract_id}-rejects.csv`.replace(/[^A-Za-z0-9_.-]/g, '_');
        return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}"`).send(stream);
      },
    );

    app.delete('/v2/contracts/:contract_id', { schema: { summary: 'Abandon the contract; its staged files are deleted', params: S.ContractParams, response: { 204: z.undefined() } } }, async (request, reply) => {
      await uploads.abandon(principalOf(request), request.params.contract_id);
      return reply.status(204).send();
    });

    app.put('/v2/contracts/:contract_id/accept', { schema: { summary: 'Accept a proposed contract by echoing its schema_fingerprint', params: S.ContractParams, body: S.AcceptRequest, response: { 200: S.Contract } } }, async (request) =>
      uploads.accept(principalOf(request), request.params.contract_id, request.body.schema_fingerprint),
    );

    // A file body streams through untouched, whatever its content-type (or none): no parser may
    // consume it, so this route has its own context whose only parser passes the stream on.
    await app.register(async (context) => {
      const files = context.withTypeProvider<ZodTypeProvider>();
      files.removeAllContentTypeParsers();
      files.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
      files.post(
        '/v2/contracts/:contract_id/data',
        { schema: { summary: 'Stream one file; it is converted to Parquet with the contract types', params: S.ContractParams, headers: S.DataHeaders, bodyMedia: S.FileBody, response: { 200: S.WriteResult } } },
        async (request) => {
          const body = (request.body as Readable | undefined) ?? request.raw;
          return uploads.write(principalOf(request), request.params.contract_id, request.headers['x-file-name'], body);
        },
      );
    });

    app.post(
      '/v2/contracts/:contract_id/commit',
      { schema: { summary: 'Publish every write as one snapshot (Idempotency-Key makes retries safe)', params: S.ContractParams, headers: S.CommitHeaders, body: S.CommitRequest, response: { 200: S.CommitResult } } },
      async (request) => uploads.commit(principalOf(request), request.params.contract_id, request.headers['idempotency-key'], request.body?.message),
    );
  };
