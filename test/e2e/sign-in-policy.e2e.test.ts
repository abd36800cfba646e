/**
 * The account IdP policy judging real interactive sign-ins: people sign in through a real OpenID
 * provider on loopback (oidc-provider), create an account and join it with their sessions, and the
 * billing_admin's policy writes decide who may sign in again — with the sessions begun under the old
 * version cut, the refused sign-ins listed as denials, and DELETE needing a fresh sign-in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PublicUrl } from '../../src/core/http/index.ts';
import { createTestApp, type TestApp } from '../harness.ts';
import { Browser, CLIENT_ID, CLIENT_SECRET, loginAtProvider, startProvider, type TestUser } from '../oidc-provider.ts';

const USERS: Record<string, TestUser> = {
  // alice signs in with a second factor; bob with a password only.
  alice: { email: 'alice@corp.example', emailVerified: true, preferredUsername: 'alice', amr: ['pwd', 'mfa'], authAgeSeconds: 0 },
  bob: { email: 'bob@corp.example', emailVerified: true, preferredUsername: 'bob', amr: ['pwd'], authAgeSeconds: 0 },
};

/** Longer than the access-token verifier's liveness recheck (docs/auth.md). */
const RECHECK_MS = 5_200;

describe('the IdP policy judging real interactive sign-ins', () => {
  let t: TestApp;
  let lakeport: string;
  let op: Awaited<ReturnType<typeof startProvider>>;
  let account: string;
  // A browser per sign-in: the provider's own session cookie would otherwise skip its login form.
  let alice = new Browser();
  let bob = new Browser();

  /** The session's access token for writes (the cookie carries reads only), as a page gets it: a refresh by the refresh cookie. */
  const tokens = new Map<Browser, string>();

  /** Signs `user` in in `browser`; returns Lakeport's callback answer (302 when admitted). */
  async function signIn(browser: Browser, user: string) {
    const start = await browser.request(`${lakeport}/auth/login?provider=idp_a&return_to=/auth/me`);
    expect(start.status).toBe(302);
    const { callback } = await loginAtProvider(browser, lakeport, start.headers.get('location')!, user, 'application/json');
    if (callback.status === 302) {
      const refreshed = await browser.request(`${lakeport}/auth/token?set_cookie=true`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=refresh_token' });
      expect(refreshed.status, await refreshed.clone().text()).toBe(200);
      tokens.set(browser, (await refreshed.json()).access_token);
    }
    return callback;
  }
  const call = (browser: Browser, method: string, path: string, body?: unknown) =>
    browser.request(`${lakeport}${path}`, {
      method,
      headers: { authorization: `Bearer ${tokens.get(browser)}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    const publicUrl = new PublicUrl(undefined, '127.0.0.1', 0);
    op = await startProvider(() => `${publicUrl.value}/auth/callback`, USERS);
    t = await createTestApp({ publicUrl, identityProviders: [{ id: 'idp_a', issuer: op.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, name: 'Corp IdP' }] });
    lakeport = await t.app.listen({ port: 0, host: '127.0.0.1' });
    publicUrl.settle(lakeport);
    op.init();

    // Both sign in (no account yet: nothing to judge), alice makes an account, bob joins it.
    expect((await signIn(alice, 'alice')).status).toBe(302);
    expect((await signIn(bob, 'bob')).status).toBe(302);
    const created = await call(alice, 'POST', '/control/v1/accounts', { name: 'Corp' });
    expect(created.status).toBe(201);
    account = (await created.json()).account_id;
    expect((await call(alice, 'POST', `/control/v1/accounts/${account}/members`, { identity: 'bob', email: 'bob@corp.example', role: 'member' })).status).toBe(201);
    expect((await call(bob, 'POST', `/control/v1/accounts/${account}/members/bob/accept`)).status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await op?.close();
  });

  it('a policy that would deny the writer is 409 unless forced', async () => {
    const onlyIdpB = { enforced: true, providers: ['idp_b'] };
    const refused = await call(alice, 'PUT', `/control/v1/accounts/${account}/idp-policy`, onlyIdpB);
    expect(refused.status).toBe(409);
    expect((await refused.json()).code).toBe('IDP_POLICY_WOULD_DENY_YOU');
    // Nothing was written.
    expect((await (await call(alice, 'GET', `/control/v1/accounts/${account}/idp-policy`)).json()).version).toBe(0);
  });

  it('require_mfa: the write cuts the sessions begun under the old version; bob (password only) is then refused, alice admitted', async () => {
    const put = await call(alice, 'PUT', `/control/v1/accounts/${account}/idp-policy`, { enforced: true, require_mfa: true });
    expect(put.status, await put.clone().text()).toBe(200);
    expect((await put.json()).version).toBe(1);

    // Sessions of the old version: their refresh is refused and their access tokens stop at the recheck.
    await new Promise((resolve) => setTimeout(resolve, RECHECK_MS));
    expect((await call(bob, 'GET', '/auth/me')).status).toBe(401);
    expect((await call(alice, 'GET', '/auth/me')).status).toBe(401);

    bob = new Browser();
    const bobAgain = await signIn(bob, 'bob');
    expect(bobAgain.status).toBe(403);
    expect(await bobAgain.json()).toMatchObject({ code: 'SIGN_IN_REFUSED' });
    expect((await call(bob, 'GET', '/auth/me')).status).toBe(401);

    alice = new Browser();
    expect((await signIn(alice, 'alice')).status).toBe(302);
    const me = await (await call(alice, 'GET', '/auth/me')).json();
    expect(me).toMatchObject({ identity: 'alice', amr: ['pwd', 'mfa'] });

    // The refusal is listed for the billing_admin, newest first.
    const denials = await (await call(alice, 'GET', `/control/v1/accounts/${account}/idp-policy/denials`)).json();
    expect(JSON.stringify(denials)).toContain('bob');
  }, 60_000);

  it('DELETE with a fresh interactive session removes the requirements; bob may sign in again', async () => {
    const deleted = await call(alice, 'DELETE', `/control/v1/accounts/${account}/idp-policy`);
    expect(deleted.status, await deleted.clone().text()).toBe(200);
    expect((await deleted.json()).version).toBe(2);
    bob = new Browser();
    expect((await signIn(bob, 'bob')).status).toBe(302);
    expect((await call(bob, 'GET', '/auth/me')).status).toBe(200);
  }, 60_000);

  it("another account's members can neither read nor write this policy", async () => {
    // bob leaves and makes his own account: he is now an outsider to alice's.
    expect((await call(bob, 'DELETE', `/control/v1/accounts/${account}/members/bob`)).status).toBe(200);
    expect((await call(bob, 'POST', '/control/v1/accounts', { name: 'Bob Inc' })).status).toBe(201);
    for (const [method, path, body] of [
      ['GET', `/control/v1/accounts/${account}/idp-policy`],
      ['PUT', `/control/v1/accounts/${account}/idp-policy`, { enforced: false }],
      ['GET', `/control/v1/accounts/${account}/idp-policy/denials`],
      ['POST', `/control/v1/accounts/${account}/idp-policy/preview`, { enforced: true }],
    ] as const) {
      const res = await call(bob, method, path, body);
      expect(res.status, `${method} ${path}`).toBe(403);
    }
  }, 60_000);
});

describe('two providers: the policy chooses providers and judges each by its own block', () => {
  const CORP: Record<string, TestUser> = {
    alice: { email: 'alice@corp.example', emailVerified: true, preferredUsername: 'alice', amr: ['pwd', 'mfa'], authAgeSeconds: 0 },
  };
  const PARTNER: Record<string, TestUser> = {
    dave: { email: 'dave@partner.example', emailVerified: true, preferredUsername: 'dave', amr: ['pwd'], authAgeSeconds: 0, groups: ['data-eng'] },
    erin: { email: 'erin@partner.example', emailVerified: true, preferredUsername: 'erin', amr: ['pwd'], authAgeSeconds: 0, groups: ['sales'] },
  };
  let t: TestApp;
  let lakeport: string;
  let corp: Awaited<ReturnType<typeof startProvider>>;
  let partner: Awaited<ReturnType<typeof startProvider>>;
  let account: string;
  const tokens = new Map<string, string>();

  /** Signs `user` in through `provider` in a new browser; its bearer token is kept by user name when admitted. */
  async function signIn(provider: 'idp_a' | 'idp_b', user: string) {
    const browser = new Browser();
    const start = await browser.request(`${lakeport}/auth/login?provider=${provider}&return_to=/auth/me`);
    expect(start.status).toBe(302);
    const { callback } = await loginAtProvider(browser, lakeport, start.headers.get('location')!, user, 'application/json');
    if (callback.status === 302) {
      const refreshed = await browser.request(`${lakeport}/auth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=refresh_token' });
      tokens.set(user, (await refreshed.json()).access_token);
    }
    return callback;
  }
  const call = (user: string, method: string, path: string, body?: unknown) =>
    fetch(`${lakeport}${path}`, {
      method,
      headers: { authorization: `Bearer ${tokens.get(user)}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    const publicUrl = new PublicUrl(undefined, '127.0.0.1', 0);
    corp = await startProvider(() => `${publicUrl.value}/auth/callback`, CORP);
    partner = await startProvider(() => `${publicUrl.value}/auth/callback`, PARTNER);
    t = await createTestApp({
      publicUrl,
      identityProviders: [
        { id: 'idp_a', issuer: corp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, name: 'Corp' },
        { id: 'idp_b', issuer: partner.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, name: 'Partner' },
      ],
    });
    lakeport = await t.app.listen({ port: 0, host: '127.0.0.1' });
    publicUrl.settle(lakeport);
    corp.init();
    partner.init();
    // alice (corp) makes the account; dave and erin (partner) join it.
    expect((await signIn('idp_a', 'alice')).status).toBe(302);
    account = (await (await call('alice', 'POST', '/control/v1/accounts', { name: 'Corp' })).json()).account_id;
    for (const who of ['dave', 'erin']) {
      expect((await signIn('idp_b', who)).status).toBe(302);
      expect((await call('alice', 'POST', `/control/v1/accounts/${account}/members`, { identity: who, email: PARTNER[who].email, role: 'member' })).status).toBe(201);
      expect((await call(who, 'POST', `/control/v1/accounts/${account}/members/${who}/accept`)).status).toBe(200);
    }
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await corp?.close();
    await partner?.close();
  });

  it("idp_b's block requires a group: dave (data-eng) is admitted through idp_b, erin (sales) refused; alice through idp_a", async () => {
    const put = await call('alice', 'PUT', `/control/v1/accounts/${account}/idp-policy`, { enforced: true, providers: ['idp_a', 'idp_b'], idp_b: { required_groups: ['data-eng'] } });
    expect(put.status, await put.clone().text()).toBe(200);
    expect((await signIn('idp_b', 'dave')).status).toBe(302);
    const erin = await signIn('idp_b', 'erin');
    expect(erin.status).toBe(403);
    expect(JSON.stringify(await erin.json())).toContain('GROUP_REQUIRED');
    expect((await signIn('idp_a', 'alice')).status).toBe(302);
  }, 60_000);

  it('providers: a provider left out of the policy refuses its sign-ins (forced past the writer’s own)', async () => {
    const put = await call('alice', 'PUT', `/control/v1/accounts/${account}/idp-policy?force=true`, { enforced: true, providers: ['idp_b'] });
    expect(put.status, await put.clone().text()).toBe(200);
    const alice = await signIn('idp_a', 'alice');
    expect(alice.status).toBe(403);
    expect((await signIn('idp_b', 'dave')).status).toBe(302);
  }, 60_000);
});
