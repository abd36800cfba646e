/**
 * What the services keep of the reads every request makes (docs/auth.md, "Performance and caching"):
 * a change is seen at once by the server that made it, and by another server within
 * KEPT_READ_TTL_MS. On PostgreSQL the second server has its own connection pool, as another process
 * would; on PGlite (one process by construction) it shares the database, and sees changes at once.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { migrate, openDatabase, type Db } from '../src/core/db/index.ts';
import { KEPT_READ_TTL_MS } from '../src/core/kept.ts';
import { createWorkspace, signIn, type TestUser } from './clients.ts';
import { createPostgresDatabaseUrl, createTestApp, TEST_DATABASE_URL, type TestApp } from './harness.ts';
import { multipartBody } from './multipart.ts';
import { within } from './async.ts';

const BOUND_MS = KEPT_READ_TTL_MS + 1_000; // the bound plus slack for a loaded machine

let t: TestApp;
let a: FastifyInstance;
let b: FastifyInstance;
let alice: TestUser;
let bob: TestUser;
const own: { dbs: Db[]; drop?: () => Promise<void> } = { dbs: [] };

beforeAll(async () => {
  let dbs: Partial<{ a: Db; b: Db }> = {};
  if (TEST_DATABASE_URL) {
    const { url, drop } = await createPostgresDatabaseUrl();
    own.drop = drop;
    own.dbs = [await openDatabase({ databaseUrl: url }), await openDatabase({ databaseUrl: url })];
    await migrate(own.dbs[0]);
    dbs = { a: own.dbs[0], b: own.dbs[1] };
  }
  t = await createTestApp(dbs.a ? { db: dbs.a } : {});
  a = t.app;
  b = await buildApp({ ...t.deps, db: dbs.b ?? t.deps.db }, { workers: false });
  await b.ready();
  [alice, bob] = await Promise.all(['alice', 'bob'].map((id) => signIn(a, t.adminToken, id)));
  await createWorkspace(alice, 'kept', { bob: 'reader' });
});
afterAll(async () => {
  await b?.close();
  await t?.close();
  for (const db of own.dbs) await db.close();
  await own.drop?.();
});

const on = (app: FastifyInstance, user: TestUser, method: 'GET' | 'DELETE', url: string) => app.inject({ method, url, headers: { authorization: `Bearer ${user.token}` } });


it('a deleted policy: its grant is gone at once here, and within the bound on the other server', async () => {
  const listed = await on(a, alice, 'GET', '/policy/v1/access/workspace/kept');
  const policy = listed.json().policies.find((p: { principal: { identity: string } }) => p.principal.identity === 'bob');
  const url = `/policy/v1/access/workspace/kept/policies/${policy.policy_id}`;
  for (const app of [a, b]) expect((await on(app, bob, 'GET', url)).statusCode).toBe(200);
  expect((await on(a, alice, 'DELETE', url)).statusCode).toBe(200);
  expect((await on(a, bob, 'GET', url)).statusCode).toBe(403);
  await within(BOUND_MS, async () => (await on(b, bob, 'GET', url)).statusCode === 403);
});

it("a new account: the member's billing account and account list show it at once here, and within the bound on the other server", async () => {
  const carol = await signIn(a, t.adminToken, 'carol');
  for (const app of [a, b]) {
    expect((await on(app, carol, 'GET', '/auth/me')).json().billing_account).toBeNull();
    expect((await on(app, carol, 'GET', '/control/v1/accounts')).json()).toEqual([]);
  }
  const created = await carol.request('POST', '/billing/v1/accounts', { name: 'Carol' });
  expect(created.statusCode).toBe(201);
  const accountId = created.json().account_id;
  expect((await on(a, carol, 'GET', '/auth/me')).json().billing_account).toBe(accountId);
  expect((await on(a, carol, 'GET', '/control/v1/accounts')).json()).toHaveLength(1);
  await within(BOUND_MS, async () => (await on(b, carol, 'GET', '/auth/me')).json().billing_account === accountId);
  await within(BOUND_MS, async () => (await on(b, carol, 'GET', '/control/v1/accounts')).json().length === 1);
});

describe('an upload', () => {
  let contractId: string;
  beforeAll(async () => {
    const body = await multipartBody({ contract: { destination: 'kept.raw.orders', schema: { mode: 'infer' } }, samples: [{ name: 'o.csv', content: 'id,amount\n1,2\n' }] });
    const negotiated = await a.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload });
    expect(negotiated.statusCode).toBe(201);
    contractId = negotiated.json().contract_id;
    if (negotiated.json().state === 'proposed') {
      expect((await alice.request('PUT', `/upload/v2/contracts/${contractId}/accept`, { schema_fingerprint: negotiated.json().schema_fingerprint })).statusCode).toBe(200);
    }
    const written = await a.inject({ method: 'POST', url: `/upload/v2/contracts/${contractId}/data`, headers: { authorization: `Bearer ${alice.token}`, 'x-file-name': 'o.csv', 'content-type': 'text/csv' }, payload: 'id,amount\n1,2\n' });
    expect(written.statusCode).toBe(200);
    const committed = await a.inject({ method: 'POST', url: `/upload/v2/contracts/${contractId}/commit`, headers: { authorization: `Bearer ${alice.token}`, 'idempotency-key': 'kept-1' } });
    expect(committed.statusCode, committed.body).toBe(200);
  });

  it('a new dataset is in the service document at once here, within the bound on the other server; a dropped one leaves the same way', async () => {
    const listed = async (app: FastifyInstance) => ((await on(app, alice, 'GET', '/odata/api/v4/')).json().value as { name: string }[]).some((e) => e.name === 'kept__raw__orders');
    expect(await listed(a)).toBe(true);
    await within(BOUND_MS, () => listed(b));
    await a.lakeport.catalog.dropDataset({ workspace: 'kept', collection: 'raw', dataset: 'orders' }, 'alice');
    expect(await listed(a)).toBe(false);
    await within(BOUND_MS, async () => !(await listed(b)));
  });

  it('an abandoned committed contract is gone at once here, and within the bound on the other server; nobody else ever reads it', async () => {
    const url = `/upload/v2/contracts/${contractId}`;
    for (const app of [a, b]) {
      expect((await on(app, alice, 'GET', url)).json()).toMatchObject({ state: 'committed' });
      expect((await on(app, bob, 'GET', url)).statusCode).toBe(404);
    }
    expect((await on(a, alice, 'DELETE', url)).statusCode).toBe(204);
    expect((await on(a, alice, 'GET', url)).statusCode).toBe(404);
    await within(BOUND_MS, async () => (await on(b, alice, 'GET', url)).statusCode === 404);
  });
});

it('a finished job is answered from memory, to its owner only', async () => {
  const submitted = await alice.request('POST', '/jobs/api/v1/jobs', { sql_text: 'SELECT 1 AS one' });
  expect(submitted.statusCode).toBe(201);
  const url = `/jobs/api/v1/jobs/${submitted.json().execution_id}/status`;
  expect((await on(a, alice, 'GET', `${url}?wait=30`)).json().status).toBe('succeeded');
  for (const app of [a, b]) {
    for (let i = 0; i < 2; i++) {
      expect((await on(app, alice, 'GET', url)).json().status).toBe('succeeded');
      expect((await on(app, bob, 'GET', url)).statusCode).toBe(404);
    }
  }
});
