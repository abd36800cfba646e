import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../../test/harness.ts';

let t: TestApp;
let alice: TestUser;

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'ws');
});
afterAll(async () => t.close());

const fragment = fc.constantFrom(
  'CREATE', 'OR REPLACE', 'SECRET', 'IF NOT EXISTS', 'IF EXISTS', 'IN', 'ws', 'ws.x', 'nope', '(', ')', ',', ';', 'TYPE', "'s3_access_key'", "'gcs_service_account'", "'http_endpoint'", "'storage_b_access_key'",
  'KEY', 'SCOPE', 'ACCESS_KEY_ID', 'SECRET_ACCESS_KEY', 'SESSION_TOKEN', 'REGION', 'URL', 'HEADER_AUTHORIZATION', ':p', ':q', "'s3://bkt/x/'", "'gs://bkt/'", "'https://93.184.216.34/'", "'ASIA1'", "'{}'",
  'GRANT', 'REVOKE', 'reader', 'writer', 'admin', 'owner', 'ON', 'ws.*', 'ws.c.*', 'ws.c.d', 'TO', 'FROM', 'bob', "'svc-x'", 'SERVICE_ACCOUNT', 'USER',
  'TAG', 'DROP', 't1', "'t.2'", 'AT', '(VERSION => 1)', "(VERSION => 't1')", 'ALTER', 'WORKSPACE', 'SET', 'deletion_protection', 'TO ON', 'TO OFF', '= OFF',
  '"q"', '""', '$$v$$', "E'e'", '--c\n', '/* c */', "'", '"', '\u0000', '$1', '?', '.', '*', '=>', '2024x.y', ':', 'é', '🦆',
);
const statement = fc.oneof(
  fc.array(fragment, { minLength: 1, maxLength: 20 }).map((w) => w.join(' ')),
  fc.array(fragment, { minLength: 1, maxLength: 20 }).map((w) => w.join('')),
  fc.tuple(fc.constantFrom('CREATE SECRET ', 'CREATE OR REPLACE SECRET ', 'GRANT ', 'REVOKE ', 'CREATE TAG ', 'DROP TAG ', 'ALTER WORKSPACE ', 'ALTER SECRET '), fc.string({ maxLength: 120 })).map(([a, b]) => a + b),
  fc
    .tuple(fc.constantFrom('s3_access_key', 'gcs_service_account', 'http_endpoint', 'x'), fc.subarray(['KEY', 'SCOPE', 'ACCESS_KEY_ID', 'SECRET_ACCESS_KEY', 'SESSION_TOKEN', 'REGION', 'URL', 'HEADER_X_API_KEY']))
    .map(([type, keys]) => `CREATE OR REPLACE SECRET f IN ws (TYPE '${type}'${keys.map((k, i) => `, ${k} ${i % 2 ? ':p' : ':q'}`).join('')})`),
);
const parameters = fc.dictionary(fc.constantFrom('p', 'q', 'P', 'x'), fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('s3://bkt/x/', 'gs://bkt/', 'https://93.184.216.34/', 'ASIA1', '{"type":"service_account"}'), fc.integer(), fc.boolean(), fc.constant(null)));

describe('fuzzed Lakeport statements', () => {
  it('give 201 or a clear 4xx on submit, and 200 on check; never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(statement, parameters, async (sql, params) => {
        const submitted = await alice.request('POST', '/jobs/api/v1/jobs', { sql_text: sql, parameters: params });
        expect(submitted.statusCode, `${JSON.stringify(sql)} → ${submitted.body}`).toBeLessThan(500);
        if (sql.includes('\u0000')) {
          // Refused at the HTTP edge, by submit and check alike.
          for (const res of [submitted, await alice.request('POST', '/jobs/api/v1/check', { sql_text: sql, parameters: params })]) {
            expect(res.json()).toMatchObject({ detail: [{ loc: ['body', 'sql_text'], type: 'string_nul' }] });
          }
          return;
        }
        if (submitted.statusCode >= 400 && submitted.statusCode !== 422) {
          const body = submitted.json();
          expect(typeof body.code).toBe('string');
          expect(body.detail.length).toBeGreaterThan(0);
        }
        const checked = await alice.request('POST', '/jobs/api/v1/check', { sql_text: sql, parameters: params });
        expect(checked.statusCode, `${JSON.stringify(sql)} → ${checked.body}`).toBe(200);
        const answer = checked.json();
        expect(typeof answer.ok).toBe('boolean');
        if (!answer.ok && answer.error.start !== null) {
          expect(answer.error.start).toBeGreaterThanOrEqual(0);
          expect(answer.error.end).toBeLessThanOrEqual(sql.length);
        }
      }),
      { numRuns: 300 },
    );
  });
});
