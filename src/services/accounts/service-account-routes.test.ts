import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { seedSnapshot } from '../../../test/seed.ts';
import { setAccountPlan } from './index.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
});
afterAll(async () => t?.close());

let seq = 0;
/** Identities are unique per test: membership and service accounts are exclusive across the database. */
const uid = (name: string) => `${name}-${++seq}`;
const login = (name: string, credential: Record<string, unknown> = {}) => signIn(t.app, t.adminToken, uid(name), credential);
const sa = (accountId: string) => `/control/v1/accounts/${accountId}/service-accounts`;

async function accountOf(owner: TestUser): Promise<string> {
  const res = await owner.request('POST', '/control/v1/accounts', { name: `${owner.identity} account` });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().account_id;
}

async function addMember(admin: TestUser, accountId: string, member: TestUser, role = 'member') {
  const invited = await admin.request('POST', `/control/v1/accounts/${accountId}/members`, { identity: member.identity, email: `${member.identity}@example.com`, role });
  expect(invited.statusCode, invited.body).toBe(201);
  const accepted = await member.request('POST', `/control/v1/accounts/${accountId}/members/${member.identity}/accept`);
  expect(accepted.statusCode, accepted.body).toBe(200);
}

async function add(caller: TestUser, accountId: string, identity: string) {
  return caller.request('POST', sa(accountId), { identity });
}

/** The OAuth token endpoint, with a form body. */
function tokenRequest(form: Record<string, string>) {
  return t.app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  });
}

