import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

const DAY_MS = 86_400_000;
const PREFIXES = ['/billing', '/control'] as const;
type Prefix = (typeof PREFIXES)[number];
type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

interface Client {
  identity: string;
  headers: Record<string, string>;
}

let seq = 0;
/** Identities are unique per test: membership is exclusive across the whole database. */
const uid = (name: string) => `${name}-${++seq}`;

async function login(name: string, credential: Record<string, unknown> = {}): Promise<Client> {
  const identity = uid(name);
  const cred = await t.app.inject({
    method: 'POST',
    url: `/auth/clients/${identity}/credentials`,
    headers: { 'x-admin-token': t.adminToken },
    payload: credential,
  });
  expect(cred.statusCode).toBe(200);
  const token = await t.app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: identity, client_secret: cred.json().secret }).toString(),
  });
  expect(token.statusCode).toBe(200);
  return { identity, headers: { authorization: `Bearer ${token.json().access_token}` } };
}

function call(client: Client | null, method: Method, path: string, payload?: unknown, prefix: Prefix = '/billing') {
  return t.app.inject({
    method,
    url: `${prefix}${path}`,
    headers: client?.headers ?? {},
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });
}

async function createAccount(admin: Client, body: Record<string, unknown> = { name: 'Acme' }, prefix: Prefix = '/billing') {
  const res = await call(admin, 'POST', '/v1/accounts', body, prefix);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { account_id: string; [k: string]: unknown };
}

