/**
 * Policy integrity when requests race: the last-owner rule, one policy per principal and pattern, and
 * a REVOKE that removes access for good — through the policy service and SQL GRANT/REVOKE alike. On
 * PostgreSQL the requests really race, each on its own pooled connection; on PGlite they interleave
 * between the statements of one session. Each race runs a few rounds, each in a fresh workspace.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, TEST_DATABASE_URL, type TestApp } from '../../../test/harness.ts';

let t: TestApp;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let account: string;

const P = '/policy/v1/access/workspace';
const J = '/jobs/api/v1';
const ROUNDS = 4;

beforeAll(async () => {
  t = await createTestApp();
  [alice, bob, carol] = await Promise.all(['alice', 'bob', 'carol'].map((id) => signIn(t.app, t.adminToken, id)));
  account = (await alice.request('POST', '/billing/v1/accounts', { name: 'Acme' })).json().account_id;
});
afterAll(async () => t.close());

/** A workspace of alice's account, alice its owner (genesis), with more genesis grants. */
async function createWorkspace(owner: TestUser, workspace: string, members: Record<string, string> = {}) {
  const grants = { [owner.identity]: 'owner', ...members };
  const res = await owner.request('PUT', `/control/v1/workspaces/${workspace}`, {
    billing_account: account,
    members: Object.entries(grants).map(([identity, role]) => ({ identity, role })),
  });
  expect(res.statusCode, res.body).toBe(200);
}

type Policy = { policy_id: string; principal: { identity: string }; role: string; pattern: string };

/** Every policy of the workspace, read from the table itself (not through anyone's grants). */
async function policiesOf(workspace: string): Promise<Policy[]> {
  const rows = await t.db.kysely.selectFrom('policies').selectAll().where('workspace', '=', workspace).execute();
  return rows.map((r) => ({ policy_id: r.policy_id, principal: { identity: r.principal }, role: r.role, pattern: r.pattern }));
}
const idOf = (policies: Policy[], identity: string) => policies.find((p) => p.principal.identity === identity)!.policy_id;
const owners = async (workspace: string) => (await policiesOf(workspace)).filter((p) => p.role === 'owner' && p.pattern === `${workspace}.*`);

