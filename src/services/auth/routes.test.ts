import crypto from 'node:crypto';
import { decodeJwt, generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../app.ts';
import { PublicUrl } from '../../core/http/index.ts';
import { createTestApp, TEST_PUBLIC_URL, type TestApp } from '../../../test/harness.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

async function createCredential(clientId: string, body: Record<string, unknown> = {}, headers?: Record<string, string>) {
  const res = await t.app.inject({
    method: 'POST',
    url: `/auth/clients/${clientId}/credentials`,
    headers: headers ?? { 'x-admin-token': t.adminToken },
    payload: body,
  });
  return res;
}

async function credentialFor(clientId: string, body: Record<string, unknown> = {}) {
  const res = await createCredential(clientId, body);
  expect(res.statusCode).toBe(200);
  return res.json() as { credential_id: string; secret: string; client_id: string };
}

async function tokenFor(clientId: string, secret: string, extra: Record<string, string> = {}) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: FORM,
    payload: form({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret, ...extra }),
  });
  return res;
}

async function login(clientId: string, body: Record<string, unknown> = {}) {
  const cred = await credentialFor(clientId, body);
  const res = await tokenFor(clientId, cred.secret);
  expect(res.statusCode).toBe(200);
  const tokens = res.json() as { access_token: string; refresh_token: string };
  return { ...cred, ...tokens, bearer: { authorization: `Bearer ${tokens.access_token}` } };
}

