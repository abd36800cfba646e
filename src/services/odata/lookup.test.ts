import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { seedSnapshot } from '../../../test/seed.ts';
import { Authorizer } from '../../core/authz/index.ts';
import { WorkspaceRepo } from '../accounts/index.ts';
import { PolicyStore } from '../policy/index.ts';
import { DatasetAccessLookup } from './lookup.ts';

const REF = { workspace: 'look', collection: 'sales', dataset: 'orders' };

describe('DatasetAccessLookup', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await createTestApp({}, { workers: false });
    owner = await signIn(t.app, t.adminToken, 'olive');
    await createWorkspace(owner, 'look');
    await seedSnapshot(t, REF, [{ name: 'n', type: 'BIGINT', nullable: false }], 'SELECT 1 AS n');
  });
  afterAll(async () => t?.close());

  /** The owners' real interfaces, with a change count of the test's choosing. */
  const sources = (changes: (() => number) | undefined) => ({ authz: new Authorizer(new PolicyStore(t.db), new WorkspaceRepo(t.db)), catalog: t.app.lakeport.catalog, changes });

  it("finds the caller's grants, whether the workspace is active, and the dataset", async () => {
    const lookup = new DatasetAccessLookup(sources(t.db.changes));
    const access = await lookup.find('olive', REF);
    expect(access.standing).toEqual({ workspace: 'look', grants: [{ pattern: 'look.*', role: 'owner' }], deleted: false });
    expect(access.dataset).toMatchObject({ workspace: 'look', collection: 'sales', name: 'orders' });
    expect(await lookup.find('olive', { ...REF, dataset: 'missing' })).toMatchObject({ dataset: undefined, standing: { deleted: false } });
    expect(await lookup.find('nobody', REF)).toMatchObject({ standing: { grants: [] } });
  });

  const grantReader = (identity: string, dataset: string) =>
    owner.request('POST', '/policy/v1/access/workspace/look/policies', { principal: { identity, type: 'user' }, role: 'reader', pattern: `look.sales.${dataset}` });

  it('answers again from memory while nothing was written, and reads afresh after any write', async () => {
    // The real database, with a change count the test moves itself.
    let changes = 0;
    const lookup = new DatasetAccessLookup(sources(() => changes));
    const first = await lookup.find('rita', REF);
    expect(first.standing.grants).toEqual([]);
    expect((await grantReader('rita', 'orders')).statusCode).toBe(201);
    // The count stood still, so the answer is the one kept (the database was not asked).
    expect(await lookup.find('rita', REF)).toBe(first);
    changes++;
    expect((await lookup.find('rita', REF)).standing.grants).toEqual([{ pattern: 'look.sales.orders', role: 'reader' }]);
  });

  it('reads every time where other processes may write', async () => {
    const lookup = new DatasetAccessLookup(sources(undefined));
    expect((await lookup.find('sam', REF)).standing.grants).toEqual([]);
    expect((await grantReader('sam', 'orders')).statusCode).toBe(201);
    expect((await lookup.find('sam', REF)).standing.grants).toEqual([{ pattern: 'look.sales.orders', role: 'reader' }]);
  });
});
