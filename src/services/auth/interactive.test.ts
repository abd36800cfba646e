/**
 * Interactive sign-in end to end against a real OpenID Connect provider (oidc-provider) on
 * loopback: the browser's redirects are followed over HTTP with a cookie jar, the provider's login
 * and consent interactions are submitted as forms, and Lakeport is called with the resulting cookie.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { Browser, CLIENT_ID, CLIENT_SECRET, FORM, loginAtProvider, startProvider, type TestUser } from '../../../test/oidc-provider.ts';
import type { SignInFacts, SignInPolicy, SignInVerdict } from '../../core/authz/sign-in-policy.ts';
import { PublicUrl } from '../../core/http/index.ts';
import { safeReturnTo } from './interactive.ts';

const USERS: Record<string, TestUser> = {
  alice: { email: 'alice@corp.example', emailVerified: true, preferredUsername: 'alice.a', amr: ['pwd', 'mfa'], authAgeSeconds: 0 },
  bob: { email: 'bob@other.example', emailVerified: true, preferredUsername: 'bobby', amr: ['pwd'], authAgeSeconds: 3 * 3600 },
  carol: { email: 'carol@corp.example', emailVerified: false, preferredUsername: 'carol.c', amr: ['otp'], authAgeSeconds: 60 },
};

describe('interactive sign-in against a real OpenID provider', () => {
  let t: TestApp;
  let lakeport: string;
  let op: Awaited<ReturnType<typeof startProvider>>;
  let other: Awaited<ReturnType<typeof startProvider>>;
  /** The test's sign-in policy: refuses whatever `refuse` says (null: allow). */
  let refuse: ((facts: SignInFacts) => string | null) = () => null;
  let refuseRefresh: ((facts: SignInFacts, session: { startedAt: Date; policyVersion: number }) => string | null) = () => null;
  const judged: SignInFacts[] = [];
  const verdict = (reason: string | null): SignInVerdict =>
    reason === null ? { allowed: true, accountId: null, policyVersion: 3 } : { allowed: false, accountId: null, policyVersion: 3, code: 'TEST_POLICY', reason };
  const policy: SignInPolicy = {
    judgeSignIn: async (facts) => (judged.push(facts), verdict(refuse(facts))),
    judgeRefresh: async (facts, session) => verdict(refuseRefresh(facts, session)),
    checkCredentialMint: async () => {},
  };

  beforeAll(async () => {
    const publicUrl = new PublicUrl(undefined, '127.0.0.1', 0);
    const redirectUri = () => `${publicUrl.value}/auth/callback`;
    op = await startProvider(redirectUri, USERS);
    other = await startProvider(redirectUri, USERS);
    // idp_b: a port where nothing listens (an unreachable provider).
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadIssuer = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    t = await createTestApp({
      publicUrl,
      signInPolicy: policy,
      identityProviders: [
        { id: 'idp_a', issuer: op.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, name: 'Test IdP' },
        { id: 'idp_b', issuer: deadIssuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, name: 'Down IdP' },
      ],
    });
    lakeport = await t.app.listen({ port: 0, host: '127.0.0.1' });
    publicUrl.settle(lakeport);
    op.init();
    other.init();
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await op?.close();
    await other?.close();
  });

  /** The whole browser flow up to Lakeport's callback response (not followed). */
  async function signIn(browser: Browser, user: string, returnTo = '/auth/me', accept?: string) {
    const start = await browser.request(`${lakeport}/auth/login?provider=idp_a&return_to=${encodeURIComponent(returnTo)}`);
    expect(start.status).toBe(302);
    const authorizeUrl = start.headers.get('location')!;
    return completeAt(browser, authorizeUrl, user, accept);
  }

  /** At the provider: login and consent forms, then the redirect to Lakeport's callback, requested once. */
  const completeAt = (browser: Browser, authorizeUrl: string, user: string, accept?: string) => loginAtProvider(browser, lakeport, authorizeUrl, user, accept);

  it('signs a person in through the redirects; /auth/me answers with the cookie, carrying idp, amr and auth_time', async () => {
    const browser = new Browser();
    const before = Math.floor(Date.now() / 1000);
    const { callback } = await signIn(browser, 'alice');
    expect(callback.status).toBe(302);
    expect(callback.headers.get('location')).toBe('/auth/me');
    const me = await browser.request(`${lakeport}/auth/me`);
    expect(me.status).toBe(200);
    const body = await me.json();
    expect(body).toMatchObject({ identity: 'alice', idp: 'idp_a', amr: ['pwd', 'mfa'] });
    expect(Date.parse(body.auth_time) / 1000).toBeGreaterThanOrEqual(before - 2);
    const facts = judged.at(-1)!;
    expect(facts).toMatchObject({ identity: 'alice', provider: 'idp_a', issuer: op.issuer, subject: 'alice', email: 'alice@corp.example', emailVerified: true, amr: ['pwd', 'mfa'] });

    // The same person again: the same identity (stable iss+sub link).
    const again = await signIn(new Browser(), 'alice');
    expect(again.callback.status).toBe(302);
    expect(judged.at(-1)!.identity).toBe('alice');
  });

  it('ID tokens differ per user: email domain, amr, auth_time; an unverified email is not used', async () => {
    const bob = new Browser();
    expect((await signIn(bob, 'bob')).callback.status).toBe(302);
    const bobFacts = judged.at(-1)!;
    expect(bobFacts).toMatchObject({ identity: 'bob', email: 'bob@other.example', amr: ['pwd'] });
    expect(Date.now() - bobFacts.authTime.getTime()).toBeGreaterThan(3 * 3600_000 - 60_000);
    expect(await (await bob.request(`${lakeport}/auth/me`)).json()).toMatchObject({ identity: 'bob', amr: ['pwd'] });

    expect((await signIn(new Browser(), 'carol')).callback.status).toBe(302);
    // carol's email is unverified: no email, the identity from preferred_username.
    expect(judged.at(-1)!).toMatchObject({ identity: 'carol.c', email: null, emailVerified: false, amr: ['otp'] });
  });

  it('sets HttpOnly SameSite cookies: the access token on /, the refresh token on /auth only (no Secure over http)', async () => {
    const browser = new Browser();
    await signIn(browser, 'alice');
    const access = browser.lastSetCookies.find((c) => c.startsWith('lakeport_access_token='))!;
    const refresh = browser.lastSetCookies.find((c) => c.startsWith('lakeport_refresh_token='))!;
    expect(access).toMatch(/; HttpOnly/i);
    expect(access).toMatch(/; SameSite=Lax/i);
    expect(access).toMatch(/; Path=\/(;|$)/);
    expect(access).not.toMatch(/; Secure/i);
    expect(refresh).toMatch(/; HttpOnly/i);
    expect(refresh).toMatch(/; SameSite=Strict/i);
    expect(refresh).toMatch(/; Path=\/auth(;|$)/);
  });

  it('a replayed callback fails (state single-use; the code cannot be redeemed again)', async () => {
    const browser = new Browser();
    const { callback, callbackUrl } = await signIn(browser, 'alice');
    expect(callback.status).toBe(302);
    const replay = await new Browser().request(callbackUrl, { headers: { accept: 'application/json' } });
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ code: 'SIGN_IN_FAILED' });
    // The used code under a fresh state of another login: refused (PKCE/code reuse at the provider).
    const fresh = await browser.request(`${lakeport}/auth/login?provider=idp_a`);
    const state = new URL(fresh.headers.get('location')!).searchParams.get('state')!;
    const forged = new URL(callbackUrl);
    forged.searchParams.set('state', state);
    const reuse = await browser.request(forged.href, { headers: { accept: 'application/json' } });
    expect(reuse.status).toBe(400);
    expect(await reuse.json()).toMatchObject({ code: 'SIGN_IN_FAILED' });
  });

  it('a state Lakeport never issued is refused, as a plain page for a browser', async () => {
    const res = await new Browser().request(`${lakeport}/auth/callback?code=abc&state=forged-state`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(await res.text()).toContain('already used sign-in state');
    expect(res.headers.getSetCookie()).toEqual([]);
  });

  it('a nonce mismatch is refused: the authorization request was tampered with', async () => {
    const browser = new Browser();
    const start = await browser.request(`${lakeport}/auth/login?provider=idp_a`);
    const tampered = new URL(start.headers.get('location')!);
    tampered.searchParams.set('nonce', 'attacker-chosen-nonce');
    const { callback } = await completeAt(browser, tampered.href, 'alice', 'application/json');
    expect(callback.status).toBe(400);
    const body = await callback.json();
    expect(body.code).toBe('SIGN_IN_FAILED');
    expect(body.detail).toMatch(/nonce/);
    expect(browser.cookie(new URL(lakeport).host, 'lakeport_access_token')).toBeUndefined();
  });

  it('an ID token from an unconfigured issuer is refused', async () => {
    // A real provider Lakeport does not know answers a login Lakeport started with idp_a.
    const browser = new Browser();
    const start = await browser.request(`${lakeport}/auth/login?provider=idp_a`);
    const mine = new URL(start.headers.get('location')!);
    const foreign = new URL(`${other.issuer}${mine.pathname}`);
    foreign.search = mine.search;
    const { callback } = await completeAt(browser, foreign.href, 'alice', 'application/json');
    expect(callback.status).toBe(400);
    expect((await callback.json()).code).toBe('SIGN_IN_FAILED');
  });

  it('return_to only to this origin: open-redirect attempts land on /', async () => {
    for (const bad of ['//evil.com', 'https://evil.com', '/\\evil.com', 'javascript:alert(1)', '\\\\evil.com', ' //evil.com', '/\t/evil.com']) {
      expect(safeReturnTo(bad), bad).toBe('/');
    }
    expect(safeReturnTo('/odata/v1/ws?$top=1')).toBe('/odata/v1/ws?$top=1');
    const { callback } = await signIn(new Browser(), 'alice', '//evil.com');
    expect(callback.status).toBe(302);
    expect(callback.headers.get('location')).toBe('/');
    const scheme = await signIn(new Browser(), 'alice', 'https://evil.com/x');
    expect(scheme.callback.headers.get('location')).toBe('/');
  });

  it('an unknown provider is 404, an unreachable one 502; providers are listed without secrets', async () => {
    const res = await fetch(`${lakeport}/auth/login?provider=idp_c`, { redirect: 'manual' });
    expect(res.status).toBe(404);
    expect((await res.json()).code).toBe('IDP_NOT_CONFIGURED');
    const down = await fetch(`${lakeport}/auth/login?provider=idp_b`, { redirect: 'manual' });
    expect(down.status).toBe(502);
    const body = await down.json();
    expect(body.code).toBe('IDP_UNREACHABLE');
    expect(JSON.stringify(body)).not.toContain(CLIENT_SECRET);
    const list = await (await fetch(`${lakeport}/auth/providers`)).text();
    expect(list).toContain('Test IdP');
    expect(list).not.toContain(CLIENT_SECRET);
  });

  it('a sign-in the policy refuses: 403 with the reason (HTML for a browser, JSON on request), no session', async () => {
    refuse = (facts) => (facts.email?.endsWith('@other.example') ? 'only corp.example may sign in' : null);
    try {
      const browser = new Browser();
      const { callback } = await signIn(browser, 'bob');
      expect(callback.status).toBe(403);
      expect(callback.headers.get('content-type')).toMatch(/text\/html/);
      expect(await callback.text()).toContain('only corp.example may sign in');
      expect(browser.cookie(new URL(lakeport).host, 'lakeport_access_token')).toBeUndefined();
      const api = await signIn(new Browser(), 'bob', '/', 'application/json');
      expect(api.callback.status).toBe(403);
      expect(await api.callback.json()).toMatchObject({ code: 'SIGN_IN_REFUSED', reason_code: 'TEST_POLICY' });
    } finally {
      refuse = () => null;
    }
  });

  it('refresh: allowed by judgeRefresh gives a new token with amr; refused gives invalid_grant and ends the session', async () => {
    const browser = new Browser();
    await signIn(browser, 'alice');
    const host = new URL(lakeport).host;
    const refreshToken = browser.cookie(host, 'lakeport_refresh_token')!;
    const accessToken = browser.cookie(host, 'lakeport_access_token')!;
    const ok = await fetch(`${lakeport}/auth/token`, { method: 'POST', headers: FORM, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }) });
    expect(ok.status).toBe(200);
    const fresh = (await ok.json()).access_token as string;
    const me = await (await fetch(`${lakeport}/auth/me`, { headers: { authorization: `Bearer ${fresh}` } })).json();
    expect(me).toMatchObject({ identity: 'alice', idp: 'idp_a', amr: ['pwd', 'mfa'] });

    let seen: { startedAt: Date; policyVersion: number } | undefined;
    refuseRefresh = (_facts, session) => ((seen = session), 'the account policy changed');
    try {
      const refused = await fetch(`${lakeport}/auth/token`, { method: 'POST', headers: FORM, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }) });
      expect(refused.status).toBe(400);
      const body = await refused.json();
      expect(body).toMatchObject({ error: 'invalid_grant', code: 'SIGN_IN_REQUIRED', reason_code: 'TEST_POLICY' });
      expect(body.error_description).toMatch(/sign in interactively again/i);
      expect(seen!.policyVersion).toBe(3);
    } finally {
      refuseRefresh = () => null;
    }
    // The session is over: the refresh token is dead, its access tokens stop within the recheck time.
    const dead = await fetch(`${lakeport}/auth/token`, { method: 'POST', headers: FORM, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }) });
    expect(dead.status).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, 5_200));
    expect((await fetch(`${lakeport}/auth/me`, { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(401);
  }, 30_000);

  it('logout revokes the session and clears the cookies', async () => {
    const browser = new Browser();
    await signIn(browser, 'alice');
    const host = new URL(lakeport).host;
    const accessToken = browser.cookie(host, 'lakeport_access_token')!;
    const refreshToken = browser.cookie(host, 'lakeport_refresh_token')!;
    const out = await browser.request(`${lakeport}/auth/logout`, { method: 'POST' });
    expect(out.status).toBe(204);
    expect(browser.cookie(host, 'lakeport_access_token')).toBeUndefined();
    expect(browser.cookie(host, 'lakeport_refresh_token')).toBeUndefined();
    expect((await fetch(`${lakeport}/auth/me`, { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(401);
    const refresh = await fetch(`${lakeport}/auth/token`, { method: 'POST', headers: FORM, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }) });
    expect(refresh.status).toBe(400);
  });

  it('a browser refreshes with its refresh cookie (set_cookie=true renews the access cookie)', async () => {
    const browser = new Browser();
    await signIn(browser, 'alice');
    const host = new URL(lakeport).host;
    const before = browser.cookie(host, 'lakeport_access_token');
    const res = await browser.request(`${lakeport}/auth/token?set_cookie=true`, { method: 'POST', headers: FORM, body: new URLSearchParams({ grant_type: 'refresh_token' }) });
    expect(res.status).toBe(200);
    expect(browser.cookie(host, 'lakeport_access_token')).not.toBe(before);
    expect(await (await browser.request(`${lakeport}/auth/me`)).json()).toMatchObject({ identity: 'alice', amr: ['pwd', 'mfa'] });
  });

  it('interactiveSessions.end (for the accounts module) ends every session of an identity at once', async () => {
    const browser = new Browser();
    await signIn(browser, 'bob');
    expect((await browser.request(`${lakeport}/auth/me`)).status).toBe(200);
    expect(await t.app.lakeport.auth.interactiveSessions.end('bob')).toBeGreaterThanOrEqual(1);
    expect((await browser.request(`${lakeport}/auth/me`)).status).toBe(401);
  });
});

describe('interactive sign-in cookies behind https', () => {
  it('are Secure when the public URL is https (logout clears them with the same attributes)', async () => {
    const t = await createTestApp({ publicUrl: new PublicUrl('https://lake.example.com', '127.0.0.1', 0) }, { workers: false });
    try {
      const res = await t.app.inject({ method: 'POST', url: '/auth/logout' });
      expect(res.statusCode).toBe(204);
      const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
      // The access and refresh cookies, and the CSRF cookie beside the access one (readable by the page by design).
      expect(cookies).toHaveLength(3);
      for (const cookie of cookies) {
        expect(cookie).toMatch(/; Secure/);
        if (cookie.startsWith('lakeport_csrf=')) expect(cookie).not.toMatch(/; HttpOnly/);
        else expect(cookie).toMatch(/; HttpOnly/);
      }
      expect(cookies.find((c) => c.startsWith('lakeport_refresh_token='))).toMatch(/; Path=\/auth(;|$)/);
    } finally {
      await t.close();
    }
  });
});

describe('a provider that does not answer', () => {
  it('is answered 504 IDP_TIMEOUT after the configured time, and tried again at the next sign-in', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const hanging = http.createServer(() => {});
    hanging.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
    const t = await createTestApp(
      { idpTimeoutSeconds: 1, identityProviders: [{ id: 'idp_a', issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, name: 'Slow' }] },
      { workers: false },
    );
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        const started = Date.now();
        const res = await t.app.inject({ method: 'GET', url: '/auth/login?provider=idp_a' });
        expect(res.statusCode).toBe(504);
        expect(res.json()).toMatchObject({ code: 'IDP_TIMEOUT' });
        expect(Date.now() - started).toBeLessThan(5_000);
      }
      // The failed discovery was not cached: the second sign-in asked the provider again.
      expect(sockets.size).toBeGreaterThanOrEqual(2);
    } finally {
      await t.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => hanging.close(() => resolve()));
    }
  }, 20_000);
});
