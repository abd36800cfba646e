// A soft-deleted workspace, service by service: every read and write in it answers 409
// WORKSPACE_DELETED (decided once, in core/authz's Authorizer); a caller without a grant there still
// gets its 403; reading the workspace's record and restoring it work; after the restore all works again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';
import { seedSnapshot } from '../../../test/seed.ts';

const J = '/jobs/api/v1';
const P = '/policy/v1/access/workspace/doomed';
const ORDERS = { workspace: 'doomed', collection: 'sales', dataset: 'orders' };
const CSV = 'id,amount\n1,10.50\n2,7.25\n';
const S3 = "TYPE 's3_access_key', ACCESS_KEY_ID 'AKIAIOSFODNN7EXAMPLE', SECRET_ACCESS_KEY :sk, SCOPE 's3://lake-bucket/raw/'";
const SK = { sk: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

let t: TestApp;
let alice: TestUser; // owner of doomed (and billing admin of its account)
let rita: TestUser; // reader on doomed.sales.*
let eve: TestUser; // another tenant
let ritaPolicy: string;
let job: string; // alice's job over doomed, finished before the delete
let contract: string; // alice's accepted upload into doomed, written before the delete
let account: string; // doomed's billing account

async function negotiate(user: TestUser, destination: string) {
  const body = await multipartBody({ contract: { destination, schema: { mode: 'auto' } }, samples: [{ name: 'orders.csv', content: CSV }] });
  return t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${user.token}` }, payload: body.payload });
}
const write = (user: TestUser, id: string) =>
  t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${id}/data`, headers: { authorization: `Bearer ${user.token}`, 'x-file-name': 'orders.csv', 'content-type': 'text/csv' }, payload: CSV });
const commit = (user: TestUser, id: string) => user.request('POST', `/upload/v2/contracts/${id}/commit`, {});
const rows = (user: TestUser, path: string) => user.request('GET', `/odata/api/v4/${path}`);

/** A job run to its end: its final status. */
async function run(user: TestUser, sql: string, parameters?: Record<string, unknown>) {
  const submitted = await user.request('POST', `${J}/jobs`, { sql_text: sql, parameters });
  expect(submitted.statusCode, submitted.body).toBe(201);
  return (await user.request('GET', `${J}/jobs/${submitted.json().execution_id}/status?wait=30`)).json();
}

function expectDeleted(res: { statusCode: number; body: string; json(): any }) {
  expect(res.statusCode, res.body).toBe(409);
  expect(res.json().code).toBe('WORKSPACE_DELETED');
}

