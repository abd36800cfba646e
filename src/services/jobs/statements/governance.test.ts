/**
 * GRANT, REVOKE, CREATE TAG, DROP TAG and ALTER WORKSPACE through the job service: the same records
 * and effects as the policy service, the catalog's tags and the workspace lock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLES } from '../../../core/authz/index.ts';
import { createWorkspace, signIn, type TestUser } from '../../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../../test/harness.ts';
import { seedSnapshot } from '../../../../test/seed.ts';

let t: TestApp;
let alice: TestUser; // owner of sales
let adam: TestUser; // admin on sales.*
let wendy: TestUser; // writer on sales.*
let rita: TestUser; // reader on sales.*
let olivia: TestUser; // admin on sales.orders.* only
let carol: TestUser; // nothing, at first
let eve: TestUser; // owner of ops
let account: string;
let firstSnapshot: number;
let secondSnapshot: number;

const J = '/jobs/api/v1';
const P = '/policy/v1/access/workspace/sales';
const daily = { workspace: 'sales', collection: 'orders', dataset: 'daily' };

beforeAll(async () => {
  t = await createTestApp();
  [alice, adam, wendy, rita, olivia, carol, eve] = await Promise.all(['alice', 'adam', 'wendy', 'rita', 'olivia', 'carol', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  account = await createWorkspace(alice, 'sales', { adam: 'admin', wendy: 'writer', rita: 'reader' });
  expect((await alice.request('POST', `${P}/policies`, { principal: { identity: 'olivia' }, role: 'admin', pattern: 'sales.orders.*' })).statusCode).toBe(201);
  await createWorkspace(eve, 'ops');
  const columns = [{ name: 'id', type: 'BIGINT', nullable: false }];
  firstSnapshot = await seedSnapshot(t, daily, columns, 'SELECT i AS id FROM range(1, 11) t(i)');
  secondSnapshot = await seedSnapshot(t, daily, columns, 'SELECT i AS id FROM range(11, 16) t(i)');
  await seedSnapshot(t, { workspace: 'sales', collection: 'hr', dataset: 'people' }, [{ name: 'name', type: 'VARCHAR', nullable: true }], "SELECT 'x' AS name");
});
afterAll(async () => t.close());

const submit = (user: TestUser, sql_text: string) => user.request('POST', `${J}/jobs`, { sql_text });
async function ok(user: TestUser, sql: string): Promise<string> {
  const checked = (await user.request('POST', `${J}/check`, { sql_text: sql })).json();
  expect(checked, JSON.stringify(checked)).toMatchObject({ ok: true });
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(201);
  expect(res.json().status).toBe('succeeded');
  const results = await user.request('GET', `${J}/jobs/${res.json().execution_id}/results`);
  return results.json().data[0][0];
}
async function refused(user: TestUser, sql: string, status: number, code: string) {
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().code).toBe(code);
  const checked = (await user.request('POST', `${J}/check`, { sql_text: sql })).json();
  expect(checked, JSON.stringify(checked)).toMatchObject({ ok: false, error: { code } });
  return res.json() as { detail: string };
}
async function query(user: TestUser, sql: string) {
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(201);
  return (await user.request('GET', `${J}/jobs/${res.json().execution_id}/status?wait=30`)).json();
}
async function policies() {
  return (await alice.request('GET', P)).json().policies as { policy_id: string; principal: { identity: string; type: string }; role: string; pattern: string; created_by: string }[];
}
const policyOf = async (identity: string, pattern: string) => (await policies()).find((p) => p.principal.identity === identity && p.pattern === pattern);

describe('GRANT and REVOKE', () => {
  it('GRANT creates the policy the policy service lists, with the same effect; REVOKE removes it', async () => {
    expect((await query(carol, 'SELECT count(*) FROM sales.orders.daily')).error.code).toBe('DATASET_NOT_FOUND');
    const message = await ok(alice, 'GRANT reader ON sales.orders.* TO carol');
    const policy = await policyOf('carol', 'sales.orders.*');
    expect(policy).toMatchObject({ role: 'reader', principal: { identity: 'carol', type: 'user' }, created_by: 'alice' });
    expect(message).toBe(`Granted reader on sales.orders.* to carol (policy ${policy!.policy_id})`);
    expect((await query(carol, 'SELECT count(*) FROM sales.orders.daily')).status).toBe('succeeded');

    expect(await ok(alice, 'REVOKE reader ON sales.orders.* FROM carol')).toBe(`Revoked reader on sales.orders.* from carol (policy ${policy!.policy_id} deleted)`);
    expect(await policyOf('carol', 'sales.orders.*')).toBeUndefined();
    expect((await query(carol, 'SELECT count(*) FROM sales.orders.daily')).error.code).toBe('DATASET_NOT_FOUND');
  });

  it('agrees with the policy service both ways: SQL removes what the API made, and the API removes what SQL made', async () => {
    const made = await alice.request('POST', `${P}/policies`, { principal: { identity: 'carol' }, role: 'writer', pattern: 'sales.hr.people' });
    expect(made.statusCode).toBe(201);
    await ok(alice, 'REVOKE writer ON sales.hr.people FROM carol');
    expect((await alice.request('GET', `${P}/policies/${made.json().policy_id}`)).statusCode).toBe(404);

    await ok(alice, "GRANT writer ON 'sales.hr.people' TO carol");
    const policy = await policyOf('carol', 'sales.hr.people');
    expect((await alice.request('GET', `${P}/policies/${policy!.policy_id}`)).json()).toMatchObject({ role: 'writer', pattern: 'sales.hr.people', created_by: 'alice' });
    expect((await alice.request('DELETE', `${P}/policies/${policy!.policy_id}`)).statusCode).toBe(200);
    await refused(alice, 'REVOKE writer ON sales.hr.people FROM carol', 404, 'POLICY_NOT_FOUND');
  });

  it('refuses exactly what the policy service refuses: every caller role × every granted role', async () => {
    const callers: [TestUser, string][] = [[rita, 'reader'], [wendy, 'writer'], [adam, 'admin'], [olivia, 'admin on orders'], [alice, 'owner'], [eve, 'none']];
    let n = 0;
    for (const [caller] of callers) {
      for (const role of ROLES) {
        for (const pattern of ['sales.orders.*', 'sales.*']) {
          n++;
          const viaSql = await submit(caller, `GRANT ${role} ON ${pattern} TO sql_${n}`);
          const viaApi = await caller.request('POST', `${P}/policies`, { principal: { identity: `api_${n}` }, role, pattern });
          const label = `${caller.identity} grants ${role} on ${pattern}`;
          expect(viaSql.statusCode === 201, `${label}: ${viaSql.body}`).toBe(viaApi.statusCode === 201);
          if (viaApi.statusCode !== 201) {
            expect([viaSql.statusCode, viaSql.json().code], label).toEqual([viaApi.statusCode, viaApi.json().code]);
            continue;
          }
          const sqlPolicy = await policyOf(`sql_${n}`, pattern);
          const apiPolicy = await policyOf(`api_${n}`, pattern);
          const same = (p: typeof sqlPolicy) => ({ ...p, policy_id: '', principal: p?.principal.type, created_at: '', updated_at: '' });
          expect(same(sqlPolicy), label).toEqual(same(apiPolicy));

          // And removing them: the same caller, REVOKE against DELETE.
          const revoked = await submit(caller, `REVOKE ${role} ON ${pattern} FROM sql_${n}`);
          const deleted = await caller.request('DELETE', `${P}/policies/${apiPolicy!.policy_id}`);
          expect([revoked.statusCode === 201, deleted.statusCode === 200], `${label}, then removes it`).toEqual([true, true]);
        }
      }
    }
    // Grants made by one caller and removed by a weaker one: both refuse alike.
    for (const [caller] of callers.filter(([u]) => u !== alice)) {
      for (const role of ROLES) {
        n++;
        await ok(alice, `GRANT ${role} ON sales.orders.* TO sql_${n}`);
        const api = await alice.request('POST', `${P}/policies`, { principal: { identity: `api_${n}` }, role, pattern: 'sales.orders.*' });
        const revoked = await submit(caller, `REVOKE ${role} ON sales.orders.* FROM sql_${n}`);
        const deleted = await caller.request('DELETE', `${P}/policies/${api.json().policy_id}`);
        const label = `${caller.identity} removes ${role} on sales.orders.*`;
        expect(revoked.statusCode === 201, `${label}: ${revoked.body}`).toBe(deleted.statusCode === 200);
        if (deleted.statusCode !== 200) expect([revoked.statusCode, revoked.json().code], label).toEqual([deleted.statusCode, deleted.json().code]);
      }
    }
  });

  it('nobody grants above their own role, only owners grant owner', async () => {
    expect((await refused(adam, 'GRANT owner ON sales.* TO carol', 403, 'ROLE_ABOVE_OWN')).detail).toMatch(/cannot grant/);
    await refused(wendy, 'GRANT reader ON sales.* TO carol', 403, 'PERMISSION_DENIED');
    await refused(olivia, 'GRANT reader ON sales.hr.* TO carol', 403, 'PERMISSION_DENIED');
    await ok(olivia, 'GRANT reader ON sales.orders.daily TO carol');
    await ok(olivia, 'REVOKE reader ON sales.orders.daily FROM carol');
    await refused(alice, 'GRANT reader ON ops.* TO carol', 403, 'PERMISSION_DENIED');
  });

  it('a credential narrowed below admin cannot GRANT', async () => {
    const narrow = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.*', 'writer']] });
    await refused(narrow, 'GRANT reader ON sales.* TO carol', 403, 'PERMISSION_DENIED');
  });

  it('GRANT of what is held is a no-op; of another role on the same pattern it is 409, as in the policy service', async () => {
    await ok(alice, 'GRANT reader ON sales.hr.* TO carol');
    expect(await ok(alice, 'grant READER on Sales.HR.* to Carol')).toMatch(/^carol already holds reader on sales\.hr\.\* \(policy pol_\w+\); nothing changed$/);
    expect((await refused(alice, 'GRANT writer ON sales.hr.* TO carol', 409, 'POLICY_EXISTS')).detail).toMatch(/REVOKE reader ON sales\.hr\.\* FROM carol first/);
    expect((await alice.request('POST', `${P}/policies`, { principal: { identity: 'carol' }, role: 'writer', pattern: 'sales.hr.*' })).json().code).toBe('POLICY_EXISTS');
    expect((await refused(alice, 'REVOKE writer ON sales.hr.* FROM carol', 409, 'ROLE_MISMATCH')).detail).toMatch(/holds reader/);
    await ok(alice, 'REVOKE reader ON sales.hr.* FROM carol');
  });

  it('keeps a workspace owner: revoking the last one is 409 LAST_OWNER', async () => {
    await refused(alice, 'REVOKE owner ON sales.* FROM alice', 409, 'LAST_OWNER');
    expect((await policyOf('alice', 'sales.*'))?.role).toBe('owner');
  });

  it('grants to service accounts and to identities that need quoting', async () => {
    await ok(alice, "GRANT reader ON sales.* TO SERVICE_ACCOUNT 'svc-loader'");
    expect(await policyOf('svc-loader', 'sales.*')).toMatchObject({ principal: { identity: 'svc-loader', type: 'service_account' } });
    await ok(alice, "REVOKE reader ON sales.* FROM 'svc-loader'");
    await ok(alice, 'GRANT reader ON sales.* TO "Bob@Example.com"');
    expect(await policyOf('Bob@Example.com', 'sales.*')).toBeDefined();
    await ok(alice, 'REVOKE reader ON sales.* FROM "Bob@Example.com"');
  });

  it('check underlines what is wrong', async () => {
    const sql = 'GRANT superuser ON sales.* TO carol';
    const checked = (await alice.request('POST', `${J}/check`, { sql_text: sql })).json();
    expect(checked).toMatchObject({ ok: false, error: { code: 'SYNTAX_ERROR', line: 1, column: 7, start: 6, end: 15 }, relations: [] });
    expect((await alice.request('POST', `${J}/check`, { sql_text: 'GRANT reader ON sales.* TO zed' })).json()).toMatchObject({ ok: true });
    expect(await policyOf('zed', 'sales.*')).toBeUndefined();
  });
});

describe('CREATE TAG and DROP TAG', () => {
  it('a writer tags the current snapshot; the tag records who, and queries travel to it', async () => {
    expect(await ok(wendy, 'CREATE TAG q1_close ON sales.orders.daily')).toBe(`Tag q1_close created on sales.orders.daily at snapshot ${secondSnapshot}`);
    const tags = await t.app.lakeport.catalog.listTags(daily);
    expect(tags.find((tag) => tag.name === 'q1_close')).toMatchObject({ snapshot_id: secondSnapshot, created_by: 'wendy' });
    await ok(wendy, `CREATE TAG first_load ON sales.orders.daily AT (VERSION => ${firstSnapshot})`);
    const job = await query(rita, "SELECT count(*) AS n FROM sales.orders.daily AT (VERSION => 'first_load')");
    expect(job.status, JSON.stringify(job.error)).toBe('succeeded');
    expect((await rita.request('GET', `${J}/jobs/${job.execution_id}/results`)).json().data).toEqual([[10]]);
    // A tag of a tag names the same snapshot.
    expect(await ok(wendy, "CREATE TAG 'first.copy' ON sales.orders.daily AT (VERSION => 'first_load')")).toContain(`at snapshot ${firstSnapshot}`);
  });

  it('tags are immutable: a second CREATE TAG of a name is 409, and there is no OR REPLACE', async () => {
    await ok(wendy, 'CREATE TAG frozen ON sales.orders.daily');
    await refused(wendy, `CREATE TAG frozen ON sales.orders.daily AT (VERSION => ${firstSnapshot})`, 409, 'TAG_EXISTS');
    await refused(wendy, 'CREATE OR REPLACE TAG frozen ON sales.orders.daily', 400, 'STATEMENT_NOT_SUPPORTED');
    expect((await t.app.lakeport.catalog.listTags(daily)).find((tag) => tag.name === 'frozen')?.snapshot_id).toBe(secondSnapshot);
  });

  it('needs writer; a dataset the caller cannot read looks missing', async () => {
    await refused(rita, 'CREATE TAG r ON sales.orders.daily', 403, 'PERMISSION_DENIED');
    const hidden = await refused(eve, 'CREATE TAG r ON sales.orders.daily', 404, 'DATASET_NOT_FOUND');
    const missing = await refused(eve, 'CREATE TAG r ON sales.orders.nope', 404, 'DATASET_NOT_FOUND');
    expect(missing.detail.replace('nope', 'daily')).toBe(hidden.detail);
    await refused(wendy, 'CREATE TAG r ON sales.orders.daily AT (VERSION => 999999)', 404, 'SNAPSHOT_NOT_FOUND');
    await refused(wendy, "CREATE TAG r ON sales.orders.daily AT (VERSION => 'no_such_tag')", 404, 'TAG_NOT_FOUND');
  });

  it('DROP TAG removes it; IF EXISTS makes a missing one a no-op', async () => {
    await ok(wendy, 'CREATE TAG temp ON sales.orders.daily');
    await refused(rita, 'DROP TAG temp ON sales.orders.daily', 403, 'PERMISSION_DENIED');
    expect(await ok(wendy, 'DROP TAG temp ON sales.orders.daily')).toBe(`Tag temp dropped from sales.orders.daily (it named snapshot ${secondSnapshot})`);
    await refused(wendy, 'DROP TAG temp ON sales.orders.daily', 404, 'TAG_NOT_FOUND');
    expect(await ok(wendy, 'DROP TAG IF EXISTS temp ON sales.orders.daily')).toMatch(/does not exist.*nothing dropped/);
  });

  it('history_protection keeps tags', async () => {
    await ok(wendy, 'CREATE TAG kept ON sales.orders.daily');
    await t.app.lakeport.catalog.setNamespaceProperties('sales', { history_protection: true });
    try {
      await refused(wendy, 'DROP TAG kept ON sales.orders.daily', 423, 'GUARDED');
    } finally {
      await t.app.lakeport.catalog.setNamespaceProperties('sales', { history_protection: null });
    }
    expect((await t.app.lakeport.catalog.listTags(daily)).find((tag) => tag.name === 'kept')?.snapshot_id).toBe(secondSnapshot);
  });
});

describe('ALTER WORKSPACE … SET deletion_protection', () => {
  it('only the owner may set it; the lock makes the billing-side delete 423 until it is cleared in SQL', async () => {
    const made = await alice.request('PUT', '/control/v1/workspaces/vault', { billing_account: account, members: [{ identity: 'alice', role: 'owner' }, { identity: 'adam', role: 'admin' }] });
    expect(made.statusCode, made.body).toBe(200);
    await refused(adam, 'ALTER WORKSPACE vault SET deletion_protection TO ON', 403, 'PERMISSION_DENIED');
    await refused(eve, 'ALTER WORKSPACE vault SET deletion_protection TO ON', 403, 'PERMISSION_DENIED');

    expect(await ok(alice, 'ALTER WORKSPACE vault SET deletion_protection TO ON')).toMatch(/deletion_protection is ON/);
    expect((await adam.request('GET', '/control/v1/workspaces/vault/properties')).json()).toMatchObject({ deletion_protection: true, drop_protection: true });
    const listed = (await alice.request('GET', `/billing/v1/accounts/${account}/workspaces`)).json();
    expect(listed.find((w: { name: string }) => w.name === 'vault')).toMatchObject({ deletion_protection: true });

    const locked = await alice.request('DELETE', '/billing/v1/workspaces/vault');
    expect(locked.statusCode).toBe(423);
    expect(locked.json().code).toBe('WORKSPACE_LOCKED');
    // The lock cannot be cleared over HTTP: there is no route that writes the properties.
    for (const method of ['PUT', 'PATCH', 'POST', 'DELETE']) {
      expect((await alice.request(method, '/control/v1/workspaces/vault/properties', { deletion_protection: false })).statusCode).toBe(404);
    }
    expect((await alice.request('DELETE', '/billing/v1/workspaces/vault')).statusCode).toBe(423);

    // check changes nothing
    expect((await alice.request('POST', `${J}/check`, { sql_text: 'ALTER WORKSPACE vault SET deletion_protection = OFF' })).json()).toMatchObject({ ok: true });
    expect((await alice.request('DELETE', '/billing/v1/workspaces/vault')).statusCode).toBe(423);

    expect(await ok(alice, 'alter workspace VAULT set deletion_protection = off')).toMatch(/deletion_protection is OFF/);
    expect((await adam.request('GET', '/control/v1/workspaces/vault/properties')).json()).toMatchObject({ deletion_protection: false, drop_protection: false });
    const deleted = await alice.request('DELETE', '/billing/v1/workspaces/vault');
    expect(deleted.statusCode, deleted.body).toBe(200);
    await refused(alice, 'ALTER WORKSPACE vault SET deletion_protection TO ON', 409, 'WORKSPACE_DELETED');
  });

  it('names only the lock and the two guards', async () => {
    await refused(alice, 'ALTER WORKSPACE sales SET retention TO ON', 400, 'UNKNOWN_PROPERTY');
  });
});
