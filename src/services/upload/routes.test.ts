import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';

let t: TestApp;
let alice: TestUser; // owner of sales
let rita: TestUser; // reader on sales
let eve: TestUser; // another tenant

beforeAll(async () => {
  t = await createTestApp();
  [alice, rita, eve] = await Promise.all(['alice', 'rita', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  await createWorkspace(alice, 'sales', { rita: 'reader' });
  await createWorkspace(eve, 'ops');
});
afterAll(async () => t.close());

async function negotiate(user: TestUser, contract: unknown, samples: { name: string; content: string | Buffer }[]) {
  const body = await multipartBody({ contract, samples });
  return t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${user.token}` }, payload: body.payload });
}

async function write(user: TestUser, id: string, name: string, content: string | Buffer, type = 'text/csv') {
  return t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${id}/data`, headers: { authorization: `Bearer ${user.token}`, 'x-file-name': name, 'content-type': type }, payload: content });
}

const ORDERS = 'id,amount,placed_at,ip\n1,10.50,2024-03-01 10:00:00+02,10.0.0.1\n2,7.25,2024-03-02 11:00:00+00,10.0.0.2\n';

describe('the upload protocol', () => {
  it('infers, proposes, accepts, writes and commits one snapshot', async () => {
    const res = await negotiate(alice, { destination: 'sales.orders.daily', schema: { mode: 'auto' } }, [{ name: 'orders.csv', content: ORDERS }]);
    expect(res.statusCode).toBe(201);
    const contract = res.json();
    expect(contract).toMatchObject({ state: 'proposed', mode: 'infer', requested_mode: 'auto', destination: 'sales.orders.daily', dataset_exists: false });
    expect(contract.plan.map((p: { column: string; target_type: string }) => [p.column, p.target_type])).toEqual([
      ['id', 'BIGINT'],
      ['amount', 'DECIMAL(18,2)'],
      ['placed_at', 'TIMESTAMP WITH TIME ZONE'],
      ['ip', 'IPV4'],
    ]);
    expect(contract.values).toMatchObject({ id: '1', ip: '10.0.0.1' });
    expect(contract.schema_fingerprint).toMatch(/^sha256:/);

    const early = await write(alice, contract.contract_id, 'orders.csv', ORDERS);
    expect(early.statusCode).toBe(409);
    expect(early.json().code).toBe('CONTRACT_NOT_ACCEPTED');

    const wrong = await alice.request('PUT', `/upload/v2/contracts/${contract.contract_id}/accept`, { schema_fingerprint: 'sha256:nope' });
    expect(wrong.statusCode).toBe(409);
    expect(wrong.json().code).toBe('FINGERPRINT_MISMATCH');
    expect((await alice.request('GET', `/upload/v2/contracts/${contract.contract_id}`)).json().state).toBe('proposed');

    const accepted = await alice.request('PUT', `/upload/v2/contracts/${contract.contract_id}/accept`, { schema_fingerprint: contract.schema_fingerprint });
    expect(accepted.statusCode).toBe(200);
    expect(accepted.json().state).toBe('accepted');

    const written = await write(alice, contract.contract_id, 'orders.csv', ORDERS);
    expect(written.statusCode).toBe(200);
    expect(written.json().written[0]).toMatchObject({ file: 'orders.csv', format: 'csv', rows: 2 });

    // Nothing is visible before commit.
    expect(await t.app.lakeport.catalog.findDataset({ workspace: 'sales', collection: 'orders', dataset: 'daily' })).toBeUndefined();

    const commit = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contract.contract_id}/commit`, headers: { authorization: `Bearer ${alice.token}`, 'idempotency-key': 'k-1' } });
    expect(commit.statusCode, commit.body).toBe(200);
    expect(commit.json()).toMatchObject({ state: 'committed', rows_written: 2, dataset: 'sales.orders.daily' });
    const again = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contract.contract_id}/commit`, headers: { authorization: `Bearer ${alice.token}`, 'idempotency-key': 'k-1' } });
    expect(again.json()).toEqual(commit.json());
    const dataset = await t.app.lakeport.catalog.getDataset({ workspace: 'sales', collection: 'orders', dataset: 'daily' });
    expect(dataset.columns.find((c) => c.name === 'ip')).toMatchObject({ type: 'VARCHAR', logical_type: 'ipv4', source_type: 'VARCHAR' });
    const snapshots = await t.app.lakeport.catalog.listSnapshots(dataset.dataset_id);
    expect(snapshots).toHaveLength(1);
    expect(snapshots[0]).toMatchObject({ total_records: 2, operation: 'create' });
  });

  it('refuses readers and other tenants at negotiation', async () => {
    expect((await negotiate(rita, { destination: 'sales.orders.daily' }, [{ name: 'a.csv', content: ORDERS }])).statusCode).toBe(403);
    expect((await negotiate(eve, { destination: 'sales.orders.daily' }, [{ name: 'a.csv', content: ORDERS }])).statusCode).toBe(403);
  });
});
