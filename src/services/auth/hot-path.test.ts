/**
 * The authenticated hot path (docs/auth.md, "Performance and caching") on two app instances sharing
 * one database, as two servers would: what one server keeps is dropped by its own revocations at
 * once and outlives another server's by at most LAKEPORT_AUTH_CACHE_SECONDS (1 s here); failed
 * attempts counted by one server hold back the other; last-used times are written when the app closes.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../app.ts';
import { createTwoServerApp, type TestApp } from '../../../test/harness.ts';
import { insertRowBasedRefreshToken } from '../../../test/auth-tokens.ts';
import { within } from '../../../test/async.ts';

const CACHE_SECONDS = 1;
/** The bound plus slack for a loaded machine. */
const BOUND_MS = CACHE_SECONDS * 1000 + 1_000;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const ATTACKER = '203.0.113.40';
const LEGIT = '198.51.100.40';

let t: TestApp & { other: FastifyInstance };
let a: FastifyInstance;
let b: FastifyInstance;
beforeAll(async () => {
  t = await createTwoServerApp({ authCacheSeconds: CACHE_SECONDS });
  a = t.app;
  b = t.other;
});
afterAll(async () => {
  await t?.close();
});

async function credential(clientId: string) {
  const res = await a.inject({ method: 'POST', url: `/auth/clients/${clientId}/credentials`, headers: { 'x-admin-token': t.adminToken }, payload: {} });
  expect(res.statusCode).toBe(200);
  return res.json() as { credential_id: string; secret: string };
}

const exchange = (app: FastifyInstance, fields: Record<string, string>, remoteAddress = LEGIT) =>
  app.inject({ method: 'POST', url: '/auth/token', remoteAddress, headers: FORM, payload: new URLSearchParams(fields).toString() });
const clientCredentials = (app: FastifyInstance, clientId: string, secret: string, remoteAddress?: string) =>
  exchange(app, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret }, remoteAddress);
