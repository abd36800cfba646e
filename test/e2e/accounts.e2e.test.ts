/**
 * End to end: `npm start` as a user runs it, then plain fetch as a user's script would: machine
 * credentials and tokens for alice, bob and eve; an account, its members and a workspace; the
 * workspace's access policies and their CSV export; and the walls between two tenants.
 * With DATABASE_URL set the server runs on a fresh PostgreSQL database, else on PGlite.
 */
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { once } from '../async.ts';
import { httpApi } from './http.ts';
import { startServer, type RunningServer } from './server.ts';

let server: RunningServer;

beforeAll(async () => {
  server = await startServer({ startTimeoutMs: 90_000 });
}, 120_000);

afterAll(async () => {
  await server?.stop();
}, 60_000);

const { call, expectStatus } = httpApi(() => server);

/** The admin creates a credential for `identity` and exchanges its secret for an access token. */
async function tokenFor(identity: string): Promise<string> {
  const credential = expectStatus(await call('POST', `/auth/clients/${identity}/credentials`, { admin: true, json: {} }), 200);
  expect(credential.client_id).toBe(identity);
  expect(credential.secret).toMatch(/^lpsk_/);
  const response = await fetch(`${server.url}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: identity, client_secret: credential.secret }),
  });
  const tokens = await response.json();
  expect(response.status, JSON.stringify(tokens)).toBe(200);
  expect(tokens.token_type).toBe('Bearer');
  expect(tokens.access_token).toEqual(expect.any(String));
  expect(tokens.scope.split(' ')).toEqual(expect.arrayContaining(['accounts', 'policy']));
  return tokens.access_token;
}

describe('accounts, workspaces and access policies over HTTP', { timeout: 30_000 }, () => {
  let alice: string;
  let bob: string;
  let eve: string;
  let account: string;
  let eveAccount: string;

  const salesMembers = [
    { identity: 'alice', role: 'owner' },
    { identity: 'bob', role: 'reader' },
  ];

  // The steps of the scenario, each run once by the first test that needs it (any test runs alone and in any order).
  const tokens = once(async () => {
    alice = await tokenFor('alice');
    bob = await tokenFor('bob');
    // alice as she is before she creates an account (every later step awaits this one).
    return expectStatus(await call('GET', '/auth/me', { token: alice }), 200);
  });
  const accountCreated = once(async () => {
    await tokens();
    const created = expectStatus(await call('POST', '/billing/v1/accounts', { token: alice, json: { name: 'Acme' } }), 201);
    account = created.account_id;
    return created;
  });
  const salesBody = () => ({ billing_account: account, members: salesMembers });
  const salesCreated = once(async () => {
    await accountCreated();
    return expectStatus(await call('PUT', '/control/v1/workspaces/sales', { token: alice, json: salesBody() }), 200);
  });
  const bobJoined = once(async () => {
    await accountCreated();
    const invite = { identity: 'bob', email: 'bob@example.com', role: 'member' };
    const pending = expectStatus(await call('POST', `/billing/v1/accounts/${account}/members`, { token: alice, json: invite }), 201);
    const beforeAccept = expectStatus(await call('GET', '/auth/me', { token: bob }), 200);
    const active = expectStatus(await call('POST', `/billing/v1/accounts/${account}/members/bob/accept`, { token: bob }), 200);
    return { invite, pending, beforeAccept, active };
  });
  /** The policies of sales right after its creation (the genesis grants), listed by alice. */
  const genesisListed = once(async () => {
    await salesCreated();
    return expectStatus(await call('GET', '/policy/v1/access/workspace/sales', { token: alice }), 200);
  });
  const genesisIds = async () => (await genesisListed()).policies.map((p: { policy_id: string }) => p.policy_id) as string[];
  const carolGranted = once(async () => {
    await genesisListed();
    const created = expectStatus(
      await call('POST', '/policy/v1/access/workspace/sales/policies', {
        token: alice,
        json: { principal: { identity: 'carol' }, role: 'writer', pattern: 'sales.orders.*' },
      }),
      201,
    );
    const carolPolicy = created.policy_id as string;
    const read = expectStatus(await call('GET', `/policy/v1/access/workspace/sales/policies/${carolPolicy}`, { token: alice }), 200);
    const updated = expectStatus(
      await call('PUT', `/policy/v1/access/workspace/sales/policies/${carolPolicy}`, {
        token: alice,
        json: { role: 'reader', pattern: 'sales.orders.*' },
      }),
      200,
    );
    const listed = expectStatus(await call('GET', '/policy/v1/access/workspace/sales', { token: alice }), 200);
    return { created, carolPolicy, read, updated, listed };
  });
  const eveSetUp = once(async () => {
    eve = await tokenFor('eve');
    const created = expectStatus(await call('POST', '/billing/v1/accounts', { token: eve, json: { name: 'Eve Corp' } }), 201);
    eveAccount = created.account_id;
    const ws = expectStatus(
      await call('PUT', '/control/v1/workspaces/ops', {
        token: eve,
        json: { billing_account: eveAccount, members: [{ identity: 'eve', role: 'owner' }] },
      }),
      200,
    );
    return ws;
  });

  it('issues credentials and access tokens for alice and bob', async () => {
    const me = await tokens();
    expect(me).toMatchObject({ identity: 'alice', billing_account: null });
  });

  it('alice creates an account and becomes its billing account holder', async () => {
    const created = await accountCreated();
    expect(created.account_id).toMatch(/^acct_/);
    expect(created).toMatchObject({ name: 'Acme', status: 'active', created_by: 'alice' });

    const me = expectStatus(await call('GET', '/auth/me', { token: alice }), 200);
    expect(me.billing_account).toBe(account);
    const listed = expectStatus(await call('GET', '/billing/v1/accounts', { token: alice }), 200);
    expect(listed.map((a: { account_id: string }) => a.account_id)).toEqual([account]);
  });

  it('alice creates workspace sales, idempotently', async () => {
    const first = await salesCreated();
    const body = salesBody();
    expect(first).toMatchObject({ name: 'sales', billing_account: account, created_by: 'alice', state: 'active', deleted_at: null });
    expect(first.members).toEqual(expect.arrayContaining(salesMembers));
    expect(first.members).toHaveLength(2);

    const again = expectStatus(await call('PUT', '/control/v1/workspaces/sales', { token: alice, json: body }), 200);
    expect(again).toMatchObject({ name: 'sales', billing_account: account, state: 'active', created_at: first.created_at });

    const listed = expectStatus(await call('GET', `/billing/v1/accounts/${account}/workspaces`, { token: alice }), 200);
    expect(listed.map((w: { name: string }) => w.name)).toEqual(['sales']);

    const properties = expectStatus(await call('GET', '/control/v1/workspaces/sales/properties', { token: alice }), 200);
    expect(properties).toEqual({ workspace: 'sales', deletion_protection: false, drop_protection: false, history_protection: false });
  });

  it('alice invites bob, bob accepts', async () => {
    const { invite, pending, beforeAccept, active } = await bobJoined();
    expect(pending).toMatchObject({ account_id: account, ...invite, state: 'pending', invited_by: 'alice', added_at: null, eligible_at: null });
    expect(pending.invite_expires_at).toEqual(expect.any(String));

    expect(beforeAccept.billing_account).toBeNull();

    expect(active).toMatchObject({ account_id: account, identity: 'bob', role: 'member', state: 'active', invite_expires_at: null });
    expect(Date.parse(active.added_at)).not.toBeNaN();
    expect(active.eligible_at).toBe(active.added_at);

    const members = expectStatus(await call('GET', `/billing/v1/accounts/${account}/members`, { token: alice }), 200);
    const byIdentity = Object.fromEntries(members.map((m: { identity: string }) => [m.identity, m]));
    expect(Object.keys(byIdentity).sort()).toEqual(['alice', 'bob']);
    expect(byIdentity.alice).toMatchObject({ role: 'billing_admin', state: 'active' });
    expect(byIdentity.bob).toMatchObject({ role: 'member', state: 'active', email: 'bob@example.com' });

    const me = expectStatus(await call('GET', '/auth/me', { token: bob }), 200);
    expect(me).toMatchObject({ identity: 'bob', billing_account: account });
  });

  it('alice lists the genesis policies; bob, a reader, may not', async () => {
    const listed = await genesisListed();
    expect(listed.workspace).toBe('sales');
    expect(listed.policies).toHaveLength(2);
    const byPrincipal = Object.fromEntries(listed.policies.map((p: { principal: { identity: string } }) => [p.principal.identity, p]));
    expect(byPrincipal.alice).toMatchObject({ workspace: 'sales', role: 'owner', pattern: 'sales.*' });
    expect(byPrincipal.bob).toMatchObject({ workspace: 'sales', role: 'reader', pattern: 'sales.*' });

    const denied = expectStatus(await call('GET', '/policy/v1/access/workspace/sales', { token: bob }), 403);
    expect(denied.code).toBe('PERMISSION_DENIED');
  });

  it('alice grants carol writer on sales.orders.*, reads it back and narrows it to reader', async () => {
    const { created, carolPolicy, read, updated, listed } = await carolGranted();
    expect(created).toMatchObject({
      workspace: 'sales',
      principal: { identity: 'carol', type: 'user' },
      role: 'writer',
      pattern: 'sales.orders.*',
      created_by: 'alice',
    });
    expect(await genesisIds()).not.toContain(carolPolicy);

    expect(read).toEqual(created);

    expect(updated).toMatchObject({ policy_id: carolPolicy, role: 'reader', pattern: 'sales.orders.*', principal: { identity: 'carol' } });

    expect(listed.policies).toHaveLength(3);
  });

  it('alice downloads the effective permissions as CSV', async () => {
    const { carolPolicy } = await carolGranted();
    const reply = await call('GET', '/policy/v1/access/workspace/sales/effective-permissions.csv', { token: alice });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^text\/csv/);
    const records: Record<string, string>[] = parse(reply.text, { columns: true, skip_empty_lines: true });
    const header = Object.keys(records[0] ?? {});
    expect(header).toEqual(expect.arrayContaining(['policy_id', 'principal', 'role', 'pattern', 'dataset']));
    // No datasets yet: each policy resolves to exactly one row with an empty dataset column.
    expect(records.map((r) => r.policy_id).sort()).toEqual([...(await genesisIds()), carolPolicy].sort());
    for (const record of records) expect(record.dataset).toBe('');
    expect(records.find((r) => r.policy_id === carolPolicy)).toMatchObject({ principal: 'carol', role: 'reader', pattern: 'sales.orders.*' });
  });

  it('eve, another tenant, gets her own account and workspace ops', async () => {
    await accountCreated();
    const ws = await eveSetUp();
    expect(eveAccount).not.toBe(account);
    expect(ws).toMatchObject({ name: 'ops', billing_account: eveAccount, state: 'active' });
  });

  it('keeps the tenants apart', async () => {
    await Promise.all([salesCreated(), eveSetUp()]);
    expect(expectStatus(await call('GET', '/policy/v1/access/workspace/sales', { token: eve }), 403).code).toBe('PERMISSION_DENIED');
    const account403 = expectStatus(await call('GET', `/billing/v1/accounts/${account}`, { token: eve }), 403);
    expect(account403.code).toBe('NOT_A_MEMBER');
    expectStatus(await call('GET', `/billing/v1/accounts/${account}/workspaces`, { token: eve }), 403);
    expectStatus(await call('GET', `/billing/v1/accounts/${account}/members`, { token: eve }), 403);

    const eveWorkspaces = expectStatus(await call('GET', `/billing/v1/accounts/${eveAccount}/workspaces`, { token: eve }), 200);
    expect(eveWorkspaces.map((w: { name: string }) => w.name)).toEqual(['ops']);
    const eveAccounts = expectStatus(await call('GET', '/billing/v1/accounts', { token: eve }), 200);
    expect(eveAccounts.map((a: { account_id: string }) => a.account_id)).toEqual([eveAccount]);

    expect(expectStatus(await call('GET', '/policy/v1/access/workspace/ops', { token: alice }), 403).code).toBe('PERMISSION_DENIED');
    expectStatus(await call('GET', '/policy/v1/access/workspace/ops/effective-permissions.csv', { token: alice }), 403);
    // eve cannot grant herself into sales either.
    expectStatus(
      await call('POST', '/policy/v1/access/workspace/sales/policies', {
        token: eve,
        json: { principal: { identity: 'eve' }, role: 'owner', pattern: 'sales.*' },
      }),
      403,
    );
  });
});