beforeAll(async () => {
  t = await createTestApp();
  [alice, rita, eve] = await Promise.all(['alice', 'rita', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  account = await createWorkspace(alice, 'doomed');
  await createWorkspace(eve, 'evesws');
  const grant = await alice.request('POST', `${P}/policies`, { principal: { identity: 'rita', type: 'user' }, role: 'reader', pattern: 'doomed.sales.*' });
  expect(grant.statusCode, grant.body).toBe(201);
  ritaPolicy = grant.json().policy_id;
  await seedSnapshot(t, ORDERS, [{ name: 'n', type: 'BIGINT', nullable: false }], 'SELECT i AS n FROM range(5) r(i)');

  const done = await run(alice, 'SELECT count(*) AS n FROM doomed.sales.orders');
  expect(done.status).toBe('succeeded');
  job = done.execution_id;
  const negotiated = await negotiate(alice, 'doomed.sales.daily');
  expect(negotiated.statusCode, negotiated.body).toBe(201);
  contract = negotiated.json().contract_id;
  expect((await alice.request('PUT', `/upload/v2/contracts/${contract}/accept`, { schema_fingerprint: negotiated.json().schema_fingerprint })).statusCode).toBe(200);
  expect((await write(alice, contract)).statusCode).toBe(200);

  const deleted = await alice.request('DELETE', '/billing/v1/workspaces/doomed');
  expect(deleted.statusCode, deleted.body).toBe(200);
  expect(deleted.json().state).toBe('deleted');
});
afterAll(async () => t?.close());

describe('a soft-deleted workspace', () => {
  it('upload: negotiate, write and commit answer 409 WORKSPACE_DELETED', async () => {
    expectDeleted(await negotiate(alice, 'doomed.sales.more'));
    expectDeleted(await write(alice, contract));
    expectDeleted(await commit(alice, contract));
    // Another tenant learns nothing: its 403 as for any workspace it holds nothing in.
    expect((await negotiate(eve, 'doomed.sales.more')).statusCode).toBe(403);
  });

  it('jobs: a query fails with WORKSPACE_DELETED at its place, /check says so, and kept results are refused', async () => {
    const failed = await run(rita, 'SELECT * FROM doomed.sales.orders');
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ code: 'WORKSPACE_DELETED', position: 14 });
    const checked = (await rita.request('POST', `${J}/check`, { sql_text: 'SELECT * FROM doomed.sales.orders' })).json();
    expect(checked).toMatchObject({ ok: false, error: { code: 'WORKSPACE_DELETED' } });
    expectDeleted(await alice.request('GET', `${J}/jobs/${job}/results`));
    expectDeleted(await alice.request('GET', `${J}/jobs/${job}/download?file_format=csv`));
    // A reader without a grant there: not found, as for any dataset it may not read.
    expect((await run(eve, 'SELECT * FROM doomed.sales.orders')).error).toMatchObject({ code: 'DATASET_NOT_FOUND' });
  });

  it('statements (secrets, grants, tags, ALTER WORKSPACE) answer 409 WORKSPACE_DELETED at the workspace', async () => {
    for (const [sql, parameters] of [
      [`CREATE SECRET x IN doomed (${S3})`, SK],
      ["GRANT reader ON doomed.* TO 'carol'", undefined],
      ['CREATE TAG v1 ON doomed.sales.orders', undefined],
      ['ALTER WORKSPACE doomed SET deletion_protection TO ON', undefined],
    ] as const) {
      const res = await alice.request('POST', `${J}/jobs`, { sql_text: sql, parameters });
      expectDeleted(res);
      const checked = (await alice.request('POST', `${J}/check`, { sql_text: sql, parameters })).json();
      expect(checked, sql).toMatchObject({ ok: false, error: { code: 'WORKSPACE_DELETED' } });
    }
  });

  it('OData: rows, $count, $metadata and entity-set addresses answer 409; the service document leaves it out', async () => {
    for (const path of ['doomed/sales/orders', 'doomed/sales/orders/$count', 'doomed/sales/orders/$metadata', 'doomed__sales__orders']) {
      expectDeleted(await rows(rita, path));
    }
    expect((await rows(rita, '')).json().value).toEqual([]);
    expect((await rows(alice, '$metadata')).body).not.toMatch(/doomed__sales__orders/);
    expect((await rows(eve, 'doomed/sales/orders')).statusCode).toBe(403);
  });

  it('policy: list, get, create and the effective-permissions CSV answer 409', async () => {
    expectDeleted(await alice.request('GET', P));
    expectDeleted(await alice.request('GET', `${P}/policies/${ritaPolicy}`));
    expectDeleted(await rita.request('GET', `${P}/policies/${ritaPolicy}`)); // a grantee reading its own grant
    expectDeleted(await alice.request('POST', `${P}/policies`, { principal: { identity: 'carol', type: 'user' }, role: 'reader', pattern: 'doomed.*' }));
    expectDeleted(await alice.request('DELETE', `${P}/policies/${ritaPolicy}`));
    expectDeleted(await alice.request('GET', `${P}/effective-permissions.csv`));
    expect((await eve.request('GET', P)).statusCode).toBe(403);
  });

  it('control: the guard properties answer 409; the record stays readable to its owner, who restores it', async () => {
    expectDeleted(await alice.request('GET', '/control/v1/workspaces/doomed/properties'));
    const listed = (await alice.request('GET', `/billing/v1/accounts/${account}/workspaces`)).json();
    expect(listed.find((w: { name: string }) => w.name === 'doomed')?.state).toBe('deleted');
  });
});

describe('after the restore', () => {
  beforeAll(async () => {
    const restored = await alice.request('POST', '/billing/v1/workspaces/doomed/restore');
    expect(restored.statusCode, restored.body).toBe(200);
    expect(restored.json().state).toBe('active');
  });

  it('every service works again', async () => {
    // upload
    expect((await negotiate(alice, 'doomed.sales.more')).statusCode).toBe(201);
    const committed = await commit(alice, contract);
    expect(committed.statusCode, committed.body).toBe(200);
    // jobs
    expect((await run(rita, 'SELECT count(*) AS n FROM doomed.sales.orders')).status).toBe('succeeded');
    expect((await alice.request('GET', `${J}/jobs/${job}/results`)).json()).toMatchObject({ data: [[5]] });
    expect((await alice.request('POST', `${J}/jobs`, { sql_text: 'CREATE TAG v1 ON doomed.sales.orders' })).statusCode).toBe(201);
    // OData
    expect((await rows(rita, 'doomed/sales/orders')).json().value).toHaveLength(5);
    expect((await rows(rita, '')).json().value.map((s: { url: string }) => s.url)).toEqual(['doomed/sales/daily', 'doomed/sales/orders']);
    // policy and control
    expect((await alice.request('GET', P)).statusCode).toBe(200);
    expect((await rita.request('GET', `${P}/policies/${ritaPolicy}`)).statusCode).toBe(200);
    expect((await alice.request('GET', `${P}/effective-permissions.csv`)).body).toMatch(/doomed\.sales\.orders/);
    expect((await alice.request('GET', '/control/v1/workspaces/doomed/properties')).statusCode).toBe(200);
  });
});
