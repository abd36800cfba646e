import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';

let t: TestApp;
let alice: TestUser; // billing_admin of acme; owner of sales
let bob: TestUser; // admin on sales
let carol: TestUser; // reader on sales (granted in each test that needs it)
let dave: TestUser; // no grants
let eve: TestUser; // another tenant: owner of ops
let acme: string;

const P = '/policy/v1/access/workspace';
const columns = [{ name: 'id', type: 'BIGINT', nullable: false }];

beforeAll(async () => {
  t = await createTestApp();
  [alice, bob, carol, dave, eve] = await Promise.all(['alice', 'bob', 'carol', 'dave', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  acme = (await alice.request('POST', '/billing/v1/accounts', { name: 'Acme' })).json().account_id;
  const evil = (await eve.request('POST', '/billing/v1/accounts', { name: 'Evil' })).json().account_id;
  const sales = await alice.request('PUT', '/control/v1/workspaces/sales', {
    billing_account: acme,
    members: [
      { identity: 'alice', role: 'owner' },
      { identity: 'bob', role: 'admin' },
    ],
  });
  expect(sales.statusCode).toBe(200);
  expect((await eve.request('PUT', '/control/v1/workspaces/ops', { billing_account: evil, members: [{ identity: 'eve', role: 'owner' }] })).statusCode).toBe(200);
  const { catalog } = t.app.lakeport;
  for (const [collection, dataset] of [['orders', 'daily'], ['orders', 'monthly'], ['hr', 'people']]) {
    await catalog.createDataset({ workspace: 'sales', collection, dataset }, { columns }, 'alice');
  }
  await catalog.createDataset({ workspace: 'ops', collection: 'x', dataset: 'y' }, { columns }, 'eve');
});
afterAll(async () => t.close());

const grant = (user: TestUser, identity: string, role: string, pattern: string, ws = 'sales') =>
  user.request('POST', `${P}/${ws}/policies`, { principal: { identity }, role, pattern });

describe('list', () => {
  it('needs owner or admin on the workspace', async () => {
    // A workspace of its own, like sales: only the two genesis policies, whatever other tests granted in sales.
    const made = await alice.request('PUT', '/control/v1/workspaces/listed', {
      billing_account: acme,
      members: [
        { identity: 'alice', role: 'owner' },
        { identity: 'bob', role: 'admin' },
      ],
    });
    expect(made.statusCode, made.body).toBe(200);
    const res = await alice.request('GET', `${P}/listed`);
    expect(res.statusCode).toBe(200);
    expect(res.json().workspace).toBe('listed');
    expect(res.json().policies).toHaveLength(2);
    expect((await bob.request('GET', `${P}/listed`)).statusCode).toBe(200);
    expect((await dave.request('GET', `${P}/listed`)).statusCode).toBe(403);
    expect((await eve.request('GET', `${P}/listed`)).statusCode).toBe(403);
    expect((await alice.request('GET', `${P}/ops`)).statusCode).toBe(403);
    // Without grants, a missing workspace looks like any other: names cannot be probed.
    expect((await alice.request('GET', `${P}/nowhere`)).statusCode).toBe(403);
  });

  it('needs a token with the policy scope', async () => {
    expect((await t.app.inject({ method: 'GET', url: `${P}/sales` })).statusCode).toBe(401);
    const narrow = await signIn(t.app, t.adminToken, 'alice', { scopes: ['odata'] });
    expect((await narrow.request('GET', `${P}/sales`)).statusCode).toBe(403);
  });
});

describe('create, read, update, delete', () => {
  type Policy = { policy_id: string; principal: { identity: string } };
  const policiesOf = async (identity: string) => ((await alice.request('GET', `${P}/sales`)).json().policies as Policy[]).filter((p) => p.principal.identity === identity);

  // Each test starts with carol and dave holding nothing in sales (whichever test ran before).
  beforeEach(async () => {
    for (const identity of ['carol', 'dave']) {
      for (const { policy_id } of await policiesOf(identity)) expect((await alice.request('DELETE', `${P}/sales/policies/${policy_id}`)).statusCode).toBe(200);
    }
  });

  /** carol's reader policy on sales.*, granted by bob: what the tests after the first one read, change and delete. */
  async function grantCarol(): Promise<string> {
    const res = await grant(bob, 'carol', 'reader', 'sales.*');
    expect(res.statusCode, res.body).toBe(201);
    return res.json().policy_id;
  }

  it('lets an admin grant up to their own role, never owner', async () => {
    const res = await grant(bob, 'carol', 'reader', 'sales.*');
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ workspace: 'sales', principal: { identity: 'carol', type: 'user' }, role: 'reader', pattern: 'sales.*', created_by: 'bob' });
    const owner = await grant(bob, 'dave', 'owner', 'sales.*');
    expect(owner.statusCode).toBe(403);
    expect(owner.json().code).toBe('ROLE_ABOVE_OWN');
    expect((await grant(bob, 'dave', 'admin', 'sales.orders.*')).statusCode).toBe(201);
    expect((await grant(alice, 'dave', 'owner', 'sales.hr.people')).statusCode).toBe(201);
  });

  it('refuses readers, other tenants and duplicates', async () => {
    await grantCarol();
    expect((await grant(carol, 'dave', 'reader', 'sales.*')).statusCode).toBe(403);
    expect((await grant(eve, 'eve', 'owner', 'sales.*')).statusCode).toBe(403);
    const dup = await grant(alice, 'carol', 'writer', 'SALES.*');
    expect(dup.statusCode).toBe(409);
    expect(dup.json().code).toBe('POLICY_EXISTS');
  });

  it('keeps patterns inside the workspace of the path (422)', async () => {
    for (const pattern of ['ops.*', 'sales', 'sales.*.x', 'sales_evil.*', '*']) {
      const res = await grant(alice, 'dave', 'reader', pattern);
      expect(res.statusCode).toBe(422);
      expect(res.json().detail[0].loc).toEqual(['body', 'pattern']);
    }
    const bad = await alice.request('POST', `${P}/sales/policies`, { principal: {}, role: 'boss', pattern: 'sales.*' });
    expect(bad.statusCode).toBe(422);
  });

  it('narrowed credentials grant only within their permissions', async () => {
    const narrow = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.orders.*', 'admin']] });
    expect((await grant(narrow, 'erin', 'reader', 'sales.*')).statusCode).toBe(403);
    expect((await grant(narrow, 'erin', 'reader', 'sales.orders.*')).statusCode).toBe(201);
    expect((await grant(narrow, 'erin', 'owner', 'sales.orders.daily')).statusCode).toBe(403);
  });

  it('reads a policy: admins, and the principal itself', async () => {
    const carolPolicy = await grantCarol();
    expect((await alice.request('GET', `${P}/sales/policies/${carolPolicy}`)).json().principal.identity).toBe('carol');
    expect((await carol.request('GET', `${P}/sales/policies/${carolPolicy}`)).statusCode).toBe(200);
    expect((await dave.request('GET', `${P}/sales/policies/${carolPolicy}`)).statusCode).toBe(403);
    expect((await eve.request('GET', `${P}/ops/policies/${carolPolicy}`)).statusCode).toBe(404);
    expect((await alice.request('GET', `${P}/sales/policies/pol_missing`)).statusCode).toBe(404);
  });

  it('updates role and pattern within the same limits', async () => {
    const carolPolicy = await grantCarol();
    const res = await bob.request('PUT', `${P}/sales/policies/${carolPolicy}`, { role: 'writer', pattern: 'sales.orders.*' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ role: 'writer', pattern: 'sales.orders.*' });
    expect((await bob.request('PUT', `${P}/sales/policies/${carolPolicy}`, { role: 'owner', pattern: 'sales.*' })).statusCode).toBe(403);
    expect((await bob.request('PUT', `${P}/sales/policies/${carolPolicy}`, { role: 'reader', pattern: 'ops.*' })).statusCode).toBe(422);
    const alicePolicy = (await alice.request('GET', `${P}/sales`)).json().policies.find((p: { principal: { identity: string } }) => p.principal.identity === 'alice').policy_id;
    expect((await bob.request('PUT', `${P}/sales/policies/${alicePolicy}`, { role: 'reader', pattern: 'sales.*' })).statusCode).toBe(403);
    const lastOwner = await alice.request('PUT', `${P}/sales/policies/${alicePolicy}`, { role: 'admin', pattern: 'sales.*' });
    expect(lastOwner.statusCode).toBe(409);
    expect(lastOwner.json().code).toBe('LAST_OWNER');
  });

  it('deletes, but never the last owner', async () => {
    const carolPolicy = await grantCarol();
    expect((await carol.request('DELETE', `${P}/sales/policies/${carolPolicy}`)).statusCode).toBe(403);
    const res = await bob.request('DELETE', `${P}/sales/policies/${carolPolicy}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ policy_id: carolPolicy, workspace: 'sales' });
    expect((await bob.request('DELETE', `${P}/sales/policies/${carolPolicy}`)).statusCode).toBe(404);
    const alicePolicy = (await alice.request('GET', `${P}/sales`)).json().policies.find((p: { principal: { identity: string } }) => p.principal.identity === 'alice').policy_id;
    expect((await alice.request('DELETE', `${P}/sales/policies/${alicePolicy}`)).statusCode).toBe(409);
  });
});

describe('genesis', () => {
  async function bareWorkspace(name: string) {
    await t.db.kysely.insertInto('workspaces').values({ name, billing_account: acme, members: '[]', created_by: 'alice' }).execute();
  }

  it('is refused once any policy exists (409)', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `${P}/sales/genesis`,
      headers: { 'x-admin-token': t.adminToken },
      payload: { grants: [{ identity: 'dave', role: 'owner' }] },
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('GENESIS_ALREADY_DONE');
  });

  it('is a trusted bootstrap: the billing_admin of the account or the admin token', async () => {
    await bareWorkspace('boot1');
    const stranger = await dave.request('POST', `${P}/boot1/genesis`, { grants: [{ identity: 'dave', role: 'owner' }] });
    expect(stranger.statusCode).toBe(403);
    expect(stranger.json().code).toBe('GENESIS_NOT_ALLOWED');
    expect((await eve.request('POST', `${P}/boot1/genesis`, { grants: [{ identity: 'eve', role: 'owner' }] })).statusCode).toBe(403);
    const ok = await alice.request('POST', `${P}/boot1/genesis`, { grants: [{ identity: 'alice', role: 'owner' }, { identity: 'bob', role: 'reader' }] });
    expect(ok.statusCode).toBe(201);
    expect(ok.json().policies.map((p: { pattern: string }) => p.pattern)).toEqual(['boot1.*', 'boot1.*']);
    expect((await alice.request('POST', `${P}/boot1/genesis`, { grants: [{ identity: 'alice', role: 'owner' }] })).statusCode).toBe(409);

    await bareWorkspace('boot2');
    const admin = await t.app.inject({
      method: 'POST',
      url: `/control/v1/access/workspace/boot2/genesis`,
      headers: { 'x-admin-token': t.adminToken },
      payload: { grants: [{ identity: 'bob', role: 'owner' }] },
    });
    expect(admin.statusCode).toBe(201);
    expect(admin.json().policies[0].created_by).toBe('admin');
  });

  it('validates grants and the workspace', async () => {
    await bareWorkspace('boot3');
    expect((await alice.request('POST', `${P}/boot3/genesis`, { grants: [] })).statusCode).toBe(422);
    const noOwner = await alice.request('POST', `${P}/boot3/genesis`, { grants: [{ identity: 'bob', role: 'reader' }] });
    expect(noOwner.statusCode).toBe(422);
    expect(noOwner.json().detail[0].loc).toEqual(['body', 'grants']);
    expect((await alice.request('POST', `${P}/missing/genesis`, { grants: [{ identity: 'alice', role: 'owner' }] })).statusCode).toBe(403);
    const missing = await t.app.inject({
      method: 'POST',
      url: `${P}/missing/genesis`,
      headers: { 'x-admin-token': t.adminToken },
      payload: { grants: [{ identity: 'alice', role: 'owner' }] },
    });
    expect(missing.statusCode).toBe(404);
    expect((await t.app.inject({ method: 'POST', url: `${P}/boot3/genesis`, payload: { grants: [{ identity: 'alice', role: 'owner' }] } })).statusCode).toBe(401);
  });
});

describe('effective-permissions.csv', () => {
  it('resolves each policy against the datasets, one row per covered dataset (owner only)', async () => {
    // Policies of its own to resolve: frank holds a wildcard and a single dataset.
    expect((await grant(alice, 'frank', 'admin', 'sales.orders.*')).statusCode).toBe(201);
    expect((await grant(alice, 'frank', 'owner', 'sales.hr.people')).statusCode).toBe(201);
    const res = await alice.request('GET', `${P}/sales/effective-permissions.csv`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const rows: Record<string, string>[] = parse(res.body, { columns: true });
    expect(Object.keys(rows[0])).toEqual(['policy_id', 'principal', 'principal_type', 'role', 'pattern', 'dataset', 'collection', 'kind']);
    const of = (principal: string, pattern: string) => rows.filter((r) => r.principal === principal && r.pattern === pattern).map((r) => r.dataset).sort();
    expect(of('alice', 'sales.*')).toEqual(['sales.hr.people', 'sales.orders.daily', 'sales.orders.monthly']);
    expect(of('frank', 'sales.orders.*')).toEqual(['sales.orders.daily', 'sales.orders.monthly']);
    expect(of('frank', 'sales.hr.people')).toEqual(['sales.hr.people']);
    const alicePolicyIds = new Set(rows.filter((r) => r.principal === 'alice').map((r) => r.policy_id));
    expect(alicePolicyIds.size).toBe(1); // a wildcard's policy_id repeats
    expect(rows.some((r) => r.dataset.startsWith('ops.'))).toBe(false);
    expect((await bob.request('GET', `${P}/sales/effective-permissions.csv`)).statusCode).toBe(403);
    expect((await eve.request('GET', `${P}/sales/effective-permissions.csv`)).statusCode).toBe(403);
  });
});