describe(`policies under concurrency (${TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  it('two owners deleting each other’s owner policy at once: exactly one succeeds, an owner remains', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const ws = `swap_${round}`;
      await createWorkspace(alice, ws, { bob: 'owner' });
      const before = await policiesOf(ws);
      const [a, b] = await Promise.all([
        alice.request('DELETE', `${P}/${ws}/policies/${idOf(before, 'bob')}`),
        bob.request('DELETE', `${P}/${ws}/policies/${idOf(before, 'alice')}`),
      ]);
      expect([a.statusCode, b.statusCode].sort(), `round ${round}: ${a.body} / ${b.body}`).toEqual([200, 403]);
      // The loser lost its own owner policy first, so it holds nothing there any more.
      expect((a.statusCode === 200 ? b : a).json().code).toBe('PERMISSION_DENIED');
      expect(await owners(ws)).toHaveLength(1);
    }
  });

  it('two owners leaving at once (each deleting their own owner policy): one leaves, the other is 409 LAST_OWNER', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const ws = `leave_${round}`;
      await createWorkspace(alice, ws, { bob: 'owner' });
      const before = await policiesOf(ws);
      const [a, b] = await Promise.all([
        alice.request('DELETE', `${P}/${ws}/policies/${idOf(before, 'alice')}`),
        bob.request('DELETE', `${P}/${ws}/policies/${idOf(before, 'bob')}`),
      ]);
      expect([a.statusCode, b.statusCode].sort(), `round ${round}: ${a.body} / ${b.body}`).toEqual([200, 409]);
      expect((a.statusCode === 200 ? b : a).json().code).toBe('LAST_OWNER');
      expect(await owners(ws)).toHaveLength(1);
    }
  });

  it('two owners demoting each other at once (PUT) or revoking each other in SQL: an owner remains', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const ws = `demote_${round}`;
      await createWorkspace(alice, ws, { bob: 'owner' });
      const before = await policiesOf(ws);
      const [a, b] = await Promise.all([
        alice.request('PUT', `${P}/${ws}/policies/${idOf(before, 'bob')}`, { role: 'admin', pattern: `${ws}.*` }),
        bob.request('PUT', `${P}/${ws}/policies/${idOf(before, 'alice')}`, { role: 'admin', pattern: `${ws}.*` }),
      ]);
      expect([a.statusCode, b.statusCode].sort(), `round ${round}: ${a.body} / ${b.body}`).toEqual([200, 403]);
      expect(await owners(ws)).toHaveLength(1);

      const sqlWs = `sqlswap_${round}`;
      await createWorkspace(alice, sqlWs, { bob: 'owner' });
      const [c, d] = await Promise.all([
        alice.request('POST', `${J}/jobs`, { sql_text: `REVOKE owner ON ${sqlWs}.* FROM bob` }),
        bob.request('POST', `${J}/jobs`, { sql_text: `REVOKE owner ON ${sqlWs}.* FROM alice` }),
      ]);
      expect([c.statusCode, d.statusCode].sort(), `round ${round}: ${c.body} / ${d.body}`).toEqual([201, 403]);
      expect(await owners(sqlWs)).toHaveLength(1);
    }
  });

  it('six identical grants at once (HTTP) make one policy; deleting it removes the access', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const ws = `grant_http_${round}`;
      await createWorkspace(alice, ws);
      const body = { principal: { identity: 'carol' }, role: 'admin', pattern: `${ws}.*` };
      const results = await Promise.all(Array.from({ length: 6 }, () => alice.request('POST', `${P}/${ws}/policies`, body)));
      const statuses = results.map((r) => r.statusCode).sort();
      expect(statuses, results.map((r) => r.body).join('\n')).toEqual([201, 409, 409, 409, 409, 409]);
      for (const r of results.filter((r) => r.statusCode === 409)) expect(r.json().code).toBe('POLICY_EXISTS');
      const carols = (await policiesOf(ws)).filter((p) => p.principal.identity === 'carol');
      expect(carols).toHaveLength(1);
      expect((await carol.request('GET', `${P}/${ws}`)).statusCode).toBe(200);

      expect((await alice.request('DELETE', `${P}/${ws}/policies/${carols[0].policy_id}`)).statusCode).toBe(200);
      expect((await carol.request('GET', `${P}/${ws}`)).statusCode).toBe(403);
    }
  });

  it('six identical GRANTs at once (SQL) make one policy; REVOKE removes the access', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const ws = `grant_sql_${round}`;
      await createWorkspace(alice, ws);
      const results = await Promise.all(Array.from({ length: 6 }, () => alice.request('POST', `${J}/jobs`, { sql_text: `GRANT admin ON ${ws}.* TO carol` })));
      for (const r of results) expect(r.statusCode, r.body).toBe(201);
      const messages = await Promise.all(results.map(async (r) => (await alice.request('GET', `${J}/jobs/${r.json().execution_id}/results`)).json().data[0][0] as string));
      expect(messages.filter((m) => m.startsWith('Granted admin')), messages.join('\n')).toHaveLength(1);
      expect(messages.filter((m) => /already holds admin .*nothing changed$/.test(m)), messages.join('\n')).toHaveLength(5);
      expect((await policiesOf(ws)).filter((p) => p.principal.identity === 'carol')).toHaveLength(1);
      expect((await carol.request('GET', `${P}/${ws}`)).statusCode).toBe(200);

      const revoked = await alice.request('POST', `${J}/jobs`, { sql_text: `REVOKE admin ON ${ws}.* FROM carol` });
      expect(revoked.statusCode, revoked.body).toBe(201);
      expect((await policiesOf(ws)).filter((p) => p.principal.identity === 'carol')).toEqual([]);
      expect((await carol.request('GET', `${P}/${ws}`)).statusCode).toBe(403);
    }
  });

  it('HTTP and SQL grants racing each other still make one policy', async () => {
    const ws = 'grant_mixed';
    await createWorkspace(alice, ws);
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        i % 2 === 0
          ? alice.request('POST', `${P}/${ws}/policies`, { principal: { identity: 'carol' }, role: 'reader', pattern: `${ws}.*` })
          : alice.request('POST', `${J}/jobs`, { sql_text: `GRANT reader ON ${ws}.* TO carol` }),
      ),
    );
    expect((await policiesOf(ws)).filter((p) => p.principal.identity === 'carol')).toHaveLength(1);
  });
});

describe('one policy per principal and pattern', () => {
  it('moving a policy onto a pattern where its principal already holds one is 409 POLICY_EXISTS', async () => {
    const ws = 'unique_move';
    await createWorkspace(alice, ws);
    const grant = (pattern: string, role = 'reader') => alice.request('POST', `${P}/${ws}/policies`, { principal: { identity: 'carol' }, role, pattern });
    expect((await grant(`${ws}.*`)).statusCode).toBe(201);
    const narrow = await grant(`${ws}.orders.*`, 'writer');
    expect(narrow.statusCode).toBe(201);
    const moved = await alice.request('PUT', `${P}/${ws}/policies/${narrow.json().policy_id}`, { role: 'writer', pattern: `${ws}.*` });
    expect(moved.statusCode, moved.body).toBe(409);
    expect(moved.json().code).toBe('POLICY_EXISTS');
    expect((await policiesOf(ws)).filter((p) => p.principal.identity === 'carol').map((p) => [p.pattern, p.role]).sort()).toEqual([
      [`${ws}.*`, 'reader'],
      [`${ws}.orders.*`, 'writer'],
    ]);
  });

  it('the table itself refuses a second policy for one principal and pattern', async () => {
    const ws = 'unique_table';
    await createWorkspace(alice, ws);
    const row = { workspace: ws, principal: 'carol', principal_type: 'user', role: 'reader' as const, pattern: `${ws}.*`, created_by: 'test' };
    await t.db.kysely.insertInto('policies').values({ ...row, policy_id: 'pol_unique_1' }).execute();
    await expect(t.db.kysely.insertInto('policies').values({ ...row, policy_id: 'pol_unique_2', role: 'writer' }).execute()).rejects.toThrow(/unique|duplicate/i);
  });
});