async function invite(admin: Client, accountId: string, identity: string, role = 'member', prefix: Prefix = '/billing') {
  const res = await call(admin, 'POST', `/v1/accounts/${accountId}/members`, { identity, email: `${identity}@example.com`, role }, prefix);
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

async function accept(client: Client, accountId: string, prefix: Prefix = '/billing') {
  return call(client, 'POST', `/v1/accounts/${accountId}/members/${client.identity}/accept`, undefined, prefix);
}

/** An account with an admin and, for each role given, an active member holding it. */
async function accountWith(...roles: ('billing_admin' | 'member')[]) {
  const admin = await login('admin');
  const account = await createAccount(admin);
  const members: Client[] = [];
  for (const role of roles) {
    const m = await login(role === 'member' ? 'mem' : 'adm');
    await invite(admin, account.account_id, m.identity, role);
    expect((await accept(m, account.account_id)).statusCode).toBe(200);
    members.push(m);
  }
  return { admin, accountId: account.account_id, members };
}

const memberRow = (accountId: string, identity: string) =>
  t.db.kysely.selectFrom('members').selectAll().where('account_id', '=', accountId).where('identity', '=', identity).executeTakeFirst();

async function expireInvite(accountId: string, identity: string) {
  await t.db.kysely
    .updateTable('members')
    .set({ invite_expires_at: new Date(Date.now() - 1000) })
    .where('account_id', '=', accountId)
    .where('identity', '=', identity)
    .execute();
}

async function insertWorkspace(name: string, accountId: string, deleted = false) {
  await t.db.kysely
    .insertInto('workspaces')
    .values({
      name,
      billing_account: accountId,
      members: JSON.stringify([]),
      created_by: 'test',
      ...(deleted ? { deleted_at: new Date(), deleted_by: 'test', purge_after: new Date(Date.now() + DAY_MS) } : {}),
    })
    .execute();
}

async function me(client: Client) {
  const res = await t.app.inject({ method: 'GET', url: '/auth/me', headers: client.headers });
  expect(res.statusCode).toBe(200);
  return res.json() as { identity: string; billing_account: string | null };
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Every endpoint, with a valid body where it takes one. */
const ENDPOINTS: [Method, string, unknown?][] = [
  ['GET', '/v1/accounts'],
  ['POST', '/v1/accounts', { name: 'x' }],
  ['GET', '/v1/accounts/acct_x'],
  ['PATCH', '/v1/accounts/acct_x', { name: 'y' }],
  ['DELETE', '/v1/accounts/acct_x'],
  ['GET', '/v1/accounts/acct_x/members'],
  ['POST', '/v1/accounts/acct_x/members', { identity: 'bob', email: 'bob@example.com', role: 'member' }],
  ['PATCH', '/v1/accounts/acct_x/members/bob', { role: 'member' }],
  ['DELETE', '/v1/accounts/acct_x/members/bob'],
  ['POST', '/v1/accounts/acct_x/members/bob/accept'],
  ['GET', '/v1/invoices'],
  ['GET', '/v1/invoices/inv_1'],
];

describe('authentication and scope', () => {
  it.each(PREFIXES)('%s: every endpoint needs a bearer token (401)', async (prefix) => {
    for (const [method, path, body] of ENDPOINTS) {
      const res = await call(null, method, path, body, prefix);
      expect(res.statusCode, `${method} ${path}`).toBe(401);
      expect(res.json().code).toBe('UNAUTHORIZED');
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    }
  });

  it.each(PREFIXES)('%s: a malformed or forged token is 401 INVALID_TOKEN', async (prefix) => {
    for (const authorization of ['Bearer not-a-jwt', 'Basic abc']) {
      const res = await t.app.inject({ method: 'GET', url: `${prefix}/v1/accounts`, headers: { authorization } });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('INVALID_TOKEN');
    }
  });

  it.each(PREFIXES)('%s: a token without the accounts scope is 403 INSUFFICIENT_SCOPE everywhere', async (prefix) => {
    const odataOnly = await login('odata', { scopes: ['odata'] });
    for (const [method, path, body] of ENDPOINTS) {
      const res = await call(odataOnly, method, path, body, prefix);
      expect(res.statusCode, `${method} ${path}`).toBe(403);
      expect(res.json().code).toBe('INSUFFICIENT_SCOPE');
    }
    expect(await t.db.kysely.selectFrom('accounts').selectAll().where('created_by', '=', odataOnly.identity).execute()).toEqual([]);
  });
});

describe('create and list accounts', () => {
  it('creates an account with the caller as an active billing_admin', async () => {
    const alice = await login('alice');
    const before = Date.now();
    const res = await call(alice, 'POST', '/v1/accounts', { name: '  Acme Corp ', tax_id: 'DE123', address: { city: 'Berlin', lines: ['Main St 1'] } });
    expect(res.statusCode).toBe(201);
    const account = res.json();
    expect(Object.keys(account).sort()).toEqual(
      ['account_id', 'address', 'created_at', 'created_by', 'member_min_age_ms', 'name', 'status', 'tax_id', 'updated_at'].sort(),
    );
    expect(account).toMatchObject({
      name: 'Acme Corp',
      tax_id: 'DE123',
      address: { city: 'Berlin', lines: ['Main St 1'] },
      member_min_age_ms: null,
      status: 'active',
      created_by: alice.identity,
    });
    expect(account.account_id).toMatch(/^acct_[0-9A-Za-z]{22}$/);
    expect(account.created_at).toMatch(ISO);
    expect(new Date(account.created_at).getTime()).toBeGreaterThanOrEqual(before - 5);
    expect(account.updated_at).toBe(account.created_at);

    const members = await call(alice, 'GET', `/v1/accounts/${account.account_id}/members`);
    expect(members.statusCode).toBe(200);
    expect(members.json()).toEqual([
      {
        account_id: account.account_id,
        identity: alice.identity,
        email: null,
        role: 'billing_admin',
        state: 'active',
        invited_by: null,
        invited_at: null,
        invite_expires_at: null,
        added_at: account.created_at,
        min_age_ms: null,
        eligible_at: account.created_at,
      },
    ]);

    const list = await call(alice, 'GET', '/v1/accounts');
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual([account]);
  });

  it('optional fields default to null', async () => {
    const bob = await login('bob');
    const account = await createAccount(bob, { name: 'Solo', tax_id: null, address: null });
    expect(account).toMatchObject({ tax_id: null, address: null });
    const carol = await login('carol');
    expect(await createAccount(carol, { name: 'Bare' })).toMatchObject({ tax_id: null, address: null });
  });

  it('refuses a second account for a member (409 ALREADY_MEMBER), for a plain member too', async () => {
    const { admin, members } = await accountWith('member');
    for (const who of [admin, members[0]!]) {
      const res = await call(who, 'POST', '/v1/accounts', { name: 'Second' });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ code: 'ALREADY_MEMBER' });
      expect(typeof res.json().detail).toBe('string');
    }
    expect(await t.db.kysely.selectFrom('accounts').select('account_id').where('created_by', '=', admin.identity).execute()).toHaveLength(1);
  });

  it('lets two concurrent creates by one identity make exactly one account', async () => {
    const racer = await login('racer');
    const results = await Promise.all([1, 2, 3].map((n) => call(racer, 'POST', '/v1/accounts', { name: `Race ${n}` })));
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409, 409]);
    for (const r of results.filter((r) => r.statusCode === 409)) expect(r.json().code).toBe('ALREADY_MEMBER');
    expect(await t.db.kysely.selectFrom('members').selectAll().where('identity', '=', racer.identity).execute()).toHaveLength(1);
    expect((await call(racer, 'GET', '/v1/accounts')).json()).toHaveLength(1);
  });

  it('a pending invite elsewhere does not block creating an account', async () => {
    const { admin, accountId } = await accountWith();
    const dana = await login('dana');
    await invite(admin, accountId, dana.identity);
    await createAccount(dana, { name: 'Dana Inc' });
  });

  it('lists nothing for a non-member or a pending invitee', async () => {
    const { admin, accountId } = await accountWith();
    const eve = await login('eve');
    expect((await call(eve, 'GET', '/v1/accounts')).json()).toEqual([]);
    await invite(admin, accountId, eve.identity);
    expect((await call(eve, 'GET', '/v1/accounts')).json()).toEqual([]);
  });

  it('validates the create body with FastAPI-shaped 422s', async () => {
    const v = await login('val');
    const cases: [unknown, (string | number)[], string][] = [
      [{}, ['body', 'name'], 'missing'],
      [{ name: null }, ['body', 'name'], 'string_type'],
      [{ name: '   ' }, ['body', 'name'], 'string_too_short'],
      [{ name: 'x'.repeat(201) }, ['body', 'name'], 'string_too_long'],
      [{ name: 'ok', tax_id: 5 }, ['body', 'tax_id'], 'string_type'],
      [{ name: 'ok', address: 'Main St' }, ['body', 'address'], 'object_type'],
      [{ name: 'ok', address: [1] }, ['body', 'address'], 'object_type'],
    ];
    for (const [body, loc, type] of cases) {
      const res = await call(v, 'POST', '/v1/accounts', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json().detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc, type, msg: expect.any(String) })]));
    }
    const notJson = await t.app.inject({
      method: 'POST',
      url: '/billing/v1/accounts',
      headers: { ...v.headers, 'content-type': 'application/json' },
      payload: '{"name":',
    });
    expect(notJson.statusCode).toBe(422);
    expect(notJson.json().detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
    expect((await call(v, 'GET', '/v1/accounts')).json()).toEqual([]);
  });
});