/** Mints a credential for a service account (as `admin`) and signs it in: its access and refresh tokens. */
async function mintAndSignIn(admin: TestUser, accountId: string, identity: string, body: Record<string, unknown> = {}) {
  const minted = await admin.request('POST', `${sa(accountId)}/${identity}/credentials`, body);
  expect(minted.statusCode, minted.body).toBe(201);
  const { secret, credential_id } = minted.json();
  const token = await tokenRequest({ grant_type: 'client_credentials', client_id: identity, client_secret: secret });
  expect(token.statusCode, token.body).toBe(200);
  const { access_token, refresh_token } = token.json();
  const bearer = (method: string, url: string, payload?: unknown) =>
    t.app.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${access_token}` }, ...(payload === undefined ? {} : { payload: payload as object }) });
  return { secret, credentialId: credential_id as string, accessToken: access_token as string, refreshToken: refresh_token as string, bearer };
}

describe('service accounts: list, add, remove', () => {
  it('lists service accounts with the quota of the default plan (free: 2)', async () => {
    const alice = await login('alice');
    const accountId = await accountOf(alice);
    const res = await alice.request('GET', sa(accountId));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ account_id: accountId, service_accounts: [], plan: 'free', limit: 2, used: 0 });
  });

  it('any active member adds (201) and the listing records who added it', async () => {
    const alice = await login('alice');
    const bob = await login('bob');
    const accountId = await accountOf(alice);
    await addMember(alice, accountId, bob);
    const loader = uid('svc-loader');
    const res = await add(bob, accountId, loader);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ account_id: accountId, identity: loader, added_by: bob.identity });
    const list = (await alice.request('GET', sa(accountId))).json();
    expect(list.service_accounts).toEqual([expect.objectContaining({ identity: loader, added_by: bob.identity, added_at: expect.any(String) })]);
    expect(list).toMatchObject({ plan: 'free', limit: 2, used: 1 });
  });

  it('answers 402 SERVICE_ACCOUNT_QUOTA when the plan has no room, and a bigger plan makes room', async () => {
    const alice = await login('alice');
    const accountId = await accountOf(alice);
    for (const name of ['svc-a', 'svc-b']) expect((await add(alice, accountId, uid(name))).statusCode).toBe(201);
    const third = uid('svc-c');
    const full = await add(alice, accountId, third);
    expect(full.statusCode, full.body).toBe(402);
    expect(full.json()).toMatchObject({ code: 'SERVICE_ACCOUNT_QUOTA', plan: 'free', limit: 2, used: 2 });
    expect((await alice.request('GET', sa(accountId))).json().used).toBe(2);

    // The operator's path (lakeport admin set-plan).
    expect(await setAccountPlan(t.db, t.deps.plans, accountId, 'team')).toEqual({ plan: 'team', limit: 25, used: 2 });
    expect((await add(alice, accountId, third)).statusCode).toBe(201);
    expect((await alice.request('GET', sa(accountId))).json()).toMatchObject({ plan: 'team', limit: 25, used: 3 });
    await expect(setAccountPlan(t.db, t.deps.plans, accountId, 'platinum')).rejects.toThrow(/unknown plan/);
    await expect(setAccountPlan(t.db, t.deps.plans, 'acct_nope', 'team')).rejects.toMatchObject({ code: 'ACCOUNT_NOT_FOUND' });
    // Back to the default plan: the quota no longer has room, the three stay.
    expect(await setAccountPlan(t.db, t.deps.plans, accountId, null)).toEqual({ plan: 'free', limit: 2, used: 3 });
    expect((await add(alice, accountId, uid('svc-d'))).statusCode).toBe(402);
  });

  it('concurrent adds never pass the quota (the account row is locked)', async () => {
    const alice = await login('alice');
    const accountId = await accountOf(alice);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => add(alice, accountId, uid(`svc-race${i}`))));
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses, results.map((r) => r.body).join('\n')).toEqual([201, 201, 402, 402, 402, 402]);
    expect((await alice.request('GET', sa(accountId))).json()).toMatchObject({ used: 2, limit: 2 });
  });

  it('concurrent adds of one identity to two accounts: exactly one wins, the other is 409', async () => {
    const alice = await login('alice');
    const carol = await login('carol');
    const a = await accountOf(alice);
    const b = await accountOf(carol);
    const identity = uid('svc-contested');
    const [x, y] = await Promise.all([add(alice, a, identity), add(carol, b, identity)]);
    expect([x.statusCode, y.statusCode].sort(), `${x.body} ${y.body}`).toEqual([201, 409]);
    expect([x, y].find((r) => r.statusCode === 409)!.json().code).toBe('IDENTITY_IS_SERVICE_ACCOUNT');
  });

  it('membership is exclusive: members, other accounts’ members and service accounts are 409', async () => {
    const alice = await login('alice');
    const carol = await login('carol');
    const a = await accountOf(alice);
    const b = await accountOf(carol);
    const svc = uid('svc-x');
    expect((await add(alice, a, svc)).statusCode).toBe(201);

    const cases: Array<[TestUser, string, string, string]> = [
      [alice, a, svc, 'SERVICE_ACCOUNT_EXISTS'],
      [alice, a, alice.identity, 'ALREADY_MEMBER'],
      [alice, a, carol.identity, 'MEMBER_OF_ANOTHER_ACCOUNT'],
      // A service account of account A cannot be added to B.
      [carol, b, svc, 'IDENTITY_IS_SERVICE_ACCOUNT'],
    ];
    for (const [caller, accountId, identity, code] of cases) {
      const res = await add(caller, accountId, identity);
      expect(res.statusCode, `${identity}: ${res.body}`).toBe(409);
      expect(res.json().code).toBe(code);
    }
    // A pending invitee of this account is not free either.
    const dave = uid('dave');
    expect((await alice.request('POST', `/control/v1/accounts/${a}/members`, { identity: dave, email: 'd@example.com', role: 'member' })).statusCode).toBe(201);
    expect((await add(alice, a, dave)).json().code).toBe('ALREADY_MEMBER');

    // …and the other way round: a service account cannot be invited, accept or open an account.
    const invited = await carol.request('POST', `/control/v1/accounts/${b}/members`, { identity: svc, email: 's@example.com', role: 'member' });
    expect(invited.statusCode, invited.body).toBe(409);
    expect(invited.json().code).toBe('IDENTITY_IS_SERVICE_ACCOUNT');
    const erin = uid('erin');
    expect((await carol.request('POST', `/control/v1/accounts/${b}/members`, { identity: erin, email: 'e@example.com', role: 'member' })).statusCode).toBe(201);
    expect((await add(alice, a, erin)).statusCode).toBe(201);
    const erinUser = await signIn(t.app, t.adminToken, erin);
    const accept = await erinUser.request('POST', `/control/v1/accounts/${b}/members/${erin}/accept`);
    expect(accept.statusCode, accept.body).toBe(409);
    expect(accept.json().code).toBe('IDENTITY_IS_SERVICE_ACCOUNT');
    const svcUser = await signIn(t.app, t.adminToken, svc);
    const own = await svcUser.request('POST', '/control/v1/accounts', { name: 'mine' });
    expect(own.statusCode, own.body).toBe(409);
    expect(own.json().code).toBe('IDENTITY_IS_SERVICE_ACCOUNT');
  });

  it('validates the identity like a client_id (422)', async () => {
    const alice = await login('alice');
    const accountId = await accountOf(alice);
    for (const identity of ['', '-lead', 'has space', 'x'.repeat(129), 'semi;colon']) {
      const res = await add(alice, accountId, identity);
      expect(res.statusCode, `${JSON.stringify(identity)}: ${res.body}`).toBe(422);
      expect(res.json().detail[0].loc).toEqual(['body', 'identity']);
    }
    expect((await alice.request('POST', sa(accountId), {})).statusCode).toBe(422);
  });

  it('removing a service account that is not one is 404; the service account itself is refused (403)', async () => {
    const alice = await login('alice');
    const accountId = await accountOf(alice);
    const missing = await alice.request('DELETE', `${sa(accountId)}/${uid('svc-none')}`);
    expect(missing.statusCode, missing.body).toBe(404);
    expect(missing.json().code).toBe('SERVICE_ACCOUNT_NOT_FOUND');

    const svc = uid('svc-self');
    expect((await add(alice, accountId, svc)).statusCode).toBe(201);
    const own = await mintAndSignIn(alice, accountId, svc);
    const self = await own.bearer('DELETE', `${sa(accountId)}/${svc}`);
    expect(self.statusCode, self.body).toBe(403);
    expect(self.json().code).toBe('SERVICE_ACCOUNT_SELF_REMOVAL');
    expect((await alice.request('GET', sa(accountId))).json().service_accounts.map((s: { identity: string }) => s.identity)).toEqual([svc]);

    const removed = await alice.request('DELETE', `${sa(accountId)}/${svc}`);
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.json()).toMatchObject({ account_id: accountId, identity: svc, revoked_credentials: [own.credentialId] });
    expect((await alice.request('DELETE', `${sa(accountId)}/${svc}`)).statusCode).toBe(404);
    expect((await alice.request('GET', sa(accountId))).json()).toMatchObject({ service_accounts: [], used: 0 });
  });

  it('a narrowed credential may list but not add or remove (403 CREDENTIAL_NARROWED)', async () => {
    const alice = await login('alice');
    const accountId = await accountOf(alice);
    const narrowed = await signIn(t.app, t.adminToken, alice.identity, { permissions: [['ws.*', 'reader']] });
    expect((await narrowed.request('GET', sa(accountId))).statusCode).toBe(200);
    const res = await add(narrowed, accountId, uid('svc-n'));
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json().code).toBe('CREDENTIAL_NARROWED');
    const svc = uid('svc-m');
    expect((await add(alice, accountId, svc)).statusCode).toBe(201);
    expect((await narrowed.request('DELETE', `${sa(accountId)}/${svc}`)).json().code).toBe('CREDENTIAL_NARROWED');
    expect((await narrowed.request('POST', `${sa(accountId)}/${svc}/credentials`, {})).json().code).toBe('CREDENTIAL_NARROWED');
  });

  it('is served on /control only', async () => {
    const alice = await login('alice');
    const accountId = await accountOf(alice);
    expect((await alice.request('GET', `/billing/v1/accounts/${accountId}/service-accounts`)).statusCode).toBe(404);
  });
});

describe('service accounts: credentials, tokens and workspace roles', () => {
  it('a billing_admin mints, lists and revokes credentials; a plain member may not (403)', async () => {
    const alice = await login('alice');
    const bob = await login('bob');
    const accountId = await accountOf(alice);
    await addMember(alice, accountId, bob);
    const svc = uid('svc-ci');
    expect((await add(bob, accountId, svc)).statusCode).toBe(201);

    const minted = await alice.request('POST', `${sa(accountId)}/${svc}/credentials`, { type: 'ci', expires_in_days: 30, scopes: ['odata', 'jobs'] });
    expect(minted.statusCode, minted.body).toBe(201);
    expect(minted.headers['cache-control']).toBe('no-store');
    const body = minted.json();
    expect(body).toMatchObject({ client_id: svc, type: 'ci', scopes: ['odata', 'jobs'], created_by: alice.identity, secret: expect.stringMatching(/^lpsk_/) });

    const listed = await alice.request('GET', `${sa(accountId)}/${svc}/credentials`);
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json()).toEqual([expect.objectContaining({ credential_id: body.credential_id, client_id: svc })]);
    expect(listed.body).not.toContain(body.secret);

    for (const [method, path] of [
      ['POST', `${sa(accountId)}/${svc}/credentials`],
      ['GET', `${sa(accountId)}/${svc}/credentials`],
      ['DELETE', `${sa(accountId)}/${svc}/credentials/${body.credential_id}`],
    ] as const) {
      const res = await bob.request(method, path, method === 'POST' ? {} : undefined);
      expect(res.statusCode, `${method} ${path}: ${res.body}`).toBe(403);
      expect(res.json().code).toBe('BILLING_ADMIN_REQUIRED');
    }
    // Not a service account of this account: 404, whatever the identity.
    expect((await alice.request('POST', `${sa(accountId)}/${bob.identity}/credentials`, {})).json().code).toBe('SERVICE_ACCOUNT_NOT_FOUND');

    const token = await tokenRequest({ grant_type: 'client_credentials', client_id: svc, client_secret: body.secret });
    expect(token.statusCode, token.body).toBe(200);
    const revoked = await alice.request('DELETE', `${sa(accountId)}/${svc}/credentials/${body.credential_id}`);
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect(revoked.json()).toMatchObject({ credential_id: body.credential_id, client_id: svc, revoked_at: expect.any(String) });
    expect((await alice.request('GET', `${sa(accountId)}/${svc}/credentials`)).json()).toEqual([]);
    // The revoked credential's tokens stop working at once.
    const me = await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${token.json().access_token}` } });
    expect(me.statusCode, me.body).toBe(401);
    expect((await tokenRequest({ grant_type: 'refresh_token', refresh_token: token.json().refresh_token })).statusCode).toBe(400);
    expect((await alice.request('DELETE', `${sa(accountId)}/${svc}/credentials/${body.credential_id}`)).json().code).toBe('CREDENTIAL_NOT_FOUND');
  });

  it('its tokens carry the account as billing_account', async () => {
    const alice = await login('alice');
    const accountId = await accountOf(alice);
    const svc = uid('svc-bill');
    expect((await add(alice, accountId, svc)).statusCode).toBe(201);
    const own = await mintAndSignIn(alice, accountId, svc);
    const me = await own.bearer('GET', '/auth/me');
    expect(me.statusCode, me.body).toBe(200);
    expect(me.json()).toMatchObject({ identity: svc, billing_account: accountId });
    // It is not a member: member-only account endpoints refuse it.
    expect((await own.bearer('GET', sa(accountId))).json().code).toBe('NOT_A_MEMBER');
  });

  it('is granted a workspace role like any identity, and loses everything when removed', async () => {
    const alice = await login('alice');
    const ws = uid('ws').replace('-', '_');
    const accountId = await createWorkspace(alice, ws);
    await seedSnapshot(t, { workspace: ws, collection: 'sales', dataset: 'orders' }, [{ name: 'id', type: 'BIGINT', nullable: false }], 'SELECT i AS id FROM range(3) t(i)');
    const svc = uid('svc-reader');
    expect((await add(alice, accountId, svc)).statusCode).toBe(201);
    const own = await mintAndSignIn(alice, accountId, svc);
    const rows = `/odata/api/v4/${ws}/sales/orders`;
    expect((await own.bearer('GET', rows)).statusCode).toBe(403);

    const grant = await alice.request('POST', `/policy/v1/access/workspace/${ws}/policies`, { principal: { identity: svc, type: 'service_account' }, role: 'reader', pattern: `${ws}.*` });
    expect(grant.statusCode, grant.body).toBe(201);
    const read = await own.bearer('GET', rows);
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json().value.map((r: { id: number }) => Number(r.id))).toEqual([0, 1, 2]);
    const listing = await own.bearer('GET', '/odata/api/v4/');
    expect(listing.statusCode, listing.body).toBe(200);
    expect(listing.body).toContain(`${ws}/sales/orders`);

    const removed = await alice.request('DELETE', `${sa(accountId)}/${svc}`);
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.json().revoked_credentials).toEqual([own.credentialId]);
    // Its access token, refresh token and secret are all refused now.
    for (const url of [rows, '/auth/me']) {
      const res = await own.bearer('GET', url);
      expect(res.statusCode, `${url}: ${res.body}`).toBe(401);
    }
    expect((await tokenRequest({ grant_type: 'refresh_token', refresh_token: own.refreshToken })).statusCode).toBe(400);
    expect((await tokenRequest({ grant_type: 'client_credentials', client_id: svc, client_secret: own.secret })).statusCode).toBe(401);
    expect(await t.app.lakeport.accounts.billingAccountOf(svc)).toBeNull();
  });
});

