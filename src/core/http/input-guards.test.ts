/**
 * The HTTP edge refuses what no service can store or walk: NUL characters anywhere in a request
 * (PostgreSQL's text cannot hold them) and JSON nested deeper than MAX_JSON_DEPTH — as 4xx in
 * Lakeport's shapes, never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';
import { MAX_JSON_DEPTH } from './input-guards.ts';

let t: TestApp;
let alice: TestUser;
let account: string;
const N = 'a\u0000b';
const n = encodeURIComponent(N);

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  alice = await signIn(t.app, t.adminToken, 'alice');
  account = await createWorkspace(alice, 'sales');
});
afterAll(async () => t.close());

const auth = () => ({ authorization: `Bearer ${alice.token}` });
const json = () => ({ ...auth(), 'content-type': 'application/json' });

function expect422(res: { statusCode: number; body: string; json(): any }, loc: (string | number)[]) {
  expect(res.statusCode, res.body).toBe(422);
  expect(res.json()).toEqual({ detail: [{ loc, msg: expect.stringContaining('NUL'), type: 'string_nul' }] });
}

describe('NUL characters', () => {
  it.each([
    ['GET', `/billing/v1/accounts/${n}`, 'account_id'],
    ['GET', `/control/v1/accounts/${n}/members`, 'account_id'],
    ['GET', `/jobs/api/v1/jobs/${n}/status`, 'identifier'],
    ['DELETE', `/jobs/api/v1/variables/${n}`, 'name'],
    ['GET', `/upload/v2/contracts/${n}`, 'contract_id'],
    ['POST', `/upload/v2/contracts/${n}/commit`, 'contract_id'],
  ])('in a path parameter: %s %s', async (method, url, param) => {
    expect422(await t.app.inject({ method: method as 'GET', url, headers: auth() }), ['path', param]);
  });

  it('in a query value or name', async () => {
    expect422(await t.app.inject({ method: 'GET', url: `/jobs/api/v1/jobs/recent?filter=${n}`, headers: auth() }), ['query', 'filter']);
    expect422(await t.app.inject({ method: 'GET', url: `/jobs/api/v1/jobs/recent?filter=x&filter=${n}`, headers: auth() }), ['query', 'filter', 1]);
    expect422(await t.app.inject({ method: 'GET', url: `/jobs/api/v1/jobs/recent?${n}=1`, headers: auth() }), ['query', 'a\\u0000b']);
  });

  it('in a JSON body, at any depth, in values and keys', async () => {
    expect422(await t.app.inject({ method: 'POST', url: '/billing/v1/accounts', headers: json(), payload: JSON.stringify({ name: N }) }), ['body', 'name']);
    const members = { billing_account: account, members: [{ identity: 'alice', role: 'owner' }, { identity: N, role: 'reader' }] };
    expect422(await t.app.inject({ method: 'PUT', url: '/control/v1/workspaces/ops', headers: json(), payload: JSON.stringify(members) }), ['body', 'members', 1, 'identity']);
    expect422(await t.app.inject({ method: 'POST', url: '/jobs/api/v1/jobs', headers: json(), payload: JSON.stringify({ sql_text: 'SELECT :p', parameters: { p: N } }) }), ['body', 'parameters', 'p']);
    expect422(await t.app.inject({ method: 'POST', url: '/jobs/api/v1/jobs', headers: json(), payload: JSON.stringify({ sql_text: 'SELECT 1', parameters: { [N]: 1 } }) }), ['body', 'parameters', 'a\\u0000b']);
    expect422(await t.app.inject({ method: 'POST', url: '/policy/v1/access/workspace/sales/policies', headers: json(), payload: JSON.stringify({ principal: { identity: N }, role: 'reader', pattern: 'sales.*' }) }), ['body', 'principal', 'identity']);
  });

  it('in a header the service reads', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts/c_x/commit', headers: { ...auth(), 'idempotency-key': N } });
    expect422(res, ['header', 'idempotency-key']);
  });

  it('without authentication: the token endpoint, form and JSON', async () => {
    const form = await t.app.inject({ method: 'POST', url: '/auth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `grant_type=client_credentials&client_id=${n}&client_secret=x` });
    expect422(form, ['body', 'client_id']);
    const body = await t.app.inject({ method: 'POST', url: '/auth/token', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ grant_type: 'client_credentials', client_id: N, client_secret: 'x' }) });
    expect422(body, ['body', 'client_id']);
  });

  it('in credentials: 401, never 500', async () => {
    const basic = (user: string) => `Basic ${Buffer.from(`${user}:secret`).toString('base64')}`;
    const token = await t.app.inject({ method: 'POST', url: '/auth/token', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(N) }, payload: 'grant_type=client_credentials' });
    expect(token.statusCode, token.body).toBe(401);
    expect(token.json()).toMatchObject({ error: 'invalid_client' });
    const encoded = await t.app.inject({ method: 'POST', url: '/auth/token', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('a%00b') }, payload: 'grant_type=client_credentials' });
    expect(encoded.statusCode, encoded.body).toBe(401);
    for (const user of [N, 'alice\u0000', '\u0000']) {
      const odata = await t.app.inject({ method: 'GET', url: '/odata/api/v4', headers: { authorization: basic(user) } });
      expect(odata.statusCode, odata.body).toBe(401);
      expect(odata.json()).toMatchObject({ code: 'INVALID_CREDENTIALS' });
    }
    const bearer = await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${N}` } });
    expect(bearer.statusCode, bearer.body).toBe(401);
  });

  it('in upload sample names and the contract part', async () => {
    const contract = { destination: 'sales.a.b', schema: { mode: 'infer' } };
    const upload = async (parts: Parameters<typeof multipartBody>[0]) => {
      const body = await multipartBody(parts);
      return t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, ...auth() }, payload: body.payload });
    };
    const named = await upload({ contract, samples: [{ name: `f${N}.csv`, content: 'id\n1\n' }] });
    expect(named.statusCode, named.body).toBe(422);
    expect(named.json().detail[0]).toMatchObject({ loc: ['body', 'sample'], type: 'string_nul' });
    const inContract = await upload({ contract: { destination: 'sales.a.b', schema: { mode: 'infer' }, format: { null_string: N } }, samples: [{ name: 'f.csv', content: 'id\n1\n' }] });
    expect(inContract.statusCode, inContract.body).toBe(422);
    expect(inContract.json().detail[0]).toMatchObject({ loc: ['body', 'contract', 'format', 'null_string'], type: 'string_nul' });
  });
});

describe('deeply nested JSON', () => {
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it.each([
    ['POST', '/jobs/api/v1/jobs'],
    ['POST', '/billing/v1/accounts'],
    ['POST', '/policy/v1/access/workspace/sales/policies'],
    ['PUT', '/jobs/api/v1/variables/v'],
  ])('%s %s: refused before anything walks it', async (method, url) => {
    for (const payload of [nested(100_000), `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`, `{"x": ${nested(MAX_JSON_DEPTH)}}`]) {
      const res = await t.app.inject({ method: method as 'POST', url, headers: json(), payload });
      expect(res.statusCode, res.body.slice(0, 200)).toBe(422);
      expect(res.json()).toEqual({ detail: [{ loc: ['body'], msg: `JSON nested more than ${MAX_JSON_DEPTH} levels deep`, type: 'json_too_deep' }] });
    }
  });

  it('without authentication too, and strings that only look nested are fine', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/token', headers: { 'content-type': 'application/json' }, payload: nested(100_000) });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0].type).toBe('json_too_deep');
    const ok = await t.app.inject({ method: 'POST', url: '/jobs/api/v1/check', headers: json(), payload: JSON.stringify({ sql_text: `SELECT '${'['.repeat(100)}${'{'.repeat(100)}\\"' AS x` }) });
    expect(ok.statusCode, ok.body).toBe(200);
    const deepEnough = await t.app.inject({ method: 'PUT', url: '/jobs/api/v1/variables/v', headers: json(), payload: `{"type": "string", "value": "x", "extra": ${nested(MAX_JSON_DEPTH - 1)}}` });
    expect(deepEnough.statusCode, deepEnough.body).toBe(200);
  });

  it('a deeply nested contract part of an upload', async () => {
    const body = await multipartBody({ contract: `{"destination": "sales.a.b", "schema": ${nested(100_000)}}`, samples: [{ name: 'f.csv', content: 'id\n1\n' }] });
    const res = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, ...auth() }, payload: body.payload });
    expect(res.statusCode, res.body.slice(0, 200)).toBe(422);
    expect(res.json().detail[0]).toMatchObject({ loc: ['body', 'contract'], type: 'json_too_deep' });
  });
});