describe('read, update and delete an account', () => {
  it('lets any active member read the account; 403 NOT_A_MEMBER for others; 404 for unknown ids', async () => {
    const { admin, accountId, members } = await accountWith('member');
    for (const who of [admin, members[0]!]) {
      const res = await call(who, 'GET', `/v1/accounts/${accountId}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ account_id: accountId, status: 'active' });
    }
    const stranger = await login('stranger');
    const forbidden = await call(stranger, 'GET', `/v1/accounts/${accountId}`);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().code).toBe('NOT_A_MEMBER');
    const unknown = await call(stranger, 'GET', '/v1/accounts/acct_doesnotexist');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('ACCOUNT_NOT_FOUND');
    // A member of another account is a stranger here too.
    const other = await accountWith();
    expect((await call(other.admin, 'GET', `/v1/accounts/${accountId}`)).json().code).toBe('NOT_A_MEMBER');
    // A pending invitee is not a member yet.
    const inv = await login('inv');
    await invite(admin, accountId, inv.identity);
    expect((await call(inv, 'GET', `/v1/accounts/${accountId}`)).statusCode).toBe(403);
  });

  it('updates fields (billing_admin), clears nullable ones, leaves others', async () => {
    const alice = await login('alice');
    const account = await createAccount(alice, { name: 'Acme', tax_id: 'T1', address: { city: 'Paris' } });
    const url = `/v1/accounts/${account.account_id}`;
    await new Promise((r) => setTimeout(r, 5));
    const res = await call(alice, 'PATCH', url, { name: 'Acme 2', member_min_age_ms: 60_000 });
    expect(res.statusCode).toBe(200);
    const updated = res.json();
    expect(updated).toMatchObject({ name: 'Acme 2', tax_id: 'T1', address: { city: 'Paris' }, member_min_age_ms: 60_000, created_at: account.created_at });
    expect(new Date(updated.updated_at).getTime()).toBeGreaterThan(new Date(account.updated_at as string).getTime());

    const cleared = await call(alice, 'PATCH', url, { tax_id: null, address: null, member_min_age_ms: null });
    expect(cleared.json()).toMatchObject({ name: 'Acme 2', tax_id: null, address: null, member_min_age_ms: null });
    const again = await call(alice, 'PATCH', url, { address: { zip: '75001' }, member_min_age_ms: 0 });
    expect(again.json()).toMatchObject({ address: { zip: '75001' }, member_min_age_ms: 0 });

    const empty = await call(alice, 'PATCH', url, {});
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual(again.json());
    expect((await call(alice, 'GET', url)).json()).toEqual(again.json());
  });

  it('validates the update body (name cannot be null; min age is a non-negative integer)', async () => {
    const { admin, accountId } = await accountWith();
    const url = `/v1/accounts/${accountId}`;
    const cases: [unknown, (string | number)[]][] = [
      [{ name: null }, ['body', 'name']],
      [{ name: '' }, ['body', 'name']],
      [{ member_min_age_ms: -1 }, ['body', 'member_min_age_ms']],
      [{ member_min_age_ms: 1.5 }, ['body', 'member_min_age_ms']],
      [{ member_min_age_ms: '1000' }, ['body', 'member_min_age_ms']],
      [{ member_min_age_ms: 1e20 }, ['body', 'member_min_age_ms']],
      [{ address: 3 }, ['body', 'address']],
    ];
    for (const [body, loc] of cases) {
      const res = await call(admin, 'PATCH', url, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json().detail.map((d: { loc: unknown }) => d.loc)).toContainEqual(loc);
    }
    expect((await call(admin, 'GET', url)).json()).toMatchObject({ name: 'Acme', member_min_age_ms: null });
  });

  it('refuses updates from a plain member (403 BILLING_ADMIN_REQUIRED), a stranger (403) and on unknown ids (404)', async () => {
    const { accountId, members } = await accountWith('member');
    const byMember = await call(members[0]!, 'PATCH', `/v1/accounts/${accountId}`, { name: 'Mine' });
    expect(byMember.statusCode).toBe(403);
    expect(byMember.json().code).toBe('BILLING_ADMIN_REQUIRED');
    const stranger = await login('stranger');
    expect((await call(stranger, 'PATCH', `/v1/accounts/${accountId}`, { name: 'Mine' })).json().code).toBe('NOT_A_MEMBER');
    const unknown = await call(stranger, 'PATCH', '/v1/accounts/acct_nope', { name: 'Mine' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('ACCOUNT_NOT_FOUND');
  });

  it('refuses delete while a workspace references the account (soft-deleted too), then deactivates it', async () => {
    const { admin, accountId, members } = await accountWith('member', 'billing_admin');
    const pending = await login('pend');
    await invite(admin, accountId, pending.identity);
    const url = `/v1/accounts/${accountId}`;

    const byMember = await call(members[0]!, 'DELETE', url);
    expect(byMember.statusCode).toBe(403);
    expect(byMember.json().code).toBe('BILLING_ADMIN_REQUIRED');

    const ws = `ws_${seq}`;
    const wsGone = `ws_gone_${seq}`;
    await insertWorkspace(ws, accountId);
    await insertWorkspace(wsGone, accountId, true);
    const blocked = await call(admin, 'DELETE', url);
    expect(blocked.statusCode).toBe(409);
    expect(blocked.json()).toMatchObject({ code: 'ACCOUNT_HAS_WORKSPACES', workspaces: [ws, wsGone].sort() });
    expect(blocked.json().detail).toContain(ws);
    expect((await call(admin, 'GET', url)).json().status).toBe('active');

    await t.db.kysely.deleteFrom('workspaces').where('name', '=', ws).execute();
    expect((await call(admin, 'DELETE', url)).json().code).toBe('ACCOUNT_HAS_WORKSPACES');
    await t.db.kysely.deleteFrom('workspaces').where('name', '=', wsGone).execute();

    const res = await call(admin, 'DELETE', url);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ account_id: accountId, status: 'deactivated', name: 'Acme' });
    const row = await t.db.kysely.selectFrom('accounts').selectAll().where('account_id', '=', accountId).executeTakeFirstOrThrow();
    expect(row.status).toBe('deactivated');
    expect(row.deactivated_at).toBeInstanceOf(Date);
    expect(await t.db.kysely.selectFrom('members').selectAll().where('account_id', '=', accountId).execute()).toEqual([]);

    for (const who of [admin, ...members, pending]) {
      const get = await call(who, 'GET', url);
      expect(get.statusCode).toBe(404);
      expect(get.json().code).toBe('ACCOUNT_NOT_FOUND');
      expect((await call(who, 'GET', '/v1/accounts')).json()).toEqual([]);
      expect((await me(who)).billing_account).toBeNull();
    }
    expect((await call(admin, 'DELETE', url)).statusCode).toBe(404);
    expect((await call(admin, 'GET', `${url}/members`)).statusCode).toBe(404);
    expect((await accept(pending, accountId)).statusCode).toBe(404);
    // Everyone is free to join or create another account now.
    await createAccount(admin, { name: 'Next' });
  });

  it('404s a delete of an unknown account and 403s a stranger', async () => {
    const { accountId } = await accountWith();
    const stranger = await login('stranger');
    expect((await call(stranger, 'DELETE', '/v1/accounts/acct_unknown')).json().code).toBe('ACCOUNT_NOT_FOUND');
    expect((await call(stranger, 'DELETE', `/v1/accounts/${accountId}`)).json().code).toBe('NOT_A_MEMBER');
  });
});

describe('invites', () => {
  it('writes a pending invite with a 7-day clock', async () => {
    const { admin, accountId } = await accountWith();
    const bob = await login('bob');
    const before = Date.now();
    const res = await call(admin, 'POST', `/v1/accounts/${accountId}/members`, { identity: bob.identity, email: 'bob@example.com', role: 'member' });
    expect(res.statusCode).toBe(201);
    const m = res.json();
    expect(m).toMatchObject({
      account_id: accountId,
      identity: bob.identity,
      email: 'bob@example.com',
      role: 'member',
      state: 'pending',
      invited_by: admin.identity,
      added_at: null,
      min_age_ms: null,
      eligible_at: null,
    });
    expect(new Date(m.invited_at).getTime()).toBeGreaterThanOrEqual(before - 5);
    expect(new Date(m.invite_expires_at).getTime() - new Date(m.invited_at).getTime()).toBe(7 * DAY_MS);
    // A pending invite is not a membership.
    expect((await me(bob)).billing_account).toBeNull();
    const list = (await call(admin, 'GET', `/v1/accounts/${accountId}/members`)).json();
    expect(list.map((r: { identity: string; state: string }) => [r.identity, r.state])).toEqual([
      [admin.identity, 'active'],
      [bob.identity, 'pending'],
    ]);
  });

  it('re-invite of a pending identity resets the clock and rewrites email and role, with no error', async () => {
    const { admin, accountId, members } = await accountWith('billing_admin');
    const bob = await login('bob');
    await invite(admin, accountId, bob.identity, 'member');
    const old = new Date(Date.now() - 6 * DAY_MS);
    await t.db.kysely
      .updateTable('members')
      .set({ invited_at: old, invite_expires_at: new Date(old.getTime() + 7 * DAY_MS) })
      .where('account_id', '=', accountId)
      .where('identity', '=', bob.identity)
      .execute();
    const res = await call(members[0]!, 'POST', `/v1/accounts/${accountId}/members`, { identity: bob.identity, email: 'new@example.com', role: 'billing_admin' });
    expect(res.statusCode).toBe(201);
    const m = res.json();
    expect(m).toMatchObject({ state: 'pending', email: 'new@example.com', role: 'billing_admin', invited_by: members[0]!.identity });
    expect(new Date(m.invite_expires_at).getTime()).toBeGreaterThan(Date.now() + 7 * DAY_MS - 60_000);
    const rows = await t.db.kysely.selectFrom('members').selectAll().where('identity', '=', bob.identity).execute();
    expect(rows).toHaveLength(1);
  });

  it('re-invite revives an expired invite', async () => {
    const { admin, accountId } = await accountWith();
    const bob = await login('bob');
    await invite(admin, accountId, bob.identity);
    await expireInvite(accountId, bob.identity);
    const again = await invite(admin, accountId, bob.identity);
    expect(new Date(again.invite_expires_at).getTime()).toBeGreaterThan(Date.now() + 6 * DAY_MS);
    expect((await accept(bob, accountId)).statusCode).toBe(200);
  });

  it('409s an invitee who is already active here (ALREADY_MEMBER) or in another account (MEMBER_OF_ANOTHER_ACCOUNT)', async () => {
    const { admin, accountId, members } = await accountWith('member');
    for (const identity of [admin.identity, members[0]!.identity]) {
      const res = await call(admin, 'POST', `/v1/accounts/${accountId}/members`, { identity, email: 'x@example.com', role: 'billing_admin' });
      expect(res.statusCode).toBe(409);
      expect(res.json().code).toBe('ALREADY_MEMBER');
    }
    const other = await accountWith('member');
    for (const identity of [other.admin.identity, other.members[0]!.identity]) {
      const res = await call(admin, 'POST', `/v1/accounts/${accountId}/members`, { identity, email: 'x@example.com', role: 'member' });
      expect(res.statusCode).toBe(409);
      expect(res.json().code).toBe('MEMBER_OF_ANOTHER_ACCOUNT');
    }
    expect(await memberRow(accountId, other.admin.identity)).toBeUndefined();
    expect((await memberRow(accountId, members[0]!.identity))?.role).toBe('member');
  });

  it('lets several accounts invite the same free identity', async () => {
    const a = await accountWith();
    const b = await accountWith();
    const bob = await login('bob');
    await invite(a.admin, a.accountId, bob.identity);
    await invite(b.admin, b.accountId, bob.identity);
  });

  it('needs billing_admin: 403 BILLING_ADMIN_REQUIRED, 403 NOT_A_MEMBER, 404 ACCOUNT_NOT_FOUND', async () => {
    const { accountId, members } = await accountWith('member');
    const body = { identity: 'someone', email: 'someone@example.com', role: 'member' };
    const byMember = await call(members[0]!, 'POST', `/v1/accounts/${accountId}/members`, body);
    expect(byMember.statusCode).toBe(403);
    expect(byMember.json().code).toBe('BILLING_ADMIN_REQUIRED');
    const stranger = await login('stranger');
    expect((await call(stranger, 'POST', `/v1/accounts/${accountId}/members`, body)).json().code).toBe('NOT_A_MEMBER');
    const unknown = await call(stranger, 'POST', '/v1/accounts/acct_nope/members', body);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('ACCOUNT_NOT_FOUND');
    expect(await memberRow(accountId, 'someone')).toBeUndefined();
  });

  it('validates the invite body', async () => {
    const { admin, accountId } = await accountWith();
    const ok = { identity: 'valid', email: 'valid@example.com', role: 'member' };
    const cases: [unknown, (string | number)[], string][] = [
      [{}, ['body', 'identity'], 'missing'],
      [{ ...ok, email: undefined }, ['body', 'email'], 'missing'],
      [{ ...ok, role: undefined }, ['body', 'role'], 'missing'],
      [{ ...ok, email: 'not-an-email' }, ['body', 'email'], 'string_pattern_mismatch'],
      [{ ...ok, role: 'owner' }, ['body', 'role'], 'enum'],
      [{ ...ok, identity: '-bad' }, ['body', 'identity'], 'string_pattern_mismatch'],
      [{ ...ok, identity: 'has space' }, ['body', 'identity'], 'string_pattern_mismatch'],
      [{ ...ok, identity: 42 }, ['body', 'identity'], 'string_type'],
    ];
    for (const [body, loc, type] of cases) {
      const res = await call(admin, 'POST', `/v1/accounts/${accountId}/members`, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json().detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc, type })]));
    }
    expect(await memberRow(accountId, 'valid')).toBeUndefined();
  });
});

describe('listing members', () => {
  it('any active member lists; expired invites are omitted and deleted', async () => {
    const { admin, accountId, members } = await accountWith('member');
    const fresh = await login('fresh');
    const stale = await login('stale');
    await invite(admin, accountId, fresh.identity);
    await invite(admin, accountId, stale.identity);
    await expireInvite(accountId, stale.identity);
    expect(await memberRow(accountId, stale.identity)).toBeDefined();

    const res = await call(members[0]!, 'GET', `/v1/accounts/${accountId}/members`);
    expect(res.statusCode).toBe(200);
    const ids = res.json().map((m: { identity: string }) => m.identity);
    expect(ids).toEqual(expect.arrayContaining([admin.identity, members[0]!.identity, fresh.identity]));
    expect(ids).not.toContain(stale.identity);
    expect(ids).toHaveLength(3);
    expect(await memberRow(accountId, stale.identity)).toBeUndefined();
    expect(await memberRow(accountId, fresh.identity)).toBeDefined();
    // Gone for good: accepting now finds nothing pending.
    const late = await accept(stale, accountId);
    expect(late.statusCode).toBe(404);
    expect(late.json().code).toBe('NO_PENDING_INVITE');
  });

  it('403 for a stranger or a pending invitee, 404 for an unknown account', async () => {
    const { admin, accountId } = await accountWith();
    const inv = await login('inv');
    await invite(admin, accountId, inv.identity);
    const stranger = await login('stranger');
    for (const who of [stranger, inv]) {
      const res = await call(who, 'GET', `/v1/accounts/${accountId}/members`);
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('NOT_A_MEMBER');
    }
    const unknown = await call(stranger, 'GET', '/v1/accounts/acct_nope/members');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('ACCOUNT_NOT_FOUND');
  });
});

describe('accepting invites', () => {
  it('activates the invitee, stamps added_at/min_age_ms/eligible_at, and /auth/me reports the account', async () => {
    const { admin, accountId } = await accountWith();
    const bob = await login('bob');
    expect((await me(bob)).billing_account).toBeNull();
    await invite(admin, accountId, bob.identity, 'billing_admin');
    const before = Date.now();
    const res = await accept(bob, accountId);
    expect(res.statusCode).toBe(200);
    const m = res.json();
    expect(m).toMatchObject({
      account_id: accountId,
      identity: bob.identity,
      email: `${bob.identity}@example.com`,
      role: 'billing_admin',
      state: 'active',
      invited_by: admin.identity,
      invite_expires_at: null,
      min_age_ms: null,
    });
    expect(new Date(m.added_at).getTime()).toBeGreaterThanOrEqual(before - 5);
    expect(m.eligible_at).toBe(m.added_at);
    expect((await me(bob)).billing_account).toBe(accountId);
    expect((await call(bob, 'GET', '/v1/accounts')).json().map((a: { account_id: string }) => a.account_id)).toEqual([accountId]);
    // Now a billing_admin, bob may do admin things.
    expect((await call(bob, 'PATCH', `/v1/accounts/${accountId}`, { tax_id: 'B1' })).statusCode).toBe(200);
    // Accepting again: nothing pending.
    const twice = await accept(bob, accountId);
    expect(twice.statusCode).toBe(404);
    expect(twice.json().code).toBe('NO_PENDING_INVITE');
  });

  it('reads member_min_age_ms at acceptance, not at invite time', async () => {
    const { admin, accountId } = await accountWith();
    const url = `/v1/accounts/${accountId}`;
    expect((await call(admin, 'PATCH', url, { member_min_age_ms: 1000 })).statusCode).toBe(200);
    const bob = await login('bob');
    await invite(admin, accountId, bob.identity);
    expect((await call(admin, 'PATCH', url, { member_min_age_ms: 3 * DAY_MS })).statusCode).toBe(200);
    const m = (await accept(bob, accountId)).json();
    expect(m.min_age_ms).toBe(3 * DAY_MS);
    expect(new Date(m.eligible_at).getTime() - new Date(m.added_at).getTime()).toBe(3 * DAY_MS);
    const row = await memberRow(accountId, bob.identity);
    expect(Number(row?.min_age_ms)).toBe(3 * DAY_MS);
    expect(row!.eligible_at!.getTime() - row!.added_at!.getTime()).toBe(3 * DAY_MS);
    // The stamp stays when the account's value changes later.
    await call(admin, 'PATCH', url, { member_min_age_ms: 5 });
    const listed = (await call(admin, 'GET', `${url}/members`)).json().find((r: { identity: string }) => r.identity === bob.identity);
    expect(listed.min_age_ms).toBe(3 * DAY_MS);
  });

  it('refuses anyone but the invitee (403 NOT_THE_INVITEE), even a billing_admin', async () => {
    const { admin, accountId } = await accountWith();
    const bob = await login('bob');
    const mallory = await login('mallory');
    await invite(admin, accountId, bob.identity);
    for (const who of [mallory, admin]) {
      const res = await call(who, 'POST', `/v1/accounts/${accountId}/members/${bob.identity}/accept`);
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('NOT_THE_INVITEE');
    }
    expect((await memberRow(accountId, bob.identity))?.state).toBe('pending');
  });

  it('404 NO_PENDING_INVITE when never invited; 404 ACCOUNT_NOT_FOUND for an unknown account', async () => {
    const { accountId } = await accountWith();
    const bob = await login('bob');
    const none = await accept(bob, accountId);
    expect(none.statusCode).toBe(404);
    expect(none.json().code).toBe('NO_PENDING_INVITE');
    const unknown = await accept(bob, 'acct_nope');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('ACCOUNT_NOT_FOUND');
  });

  it('410 INVITE_EXPIRED after expiry, deleting the invite; then 404', async () => {
    const { admin, accountId } = await accountWith();
    const bob = await login('bob');
    await invite(admin, accountId, bob.identity);
    await expireInvite(accountId, bob.identity);
    const res = await accept(bob, accountId);
    expect(res.statusCode).toBe(410);
    expect(res.json().code).toBe('INVITE_EXPIRED');
    expect(await memberRow(accountId, bob.identity)).toBeUndefined();
    expect((await me(bob)).billing_account).toBeNull();
    expect((await accept(bob, accountId)).json().code).toBe('NO_PENDING_INVITE');
  });

  it('is exclusive: 409 MEMBER_OF_ANOTHER_ACCOUNT once the invitee joined or created another account', async () => {
    const a = await accountWith();
    const b = await accountWith();
    const bob = await login('bob');
    await invite(a.admin, a.accountId, bob.identity);
    await invite(b.admin, b.accountId, bob.identity);
    expect((await accept(bob, a.accountId)).statusCode).toBe(200);
    const second = await accept(bob, b.accountId);
    expect(second.statusCode).toBe(409);
    expect(second.json().code).toBe('MEMBER_OF_ANOTHER_ACCOUNT');
    expect((await memberRow(b.accountId, bob.identity))?.state).toBe('pending');
    expect((await me(bob)).billing_account).toBe(a.accountId);

    const carol = await login('carol');
    await invite(a.admin, a.accountId, carol.identity);
    await createAccount(carol, { name: 'Carol Co' });
    const res = await accept(carol, a.accountId);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('MEMBER_OF_ANOTHER_ACCOUNT');
  });

  it('concurrent accepts of two invites make exactly one membership', async () => {
    const a = await accountWith();
    const b = await accountWith();
    const bob = await login('bob');
    await invite(a.admin, a.accountId, bob.identity);
    await invite(b.admin, b.accountId, bob.identity);
    const results = await Promise.all([accept(bob, a.accountId), accept(bob, b.accountId)]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.statusCode === 409)!.json().code).toBe('MEMBER_OF_ANOTHER_ACCOUNT');
    const active = await t.db.kysely.selectFrom('members').selectAll().where('identity', '=', bob.identity).where('state', '=', 'active').execute();
    expect(active).toHaveLength(1);
  });

  it('validates the path identity (422)', async () => {
    const { accountId } = await accountWith();
    const bob = await login('bob');
    const res = await call(bob, 'POST', `/v1/accounts/${accountId}/members/${encodeURIComponent('bad id!')}/accept`);
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0]).toMatchObject({ loc: ['path', 'identity'], type: 'string_pattern_mismatch' });
  });
});

describe('changing roles', () => {
  it('billing_admin promotes and demotes; the last active billing_admin cannot be demoted', async () => {
    const { admin, accountId, members } = await accountWith('member');
    const bob = members[0]!;
    const base = `/v1/accounts/${accountId}/members`;
    const promoted = await call(admin, 'PATCH', `${base}/${bob.identity}`, { role: 'billing_admin' });
    expect(promoted.statusCode).toBe(200);
    expect(promoted.json()).toMatchObject({ identity: bob.identity, role: 'billing_admin', state: 'active' });
    // Bob, now an admin, demotes the creator; then bob is the last admin.
    expect((await call(bob, 'PATCH', `${base}/${admin.identity}`, { role: 'member' })).json().role).toBe('member');
    const last = await call(bob, 'PATCH', `${base}/${bob.identity}`, { role: 'member' });
    expect(last.statusCode).toBe(409);
    expect(last.json().code).toBe('LAST_BILLING_ADMIN');
    // Same role again is fine.
    expect((await call(bob, 'PATCH', `${base}/${bob.identity}`, { role: 'billing_admin' })).statusCode).toBe(200);
    // The demoted creator can no longer administer.
    const demoted = await call(admin, 'PATCH', `${base}/${bob.identity}`, { role: 'member' });
    expect(demoted.statusCode).toBe(403);
    expect(demoted.json().code).toBe('BILLING_ADMIN_REQUIRED');
  });

  it('changes the role of a pending invite, which keeps it on acceptance', async () => {
    const { admin, accountId } = await accountWith();
    const bob = await login('bob');
    await invite(admin, accountId, bob.identity, 'member');
    const res = await call(admin, 'PATCH', `/v1/accounts/${accountId}/members/${bob.identity}`, { role: 'billing_admin' });
    expect(res.json()).toMatchObject({ role: 'billing_admin', state: 'pending' });
    expect((await accept(bob, accountId)).json()).toMatchObject({ role: 'billing_admin', state: 'active' });
  });

  it('404 MEMBER_NOT_FOUND for no such member or an expired invite; 403 and 404 for outsiders; 422 for a bad role', async () => {
    const { admin, accountId, members } = await accountWith('member');
    const base = `/v1/accounts/${accountId}/members`;
    const none = await call(admin, 'PATCH', `${base}/nobody`, { role: 'member' });
    expect(none.statusCode).toBe(404);
    expect(none.json().code).toBe('MEMBER_NOT_FOUND');
    const stale = await login('stale');
    await invite(admin, accountId, stale.identity);
    await expireInvite(accountId, stale.identity);
    expect((await call(admin, 'PATCH', `${base}/${stale.identity}`, { role: 'member' })).json().code).toBe('MEMBER_NOT_FOUND');

    const byMember = await call(members[0]!, 'PATCH', `${base}/${admin.identity}`, { role: 'member' });
    expect(byMember.statusCode).toBe(403);
    expect(byMember.json().code).toBe('BILLING_ADMIN_REQUIRED');
    const selfPromote = await call(members[0]!, 'PATCH', `${base}/${members[0]!.identity}`, { role: 'billing_admin' });
    expect(selfPromote.statusCode).toBe(403);
    const stranger = await login('stranger');
    expect((await call(stranger, 'PATCH', `${base}/${admin.identity}`, { role: 'member' })).json().code).toBe('NOT_A_MEMBER');
    expect((await call(stranger, 'PATCH', `/v1/accounts/acct_nope/members/x`, { role: 'member' })).statusCode).toBe(404);

    for (const body of [{}, { role: 'owner' }, { role: null }]) {
      const res = await call(admin, 'PATCH', `${base}/${members[0]!.identity}`, body);
      expect(res.statusCode).toBe(422);
      expect(res.json().detail[0].loc).toEqual(['body', 'role']);
    }
    expect((await memberRow(accountId, members[0]!.identity))?.role).toBe('member');
  });
});

describe('removing members', () => {
  it('a billing_admin removes a member, who loses access at once', async () => {
    const { admin, accountId, members } = await accountWith('member');
    const bob = members[0]!;
    const res = await call(admin, 'DELETE', `/v1/accounts/${accountId}/members/${bob.identity}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ message: expect.any(String), account_id: accountId, identity: bob.identity });
    expect(await memberRow(accountId, bob.identity)).toBeUndefined();
    expect((await call(bob, 'GET', `/v1/accounts/${accountId}`)).json().code).toBe('NOT_A_MEMBER');
    expect((await me(bob)).billing_account).toBeNull();
    const again = await call(admin, 'DELETE', `/v1/accounts/${accountId}/members/${bob.identity}`);
    expect(again.statusCode).toBe(404);
    expect(again.json().code).toBe('MEMBER_NOT_FOUND');
    // Removed, bob is free to join elsewhere.
    await createAccount(bob, { name: 'Bob Co' });
  });

  it('a member removes itself; a plain member cannot remove others', async () => {
    const { admin, accountId, members } = await accountWith('member', 'member');
    const [bob, carol] = [members[0]!, members[1]!];
    for (const target of [admin, carol]) {
      const res = await call(bob, 'DELETE', `/v1/accounts/${accountId}/members/${target.identity}`);
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('BILLING_ADMIN_REQUIRED');
    }
    const self = await call(bob, 'DELETE', `/v1/accounts/${accountId}/members/${bob.identity}`);
    expect(self.statusCode).toBe(200);
    expect(await memberRow(accountId, bob.identity)).toBeUndefined();
    expect(await memberRow(accountId, carol.identity)).toBeDefined();
  });

  it('the invitee withdraws an unaccepted invite; a billing_admin withdraws one too', async () => {
    const { admin, accountId } = await accountWith();
    const bob = await login('bob');
    const carol = await login('carol');
    await invite(admin, accountId, bob.identity);
    await invite(admin, accountId, carol.identity);
    const self = await call(bob, 'DELETE', `/v1/accounts/${accountId}/members/${bob.identity}`);
    expect(self.statusCode).toBe(200);
    expect(self.json()).toMatchObject({ account_id: accountId, identity: bob.identity });
    expect(await memberRow(accountId, bob.identity)).toBeUndefined();
    expect((await accept(bob, accountId)).json().code).toBe('NO_PENDING_INVITE');

    expect((await call(admin, 'DELETE', `/v1/accounts/${accountId}/members/${carol.identity}`)).statusCode).toBe(200);
    expect((await accept(carol, accountId)).statusCode).toBe(404);
  });

  it('the last active billing_admin cannot be removed, even by itself', async () => {
    const { admin, accountId, members } = await accountWith('member');
    const last = await call(admin, 'DELETE', `/v1/accounts/${accountId}/members/${admin.identity}`);
    expect(last.statusCode).toBe(409);
    expect(last.json().code).toBe('LAST_BILLING_ADMIN');
    // A pending billing_admin invite does not count.
    const pend = await login('pend');
    await invite(admin, accountId, pend.identity, 'billing_admin');
    expect((await call(admin, 'DELETE', `/v1/accounts/${accountId}/members/${admin.identity}`)).statusCode).toBe(409);
    await call(admin, 'PATCH', `/v1/accounts/${accountId}/members/${members[0]!.identity}`, { role: 'billing_admin' });
    const ok = await call(admin, 'DELETE', `/v1/accounts/${accountId}/members/${admin.identity}`);
    expect(ok.statusCode).toBe(200);
    expect((await call(members[0]!, 'DELETE', `/v1/accounts/${accountId}/members/${members[0]!.identity}`)).json().code).toBe(
      'LAST_BILLING_ADMIN',
    );
  });

  it('outsiders: 403 NOT_A_MEMBER, 404 for unknown accounts and members, 404 for an expired invite', async () => {
    const { admin, accountId } = await accountWith();
    const stranger = await login('stranger');
    expect((await call(stranger, 'DELETE', `/v1/accounts/${accountId}/members/${admin.identity}`)).json().code).toBe('NOT_A_MEMBER');
    expect((await call(stranger, 'DELETE', `/v1/accounts/acct_nope/members/${admin.identity}`)).json().code).toBe('ACCOUNT_NOT_FOUND');
    // Self-removal on an unknown account, and from an account one is not in.
    expect((await call(stranger, 'DELETE', `/v1/accounts/acct_nope/members/${stranger.identity}`)).json().code).toBe('ACCOUNT_NOT_FOUND');
    const notIn = await call(stranger, 'DELETE', `/v1/accounts/${accountId}/members/${stranger.identity}`);
    expect(notIn.statusCode).toBe(404);
    expect(notIn.json().code).toBe('MEMBER_NOT_FOUND');
    const stale = await login('stale');
    await invite(admin, accountId, stale.identity);
    await expireInvite(accountId, stale.identity);
    expect((await call(stale, 'DELETE', `/v1/accounts/${accountId}/members/${stale.identity}`)).json().code).toBe('MEMBER_NOT_FOUND');
    expect((await call(admin, 'DELETE', `/v1/accounts/${accountId}/members/${encodeURIComponent('a b')}`)).statusCode).toBe(422);
  });
});