const refresh = (app: FastifyInstance, refreshToken: string) => exchange(app, { grant_type: 'refresh_token', refresh_token: refreshToken });
const me = (app: FastifyInstance, accessToken: string) => app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${accessToken}` } });


/** The statements `app`'s database is sent while `fn` runs, outside transactions. */
async function statementsDuring(fn: () => Promise<unknown>): Promise<string[]> {
  const executor = t.db.kysely.getExecutor();
  const spy = vi.spyOn(executor, 'executeQuery');
  try {
    await fn();
    return spy.mock.calls.map(([compiled]) => compiled.sql);
  } finally {
    spy.mockRestore();
  }
}

describe('what a server keeps', () => {
  it('a warm exchange sends nothing: client_credentials (its refresh token is self-describing), refresh_token and /auth/me send no statement', async () => {
    // A server keeping verified credentials and tokens a minute, so that a slow machine cannot make them due.
    const c = await buildApp({ ...t.deps, authCacheSeconds: 60 }, { workers: false });
    try {
      await c.ready();
      const cred = await credential('warm');
      const first = await clientCredentials(c, 'warm', cred.secret);
      expect(first.statusCode).toBe(200);
      const { access_token, refresh_token } = first.json();
      expect((await refresh(c, refresh_token)).statusCode).toBe(200);
      expect((await me(c, access_token)).statusCode).toBe(200);
      const sent = await statementsDuring(async () => {
        for (let i = 0; i < 3; i++) {
          expect((await clientCredentials(c, 'warm', cred.secret)).statusCode).toBe(200);
          expect((await refresh(c, refresh_token)).statusCode).toBe(200);
          expect((await me(c, access_token)).statusCode).toBe(200);
        }
      });
      // (The billing account /auth/me shows is the accounts module's, kept a second: on a slow machine it may be read again.)
      const auth = sent.filter((statement) => !/"(members|service_accounts)"/.test(statement));
      expect(auth).toEqual([]);
      // Not even the refresh tokens: they carry their claims and have no row.
      const tokens = await t.db.kysely.selectFrom('refresh_tokens').select('token_hash').where('credential_id', '=', cred.credential_id).execute();
      expect(tokens).toEqual([]);
    } finally {
      await c.close();
    }
  });

  it('a revoked credential is refused at once by the server that revoked it, and by the other within the bound', async () => {
    const cred = await credential('rita');
    const issued = await clientCredentials(b, 'rita', cred.secret);
    const { access_token, refresh_token } = issued.json();
    for (const app of [a, b]) {
      expect((await clientCredentials(app, 'rita', cred.secret)).statusCode).toBe(200);
      expect((await refresh(app, refresh_token)).statusCode).toBe(200);
      expect((await me(app, access_token)).statusCode).toBe(200);
    }
    const revoked = await a.inject({ method: 'DELETE', url: `/auth/clients/rita/credentials/${cred.credential_id}`, headers: { 'x-admin-token': t.adminToken } });
    expect(revoked.statusCode).toBe(200);
    expect((await clientCredentials(a, 'rita', cred.secret)).statusCode).toBe(401);
    expect((await refresh(a, refresh_token)).statusCode).toBe(400);
    expect((await me(a, access_token)).statusCode).toBe(401);
    await within(BOUND_MS, async () => (await clientCredentials(b, 'rita', cred.secret)).statusCode === 401);
    await within(BOUND_MS, async () => (await refresh(b, refresh_token)).statusCode === 400);
    await within(BOUND_MS, async () => (await me(b, access_token)).statusCode === 401);
  });

  it('a revoked refresh token and a revoked access token are refused at once here, and by the other server within the bound', async () => {
    const cred = await credential('rex');
    const { access_token, refresh_token } = (await clientCredentials(a, 'rex', cred.secret)).json();
    for (const app of [a, b]) {
      expect((await refresh(app, refresh_token)).statusCode).toBe(200);
      expect((await me(app, access_token)).statusCode).toBe(200);
    }
    for (const token of [refresh_token, access_token]) {
      const res = await a.inject({ method: 'POST', url: '/auth/revoke', headers: { ...FORM, 'x-admin-token': t.adminToken }, payload: new URLSearchParams({ token }).toString() });
      expect(res.statusCode).toBe(200);
    }
    expect((await refresh(a, refresh_token)).statusCode).toBe(400);
    expect((await me(a, access_token)).statusCode).toBe(401);
    await within(BOUND_MS, async () => (await refresh(b, refresh_token)).statusCode === 400);
    await within(BOUND_MS, async () => (await me(b, access_token)).statusCode === 401);
    // The credential itself still works.
    expect((await clientCredentials(b, 'rex', cred.secret)).statusCode).toBe(200);
  });
});

describe('failed-attempt throttling across servers', () => {
  const wrong = (secret: string, n: number) => `${secret.slice(0, -2)}${'abcdefghij'[n % 10]}${secret.endsWith('z') ? 'y' : 'z'}`;

  it('failures counted on one server block the source on the other, even with the right secret', async () => {
    const cred = await credential('tess');
    for (let i = 0; i < 10; i++) expect((await clientCredentials(a, 'tess', wrong(cred.secret, i), ATTACKER)).statusCode).toBe(401);
    expect((await clientCredentials(b, 'tess', cred.secret, ATTACKER)).statusCode).toBe(429);
    expect((await clientCredentials(b, 'tess', wrong(cred.secret, 0), ATTACKER)).statusCode).toBe(429);
    expect((await clientCredentials(b, 'tess', cred.secret, LEGIT)).statusCode).toBe(200);
  });

  it("a source's successes read no counters while its verdict is kept; a failure here drops it at once, one elsewhere within the bound", async () => {
    const cred = await credential('tom');
    const source = '198.51.100.41';
    expect((await clientCredentials(b, 'tom', cred.secret, source)).statusCode).toBe(200);
    const sent = await statementsDuring(async () => {
      for (let i = 0; i < 3; i++) expect((await clientCredentials(b, 'tom', cred.secret, source)).statusCode).toBe(200);
    });
    expect(sent.filter((s) => s.includes('auth_failures'))).toEqual([]);

    // Here: the failures drop the kept verdict, so the right secret is refused at once.
    for (let i = 0; i < 10; i++) expect((await clientCredentials(b, 'tom', wrong(cred.secret, i), source)).statusCode).toBe(401);
    expect((await clientCredentials(b, 'tom', cred.secret, source)).statusCode).toBe(429);

    // Elsewhere: a server that kept a verdict for the source sees failures counted by the other within the bound.
    const other = '198.51.100.42';
    expect((await clientCredentials(b, 'tom', cred.secret, other)).statusCode).toBe(200);
    for (let i = 0; i < 10; i++) expect((await clientCredentials(a, 'tom', wrong(cred.secret, i), other)).statusCode).toBe(401);
    await within(BOUND_MS, async () => (await clientCredentials(b, 'tom', cred.secret, other)).statusCode === 429);
  });
});

describe('last-used times', () => {
  it('are written in a batch, and when the app closes', async () => {
    const cred = await credential('lulu');
    const c = await buildApp(t.deps, { workers: false });
    await c.ready();
    let closed = false;
    try {
      const before = Date.now();
      expect((await clientCredentials(c, 'lulu', cred.secret)).statusCode).toBe(200);
      // A row-based refresh token (as issued before self-describing ones, and to interactive sessions).
      const rowBased = await insertRowBasedRefreshToken(t.db, cred.credential_id, 'lulu');
      expect((await refresh(c, rowBased)).statusCode).toBe(200);
      const written = () =>
        Promise.all([
          t.db.kysely.selectFrom('credentials').select('last_used_at').where('credential_id', '=', cred.credential_id).executeTakeFirstOrThrow(),
          t.db.kysely.selectFrom('refresh_tokens').select('last_used_at').where('credential_id', '=', cred.credential_id).executeTakeFirstOrThrow(),
        ]);
      // Not by the exchanges themselves (the batch is written every few seconds) …
      expect((await written()).map((r) => r.last_used_at)).toEqual([null, null]);
      await c.close();
      closed = true;
      // … but by the close, at the times of use.
      for (const { last_used_at } of await written()) {
        expect(last_used_at).toBeInstanceOf(Date);
        expect(last_used_at!.getTime()).toBeGreaterThanOrEqual(before - 1_000);
        expect(last_used_at!.getTime()).toBeLessThanOrEqual(Date.now());
      }
    } finally {
      if (!closed) await c.close();
    }
  });
});