describe('credentials', () => {
  it('creates with the admin token, returns the secret once, lists without it', async () => {
    const res = await createCredential('alice', { type: 'laptop', expires_in_days: 10, permissions: [['Sales.*', 'owner']] });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(body).toMatchObject({ client_id: 'alice', type: 'laptop', created_by: 'admin', permissions: [['sales.*', 'owner']], expired: false });
    expect(body.secret).toMatch(/^lpsk_/);
    expect(body.scopes).toEqual(['accounts', 'policy', 'upload', 'jobs', 'odata']);
    expect(new Date(body.expires_at).getTime() - Date.now()).toBeGreaterThan(9.9 * 86_400_000);

    const list = await t.app.inject({ method: 'GET', url: '/auth/clients/alice/credentials', headers: { 'x-admin-token': t.adminToken } });
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(body.secret);
    expect(list.json().map((c: { credential_id: string }) => c.credential_id)).toContain(body.credential_id);
    expect(list.json()[0]).not.toHaveProperty('secret');
  });

  it('defaults: interactive, 90 days, default scopes; null never expires', async () => {
    const a = (await createCredential('dflt')).json();
    expect(a.type).toBe('interactive');
    expect(Math.round((new Date(a.expires_at).getTime() - Date.now()) / 86_400_000)).toBe(90);
    const b = (await createCredential('dflt', { expires_in_days: null })).json();
    expect(b.expires_at).toBeNull();
  });

  it('stores only a digest of the secret', async () => {
    const cred = await credentialFor('digest');
    const row = await t.db.kysely.selectFrom('credentials').selectAll().where('credential_id', '=', cred.credential_id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(cred.secret);
    expect(row.secret_hash).toBe(crypto.createHash('sha256').update(cred.secret).digest('hex'));
  });

  it('lets a token manage its own identity only', async () => {
    const bob = await login('bob');
    const own = await createCredential('bob', { type: 'ci' }, bob.bearer);
    expect(own.statusCode).toBe(200);
    expect(own.json().created_by).toBe('bob');
    const other = await createCredential('alice', {}, bob.bearer);
    expect(other.statusCode).toBe(403);
    expect(other.json().code).toBe('FORBIDDEN');
    const list = await t.app.inject({ method: 'GET', url: '/auth/clients/alice/credentials', headers: bob.bearer });
    expect(list.statusCode).toBe(403);
    const del = await t.app.inject({ method: 'DELETE', url: `/auth/clients/alice/credentials/${own.json().credential_id}`, headers: bob.bearer });
    expect(del.statusCode).toBe(403);
  });

  it('needs a token or the admin token; a wrong admin token governs even beside a good bearer', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/auth/clients/alice/credentials' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(none.json()).toMatchObject({ code: 'UNAUTHORIZED' });
    const carol = await login('carol');
    const wrong = await t.app.inject({
      method: 'GET',
      url: '/auth/clients/carol/credentials',
      headers: { ...carol.bearer, 'x-admin-token': 'not-the-admin-token' },
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().code).toBe('INVALID_ADMIN_TOKEN');
    const both = await t.app.inject({ method: 'GET', url: '/auth/clients/alice/credentials', headers: { ...carol.bearer, 'x-admin-token': t.adminToken } });
    expect(both.statusCode).toBe(200);
  });

  it('validates the body and the path with FastAPI-shaped 422s', async () => {
    const res = await createCredential('alice', { expires_in_days: 'soon', scopes: ['everything'], permissions: [['sales', 'owner'], ['a.*', 'god']] });
    expect(res.statusCode).toBe(422);
    const locs = res.json().detail.map((d: { loc: unknown[] }) => d.loc);
    expect(locs).toEqual(
      expect.arrayContaining([['body', 'expires_in_days'], ['body', 'scopes', 0], ['body', 'permissions', 0, 0], ['body', 'permissions', 1, 1]]),
    );
    for (const d of res.json().detail) expect(Object.keys(d).sort()).toEqual(['loc', 'msg', 'type']);
    const badPath = await createCredential('bad%20id');
    expect(badPath.statusCode).toBe(422);
    expect(badPath.json().detail[0].loc).toEqual(['path', 'client_id']);
    const badJson = await t.app.inject({
      method: 'POST',
      url: '/auth/clients/alice/credentials',
      headers: { 'x-admin-token': t.adminToken, 'content-type': 'application/json' },
      payload: '{"type":',
    });
    expect(badJson.statusCode).toBe(422);
    expect(badJson.json().detail[0].type).toBe('json_invalid');
  });

  it('a narrowed token cannot mint a wider credential', async () => {
    const narrow = await login('nina', { scopes: ['odata'], permissions: [['sales.*', 'reader']] });
    const wider = await createCredential('nina', {}, narrow.bearer);
    expect(wider.statusCode).toBe(403);
    const moreScope = await createCredential('nina', { scopes: ['upload'], permissions: [['sales.*', 'reader']] }, narrow.bearer);
    expect(moreScope.statusCode).toBe(403);
    expect(moreScope.json().code).toBe('SCOPE_NOT_HELD');
    const higherRole = await createCredential('nina', { permissions: [['sales.*', 'writer']] }, narrow.bearer);
    expect(higherRole.statusCode).toBe(403);
    const within = await createCredential('nina', { permissions: [['sales.orders.*', 'reader']] }, narrow.bearer);
    expect(within.statusCode).toBe(200);
    expect(within.json().scopes).toEqual(['odata']);
  });

  it('lists expired credentials with expires_at, hides revoked ones, and revokes once', async () => {
    const expired = await credentialFor('dora');
    await t.db.kysely.updateTable('credentials').set({ expires_at: new Date(Date.now() - 1000) }).where('credential_id', '=', expired.credential_id).execute();
    const revoked = await credentialFor('dora');
    const del = await t.app.inject({ method: 'DELETE', url: `/auth/clients/dora/credentials/${revoked.credential_id}`, headers: { 'x-admin-token': t.adminToken } });
    expect(del.statusCode).toBe(200);
    expect(del.json()).toMatchObject({ credential_id: revoked.credential_id, message: expect.stringContaining('revoked') });
    const again = await t.app.inject({ method: 'DELETE', url: `/auth/clients/dora/credentials/${revoked.credential_id}`, headers: { 'x-admin-token': t.adminToken } });
    expect(again.statusCode).toBe(404);
    expect(again.json().code).toBe('CREDENTIAL_NOT_FOUND');
    const list = (await t.app.inject({ method: 'GET', url: '/auth/clients/dora/credentials', headers: { 'x-admin-token': t.adminToken } })).json();
    expect(list.map((c: { credential_id: string }) => c.credential_id)).toEqual([expired.credential_id]);
    expect(list[0].expired).toBe(true);
  });

  it('will not revoke through another client_id path', async () => {
    const e = await credentialFor('erin');
    const res = await t.app.inject({ method: 'DELETE', url: `/auth/clients/frank/credentials/${e.credential_id}`, headers: { 'x-admin-token': t.adminToken } });
    expect(res.statusCode).toBe(404);
  });
});

describe('token endpoint', () => {
  it('client_credentials returns a signed access token, its lifetime in seconds and a refresh token', async () => {
    const cred = await credentialFor('gina');
    const res = await tokenFor('gina', cred.secret);
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 900, scope: 'accounts policy upload jobs odata' });
    expect(body.refresh_token).toMatch(/^lprt_/);
    const claims = decodeJwt(body.access_token);
    expect(claims).toMatchObject({ iss: `${TEST_PUBLIC_URL}/auth`, sub: 'gina', aud: 'lakeport', cid: cred.credential_id, permissions: [] });
    expect(claims.exp! - claims.iat!).toBe(900);
    expect(typeof claims.jti).toBe('string');
  });

  it('defaults grant_type to client_credentials and accepts HTTP Basic client authentication', async () => {
    const cred = await credentialFor('hank');
    const plain = await t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: form({ client_id: 'hank', client_secret: cred.secret }) });
    expect(plain.statusCode).toBe(200);
    const basic = await t.app.inject({
      method: 'POST',
      url: '/auth/token',
      headers: { ...FORM, authorization: `Basic ${Buffer.from(`hank:${cred.secret}`).toString('base64')}` },
      payload: form({ grant_type: 'client_credentials' }),
    });
    expect(basic.statusCode).toBe(200);
  });

  it('refuses wrong secrets, other client_ids, unknown grants and malformed forms', async () => {
    const cred = await credentialFor('ivan');
    // Change the last character (to something it is not), so the secret is certainly wrong.
    const wrong = await tokenFor('ivan', `${cred.secret.slice(0, -1)}${cred.secret.endsWith('x') ? 'y' : 'x'}`);
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toMatchObject({ error: 'invalid_client', code: 'INVALID_CLIENT' });
    const otherId = await tokenFor('judy', cred.secret);
    expect(otherId.statusCode).toBe(401);
    const grant = await t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: form({ grant_type: 'password' }) });
    expect(grant.statusCode).toBe(400);
    expect(grant.json().error).toBe('unsupported_grant_type');
    const noId = await t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: form({ client_secret: 'x' }) });
    expect(noId.statusCode).toBe(400);
    expect(noId.json().error).toBe('invalid_request');
    const repeated = await t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: 'client_id=a&client_id=b&client_secret=x' });
    expect(repeated.statusCode).toBe(422);
    expect(repeated.json().detail[0].loc).toEqual(['body', 'client_id']);
    const badCookieFlag = await t.app.inject({ method: 'POST', url: '/auth/token?set_cookie=maybe', headers: FORM, payload: form({ client_id: 'ivan', client_secret: cred.secret }) });
    expect(badCookieFlag.statusCode).toBe(422);
    expect(badCookieFlag.json().detail[0].loc).toEqual(['query', 'set_cookie']);
  });

  it('refuses revoked and expired credentials', async () => {
    const revoked = await credentialFor('kate');
    await t.app.inject({ method: 'DELETE', url: `/auth/clients/kate/credentials/${revoked.credential_id}`, headers: { 'x-admin-token': t.adminToken } });
    expect((await tokenFor('kate', revoked.secret)).statusCode).toBe(401);
    const expired = await credentialFor('kate');
    await t.db.kysely.updateTable('credentials').set({ expires_at: new Date(Date.now() - 1) }).where('credential_id', '=', expired.credential_id).execute();
    expect((await tokenFor('kate', expired.secret)).statusCode).toBe(401);
  });

  it('refresh_token grant returns a new access token and keeps the refresh token usable', async () => {
    const s = await login('liam');
    for (let i = 0; i < 2; i++) {
      const res = await t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: form({ grant_type: 'refresh_token', refresh_token: s.refresh_token }) });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 900 });
      expect(body.refresh_token).toBeUndefined();
      expect(body.access_token).not.toBe(s.access_token);
      expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${body.access_token}` } })).statusCode).toBe(200);
    }
  });

  it('refresh tokens of a revoked credential, or bound to another client, stop working', async () => {
    const s = await login('mona');
    const other = await credentialFor('otto');
    const mismatch = await t.app.inject({
      method: 'POST',
      url: '/auth/token',
      headers: FORM,
      payload: form({ grant_type: 'refresh_token', refresh_token: s.refresh_token, client_id: 'otto', client_secret: other.secret }),
    });
    expect(mismatch.statusCode).toBe(400);
    await t.app.inject({ method: 'DELETE', url: `/auth/clients/mona/credentials/${s.credential_id}`, headers: { 'x-admin-token': t.adminToken } });
    const res = await t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: form({ grant_type: 'refresh_token', refresh_token: s.refresh_token }) });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_grant');
    const garbage = await t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: form({ grant_type: 'refresh_token', refresh_token: 'lprt_nope' }) });
    expect(garbage.statusCode).toBe(400);
  });

  it('narrows scopes on request and refuses scopes not granted', async () => {
    const cred = await credentialFor('nick', { scopes: ['jobs', 'odata'] });
    const narrowed = await tokenFor('nick', cred.secret, { scope: 'odata' });
    expect(narrowed.json().scope).toBe('odata');
    const wider = await tokenFor('nick', cred.secret, { scope: 'odata upload' });
    expect(wider.statusCode).toBe(400);
    expect(wider.json().error).toBe('invalid_scope');
  });

  it('set_cookie=true sets an HttpOnly SameSite=Lax cookie that authenticates GETs, and unsafe methods only with CSRF proof', async () => {
    const cred = await credentialFor('olga');
    const res = await t.app.inject({ method: 'POST', url: '/auth/token?set_cookie=true', headers: FORM, payload: form({ client_id: 'olga', client_secret: cred.secret }) });
    expect(res.statusCode).toBe(200);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^lakeport_access_token=/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).not.toMatch(/Secure/); // the test public URL is http
    const value = cookie.split(';')[0];
    const me = await t.app.inject({ method: 'GET', url: '/auth/me', headers: { cookie: value } });
    expect(me.statusCode).toBe(200);
    const post = await t.app.inject({ method: 'POST', url: '/auth/clients/olga/credentials', headers: { cookie: value }, payload: {} });
    expect(post.statusCode).toBe(403);
    expect(post.json().code).toBe('CSRF_REJECTED');
    const without = await t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: form({ client_id: 'olga', client_secret: cred.secret }) });
    expect(without.headers['set-cookie']).toBeUndefined();
  });

  it('sign-out (POST /auth/logout) of a sign-in with a credential secret revokes its access cookie, not the credential', async () => {
    const cred = await credentialFor('otto');
    const res = await t.app.inject({ method: 'POST', url: '/auth/token?set_cookie=true', headers: FORM, payload: form({ client_id: 'otto', client_secret: cred.secret }) });
    const value = String(res.headers['set-cookie']).split(';')[0];
    expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: { cookie: value } })).statusCode).toBe(200);
    const out = await t.app.inject({ method: 'POST', url: '/auth/logout', headers: { cookie: value } });
    expect(out.statusCode).toBe(204);
    // A copy of the cookie (or the token as a bearer) no longer works; the credential still does.
    expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: { cookie: value } })).statusCode).toBe(401);
    expect((await tokenFor('otto', cred.secret)).statusCode).toBe(200);
  });

  it('rate-limits failed attempts per client_id with 429 and Retry-After', async () => {
    const cred = await credentialFor('pete');
    for (let i = 0; i < 10; i++) expect((await tokenFor('pete', 'lpsk_wrong')).statusCode).toBe(401);
    const limited = await tokenFor('pete', cred.secret);
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(limited.json().code).toBe('TOO_MANY_REQUESTS');
    // Other client_ids are unaffected.
    const quinn = await credentialFor('quinn');
    expect((await tokenFor('quinn', quinn.secret)).statusCode).toBe(200);
  });
});

describe('bearer authentication', () => {
  it('/me reports the caller', async () => {
    const s = await login('rita', { permissions: [['ws.*', 'reader']] });
    const res = await t.app.inject({ method: 'GET', url: '/auth/me', headers: s.bearer });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      identity: 'rita',
      billing_account: null,
      credential_id: s.credential_id,
      permissions: [['ws.*', 'reader']],
      scopes: ['accounts', 'policy', 'upload', 'jobs', 'odata'],
    });
    expect(res.json().expires_in).toBeGreaterThan(890);
  });

  it.each([
    ['no header', {}],
    ['not bearer', { authorization: 'Token abc' }],
    ['garbage', { authorization: 'Bearer not.a.jwt' }],
  ])('refuses %s with 401 and a Bearer challenge', async (_name, headers) => {
    const res = await t.app.inject({ method: 'GET', url: '/auth/me', headers });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="lakeport"/);
    expect(res.json().detail).toBeTruthy();
  });

  it('refuses a tampered token', async () => {
    const s = await login('sam');
    const [h, p, sig] = s.access_token.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    claims.sub = 'admin';
    const forged = [h, Buffer.from(JSON.stringify(claims)).toString('base64url'), sig].join('.');
    const res = await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${forged}` } });
    expect(res.statusCode).toBe(401);
  });

  it('refuses a token signed by another key, even under our kid', async () => {
    const s = await login('tina');
    const { kid } = JSON.parse(Buffer.from(s.access_token.split('.')[0], 'base64url').toString());
    const { privateKey } = await generateKeyPair('EdDSA');
    const claims = decodeJwt(s.access_token);
    const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid }).sign(privateKey);
    const res = await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${forged}` } });
    expect(res.statusCode).toBe(401);
    const other = await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid: 'attacker' }).sign(privateKey);
    expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${other}` } })).statusCode).toBe(401);
  });

  it('refuses alg none and symmetric algorithms keyed with the public key', async () => {
    const s = await login('uma');
    const claims = decodeJwt(s.access_token);
    const none = new UnsecuredJWT(claims).encode();
    expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${none}` } })).statusCode).toBe(401);
    const jwks = (await t.app.inject({ method: 'GET', url: '/auth/jwks' })).json();
    const hs = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: jwks.keys[0].kid })
      .sign(new TextEncoder().encode(JSON.stringify(jwks.keys[0])));
    expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${hs}` } })).statusCode).toBe(401);
  });

  it('refuses an expired token', async () => {
    const s = await login('vera');
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 901_000);
      const res = await t.app.inject({ method: 'GET', url: '/auth/me', headers: s.bearer });
      expect(res.statusCode).toBe(401);
      expect(res.json().detail).toMatch(/expired/);
    } finally {
      vi.useRealTimers();
    }
  });

  it("refuses a token of another issuer, even one signed with this database's keys", async () => {
    const s = await login('vince');
    const elsewhere = await buildApp({ ...t.deps, publicUrl: new PublicUrl('https://other.example', '127.0.0.1', 0) });
    try {
      const res = await elsewhere.inject({ method: 'GET', url: '/auth/me', headers: s.bearer });
      expect(res.statusCode).toBe(401);
      expect(res.json().detail).toMatch(/iss/);
    } finally {
      await elsewhere.close();
    }
  });

  it('stops accepting access tokens once their credential is revoked', async () => {
    const s = await login('walt');
    expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: s.bearer })).statusCode).toBe(200);
    await t.app.inject({ method: 'DELETE', url: `/auth/clients/walt/credentials/${s.credential_id}`, headers: { 'x-admin-token': t.adminToken } });
    const res = await t.app.inject({ method: 'GET', url: '/auth/me', headers: s.bearer });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('INVALID_TOKEN');
  });
});

