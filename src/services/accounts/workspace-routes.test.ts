import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { Catalog } from '../../core/catalog/index.ts';

let t: TestApp;
let alice: TestUser; // billing_admin of acme
let bob: TestUser; // member of acme, admin on sales
let carol: TestUser; // no account
let eve: TestUser; // billing_admin of another account
let acme: string;
let evilCorp: string;
let catalog: Catalog;

const members = (list: [string, string][]) => list.map(([identity, role]) => ({ identity, role }));

beforeAll(async () => {
  t = await createTestApp();
  catalog = new Catalog(t.db);
  [alice, bob, carol, eve] = await Promise.all(['alice', 'bob', 'carol', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  acme = (await alice.request('POST', '/billing/v1/accounts', { name: 'Acme' })).json().account_id;
  evilCorp = (await eve.request('POST', '/billing/v1/accounts', { name: 'Evil' })).json().account_id;
  expect((await alice.request('POST', `/billing/v1/accounts/${acme}/members`, { identity: 'bob', email: 'bob@example.com', role: 'member' })).statusCode).toBe(201);
  expect((await bob.request('POST', `/billing/v1/accounts/${acme}/members/bob/accept`)).statusCode).toBe(200);
});
afterAll(async () => t.close());

async function createWorkspace(user: TestUser, name: string, account = acme, list: [string, string][] = [['alice', 'owner'], ['bob', 'admin']], prefix = '/control') {
  return user.request('PUT', `${prefix}/v1/workspaces/${name}`, { billing_account: account, members: members(list) });
}

describe('PUT /v1/workspaces/{name}', () => {
  it('creates namespace, record and genesis grants on /control, and answers 200', async () => {
    const res = await createWorkspace(alice, 'Sales');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: 'sales', billing_account: acme, state: 'active', deletion_protection: false, drop_protection: false, history_protection: false });
    expect(await catalog.findNamespace('sales')).toMatchObject({ billing_account: acme });
    const policies = (await alice.request('GET', '/policy/v1/access/workspace/sales')).json().policies;
    expect(policies.map((p: { principal: { identity: string }; role: string; pattern: string }) => [p.principal.identity, p.role, p.pattern]).sort()).toEqual([
      ['alice', 'owner', 'sales.*'],
      ['bob', 'admin', 'sales.*'],
    ]);
  });

  it('is idempotent: the same request again returns the existing record without a second genesis', async () => {
    expect((await createWorkspace(alice, 'repeated')).statusCode).toBe(200);
    const again = await createWorkspace(alice, 'repeated', acme, [['bob', 'admin'], ['alice', 'owner']]);
    expect(again.statusCode).toBe(200);
    expect(again.json().name).toBe('repeated');
    const policies = (await alice.request('GET', '/policy/v1/access/workspace/repeated')).json().policies;
    expect(policies).toHaveLength(2);
  });

  it('refuses different members or billing account with 409 and no genesis', async () => {
    expect((await createWorkspace(alice, 'taken')).statusCode).toBe(200);
    const res = await createWorkspace(alice, 'taken', acme, [['alice', 'owner']]);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('WORKSPACE_EXISTS');
    const policies = (await alice.request('GET', '/policy/v1/access/workspace/taken')).json().policies;
    expect(policies).toHaveLength(2);
  });

  it("refuses another account's PUT on a claimed name", async () => {
    expect((await createWorkspace(alice, 'claimed')).statusCode).toBe(200);
    const res = await createWorkspace(eve, 'claimed', evilCorp, [['eve', 'owner']]);
    expect(res.statusCode).toBe(409);
    // A namespace claimed without a record (step b failed for acme) is refused to others too.
    await catalog.claimNamespace('halfway', acme);
    const other = await createWorkspace(eve, 'halfway', evilCorp, [['eve', 'owner']]);
    expect(other.statusCode).toBe(409);
    expect(other.json().code).toBe('WORKSPACE_NAME_CLAIMED');
    // ...while acme's retry adopts it.
    const adopt = await createWorkspace(alice, 'halfway', acme, [['alice', 'owner']]);
    expect(adopt.statusCode).toBe(200);
  });

  it('requires an active billing_admin of the billing account', async () => {
    expect((await createWorkspace(bob, 'bobs', acme, [['bob', 'owner']])).statusCode).toBe(403);
    expect((await createWorkspace(carol, 'carols', acme, [['carol', 'owner']])).statusCode).toBe(403);
    expect((await createWorkspace(eve, 'eves', acme, [['eve', 'owner']])).statusCode).toBe(403);
    expect((await createWorkspace(alice, 'nowhere', 'acct_missing', [['alice', 'owner']])).statusCode).toBe(404);
  });

  it('validates the name and the body (422)', async () => {
    const bad = await createWorkspace(alice, 'no-dashes');
    expect(bad.statusCode).toBe(422);
    expect(bad.json().detail[0].loc).toEqual(['path', 'name']);
    const long = await createWorkspace(alice, 'x'.repeat(64));
    expect(long.statusCode).toBe(422);
    const noOwner = await createWorkspace(alice, 'ownerless', acme, [['bob', 'admin']]);
    expect(noOwner.statusCode).toBe(422);
    const dup = await createWorkspace(alice, 'dups', acme, [['alice', 'owner'], ['alice', 'reader']]);
    expect(dup.statusCode).toBe(422);
    // an unknown catalog kind (catalog bindings are tested in catalog-binding-routes.test.ts)
    const binding = await alice.request('PUT', '/control/v1/workspaces/bound', { billing_account: acme, members: members([['alice', 'owner']]), catalog: { kind: 'x' } });
    expect(binding.statusCode).toBe(422);
    expect(binding.json().detail[0].loc).toEqual(['body', 'catalog', 'kind']);
  });

  it('works on /billing too, and the workspace gets its catalog namespace', async () => {
    const res = await createWorkspace(alice, 'finance', acme, [['alice', 'owner']], '/billing');
    expect(res.statusCode).toBe(200);
    expect(await catalog.findNamespace('finance')).toMatchObject({ billing_account: acme });
    expect((await alice.request('GET', '/policy/v1/access/workspace/finance')).json().policies).toHaveLength(1);
  });

  it('needs the accounts scope and a token', async () => {
    const narrow = await signIn(t.app, t.adminToken, 'alice', { scopes: ['odata'] });
    expect((await createWorkspace(narrow, 'scoped')).statusCode).toBe(403);
    const anonymous = await t.app.inject({ method: 'PUT', url: '/control/v1/workspaces/anon', payload: {} });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe('listing, delete, restore and guards', () => {
  beforeAll(async () => {
    expect((await createWorkspace(alice, 'kept', acme, [['alice', 'owner'], ['bob', 'admin']], '/billing')).statusCode).toBe(200);
    expect((await createWorkspace(alice, 'scratch', acme, [['alice', 'owner'], ['bob', 'admin']], '/billing')).statusCode).toBe(200);
    expect((await createWorkspace(alice, 'locked', acme, [['alice', 'owner']], '/billing')).statusCode).toBe(200);
    await catalog.setNamespaceProperties('locked', { deletion_protection: true });
  });

  /** A workspace of the test's own (alice owner, bob admin), soft-deleted by alice. */
  async function softDeleted(name: string) {
    expect((await createWorkspace(alice, name, acme, [['alice', 'owner'], ['bob', 'admin']], '/billing')).statusCode).toBe(200);
    const res = await alice.request('DELETE', `/billing/v1/workspaces/${name}`);
    expect(res.statusCode, res.body).toBe(200);
  }

  it('lists the account workspaces for active members only', async () => {
    const list = await bob.request('GET', `/billing/v1/accounts/${acme}/workspaces`);
    expect(list.statusCode).toBe(200);
    expect(list.json().map((w: { name: string }) => w.name)).toEqual(expect.arrayContaining(['kept', 'locked']));
    expect(list.json().find((w: { name: string }) => w.name === 'locked').deletion_protection).toBe(true);
    expect((await carol.request('GET', `/billing/v1/accounts/${acme}/workspaces`)).statusCode).toBe(403);
    expect((await eve.request('GET', `/control/v1/accounts/${acme}/workspaces`)).statusCode).toBe(403);
  });

  it('soft-deletes for the billing_admin; 423 while locked; others refused', async () => {
    expect((await bob.request('DELETE', '/billing/v1/workspaces/scratch')).statusCode).toBe(403);
    expect((await eve.request('DELETE', '/billing/v1/workspaces/scratch')).statusCode).toBe(404); // outside the account: looks missing
    const locked = await alice.request('DELETE', '/billing/v1/workspaces/locked');
    expect(locked.statusCode).toBe(423);
    expect(locked.json().code).toBe('WORKSPACE_LOCKED');
    const res = await alice.request('DELETE', '/billing/v1/workspaces/scratch');
    expect(res.statusCode).toBe(200);
    expect(res.json().state).toBe('deleted');
    const graceMs = new Date(res.json().purge_after).getTime() - new Date(res.json().deleted_at).getTime();
    expect(Math.round(graceMs / 3_600_000)).toBe(24);
    expect((await alice.request('DELETE', '/control/v1/workspaces/scratch')).statusCode).toBe(404); // not on /control
  });

  it('shows a soft-deleted workspace only to its owners', async () => {
    await softDeleted('shown');
    const forAlice = (await alice.request('GET', `/billing/v1/accounts/${acme}/workspaces`)).json();
    expect(forAlice.find((w: { name: string }) => w.name === 'shown')?.state).toBe('deleted');
    const forBob = (await bob.request('GET', `/billing/v1/accounts/${acme}/workspaces`)).json();
    expect(forBob.map((w: { name: string }) => w.name)).not.toContain('shown');
  });

  it('restores within the grace window for an owner only', async () => {
    await softDeleted('restored');
    expect((await bob.request('POST', '/billing/v1/workspaces/restored/restore')).statusCode).toBe(403);
    const res = await alice.request('POST', '/billing/v1/workspaces/restored/restore');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ state: 'active', deleted_at: null });
    expect((await alice.request('POST', '/billing/v1/workspaces/restored/restore')).statusCode).toBe(409);
    expect((await alice.request('POST', '/billing/v1/workspaces/ghost/restore')).statusCode).toBe(403); // no owner grant there
  });

  it('skips on /control a workspace whose catalog namespace is gone', async () => {
    await createWorkspace(alice, 'orphan', acme, [['alice', 'owner']], '/billing');
    await catalog.dropNamespace('orphan');
    const control = (await alice.request('GET', `/control/v1/accounts/${acme}/workspaces`)).json().map((w: { name: string }) => w.name);
    expect(control).not.toContain('orphan');
    const billing = (await alice.request('GET', `/billing/v1/accounts/${acme}/workspaces`)).json().map((w: { name: string }) => w.name);
    expect(billing).toContain('orphan');
  });

  it('reports guard properties to owners and admins through policies', async () => {
    const res = await alice.request('GET', '/control/v1/workspaces/locked/properties');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ workspace: 'locked', deletion_protection: true, drop_protection: true, history_protection: false });
    expect((await bob.request('GET', '/control/v1/workspaces/kept/properties')).statusCode).toBe(200);
    expect((await bob.request('GET', '/control/v1/workspaces/locked/properties')).statusCode).toBe(403);
    expect((await eve.request('GET', '/control/v1/workspaces/kept/properties')).statusCode).toBe(403);
    expect((await alice.request('GET', '/billing/v1/workspaces/kept/properties')).statusCode).toBe(404); // /control only
  });

  it('purges after the grace window: record, namespace, policies and files; restore then answers 410', async () => {
    await createWorkspace(alice, 'doomed', acme, [['alice', 'owner']], '/billing');
    await t.deps.blobs.put('lake/doomed/c/d/part.parquet', 'x');
    await t.deps.blobs.put('lake/_staging/ctr_x/committed.parquet', 'y');
    const dataset = await catalog.createDataset({ workspace: 'doomed', collection: 'c', dataset: 'd' }, { columns: [{ name: 'x', type: 'BIGINT', nullable: true }] }, 'alice');
    await catalog.commitSnapshot({ dataset: dataset.dataset_id, operation: 'create', author: 'alice', addFiles: [{ path: 'lake/_staging/ctr_x/committed.parquet', row_count: 1, size_bytes: 1 }] });
    expect((await alice.request('DELETE', '/billing/v1/workspaces/doomed')).statusCode).toBe(200);
    // Nothing is purged inside the grace window.
    const { workspaces } = t.app.lakeport;
    expect(await workspaces.purgeExpired(new Date())).not.toContain('doomed');
    expect(await workspaces.purgeExpired(new Date(Date.now() + 25 * 3_600_000))).toContain('doomed');
    expect(await t.deps.blobs.head('lake/doomed/c/d/part.parquet')).toBeUndefined();
    expect(await t.deps.blobs.head('lake/_staging/ctr_x/committed.parquet')).toBeUndefined();
    expect(await catalog.findNamespace('doomed')).toBeUndefined();
    expect(await t.db.kysely.selectFrom('policies').selectAll().where('workspace', '=', 'doomed').execute()).toEqual([]);
    const restore = await alice.request('POST', '/billing/v1/workspaces/doomed/restore');
    expect(restore.statusCode).toBe(410);
    // The name is free again.
    expect((await createWorkspace(alice, 'doomed', acme, [['alice', 'owner']], '/billing')).statusCode).toBe(200);
  });
});