describe('service accounts across tenants', () => {
  it("another account's members and billing_admins cannot list, add, remove or manage credentials (403 NOT_A_MEMBER)", async () => {
    const alice = await login('alice');
    const carol = await login('carol');
    const a = await accountOf(alice);
    await accountOf(carol);
    const svc = uid('svc-tenant');
    expect((await add(alice, a, svc)).statusCode).toBe(201);
    const minted = await alice.request('POST', `${sa(a)}/${svc}/credentials`, {});
    const credentialId = minted.json().credential_id;

    const attempts: Array<[string, string, unknown]> = [
      ['GET', sa(a), undefined],
      ['POST', sa(a), { identity: uid('svc-intruder') }],
      ['DELETE', `${sa(a)}/${svc}`, undefined],
      ['GET', `${sa(a)}/${svc}/credentials`, undefined],
      ['POST', `${sa(a)}/${svc}/credentials`, {}],
      ['DELETE', `${sa(a)}/${svc}/credentials/${credentialId}`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const res = await carol.request(method, path, body);
      expect(res.statusCode, `${method} ${path}: ${res.body}`).toBe(403);
      expect(res.json().code, `${method} ${path}`).toBe('NOT_A_MEMBER');
      expect(res.body).not.toContain(svc);
    }
    // Nothing changed.
    const list = (await alice.request('GET', sa(a))).json();
    expect(list.service_accounts.map((s: { identity: string }) => s.identity)).toEqual([svc]);
    expect((await alice.request('GET', `${sa(a)}/${svc}/credentials`)).json()).toHaveLength(1);
    // An unknown account is 404 to everyone.
    expect((await carol.request('GET', sa('acct_doesnotexist'))).json().code).toBe('ACCOUNT_NOT_FOUND');
  });
});

describe('service accounts and account deletion', () => {
  it('an account with service accounts cannot be deleted (409 ACCOUNT_HAS_SERVICE_ACCOUNTS) until they are removed', async () => {
    const alice = await login('alice');
    const accountId = await accountOf(alice);
    const svc = uid('svc-last');
    expect((await add(alice, accountId, svc)).statusCode).toBe(201);
    const refused = await alice.request('DELETE', `/control/v1/accounts/${accountId}`);
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'ACCOUNT_HAS_SERVICE_ACCOUNTS', service_accounts: [svc] });
    expect((await alice.request('DELETE', `${sa(accountId)}/${svc}`)).statusCode).toBe(200);
    expect((await alice.request('DELETE', `/control/v1/accounts/${accountId}`)).statusCode).toBe(200);
  });
});
