/**
 * One planner behind every policy change: the policy API's dry run answers the plan and changes
 * nothing, and each rule answers alike through HTTP, SQL GRANT/REVOKE and their dry runs (the
 * `?dry_run=true` flag, the jobs check endpoint).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import type { Principal } from '../../core/authz/index.ts';

let t: TestApp;
let alice: TestUser; // owner of plan (and billing_admin of its account)
let adam: TestUser; // admin on plan.*
let account: string;

const P = '/policy/v1/access/workspace/plan';
const J = '/jobs/api/v1';

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  [alice, adam] = await Promise.all(['alice', 'adam'].map((id) => signIn(t.app, t.adminToken, id)));
  account = await createWorkspace(alice, 'plan', { adam: 'admin' });
});

/** Another workspace of alice's account, alice its owner. */
async function workspace(name: string, members: Record<string, string> = {}) {
  const grants = { alice: 'owner', ...members };
  const res = await alice.request('PUT', `/control/v1/workspaces/${name}`, { billing_account: account, members: Object.entries(grants).map(([identity, role]) => ({ identity, role })) });
  expect(res.statusCode, res.body).toBe(200);
}
afterAll(async () => t?.close());

type Policy = { policy_id: string; principal: { identity: string; type: string }; role: string; pattern: string };
const policies = async () => (await alice.request('GET', P)).json().policies as Policy[];
const policyOf = async (identity: string) => (await policies()).find((p) => p.principal.identity === identity);
/** A reader policy on plan.* of the test's own, granted by alice. */
async function grantReader(identity: string): Promise<Policy> {
  const res = await alice.request('POST', `${P}/policies`, { principal: { identity }, role: 'reader', pattern: 'plan.*' });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

/** The same request, dry and for real: the dry one answers with the same refusal, or a plan and no change. */
async function dryThenReal(user: TestUser, method: string, url: string, body?: unknown) {
  const before = await policies();
  const dry = await user.request(method, `${url}?dry_run=true`, body);
  expect(await policies(), 'a dry run changes nothing').toEqual(before);
  const real = await user.request(method, url, body);
  if (real.statusCode >= 400) expect([dry.statusCode, dry.json().code]).toEqual([real.statusCode, real.json().code]);
  else expect(dry.statusCode).toBe(200);
  return { dry, real };
}

/** A statement through the jobs check endpoint (its dry run), then submitted: status and code of each. */
async function viaSql(user: TestUser, sql_text: string) {
  const checked = (await user.request('POST', `${J}/check`, { sql_text })).json();
  const res = await user.request('POST', `${J}/jobs`, { sql_text });
  const code = res.statusCode === 201 ? undefined : res.json().code;
  expect(checked.ok ? undefined : checked.error.code, `check agrees with submit: ${sql_text}`).toBe(code);
  return { status: res.statusCode, code };
}

describe('dry run on the policy API', () => {
  it('POST ?dry_run=true answers the policy it would make, and makes it only for real', async () => {
    const { dry, real } = await dryThenReal(adam, 'POST', `${P}/policies`, { principal: { identity: 'carol' }, role: 'reader', pattern: 'plan.*' });
    expect(dry.json()).toEqual({
      dry_run: true,
      workspace: 'plan',
      effect: 'create',
      before: null,
      after: { principal: { identity: 'carol', type: 'user' }, role: 'reader', pattern: 'plan.*' },
    });
    expect(real.statusCode).toBe(201);
    expect(await policyOf('carol')).toMatchObject({ role: 'reader', pattern: 'plan.*' });
  });

  it('PUT ?dry_run=true answers the policy before and after', async () => {
    const petePolicy = await grantReader('pete');
    const { dry, real } = await dryThenReal(adam, 'PUT', `${P}/policies/${petePolicy.policy_id}`, { role: 'writer', pattern: 'plan.sales.*' });
    expect(dry.json()).toMatchObject({
      dry_run: true,
      effect: 'update',
      before: { policy_id: petePolicy.policy_id, role: 'reader', pattern: 'plan.*' },
      after: { principal: { identity: 'pete', type: 'user' }, role: 'writer', pattern: 'plan.sales.*' },
    });
    expect(real.statusCode).toBe(200);
    expect(real.json()).toMatchObject({ role: 'writer', pattern: 'plan.sales.*' });
  });

  it('DELETE ?dry_run=true answers the policy it would remove', async () => {
    const doraPolicy = await grantReader('dora');
    const { dry, real } = await dryThenReal(adam, 'DELETE', `${P}/policies/${doraPolicy.policy_id}`);
    expect(dry.json()).toMatchObject({ dry_run: true, effect: 'delete', before: { policy_id: doraPolicy.policy_id }, after: null });
    expect(real.statusCode).toBe(200);
    expect(await policyOf('dora')).toBeUndefined();
  });

  it('refuses a dry run exactly as the change itself: ROLE_ABOVE_OWN, POLICY_EXISTS, LAST_OWNER, 422', async () => {
    expect((await dryThenReal(adam, 'POST', `${P}/policies`, { principal: { identity: 'carol' }, role: 'owner', pattern: 'plan.*' })).real.json().code).toBe('ROLE_ABOVE_OWN');
    expect((await dryThenReal(alice, 'POST', `${P}/policies`, { principal: { identity: 'adam' }, role: 'admin', pattern: 'plan.*' })).real.json().code).toBe('POLICY_EXISTS');
    const own = (await policyOf('alice'))!;
    expect((await dryThenReal(alice, 'DELETE', `${P}/policies/${own.policy_id}`)).real.json().code).toBe('LAST_OWNER');
    expect((await dryThenReal(alice, 'PUT', `${P}/policies/${own.policy_id}`, { role: 'admin', pattern: 'plan.*' })).real.json().code).toBe('LAST_OWNER');
    expect((await alice.request('POST', `${P}/policies?dry_run=maybe`, { principal: { identity: 'carol' }, role: 'reader', pattern: 'plan.*' })).statusCode).toBe(422);
  });
});

/** One refusal, through HTTP (dry and real) and SQL (check and submit): the same status and code every way. */
async function refusedAlike(user: TestUser, http: { method: string; url: string; body?: unknown }, sql: string, expected: [number, string]) {
  for (const url of [`${http.url}?dry_run=true`, http.url]) {
    const res = await user.request(http.method, url, http.body);
    expect([res.statusCode, res.json().code], `${http.method} ${url}`).toEqual(expected);
  }
  expect(await viaSql(user, sql)).toEqual({ status: expected[0], code: expected[1] });
}

describe('the rules hold alike through HTTP and SQL GRANT/REVOKE', () => {
  const deleteOwn = async () => ({ method: 'DELETE', url: `${P}/policies/${(await policyOf('alice'))!.policy_id}` });
  const grant = (identity: string, role: string, pattern: string, ws = 'plan') => ({
    method: 'POST',
    url: `/policy/v1/access/workspace/${ws}/policies`,
    body: { principal: { identity }, role, pattern },
  });

  it('LAST_OWNER', async () => {
    await refusedAlike(alice, await deleteOwn(), 'REVOKE owner ON plan.* FROM alice', [409, 'LAST_OWNER']);
  });

  it('ROLE_ABOVE_OWN, granting and removing', async () => {
    await refusedAlike(adam, grant('carol', 'owner', 'plan.*'), 'GRANT owner ON plan.* TO carol', [403, 'ROLE_ABOVE_OWN']);
    await refusedAlike(adam, await deleteOwn(), 'REVOKE owner ON plan.* FROM alice', [403, 'ROLE_ABOVE_OWN']);
  });

  it('POLICY_EXISTS: another role on a pattern held', async () => {
    await refusedAlike(alice, grant('adam', 'writer', 'plan.*'), 'GRANT writer ON plan.* TO adam', [409, 'POLICY_EXISTS']);
  });

  it('a deleted workspace: 409 WORKSPACE_DELETED, and nothing granted', async () => {
    await workspace('gone');
    expect((await alice.request('DELETE', '/billing/v1/workspaces/gone')).statusCode).toBe(200);
    await refusedAlike(alice, grant('carol', 'reader', 'gone.*', 'gone'), 'GRANT reader ON gone.* TO carol', [409, 'WORKSPACE_DELETED']);
    expect(await t.app.lakeport.authz.workspacesOf({ identity: 'carol', permissions: [] } as unknown as Principal)).not.toContain('gone');
  });
});

describe('PolicyPlanner', () => {
  it('judges a plan again when it is applied: a plan that was fine may no longer be', async () => {
    await workspace('twice', { adam: 'owner' });
    const { planner } = t.app.lakeport.policy;
    const aliceP = { identity: 'alice', permissions: [] } as unknown as Principal;
    const adamP = { identity: 'adam', permissions: [] } as unknown as Principal;
    const ids = Object.fromEntries((await alice.request('GET', '/policy/v1/access/workspace/twice')).json().policies.map((p: Policy) => [p.principal.identity, p.policy_id]));
    // Each owner plans to remove the other: both plans are fine while both owners remain.
    const first = await planner.plan(aliceP, 'twice', { kind: 'revoke', target: { policyId: ids.adam } });
    const second = await planner.plan(adamP, 'twice', { kind: 'revoke', target: { policyId: ids.alice } });
    expect([first.effect.kind, second.effect.kind]).toEqual(['delete', 'delete']);
    expect(await planner.apply(first)).toMatchObject({ kind: 'delete', policy: { policy_id: ids.adam } });
    // Adam is no owner any more, so his plan is refused when applied, and alice stays.
    await expect(planner.apply(second)).rejects.toMatchObject({ status: 403, code: 'PERMISSION_DENIED' });
    expect((await alice.request('GET', '/policy/v1/access/workspace/twice')).json().policies).toHaveLength(1);
  });
});
