/**
 * A credential narrowed by permissions sees only the upload contracts it could have negotiated
 * itself: those made under permissions within its own (core/authz `mayAccessOwned`). The identity's
 * other contracts — their plan, sampled values, writes and commit — are 404, like an unknown id.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';

let t: TestApp;
let alice: TestUser; // owner of sales, unnarrowed
let ordersWriter: TestUser; // alice narrowed to [sales.orders.*, writer]
let salesWriter: TestUser; // alice narrowed to [sales.*, writer] (wider)
let ordersReader: TestUser; // alice narrowed to [sales.orders.*, reader] (lower role)
let hrWriter: TestUser; // alice narrowed to [sales.hr.*, writer] (beside)

const C = '/upload/v2/contracts';
const PEOPLE = 'name,salary\nann,123456\nbob,98765\n';
const ORDERS = 'id,amount\n1,10.50\n2,7.25\n';

beforeAll(async () => {
  t = await createTestApp();
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
  [ordersWriter, salesWriter, ordersReader, hrWriter] = await Promise.all(
    (
      [
        ['sales.orders.*', 'writer'],
        ['sales.*', 'writer'],
        ['sales.orders.*', 'reader'],
        ['sales.hr.*', 'writer'],
      ] as const
    ).map((pair) => signIn(t.app, t.adminToken, 'alice', { permissions: [pair] })),
  );
});
afterAll(async () => t.close());

async function negotiate(user: TestUser, destination: string, name: string, content: string) {
  const body = await multipartBody({ contract: { destination, schema: { mode: 'auto' } }, samples: [{ name, content }] });
  const res = await t.app.inject({ method: 'POST', url: C, headers: { ...body.headers, authorization: `Bearer ${user.token}` }, payload: body.payload });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { contract_id: string; schema_fingerprint: string; values: Record<string, unknown> };
}

const write = (user: TestUser, id: string, name: string, content: string) =>
  t.app.inject({ method: 'POST', url: `${C}/${id}/data`, headers: { authorization: `Bearer ${user.token}`, 'x-file-name': name, 'content-type': 'text/csv' }, payload: content });

const commit = (user: TestUser, id: string, key?: string) =>
  t.app.inject({ method: 'POST', url: `${C}/${id}/commit`, headers: { authorization: `Bearer ${user.token}`, ...(key ? { 'idempotency-key': key } : {}) } });

/** Every contract endpoint's answer for a caller that may not see the contract. */
async function expectHidden(user: TestUser, id: string, fingerprint: string, file: { name: string; content: string }) {
  const get = await user.request('GET', `${C}/${id}`);
  expect(get.statusCode).toBe(404);
  expect(get.json().code).toBe('CONTRACT_NOT_FOUND');
  expect(get.body).not.toContain('123456');
  expect((await user.request('PATCH', `${C}/${id}`, { columns: { amount: { ignore: true } } })).statusCode).toBe(404);
  expect((await user.request('PUT', `${C}/${id}/accept`, { schema_fingerprint: fingerprint })).statusCode).toBe(404);
  expect((await write(user, id, file.name, file.content)).statusCode).toBe(404);
  expect((await commit(user, id)).statusCode).toBe(404);
  expect((await commit(user, id, `hidden-${crypto.randomUUID()}`)).statusCode).toBe(404);
  expect((await user.request('DELETE', `${C}/${id}`)).statusCode).toBe(404);
}

describe('upload contracts of a narrowed credential', () => {
  it("hides the identity's unnarrowed contracts, their sampled values and plan", async () => {
    const wide = await negotiate(alice, 'sales.hr.people', 'people.csv', PEOPLE);
    expect(JSON.stringify(wide.values)).toContain('123456');
    for (const narrowed of [ordersWriter, salesWriter, hrWriter]) await expectHidden(narrowed, wide.contract_id, wide.schema_fingerprint, { name: 'people.csv', content: PEOPLE });
    expect((await alice.request('GET', `${C}/${wide.contract_id}`)).statusCode).toBe(200);
  });

  it('will not let a narrowed credential write to or commit a contract an unnarrowed one negotiated', async () => {
    const wide = await negotiate(alice, 'sales.orders.daily', 'orders.csv', ORDERS);
    await alice.request('PUT', `${C}/${wide.contract_id}/accept`, { schema_fingerprint: wide.schema_fingerprint });
    expect((await write(alice, wide.contract_id, 'orders.csv', ORDERS)).statusCode).toBe(200);
    await expectHidden(ordersWriter, wide.contract_id, wide.schema_fingerprint, { name: 'orders.csv', content: ORDERS });
    const done = await commit(alice, wide.contract_id);
    expect(done.statusCode, done.body).toBe(200);
  });

  it('shows a narrowed contract to itself, to unnarrowed and to wider credentials, and to no narrower or other one', async () => {
    const own = await negotiate(ordersWriter, 'sales.orders.weekly', 'orders.csv', ORDERS);
    for (const user of [ordersWriter, alice, salesWriter]) {
      const res = await user.request('GET', `${C}/${own.contract_id}`);
      expect(res.statusCode).toBe(200);
      expect(res.json().values).toMatchObject({ id: '1' });
    }
    for (const user of [ordersReader, hrWriter]) await expectHidden(user, own.contract_id, own.schema_fingerprint, { name: 'orders.csv', content: ORDERS });
    expect((await ordersWriter.request('PATCH', `${C}/${own.contract_id}`, { columns: { amount: { type: 'DOUBLE' } } })).statusCode).toBe(200);
    const fingerprint = (await ordersWriter.request('GET', `${C}/${own.contract_id}`)).json().schema_fingerprint;
    expect((await ordersWriter.request('PUT', `${C}/${own.contract_id}/accept`, { schema_fingerprint: fingerprint })).statusCode).toBe(200);
    expect((await write(ordersWriter, own.contract_id, 'orders.csv', ORDERS)).statusCode).toBe(200);
    const done = await commit(ordersWriter, own.contract_id, 'narrowed-commit');
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toMatchObject({ state: 'committed', rows_written: 2 });
  });

  it('counts contracts from before migration 0010 as negotiated unnarrowed', async () => {
    await sql`INSERT INTO upload_contracts (contract_id, owner, workspace, collection, dataset, requested_mode, mode, state, format, files, overrides, plan, issues, sample_values, target, schema_fingerprint, expires_at)
      VALUES ('ctr_before_0010', 'alice', 'sales', 'hr', 'old', 'auto', 'infer', 'proposed', '{}', '[]', '{}', '[]', '[]', '{"salary":"123456"}', '[]', 'sha256:x', now() + interval '1 day')`.execute(t.db.kysely);
    expect((await alice.request('GET', `${C}/ctr_before_0010`)).statusCode).toBe(200);
    await expectHidden(salesWriter, 'ctr_before_0010', 'sha256:x', { name: 'people.csv', content: PEOPLE });
  });

  it('lets a narrowed credential abandon its own contract', async () => {
    const own = await negotiate(ordersWriter, 'sales.orders.monthly', 'orders.csv', ORDERS);
    expect((await ordersReader.request('DELETE', `${C}/${own.contract_id}`)).statusCode).toBe(404);
    expect((await ordersWriter.request('DELETE', `${C}/${own.contract_id}`)).statusCode).toBe(204);
  });
});
