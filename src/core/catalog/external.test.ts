/** Replacing a workspace's external stubs: add, keep (same ids), update, remove, conflicts, emptied collections, one transaction. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, TEST_DATABASE_URL, type TestDb } from '../../../test/harness.ts';
import { Catalog, type ExternalDatasetEntry } from './index.ts';

const stub = (collection: string, name: string, source = `${collection}.${name}`): ExternalDatasetEntry => ({
  collection,
  name,
  description: `Listed from ${source}`,
  properties: { external: { namespace: [collection], name } },
});

describe(`external stubs (${TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestDb;
  let catalog: Catalog;
  let counter = 0;

  beforeAll(async () => {
    t = await createTestDb();
    catalog = new Catalog(t.db);
  });
  afterAll(async () => t.dispose());

  async function workspace() {
    const ws = `ext_${++counter}`;
    await catalog.claimNamespace(ws, 'acct_1');
    return ws;
  }
  const listed = async (ws: string) => (await catalog.listDatasets(ws)).map((d) => `${d.collection}.${d.name}:${d.kind}`);

  it('adds new stubs, keeps listed ones with their ids, removes the rest and the collections they leave empty', async () => {
    const ws = await workspace();
    const first = await catalog.replaceExternalDatasets(ws, [stub('sales', 'orders'), stub('sales', 'items'), stub('hr', 'staff')], 'alice');
    expect(first).toMatchObject({ kept: 0, updated: 0, removed: [], conflicts: [] });
    expect(first.added.map((r) => `${r.collection}.${r.dataset}`)).toEqual(['sales.orders', 'sales.items', 'hr.staff']);
    const orders = await catalog.getDataset({ workspace: ws, collection: 'sales', dataset: 'orders' });
    expect(orders).toMatchObject({ kind: 'external', columns: [], current_snapshot_id: null, description: 'Listed from sales.orders', created_by: 'alice' });

    const second = await catalog.replaceExternalDatasets(ws, [stub('sales', 'orders'), stub('sales', 'items', 'Sales.Items'), stub('fin', 'ledger')], 'bob');
    expect(second.added.map((r) => r.dataset)).toEqual(['ledger']);
    expect(second.removed.map((r) => `${r.collection}.${r.dataset}`)).toEqual(['hr.staff']);
    expect(second).toMatchObject({ kept: 2, updated: 1 });
    expect((await catalog.getDataset({ workspace: ws, collection: 'sales', dataset: 'orders' })).dataset_id).toBe(orders.dataset_id);
    expect((await catalog.getDataset({ workspace: ws, collection: 'sales', dataset: 'items' })).description).toBe('Listed from Sales.Items');
    expect((await catalog.listCollections(ws)).map((c) => c.name)).toEqual(['fin', 'sales']);
    expect(await listed(ws)).toEqual(['fin.ledger:external', 'sales.items:external', 'sales.orders:external']);

    await catalog.replaceExternalDatasets(ws, [], 'bob');
    expect(await listed(ws)).toEqual([]);
    expect(await catalog.listCollections(ws)).toEqual([]);
  });

  it('never touches datasets of other kinds: a listed name one holds is a conflict, its collection stays', async () => {
    const ws = await workspace();
    await catalog.createDataset({ workspace: ws, collection: 'sales', dataset: 'orders' }, { columns: [{ name: 'id', type: 'BIGINT', nullable: false }] }, 'alice');
    const result = await catalog.replaceExternalDatasets(ws, [stub('sales', 'orders'), stub('sales', 'returns')], 'alice');
    expect(result.conflicts).toEqual([{ workspace: ws, collection: 'sales', dataset: 'orders' }]);
    expect(await listed(ws)).toEqual(['sales.orders:table', 'sales.returns:external']);
    await catalog.replaceExternalDatasets(ws, [], 'alice');
    expect(await listed(ws)).toEqual(['sales.orders:table']);
    expect((await catalog.listCollections(ws)).map((c) => c.name)).toEqual(['sales']);
  });

  it('is one transaction: a failure in `within` leaves the stubs as they were', async () => {
    const ws = await workspace();
    await catalog.replaceExternalDatasets(ws, [stub('sales', 'orders')], 'alice');
    const failing = catalog.replaceExternalDatasets(ws, [stub('hr', 'staff')], 'alice', async () => {
      throw new Error('the binding changed');
    });
    await expect(failing).rejects.toThrow('the binding changed');
    expect(await listed(ws)).toEqual(['sales.orders:external']);
    expect((await catalog.listCollections(ws)).map((c) => c.name)).toEqual(['sales']);
  });

  it('refuses names the catalog cannot hold, and a missing namespace', async () => {
    const ws = await workspace();
    await expect(catalog.replaceExternalDatasets(ws, [stub('sales', 'bad-name')], 'alice')).rejects.toMatchObject({ status: 400, code: 'INVALID_NAME' });
    await expect(catalog.replaceExternalDatasets('no_such_ws', [], 'alice')).rejects.toMatchObject({ status: 404, code: 'NAMESPACE_NOT_FOUND' });
  });
});