describe('/auth/me', () => {
  it('reports billing_account for an active member and null otherwise', async () => {
    const alice = await login('alice');
    expect(await me(alice)).toMatchObject({ identity: alice.identity, billing_account: null });
    const account = await createAccount(alice);
    expect((await me(alice)).billing_account).toBe(account.account_id);
  });
});

describe('invoices (placeholders)', () => {
  it.each(PREFIXES)('%s: the list is empty and any inv_ id reads as a minimal draft invoice', async (prefix) => {
    const alice = await login('alice');
    const list = await call(alice, 'GET', '/v1/invoices', undefined, prefix);
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual([]);
    const one = await call(alice, 'GET', '/v1/invoices/inv_123abc', undefined, prefix);
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual({ invoice_id: 'inv_123abc', status: 'draft', amount_due: 0, currency: 'usd', lines: [] });
    for (const bad of ['123', 'inv_', 'inv_a-b', `inv_${'a'.repeat(65)}`]) {
      const res = await call(alice, 'GET', `/v1/invoices/${bad}`, undefined, prefix);
      expect(res.statusCode, bad).toBe(422);
      expect(res.json().detail[0].loc).toEqual(['path', 'invoice_id']);
    }
  });
});

describe('/control serves the same service', () => {
  it('runs the whole lifecycle at /control over the same data as /billing', async () => {
    const p = '/control';
    const admin = await login('cadmin');
    const account = await createAccount(admin, { name: 'Control Co' }, p);
    const id = account.account_id;
    expect((await call(admin, 'GET', '/v1/accounts', undefined, p)).json()).toEqual([account]);
    expect((await call(admin, 'GET', `/v1/accounts/${id}`)).json()).toEqual(account); // same data at /billing
    expect((await call(admin, 'GET', `/v1/accounts/${id}`, undefined, p)).json()).toEqual(account);
    const patched = await call(admin, 'PATCH', `/v1/accounts/${id}`, { member_min_age_ms: 10 }, p);
    expect(patched.json().member_min_age_ms).toBe(10);

    const bob = await login('cbob');
    const inv = await call(admin, 'POST', `/v1/accounts/${id}/members`, { identity: bob.identity, email: 'b@example.com', role: 'member' }, p);
    expect(inv.statusCode).toBe(201);
    expect(inv.json().state).toBe('pending');
    const acc = await accept(bob, id, p);
    expect(acc.statusCode).toBe(200);
    expect(acc.json()).toMatchObject({ state: 'active', min_age_ms: 10 });
    const members = await call(bob, 'GET', `/v1/accounts/${id}/members`, undefined, p);
    expect(members.json()).toHaveLength(2);
    const role = await call(admin, 'PATCH', `/v1/accounts/${id}/members/${bob.identity}`, { role: 'billing_admin' }, p);
    expect(role.json().role).toBe('billing_admin');
    const removed = await call(bob, 'DELETE', `/v1/accounts/${id}/members/${bob.identity}`, undefined, p);
    expect(removed.statusCode).toBe(200);

    const stranger = await login('cstranger');
    expect((await call(stranger, 'GET', `/v1/accounts/${id}`, undefined, p)).statusCode).toBe(403);
    expect((await call(stranger, 'GET', '/v1/accounts/acct_nope', undefined, p)).statusCode).toBe(404);
    expect((await call(admin, 'POST', '/v1/accounts', { name: 'Again' }, p)).statusCode).toBe(409);

    await insertWorkspace(`cws_${seq}`, id);
    expect((await call(admin, 'DELETE', `/v1/accounts/${id}`, undefined, p)).statusCode).toBe(409);
    await t.db.kysely.deleteFrom('workspaces').where('billing_account', '=', id).execute();
    const del = await call(admin, 'DELETE', `/v1/accounts/${id}`, undefined, p);
    expect(del.statusCode).toBe(200);
    expect(del.json().status).toBe('deactivated');
    expect((await call(admin, 'GET', `/v1/accounts/${id}`, undefined, p)).statusCode).toBe(404);
  });

  it.each(PREFIXES)('%s: the OpenAPI document lists every account route with a summary', async (prefix) => {
    const res = await t.app.inject({ method: 'GET', url: `${prefix}/openapi.json` });
    expect(res.statusCode).toBe(200);
    const paths = res.json().paths as Record<string, Record<string, { summary?: string }>>;
    for (const [method, path] of ENDPOINTS) {
      const templated = `${prefix}${path}`.replace('acct_x', '{account_id}').replace('/bob', '/{identity}').replace('inv_1', '{invoice_id}');
      const op = paths[templated]?.[method.toLowerCase()];
      expect(op, `${method} ${templated}`).toBeDefined();
      expect(op!.summary).toBeTruthy();
    }
  });
});
