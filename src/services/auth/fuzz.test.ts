import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { deepJson, expectRefused, jsonWithNul, nulish, poison, withNul } from '../../../test/fuzz.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

function expectClientError(res: { statusCode: number; json(): unknown }) {
  expect(res.statusCode).toBeGreaterThanOrEqual(200);
  expect(res.statusCode).toBeLessThan(500);
  const body = res.json() as Record<string, unknown>;
  if (res.statusCode >= 400) expect(body).toHaveProperty('detail');
}

const contentTypes = fc.constantFrom('application/x-www-form-urlencoded', 'application/json', 'text/plain', 'multipart/form-data', 'application/x-www-form-urlencoded; charset=latin1');

describe('fuzzing the auth service never yields a 5xx', () => {
  it('POST /auth/token with arbitrary bodies, content types and Basic headers', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 300 }), contentTypes, fc.option(fc.string({ maxLength: 80 })), async (body, contentType, basic) => {
        const headers: Record<string, string> = { 'content-type': contentType };
        if (basic !== null) headers.authorization = `Basic ${basic}`;
        const res = await t.app.inject({ method: 'POST', url: '/auth/token', headers, payload: body });
        expectClientError(res);
      }),
      { numRuns: 300 },
    );
  });

  it('POST /auth/token with arbitrary form fields', async () => {
    const field = fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('client_credentials', 'refresh_token', 'lpsk_', 'lprt_'));
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.constantFrom('grant_type', 'client_id', 'client_secret', 'refresh_token', 'scope', 'x'), field), async (fields) => {
        const res = await t.app.inject({
          method: 'POST',
          url: '/auth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams(fields).toString(),
        });
        expectClientError(res);
        expect(res.statusCode).not.toBe(200);
      }),
      { numRuns: 300 },
    );
  });

  it('credential endpoints with arbitrary JSON, ids and bearer values', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), fc.string({ minLength: 1, maxLength: 40 }), fc.string({ maxLength: 200 }), async (body, id, bearer) => {
        const url = `/auth/clients/${encodeURIComponent(id)}/credentials`;
        const headers = { authorization: `Bearer ${bearer}` };
        expectClientError(await t.app.inject({ method: 'POST', url, headers, payload: JSON.stringify(body), }));
        expectClientError(await t.app.inject({ method: 'GET', url, headers }));
        expectClientError(await t.app.inject({ method: 'GET', url: '/auth/me', headers }));
      }),
      { numRuns: 200 },
    );
  });

  it('credential creation with the admin token and arbitrary JSON bodies', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          type: fc.oneof(fc.string({ maxLength: 70 }), fc.jsonValue()),
          expires_in_days: fc.oneof(fc.integer(), fc.double(), fc.constant(null), fc.string()),
          scopes: fc.oneof(fc.array(fc.string({ maxLength: 10 })), fc.jsonValue()),
          permissions: fc.oneof(fc.array(fc.array(fc.string({ maxLength: 20 }), { maxLength: 3 })), fc.jsonValue()),
        }, { requiredKeys: [] }),
        async (body) => {
          const res = await t.app.inject({
            method: 'POST',
            url: '/auth/clients/fuzz/credentials',
            headers: { 'x-admin-token': t.adminToken, 'content-type': 'application/json' },
            payload: JSON.stringify(body),
          });
          expectClientError(res);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('NUL characters and deep nesting reach the auth service only as 4xx', () => {
  const fields = ['grant_type', 'client_id', 'client_secret', 'refresh_token', 'scope', 'token'] as const;

  it('POST /auth/token, /revoke and /introspect with a NUL in any form or JSON field', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/auth/token', '/auth/revoke', '/auth/introspect'), fc.dictionary(fc.constantFrom(...fields), nulish), fc.constantFrom(...fields), withNul, fc.boolean(), async (url, form, field, poisoned, asJson) => {
        const body = { ...form, [field]: poisoned };
        const res = await t.app.inject({
          method: 'POST',
          url,
          headers: { 'content-type': asJson ? 'application/json' : 'application/x-www-form-urlencoded' },
          payload: asJson ? JSON.stringify(body) : new URLSearchParams(body).toString(),
        });
        expectRefused(res);
      }),
      { numRuns: 200 },
    );
  });

  it('HTTP Basic credentials with a NUL in the client id or the secret', async () => {
    await fc.assert(
      fc.asyncProperty(nulish, nulish, fc.boolean(), async (id, secret, encode) => {
        fc.pre(`${id}${secret}`.includes('\u0000'));
        const pair = encode ? `${encodeURIComponent(id)}:${encodeURIComponent(secret)}` : `${id}:${secret}`;
        const res = await t.app.inject({
          method: 'POST',
          url: '/auth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(pair).toString('base64')}` },
          payload: 'grant_type=client_credentials',
        });
        expectRefused(res);
        expect([400, 401]).toContain(res.statusCode);
      }),
      { numRuns: 150 },
    );
  });

  it('credential endpoints with NULs in ids, bodies and bearer tokens, and deeply nested bodies', async () => {
    const body = fc.oneof(jsonWithNul.map((v) => JSON.stringify(v)), fc.record({ type: nulish, scopes: fc.array(nulish, { maxLength: 3 }) }).map((v) => JSON.stringify(poison(v, 0))), deepJson);
    await fc.assert(
      fc.asyncProperty(nulish, body, withNul, async (id, payload, bearer) => {
        const url = `/auth/clients/${encodeURIComponent(id || 'x')}/credentials`;
        const admin = { 'x-admin-token': t.adminToken, 'content-type': 'application/json' };
        expectRefused(await t.app.inject({ method: 'POST', url, headers: admin, payload }));
        expectRefused(await t.app.inject({ method: 'GET', url: `/auth/clients/${encodeURIComponent(`${id}\u0000`)}/credentials`, headers: admin }));
        expectRefused(await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${bearer}` } }));
      }),
      { numRuns: 150 },
    );
  });
});
