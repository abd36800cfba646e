/**
 * An off-the-shelf client (openapi-fetch) over the types openapi-typescript generated from
 * /jobs/openapi.json, against a listening server: submit, poll, read and download, typed end to end,
 * and every real answer checked against the schema the document gives for its status.
 */
import type { AddressInfo } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import createClient from 'openapi-fetch';
import type { OpenAPI3, OperationObject, PathItemObject } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components, paths } from '../src/client/generated/jobs.ts';
import { serviceDocuments } from '../scripts/openapi-types.ts';
import { signIn } from './clients.ts';
import { createTestApp, type TestApp } from './harness.ts';

type Job = components['schemas']['Job'];

let t: TestApp;
let client: ReturnType<typeof createClient<paths>>;
let document: OpenAPI3;
const ajv = new Ajv2020({ strict: false, logger: false, allErrors: true });

beforeAll(async () => {
  t = await createTestApp();
  document = (await serviceDocuments(t.app))['/jobs'];
  // The whole document, so the schemas' `#/components/schemas/…` references resolve.
  ajv.addSchema(document, 'jobs');
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = t.app.server.address() as AddressInfo;
  const user = await signIn(t.app, t.adminToken, 'openapi-client');
  client = createClient<paths>({ baseUrl: `http://127.0.0.1:${port}`, headers: { authorization: `Bearer ${user.token}` } });
});
afterAll(async () => t?.close());

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** Checks a real answer against the schema the document gives its status (or its status class) and media type. */
function expectDescribed(method: 'get' | 'post', path: keyof paths, response: Response, body: unknown) {
  const { responses = {} } = (document.paths?.[path] as PathItemObject)[method] as OperationObject;
  const status = String(response.status);
  const key = status in responses ? status : `${status[0]}XX`;
  const media = response.headers.get('content-type')!.split(';')[0];
  const validate = ajv.getSchema(`jobs#/${pointer('paths', path, method, 'responses', key, 'content', media, 'schema')}`);
  expect(validate, `${method} ${path} ${status} ${media} is described`).toBeTypeOf('function');
  expect(validate!(body), JSON.stringify(validate!.errors)).toBe(true);
  expect(validate!({ unexpected: true }), 'the schema refuses a body of another shape').toBe(false);
}

describe('a client generated from /jobs/openapi.json', () => {
  it('submits a job, polls it, reads its results and downloads them, each answer as the document describes', async () => {
    const submitted = await client.POST('/jobs/api/v1/jobs', { body: { sql_text: 'SELECT 42 AS answer, :label AS label', parameters: { label: 'forty-two' } } });
    expect(submitted.response.status).toBe(201);
    expectDescribed('post', '/jobs/api/v1/jobs', submitted.response, submitted.data);
    const identifier: string = submitted.data!.execution_id;

    let job: Job | undefined;
    for (let i = 0; i < 20 && (job === undefined || job.in_progress); i++) {
      const polled = await client.GET('/jobs/api/v1/jobs/{identifier}/status', { params: { path: { identifier }, query: { wait: 5 } } });
      expectDescribed('get', '/jobs/api/v1/jobs/{identifier}/status', polled.response, polled.data);
      job = polled.data;
    }
    expect(job).toMatchObject({ status: 'succeeded', row_count: 1, error: null });

    const page = await client.GET('/jobs/api/v1/jobs/{identifier}/results', { params: { path: { identifier }, query: { verbose: true } } });
    expect(page.response.status).toBe(200);
    expectDescribed('get', '/jobs/api/v1/jobs/{identifier}/results', page.response, page.data);
    const { columns, data, total_rows }: components['schemas']['ResultsPage'] = page.data!;
    expect({ columns, data, total_rows }).toEqual({
      columns: [
        { name: 'answer', type: 'INTEGER' },
        { name: 'label', type: 'VARCHAR' },
      ],
      data: [[42, 'forty-two']],
      total_rows: 1,
    });

    const file = await client.GET('/jobs/api/v1/jobs/{identifier}/download', { params: { path: { identifier }, query: { file_format: 'csv' } }, parseAs: 'text' });
    expect(file.response.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(file.data).toBe('answer,label\n42,forty-two\n');
    expectDescribed('get', '/jobs/api/v1/jobs/{identifier}/download', file.response, file.data);
  });

  it('answers errors in the shapes the document describes', async () => {
    const missing = await client.GET('/jobs/api/v1/jobs/{identifier}/status', { params: { path: { identifier: 'job_unknown' } } });
    expect(missing.response.status).toBe(404);
    // The error's type is the union of the operation's error answers: 422, 4XX and 5XX.
    const error: components['schemas']['ErrorBody'] | components['schemas']['HTTPValidationError'] = missing.error!;
    expect(error).toMatchObject({ code: 'JOB_NOT_FOUND' });
    expectDescribed('get', '/jobs/api/v1/jobs/{identifier}/status', missing.response, missing.error);

    const invalid = await client.POST('/jobs/api/v1/jobs', { body: { sql_text: '' } });
    expect(invalid.response.status).toBe(422);
    expectDescribed('post', '/jobs/api/v1/jobs', invalid.response, invalid.error);
  });
});
