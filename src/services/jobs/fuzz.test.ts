import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { deepJson, expectRefused, jsonWithNul, nulish, poison, withNul } from '../../../test/fuzz.ts';

let t: TestApp;
let alice: TestUser;

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  alice = await signIn(t.app, t.adminToken, 'alice');
});
afterAll(async () => t.close());

const noServerError = (res: { statusCode: number; body: string }) => expect(res.statusCode, res.body).toBeLessThan(500);
const sqlish = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.array(fc.constantFrom('SELECT', '*', 'FROM', 'a.b.c', ':p', "'x'", '(', ')', ',', 'AT', 'VERSION', '=>', ';', '--', '/*', '"q"', '1', 'WHERE', '::INT', 'read_text', 'COPY'), { maxLength: 20 }).map((w) => w.join(' ')),
);

describe('fuzzing the job service never yields a 5xx', () => {
  it('statement check with arbitrary SQL and parameters', async () => {
    await fc.assert(
      fc.asyncProperty(sqlish, fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null))), async (sql, parameters) => {
        const res = await alice.request('POST', '/jobs/api/v1/check', { sql_text: sql, parameters });
        noServerError(res);
        if (res.statusCode === 200) expect(typeof res.json().ok).toBe('boolean');
      }),
      { numRuns: 200 },
    );
  });

  it('submission and reads with arbitrary bodies and query strings', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), fc.string({ maxLength: 30 }), async (body, query) => {
        noServerError(await alice.request('POST', '/jobs/api/v1/jobs', body));
        noServerError(await alice.request('GET', `/jobs/api/v1/jobs/recent?filter=${encodeURIComponent(query)}`));
        noServerError(await alice.request('GET', `/jobs/api/v1/jobs/x/results?num_rows=${encodeURIComponent(query)}&offset=${encodeURIComponent(query)}`));
        noServerError(await alice.request('PUT', `/jobs/api/v1/variables/${encodeURIComponent(query || 'v')}`, body));
      }),
      { numRuns: 150 },
    );
  });
});

describe('NUL characters and deep nesting reach the job service only as 4xx', () => {
  it('a NUL in the SQL, a parameter name or value, or client_info; deeply nested bodies', async () => {
    const body = fc.oneof(
      fc.record({ sql_text: fc.oneof(sqlish, withNul), parameters: fc.dictionary(nulish, fc.oneof(nulish, fc.integer(), fc.constant(null)), { maxKeys: 3 }), client_info: fc.option(jsonWithNul) }).chain((b) => fc.nat().map((i) => JSON.stringify(poison(b, i)))),
      deepJson,
    );
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom('/jobs/api/v1/jobs', '/jobs/api/v1/check'), async (payload, url) => {
        expectRefused(await t.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' }, payload }));
      }),
      { numRuns: 200 },
    );
  });

  it('a NUL in a job id, a variable name, a query string or a variable value', async () => {
    await fc.assert(
      fc.asyncProperty(withNul, fc.constantFrom('status', 'results', 'download', 'cancel'), async (value, action) => {
        const id = encodeURIComponent(value);
        expectRefused(await alice.request(action === 'cancel' ? 'POST' : 'GET', `/jobs/api/v1/jobs/${id}/${action}`));
        expectRefused(await alice.request('GET', `/jobs/api/v1/jobs/recent?filter=${id}`));
        expectRefused(await alice.request('GET', `/jobs/api/v1/jobs/x/results?num_rows=${id}`));
        expectRefused(await alice.request('PUT', `/jobs/api/v1/variables/${id}`, { type: 'string', value: 'v' }));
        expectRefused(await alice.request('PUT', '/jobs/api/v1/variables/v', { type: 'string', value }));
        expectRefused(await alice.request('DELETE', `/jobs/api/v1/variables/${id}`));
      }),
      { numRuns: 100 },
    );
  });
});
