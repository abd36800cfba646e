import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { BinaryBody, mediaResponse, principalOf, requireAuth, sendJsonText, type TokenVerifier } from '../../core/http/index.ts';
import type { QueryChecker } from './check.ts';
import * as S from './schemas.ts';
import type { JobsService } from './service.ts';

export interface JobRouteDeps {
  jobs: JobsService;
  checker: QueryChecker;
  verifier: TokenVerifier;
}

/** A page of results is sent as text, never walked by the serializer. */
const RESULTS = mediaResponse('A page of results', { 'application/json': S.ResultsPage });
const DOWNLOAD = mediaResponse(
  'The results as a file: the range of rows its offset and limit select (see the headers)',
  {
    'text/csv': z.string(),
    'application/x-ndjson': z.string().describe('One JSON object per line'),
    'application/vnd.apache.parquet': BinaryBody,
  },
  {
    'Lakeport-Total-Rows': { description: 'Rows of the whole result', schema: { type: 'integer', minimum: 0 } },
    'Lakeport-Range': {
      description: 'The rows this file holds, as `rows <first>-<last>/<total>` (0-based, inclusive, like Content-Range), or `rows */<total>` when it holds none',
      schema: { type: 'string', pattern: '^rows ([0-9]+-[0-9]+|\\*)/[0-9]+$' },
    },
    'Lakeport-Truncated': { description: '`true` when rows of the result follow this range (fetch the Link rel="next"), else `false`', schema: { type: 'string', enum: ['true', 'false'] } },
    Link: { description: 'When rows follow: `<url>; rel="next"`, the next range in the same format and limit', schema: { type: 'string' } },
  },
);

export const jobRoutes =
  (deps: JobRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { jobs } = deps;
    app.addHook('onRequest', requireAuth(deps.verifier, 'jobs'));

    app.post('/api/v1/check', { schema: { summary: 'Check one statement without running it (200 with ok false when it is wrong)', body: S.QueryCheckRequest, response: { 200: S.CheckResult } } }, async (request) =>
      deps.checker.check(principalOf(request), request.body.sql_text, request.body.parameters ?? {}),
    );

    app.post('/api/v1/jobs', { schema: { summary: 'Submit a query; it runs in the background', body: S.JobCreateRequest, response: { 201: S.JobSubmitted } } }, async (request, reply) =>
      reply.status(201).send(await jobs.submit(principalOf(request), request.body)),
    );

    app.get('/api/v1/jobs/recent', { schema: { summary: "The caller's jobs, newest first; filter by status or text", querystring: S.RecentQuery, response: { 200: S.RecentJobs } } }, async (request) =>
      jobs.recent(principalOf(request), request.query.filter),
    );

    app.get('/api/v1/jobs/:identifier/status', { schema: { summary: 'Status; ?wait=N long-polls up to N seconds', params: S.JobParams, querystring: S.StatusQuery, response: { 200: S.Job } } }, async (request) =>
      jobs.status(principalOf(request), request.params.identifier, request.query.wait),
    );

    app.post('/api/v1/jobs/:identifier/cancel', { schema: { summary: 'Cancel a queued or running job', params: S.JobParams, response: { 200: S.Job } } }, async (request) =>
      jobs.cancel(principalOf(request), request.params.identifier),
    );

    app.get('/api/v1/jobs/:identifier/results', { schema: { summary: 'A page of results', params: S.JobParams, querystring: S.ResultsQuery, response: { 200: RESULTS } } }, async (request, reply) =>
      sendJsonText(reply, S.ResultsPage, await jobs.results(principalOf(request), request.params.identifier, request.query)),
    );

    app.get('/api/v1/jobs/:identifier/download', { schema: { summary: 'Results as a csv, json (newline-delimited) or parquet file', params: S.JobParams, querystring: S.DownloadQuery, response: { 200: DOWNLOAD } } }, async (request, reply) => {
      const file = await jobs.download(principalOf(request), request.params.identifier, request.query);
      return reply.type(file.contentType).header('content-disposition', `attachment; filename="${file.fileName}"`).headers(file.headers).send(file.stream);
    });

    app.get('/api/v1/variables', { schema: { summary: "The caller's saved variables", response: { 200: S.Variables } } }, async (request) => jobs.variables(principalOf(request)));

    app.put('/api/v1/variables/:name', { schema: { summary: 'Save a variable (answers with the whole list)', params: S.VariableParams, body: S.VariableUpsertRequest, response: { 200: S.Variables } } }, async (request) =>
      jobs.putVariable(principalOf(request), request.params.name, request.body),
    );

    app.delete('/api/v1/variables/:name', { schema: { summary: 'Delete a variable', params: S.VariableParams, response: { 204: z.undefined() } } }, async (request, reply) => {
      await jobs.deleteVariable(principalOf(request), request.params.name);
      return reply.status(204).send();
    });
  };