describe('revocation and introspection', () => {
  it('revokes a refresh token and an access token of the caller (RFC 7009)', async () => {
    const s = await login('xena');
    const revokeRefresh = await t.app.inject({ method: 'POST', url: '/auth/revoke', headers: { ...FORM, ...s.bearer }, payload: form({ token: s.refresh_token }) });
    expect(revokeRefresh.statusCode).toBe(200);
    const refresh = await t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: form({ grant_type: 'refresh_token', refresh_token: s.refresh_token }) });
    expect(refresh.statusCode).toBe(400);
    const revokeAccess = await t.app.inject({
      method: 'POST',
      url: '/auth/revoke',
      headers: FORM,
      payload: form({ token: s.access_token, client_id: 'xena', client_secret: s.secret }),
    });
    expect(revokeAccess.statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: s.bearer })).statusCode).toBe(401);
    const unknown = await t.app.inject({ method: 'POST', url: '/auth/revoke', headers: { ...FORM, 'x-admin-token': t.adminToken }, payload: form({ token: 'whatever' }) });
    expect(unknown.statusCode).toBe(200);
  });

  it("cannot revoke another identity's token", async () => {
    const victim = await login('yara');
    const attacker = await login('zack');
    await t.app.inject({ method: 'POST', url: '/auth/revoke', headers: { ...FORM, ...attacker.bearer }, payload: form({ token: victim.refresh_token }) });
    await t.app.inject({ method: 'POST', url: '/auth/revoke', headers: { ...FORM, ...attacker.bearer }, payload: form({ token: victim.access_token }) });
    expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: victim.bearer })).statusCode).toBe(200);
    const refresh = await t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: form({ grant_type: 'refresh_token', refresh_token: victim.refresh_token }) });
    expect(refresh.statusCode).toBe(200);
  });

  it('introspects own tokens, hides others, and needs authentication (RFC 7662)', async () => {
    const a = await login('abby');
    const b = await login('ben');
    const own = await t.app.inject({ method: 'POST', url: '/auth/introspect', headers: { ...FORM, ...a.bearer }, payload: form({ token: a.access_token }) });
    expect(own.json()).toMatchObject({ active: true, token_type: 'access_token', sub: 'abby', client_id: 'abby', credential_id: a.credential_id });
    const ownRefresh = await t.app.inject({ method: 'POST', url: '/auth/introspect', headers: { ...FORM, ...a.bearer }, payload: form({ token: a.refresh_token }) });
    expect(ownRefresh.json()).toMatchObject({ active: true, token_type: 'refresh_token', sub: 'abby' });
    const others = await t.app.inject({ method: 'POST', url: '/auth/introspect', headers: { ...FORM, ...a.bearer }, payload: form({ token: b.access_token }) });
    expect(others.json()).toEqual({ active: false });
    const admin = await t.app.inject({ method: 'POST', url: '/auth/introspect', headers: { ...FORM, 'x-admin-token': t.adminToken }, payload: form({ token: b.access_token }) });
    expect(admin.json()).toMatchObject({ active: true, sub: 'ben' });
    const anonymous = await t.app.inject({ method: 'POST', url: '/auth/introspect', headers: FORM, payload: form({ token: b.access_token }) });
    expect(anonymous.statusCode).toBe(401);
    const missing = await t.app.inject({ method: 'POST', url: '/auth/introspect', headers: { ...FORM, ...a.bearer }, payload: form({}) });
    expect(missing.statusCode).toBe(422);
  });
});

