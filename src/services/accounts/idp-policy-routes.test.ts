/**
 * The IdP policy on /control: GET/PUT/DELETE/preview/denials, roles and cross-tenant refusals,
 * versions, force, the fresh-session DELETE rule, preview writing nothing, denials, verified email
 * domains (against the real DNS test server), and the SignInPolicy judge the auth service calls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../core/authz/index.ts';
import type { SignInFacts } from '../../core/authz/sign-in-policy.ts';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { startDnsServer, type TestDnsServer } from '../../../test/dns-server.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { openAccountRecords } from './index.ts';
import { AccountSignInPolicy, IdpPolicyService } from './idp-policy-service.ts';

let t: TestApp;
let dns: TestDnsServer;
let alice: TestUser; // billing_admin of A
let mia: TestUser; // member of A
let bob: TestUser; // billing_admin of B
let carol: TestUser; // no account
let A: string;
let B: string;
let judge: AccountSignInPolicy;
let service: IdpPolicyService;

const C = '/control/v1';
const policyUrl = (acct: string) => `${C}/accounts/${acct}/idp-policy`;

function refusedWith(res: { statusCode: number; body: string; json(): any }, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().code).toBe(code);
}

const facts = (identity: string, over: Partial<SignInFacts> = {}): SignInFacts => ({
  identity,
  provider: 'idp_a',
  issuer: 'https://idp-a.test',
  subject: `sub-${identity}`,
  email: `${identity}@acme.test`,
  emailVerified: true,
  amr: ['pwd'],
  authTime: new Date(),
  groups: [],
  ...over,
});

const principal = (identity: string, over: Partial<Principal> = {}): Principal => ({
  identity,
  scopes: ['accounts'],
  permissions: [],
  credentialId: 'session',
  tokenId: 'tok',
  expiresAt: new Date(Date.now() + 600_000),
  ...over,
});

async function verifyDomain(user: TestUser, acct: string, domain: string) {
  const claimed = await user.request('POST', `${C}/accounts/${acct}/domains`, { domain });
  expect(claimed.statusCode, claimed.body).toBe(201);
  dns.set(claimed.json().record.name, { txt: [[claimed.json().record.value]] });
  const verified = await user.request('POST', `${C}/accounts/${acct}/domains/${domain}/verify`);
  expect(verified.json().state, verified.body).toBe('verified');
}

async function put(user: TestUser, acct: string, body: object, query = '') {
  return user.request('PUT', `${policyUrl(acct)}${query}`, body);
}

beforeAll(async () => {
  dns = await startDnsServer();
  t = await createTestApp({ dns: { servers: [dns.address], timeoutMs: 200, tries: 1 } }, { workers: false });
  [alice, mia, bob, carol] = await Promise.all(['alice', 'mia', 'bob', 'carol'].map((id) => signIn(t.app, t.adminToken, id)));
  A = (await alice.request('POST', `${C}/accounts`, { name: 'Acme' })).json().account_id;
  B = (await bob.request('POST', `${C}/accounts`, { name: 'Bobco' })).json().account_id;
  expect((await alice.request('POST', `${C}/accounts/${A}/members`, { identity: 'mia', email: 'mia@acme.test', role: 'member' })).statusCode).toBe(201);
  expect((await mia.request('POST', `${C}/accounts/${A}/members/mia/accept`)).statusCode).toBe(200);
  await verifyDomain(alice, A, 'acme.test');
  const records = openAccountRecords(t.db);
  judge = records.signInPolicy;
  service = new IdpPolicyService({ db: t.db, accounts: records.accounts, isDomainVerifiedBy: async (acct, d) => acct === A && d === 'acme.test' });
});
afterAll(async () => {
  await t?.close();
  await dns?.stop();
});

describe('reading', () => {
  it('an account without a policy answers the defaults with version 0, to any active member', async () => {
    const res = await mia.request('GET', policyUrl(A));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      account_id: A,
      enforced: false,
      providers: null,
      idp_a: null,
      idp_b: null,
      allow_password_auth: true,
      require_mfa: false,
      max_auth_age_hours: null,
      max_session_hours: null,
      email_domains: null,
      machine_credentials: null,
      version: 0,
      configured: false,
      updated_by: null,
      updated_at: null,
    });
  });

  it('is on /control only', async () => {
    expect((await alice.request('GET', `/billing/v1/accounts/${A}/idp-policy`)).statusCode).toBe(404);
    expect((await alice.request('GET', `/billing/v1/accounts/${A}/idp-policy/denials`)).statusCode).toBe(404);
    expect((await alice.request('PUT', `/billing/v1/accounts/${A}/idp-policy`, {})).statusCode).toBe(404);
    expect((await alice.request('DELETE', `/billing/v1/accounts/${A}/idp-policy`)).statusCode).toBe(404);
    expect((await alice.request('POST', `/billing/v1/accounts/${A}/idp-policy/preview`, {})).statusCode).toBe(404);
  });

  it('another account, a non-member or an unknown account is refused', async () => {
    refusedWith(await bob.request('GET', policyUrl(A)), 403, 'NOT_A_MEMBER');
    refusedWith(await carol.request('GET', policyUrl(A)), 403, 'NOT_A_MEMBER');
    refusedWith(await bob.request('GET', `${policyUrl(A)}/denials`), 403, 'NOT_A_MEMBER');
    refusedWith(await alice.request('GET', policyUrl('acct_nope')), 404, 'ACCOUNT_NOT_FOUND');
    expect((await alice.request('GET', policyUrl(A))).statusCode).toBe(200);
  });
});

describe('writing', () => {
  it('PUT needs billing_admin of this very account', async () => {
    refusedWith(await put(mia, A, { enforced: true }), 403, 'BILLING_ADMIN_REQUIRED');
    refusedWith(await put(bob, A, { enforced: true }), 403, 'NOT_A_MEMBER');
    refusedWith(await bob.request('POST', `${policyUrl(A)}/preview`, {}), 403, 'NOT_A_MEMBER');
    refusedWith(await bob.request('DELETE', policyUrl(A)), 403, 'NOT_A_MEMBER');
    expect((await alice.request('GET', policyUrl(A))).json().version).toBe(0);
  });

  it('PUT replaces the whole document and every write increments the version', async () => {
    const first = await put(alice, A, { enforced: true, require_mfa: true, max_session_hours: 12 });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ enforced: true, require_mfa: true, max_session_hours: 12, version: 1, configured: true, updated_by: 'alice' });
    const second = await put(alice, A, { enforced: false, providers: ['idp_b', 'idp_b'] });
    expect(second.json()).toMatchObject({ enforced: false, require_mfa: false, max_session_hours: null, providers: ['idp_b'], version: 2 });
    expect((await mia.request('GET', policyUrl(A))).json()).toMatchObject({ providers: ['idp_b'], version: 2 });
    // B's policy is its own
    expect((await bob.request('GET', policyUrl(B))).json().version).toBe(0);
  });

  it('strict validation: unknown fields, unknown providers, bad hours are 422', async () => {
    for (const body of [
      { enforced: true, colour: 'red' },
      { providers: ['idp_c'] },
      { providers: [] },
      { max_auth_age_hours: 0 },
      { max_session_hours: 1.5 },
      { idp_a: { required_groups: [] } },
      { idp_a: { extra: 1 } },
      { machine_credentials: { max_lifetime_days: -1 } },
    ]) {
      const res = await put(alice, A, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
    }
  });

  it('email domains must be verified by this account (normalised; subdomain names count as listed)', async () => {
    const unverified = await put(alice, A, { email_domains: ['acme.test', 'other.test'] });
    expect(unverified.statusCode).toBe(422);
    expect(unverified.json().detail[0].loc).toEqual(['body', 'email_domains', 1]);
    expect(unverified.json().detail[0].msg).toMatch(/not a domain this account has verified/);
    const inBlock = await put(alice, A, { idp_a: { allowed_email_domains: ['other.test'] } });
    expect(inBlock.statusCode).toBe(422);
    expect(inBlock.json().detail[0].loc).toEqual(['body', 'idp_a', 'allowed_email_domains', 0]);
    // another account cannot list A's verified domain
    expect((await put(bob, B, { email_domains: ['acme.test'] })).statusCode).toBe(422);
    const ok = await put(alice, A, { email_domains: ['ACME.test.'] });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().email_domains).toEqual(['acme.test']);
  });

  it('force: a machine-credential caller is refused a policy that stops members minting, unless force=true', async () => {
    const body = { enforced: true, machine_credentials: { members_may_mint: false } };
    const before = (await alice.request('GET', policyUrl(A))).json().version;
    const refused = await put(alice, A, body);
    refusedWith(refused, 409, 'IDP_POLICY_WOULD_DENY_YOU');
    expect(refused.json().detail).toMatch(/MACHINE_CREDENTIALS_NOT_ALLOWED.*force=true/);
    expect((await alice.request('GET', policyUrl(A))).json().version).toBe(before);
    const forced = await put(alice, A, body, '?force=true');
    expect(forced.statusCode, forced.body).toBe(200);
    expect(forced.json()).toMatchObject({ version: before + 1, machine_credentials: { members_may_mint: false, max_lifetime_days: null } });
    expect((await put(alice, A, {}, '?force=false')).statusCode).toBe(200);
  });

  it('force: an interactive caller is judged by its own sign-in', async () => {
    await judge.judgeSignIn(facts('alice', { amr: ['pwd'] }));
    const me = principal('alice', { authTime: new Date(), amr: ['pwd'], provider: 'idp_a' });
    await expect(service.put(me, A, { ...(await alicePolicy()), enforced: true, require_mfa: true }, false)).rejects.toMatchObject({ code: 'IDP_POLICY_WOULD_DENY_YOU' });
    await expect(service.put(me, A, { ...(await alicePolicy()), enforced: true, providers: ['idp_b'] }, false)).rejects.toMatchObject({ code: 'IDP_POLICY_WOULD_DENY_YOU' });
    await expect(service.put(me, A, { ...(await alicePolicy()), enforced: true, email_domains: ['acme.test'] }, false)).resolves.toMatchObject({ email_domains: ['acme.test'] });
    await expect(service.put(me, A, { ...(await alicePolicy()), enforced: true, require_mfa: true }, true)).resolves.toMatchObject({ require_mfa: true });
    await service.put(me, A, { ...(await alicePolicy()), enforced: false }, true);
  });
});

async function alicePolicy() {
  const { account_id: _a, version: _v, configured: _c, updated_by: _b, updated_at: _t, ...doc } = (await alice.request('GET', policyUrl(A))).json();
  return { ...doc, enforced: false, require_mfa: false, providers: null, email_domains: null, machine_credentials: null };
}

describe('DELETE', () => {
  it('a machine credential never may; a member never may', async () => {
    refusedWith(await alice.request('DELETE', policyUrl(A)), 403, 'FRESH_SIGN_IN_REQUIRED');
    refusedWith(await mia.request('DELETE', policyUrl(A)), 403, 'BILLING_ADMIN_REQUIRED');
  });

  it('needs an interactive sign-in from the last 10 minutes; removes the document and still increments the version', async () => {
    await put(alice, A, { enforced: true, require_mfa: true }, '?force=true');
    const before = (await alice.request('GET', policyUrl(A))).json().version;
    const stale = principal('alice', { authTime: new Date(Date.now() - 11 * 60_000), provider: 'idp_a', amr: ['pwd', 'mfa'] });
    await expect(service.remove(stale, A)).rejects.toMatchObject({ code: 'FRESH_SIGN_IN_REQUIRED' });
    await expect(service.remove(principal('mia', { authTime: new Date() }), A)).rejects.toMatchObject({ code: 'BILLING_ADMIN_REQUIRED' });
    await expect(service.remove(principal('bob', { authTime: new Date() }), A)).rejects.toMatchObject({ code: 'NOT_A_MEMBER' });
    const fresh = principal('alice', { authTime: new Date(Date.now() - 5 * 60_000), provider: 'idp_a', amr: ['pwd', 'mfa'] });
    const removed = await service.remove(fresh, A);
    expect(removed).toMatchObject({ enforced: false, require_mfa: false, configured: false, version: before + 1, updated_by: 'alice' });
    expect((await mia.request('GET', policyUrl(A))).json()).toMatchObject({ configured: false, version: before + 1 });
  });
});

describe('preview', () => {
  it('judges members by their last sign-in and writes nothing', async () => {
    await judge.judgeSignIn(facts('alice', { amr: ['pwd'] }));
    await judge.judgeSignIn(facts('mia', { amr: ['pwd', 'otp'] }));
    const before = (await alice.request('GET', policyUrl(A))).json();
    const denialsBefore = (await alice.request('GET', `${policyUrl(A)}/denials`)).json();
    const res = await alice.request('POST', `${policyUrl(A)}/preview`, { enforced: true, require_mfa: true });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ account_id: A, admitted: 1, denied: 1, unknown: 0 });
    expect(body.members.find((m: any) => m.identity === 'alice')).toMatchObject({ outcome: 'denied', code: 'MFA_REQUIRED' });
    expect(body.members.find((m: any) => m.identity === 'mia')).toMatchObject({ outcome: 'admitted', code: null });
    expect((await alice.request('GET', policyUrl(A))).json()).toEqual(before);
    expect((await alice.request('GET', `${policyUrl(A)}/denials`)).json()).toEqual(denialsBefore);
  });

  it('validates like PUT and needs billing_admin', async () => {
    expect((await alice.request('POST', `${policyUrl(A)}/preview`, { email_domains: ['other.test'] })).statusCode).toBe(422);
    refusedWith(await mia.request('POST', `${policyUrl(A)}/preview`, {}), 403, 'BILLING_ADMIN_REQUIRED');
  });

  it('a member who never signed in interactively is unknown', async () => {
    const res = await bob.request('POST', `${policyUrl(B)}/preview`, { enforced: true });
    expect(res.json()).toMatchObject({ admitted: 0, unknown: 1, members: [{ identity: 'bob', outcome: 'unknown' }] });
  });
});

describe('the sign-in judge and denials', () => {
  it('denials: an empty list, not 404, when none', async () => {
    const res = await bob.request('GET', `${policyUrl(B)}/denials`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ account_id: B, denials: [] });
  });

  it('refused sign-ins are recorded, newest first, with limit', async () => {
    await put(bob, B, { enforced: true, providers: ['idp_a'], require_mfa: true }, '?force=true');
    const v1 = await judge.judgeSignIn(facts('bob', { provider: 'idp_b' }));
    expect(v1).toMatchObject({ allowed: false, accountId: B, code: 'PROVIDER_NOT_ALLOWED' });
    const v2 = await judge.judgeSignIn(facts('bob', { amr: ['pwd'] }));
    expect(v2).toMatchObject({ allowed: false, code: 'MFA_REQUIRED' });
    const v3 = await judge.judgeSignIn(facts('bob', { amr: ['pwd', 'mfa'] }));
    expect(v3).toMatchObject({ allowed: true, accountId: B });
    const list = (await bob.request('GET', `${policyUrl(B)}/denials`)).json().denials;
    expect(list.map((d: any) => d.code)).toEqual(['MFA_REQUIRED', 'PROVIDER_NOT_ALLOWED']);
    expect(list[0]).toMatchObject({ identity: 'bob', provider: 'idp_a', email: 'bob@acme.test' });
    const one = (await bob.request('GET', `${policyUrl(B)}/denials?limit=1`)).json().denials;
    expect(one.map((d: any) => d.code)).toEqual(['MFA_REQUIRED']);
    expect((await bob.request('GET', `${policyUrl(B)}/denials?limit=0`)).statusCode).toBe(422);
    expect((await bob.request('GET', `${policyUrl(B)}/denials?limit=501`)).statusCode).toBe(422);
    // A's denials are A's
    expect((await alice.request('GET', `${policyUrl(A)}/denials`)).json().denials.every((d: any) => d.identity !== 'bob')).toBe(true);
  });

  it('denials: 50 by default', async () => {
    for (let i = 0; i < 52; i++) await judge.judgeSignIn(facts('bob', { provider: 'idp_b', subject: `s${i}` }));
    expect((await bob.request('GET', `${policyUrl(B)}/denials`)).json().denials).toHaveLength(50);
    expect((await bob.request('GET', `${policyUrl(B)}/denials?limit=500`)).json().denials).toHaveLength(54);
  });

  it('an identity outside any account is always allowed, version 0', async () => {
    expect(await judge.judgeSignIn(facts('carol', { amr: [] }))).toEqual({ allowed: true, accountId: null, policyVersion: 0 });
    expect(await judge.judgeRefresh(facts('carol'), { startedAt: new Date(0), policyVersion: 0 })).toEqual({ allowed: true, accountId: null, policyVersion: 0 });
  });

  it('refresh: a session under a lower version is sent back to sign-in; max_session_hours applies', async () => {
    const written = (await put(bob, B, { enforced: true, max_session_hours: 2 }, '?force=true')).json();
    const good = facts('bob', { amr: ['pwd', 'mfa'] });
    expect(await judge.judgeRefresh(good, { startedAt: new Date(), policyVersion: written.version - 1 })).toMatchObject({ allowed: false, code: 'POLICY_CHANGED', policyVersion: written.version });
    expect(await judge.judgeRefresh(good, { startedAt: new Date(), policyVersion: written.version })).toMatchObject({ allowed: true, accountId: B });
    expect(await judge.judgeRefresh(good, { startedAt: new Date(Date.now() - 3 * 3_600_000), policyVersion: written.version })).toMatchObject({
      allowed: false,
      code: 'SESSION_TOO_LONG',
    });
    expect((await judge.judgeSignIn(good)).policyVersion).toBe(written.version);
  });
});

describe('machine_credentials at the auth service', () => {
  const mint = (user: TestUser, body: object) => user.request('POST', `/auth/clients/${user.identity}/credentials`, body);

  it('limits what members mint for themselves while enforced', async () => {
    await put(alice, A, { enforced: true, machine_credentials: { members_may_mint: true, max_lifetime_days: 30 } });
    refusedWith(await mint(mia, { expires_in_days: 90 }), 403, 'CREDENTIAL_LIFETIME_TOO_LONG');
    refusedWith(await mint(mia, { expires_in_days: null }), 403, 'CREDENTIAL_LIFETIME_TOO_LONG');
    expect((await mint(mia, { expires_in_days: 30 })).statusCode).toBe(200);
    // another account's members are not bound by it
    expect((await mint(carol, { expires_in_days: 90 })).statusCode).toBe(200);
    await put(alice, A, { enforced: true, machine_credentials: { members_may_mint: false } }, '?force=true');
    refusedWith(await mint(mia, { expires_in_days: 1 }), 403, 'MACHINE_CREDENTIALS_NOT_ALLOWED');
    await put(alice, A, { enforced: false, machine_credentials: { members_may_mint: false } }, '?force=true');
    expect((await mint(mia, { expires_in_days: 1 })).statusCode).toBe(200);
  });
});