describe('keys and discovery', () => {
  it('publishes the JWKS and both discovery documents with our issuer', async () => {
    const jwks = (await t.app.inject({ method: 'GET', url: '/auth/jwks' })).json();
    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const k of jwks.keys) {
      expect(k).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
      expect(k.kid).toBeTruthy();
      expect(k.d).toBeUndefined();
    }
    for (const url of [
      '/auth/.well-known/openid-configuration',
      '/auth/.well-known/oauth-authorization-server',
      '/.well-known/oauth-authorization-server/auth',
      '/.well-known/openid-configuration/auth',
      '/.well-known/openid-configuration',
    ]) {
      const doc = (await t.app.inject({ method: 'GET', url })).json();
      expect(doc).toMatchObject({
        issuer: `${TEST_PUBLIC_URL}/auth`,
        token_endpoint: `${TEST_PUBLIC_URL}/auth/token`,
        jwks_uri: `${TEST_PUBLIC_URL}/auth/jwks`,
        revocation_endpoint: `${TEST_PUBLIC_URL}/auth/revoke`,
        introspection_endpoint: `${TEST_PUBLIC_URL}/auth/introspect`,
        grant_types_supported: ['client_credentials', 'refresh_token'],
      });
      expect(doc.token_endpoint_auth_methods_supported).toEqual(expect.arrayContaining(['client_secret_basic', 'client_secret_post']));
    }
  });

  it('rotates keys with the admin token; old tokens keep working, new ones use the new kid', async () => {
    const s = await login('cleo');
    const denied = await t.app.inject({ method: 'POST', url: '/auth/admin/keys/rotate', headers: s.bearer });
    expect(denied.statusCode).toBe(401);
    const rotated = await t.app.inject({ method: 'POST', url: '/auth/admin/keys/rotate', headers: { 'x-admin-token': t.adminToken } });
    expect(rotated.statusCode).toBe(200);
    const { kid } = rotated.json();
    const jwks = (await t.app.inject({ method: 'GET', url: '/auth/jwks' })).json();
    expect(jwks.keys.map((k: { kid: string }) => k.kid)).toContain(kid);
    expect(jwks.keys.length).toBeGreaterThanOrEqual(2);
    expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: s.bearer })).statusCode).toBe(200);
    const fresh = await login('cleo');
    expect(JSON.parse(Buffer.from(fresh.access_token.split('.')[0], 'base64url').toString()).kid).toBe(kid);
  });
});

describe('foundation', () => {
  it('serves /healthz and an OpenAPI document per service', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    for (const prefix of ['/auth', '/upload', '/jobs', '/billing', '/control', '/policy', '/odata']) {
      const res = await t.app.inject({ method: 'GET', url: `${prefix}/openapi.json` });
      expect(res.statusCode).toBe(200);
      expect(res.json().openapi).toBe('3.1.0');
    }
    const auth = (await t.app.inject({ method: 'GET', url: '/auth/openapi.json' })).json();
    expect(Object.keys(auth.paths)).toEqual(expect.arrayContaining(['/auth/token', '/auth/jwks', '/auth/me', '/auth/clients/{client_id}/credentials']));
  });

  it('answers unknown routes with 404 {detail, code} and echoes a request id', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/upload/v2/contracts', headers: { 'x-request-id': 'abc-123' } });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect(res.headers['x-request-id']).toBe('abc-123');
    const generated = await t.app.inject({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'bad id\n' } });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
