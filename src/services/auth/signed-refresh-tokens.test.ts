/**
 * Self-describing refresh tokens of the client_credentials grant (docs/auth.md, "Refresh tokens of
 * client_credentials"): what the MAC refuses, and on two app instances sharing one database (as two
 * servers would) expiry, revocation, introspection, tenancy and the row-based tokens of before.
 */
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../core/crypto/index.ts';
import { insertRowBasedRefreshToken } from '../../../test/auth-tokens.ts';
import { createTwoServerApp, type TestApp } from '../../../test/harness.ts';
import { Writable } from 'node:stream';
import { buildApp } from '../../app.ts';
import { Sealer } from '../../core/crypto/index.ts';
import { RefreshTokenSigner, type RefreshClaims } from './signed-refresh-tokens.ts';
import { loadRefreshTokenKey } from './refresh-token-key.ts';
import { within } from '../../../test/async.ts';

const CACHE_SECONDS = 1;
/** The bound plus slack for a loaded machine. */
const BOUND_MS = CACHE_SECONDS * 1000 + 1_000;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const now = () => Math.floor(Date.now() / 1000);
const claims = (over: Partial<RefreshClaims> = {}): RefreshClaims => ({
  credentialId: 'cred_x',
  clientId: 'x',
  scopes: ['jobs'],
  issuedAt: now(),
  expiresAt: now() + 3600,
  ...over,
});
/** `token` with its character at `index` (negative: from the end) replaced by another of the same alphabet. */
function changedAt(token: string, index: number): string {
  const i = index < 0 ? token.length + index : index;
  return token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
}

describe('RefreshTokenSigner', () => {
  const signer = new RefreshTokenSigner(crypto.randomBytes(32));

  it('verifies its own tokens and refuses forged, truncated and re-spelled ones', () => {
    const issued = claims();
    const token = signer.sign(issued);
    expect(token).toMatch(/^lprt_2\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(signer.verify(token)).toEqual(issued);
    expect(signer.sign(claims())).not.toBe(signer.sign(claims())); // the nonce
    expect(signer.verify(changedAt(token, -1))).toBeUndefined(); // the MAC
    expect(signer.verify(changedAt(token, 10))).toBeUndefined(); // the claims
    for (const cut of [1, 2, 43, 44, token.length - 8]) expect(signer.verify(token.slice(0, -cut))).toBeUndefined();
    expect(signer.verify(`${token}A`)).toBeUndefined();
    expect(signer.verify(token.replace('lprt_2.', 'lprt_3.'))).toBeUndefined();
    expect(signer.verify('lprt_2..' + token.split('.')[2])).toBeUndefined();
    // The 43rd character of 32 bytes in base64url carries 2 spare bits: a variant decoding to the same
    // MAC would be another spelling (another hash) of the same token, so revocation could be dodged.
    const last = token.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const sibling = alphabet[alphabet.indexOf(last) ^ 1];
    const respelled = token.slice(0, -1) + sibling;
    expect(Buffer.from(respelled.split('.')[2], 'base64url')).toEqual(Buffer.from(token.split('.')[2], 'base64url'));
    expect(signer.verify(respelled)).toBeUndefined();
  });

  it('refuses a token made with another key, whatever its claims', () => {
    const other = new RefreshTokenSigner(crypto.randomBytes(32));
    expect(signer.verify(other.sign(claims({ credentialId: 'cred_other' })))).toBeUndefined();
  });
});

let t: TestApp & { other: FastifyInstance };
let a: FastifyInstance;
let b: FastifyInstance;
/** A third server on the same database whose log (every level) is kept, to look for the key in it. */
let logged: FastifyInstance;
const logLines: string[] = [];
/** The master key, to compute the MAC key this release no longer uses (HKDF of the master key). */
const masterKey = crypto.randomBytes(32);
/** The servers' own MAC key, read from the database as a server reads it. */
let serverKey: Buffer;
/** Signs with the servers' own key, to make tokens no server would issue. */
let serverSigner: RefreshTokenSigner;
beforeAll(async () => {
  t = await createTwoServerApp({ authCacheSeconds: CACHE_SECONDS, sealer: new Sealer(masterKey) });
  a = t.app;
  b = t.other;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  });
  logged = await buildApp(t.deps, { workers: false, logger: { level: 'trace', stream } });
  await logged.ready();
  serverKey = await loadRefreshTokenKey(t.db, t.deps.sealer);
  serverSigner = new RefreshTokenSigner(serverKey);
});
afterAll(async () => {
  await logged?.close();
  await t?.close();
});

async function credential(clientId: string, body: Record<string, unknown> = {}) {
  const res = await a.inject({ method: 'POST', url: `/auth/clients/${clientId}/credentials`, headers: { 'x-admin-token': t.adminToken }, payload: body });
  expect(res.statusCode).toBe(200);
  return res.json() as { credential_id: string; secret: string; expires_at: string | null };
}
const post = (app: FastifyInstance, url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url, headers: { ...FORM, ...headers }, payload: new URLSearchParams(fields).toString() });
async function issue(app: FastifyInstance, clientId: string, secret: string) {
  const res = await post(app, '/auth/token', { grant_type: 'client_credentials', client_id: clientId, client_secret: secret });
  expect(res.statusCode).toBe(200);
  return res.json() as { access_token: string; refresh_token: string; scope: string };
}
const refresh = (app: FastifyInstance, refreshToken: string, client?: { id: string; secret: string }) =>
  post(app, '/auth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, ...(client ? { client_id: client.id, client_secret: client.secret } : {}) });
const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });
const introspect = (app: FastifyInstance, token: string, headers: Record<string, string>) => post(app, '/auth/introspect', { token }, headers);
const revoke = (app: FastifyInstance, token: string, headers: Record<string, string>) => post(app, '/auth/revoke', { token }, headers);


describe('the refresh grant with self-describing tokens', () => {
  it('client_credentials issues one and writes no row; it refreshes on both servers', async () => {
    const cred = await credential('sia');
    const { refresh_token, scope } = await issue(a, 'sia', cred.secret);
    expect(refresh_token.startsWith('lprt_2.')).toBe(true);
    expect(await t.db.kysely.selectFrom('refresh_tokens').select('token_hash').where('credential_id', '=', cred.credential_id).execute()).toEqual([]);
    for (const app of [a, b]) {
      const res = await refresh(app, refresh_token);
      expect(res.statusCode).toBe(200);
      expect(res.json().scope).toBe(scope);
      const me = await app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${res.json().access_token}` } });
      expect(me.json()).toMatchObject({ identity: 'sia', credential_id: cred.credential_id });
    }
  });

  it('a forged, truncated, wrong-key, expired or never-issued token is invalid_grant exactly like an unknown one', async () => {
    const cred = await credential('fay');
    const victim = await credential('vic');
    const { refresh_token } = await issue(a, 'fay', cred.secret);
    // The test's signer is the servers' key: a token it makes for fay with a far expiry works …
    const minted = serverSigner.sign(claims({ credentialId: cred.credential_id, clientId: 'fay' }));
    expect((await refresh(a, minted)).statusCode).toBe(200);
    const unknown = await refresh(a, 'lprt_nope');
    expect(unknown.statusCode).toBe(400);
    const refused = {
      forgedMac: changedAt(refresh_token, -2),
      forgedClaims: changedAt(refresh_token, 12),
      truncated: refresh_token.slice(0, -5),
      // Another credential's id, with a MAC that looks right but was made with a wrong key.
      wrongKey: new RefreshTokenSigner(crypto.randomBytes(32)).sign(claims({ credentialId: victim.credential_id, clientId: 'vic' })),
      // … and one expired a second ago is not.
      expired: serverSigner.sign(claims({ credentialId: cred.credential_id, clientId: 'fay', issuedAt: now() - 7200, expiresAt: now() - 1 })),
      // Signed for a client_id that is not the credential's own.
      otherClient: serverSigner.sign(claims({ credentialId: victim.credential_id, clientId: 'fay' })),
      unknownCredential: serverSigner.sign(claims({ credentialId: 'cred_0000000000000000000000', clientId: 'fay' })),
    };
    for (const [name, token] of Object.entries(refused)) {
      const res = await refresh(a, token);
      expect({ name, status: res.statusCode, body: res.json() }).toEqual({ name, status: 400, body: unknown.json() });
    }
  });

  it('a refresh token never outlives its credential', async () => {
    const cred = await credential('eve', { expires_in_days: 1 });
    const { refresh_token } = await issue(a, 'eve', cred.secret);
    const res = await introspect(a, refresh_token, { 'x-admin-token': t.adminToken });
    expect(res.json().exp).toBe(Math.floor(new Date(cred.expires_at!).getTime() / 1000));
  });
});

describe('the MAC key', () => {
  it('is one random key in the database, sealed: every server issues tokens the others accept, and it is neither logged nor answered', async () => {
    const rows = await t.db.kysely.selectFrom('refresh_token_key').selectAll().execute();
    expect(rows).toHaveLength(1);
    const spellings = [serverKey.toString('base64url'), serverKey.toString('base64'), serverKey.toString('hex')];
    for (const spelling of spellings) expect(rows[0].sealed_key).not.toContain(spelling);
    const cred = await credential('kai');
    const answers: string[] = [];
    for (const issuer of [a, b, logged]) {
      const issued = await post(issuer, '/auth/token', { grant_type: 'client_credentials', client_id: 'kai', client_secret: cred.secret });
      expect(issued.statusCode).toBe(200);
      answers.push(issued.body);
      const token = issued.json().refresh_token as string;
      expect(serverSigner.verify(token)).toMatchObject({ credentialId: cred.credential_id, clientId: 'kai' });
      for (const app of [a, b, logged]) {
        const res = await refresh(app, token);
        expect(res.statusCode).toBe(200);
        answers.push(res.body);
      }
      answers.push((await introspect(logged, token, { 'x-admin-token': t.adminToken })).body);
      answers.push((await refresh(logged, changedAt(token, -1))).body);
    }
    answers.push((await logged.inject({ method: 'GET', url: '/auth/jwks' })).body);
    const log = logLines.join('');
    expect(log).toContain('/auth/token'); // the log did record these requests
    for (const spelling of spellings) {
      expect(log).not.toContain(spelling);
      for (const answer of answers) expect(answer).not.toContain(spelling);
    }
  });

  it('is not derived from the master key: a token MACed under the HKDF key of before is invalid_grant', async () => {
    const hkdfKey = Buffer.from(crypto.hkdfSync('sha256', masterKey, 'lakeport', 'lakeport/refresh-token-mac/v1', 32));
    expect(hkdfKey).not.toEqual(serverKey);
    const cred = await credential('hal');
    const old = new RefreshTokenSigner(hkdfKey).sign(claims({ credentialId: cred.credential_id, clientId: 'hal' }));
    const unknown = await refresh(a, 'lprt_nope');
    for (const app of [a, b]) {
      const res = await refresh(app, old);
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: unknown.json() });
      expect(res.json().error).toBe('invalid_grant');
    }
  });
});

describe('revocation, introspection and tenancy', () => {
  it('/auth/revoke by its owner bites at once here and within the bound on the other server; the credential still works', async () => {
    const cred = await credential('rho');
    const { refresh_token } = await issue(a, 'rho', cred.secret);
    const keep = (await issue(a, 'rho', cred.secret)).refresh_token;
    for (const app of [a, b]) expect((await refresh(app, refresh_token)).statusCode).toBe(200);
    expect((await revoke(a, refresh_token, basic('rho', cred.secret))).statusCode).toBe(200);
    expect((await refresh(a, refresh_token)).statusCode).toBe(400);
    const took = await within(BOUND_MS, async () => (await refresh(b, refresh_token)).statusCode === 400);
    process.stdout.write(`signed refresh token revoked on one server: refused on the other after ${took} ms (bound ${CACHE_SECONDS * 1000} ms)\n`);
    // Recorded as a revoked row; revoking again changes nothing.
    const rows = () => t.db.kysely.selectFrom('refresh_tokens').select(['revoked_at', 'credential_id']).where('token_hash', '=', sha256Hex(refresh_token)).execute();
    const [row] = await rows();
    expect(row.credential_id).toBe(cred.credential_id);
    expect(row.revoked_at).toBeInstanceOf(Date);
    expect((await revoke(b, refresh_token, { 'x-admin-token': t.adminToken })).statusCode).toBe(200);
    expect(await rows()).toEqual([row]);
    // Only that token: the credential's other refresh tokens and its secret still work.
    for (const app of [a, b]) expect((await refresh(app, keep)).statusCode).toBe(200);
    expect((await issue(b, 'rho', cred.secret)).refresh_token).toMatch(/^lprt_2\./);
  });

  it('revoking the credential kills its self-describing tokens on both servers', async () => {
    const cred = await credential('cora');
    const { refresh_token } = await issue(a, 'cora', cred.secret);
    for (const app of [a, b]) expect((await refresh(app, refresh_token)).statusCode).toBe(200);
    const res = await b.inject({ method: 'DELETE', url: `/auth/clients/cora/credentials/${cred.credential_id}`, headers: { 'x-admin-token': t.adminToken } });
    expect(res.statusCode).toBe(200);
    expect((await refresh(b, refresh_token)).statusCode).toBe(400);
    await within(BOUND_MS, async () => (await refresh(a, refresh_token)).statusCode === 400);
    expect((await introspect(a, refresh_token, { 'x-admin-token': t.adminToken })).json()).toEqual({ active: false });
  });

  it('introspection answers for them as for row-based ones', async () => {
    const cred = await credential('ivy', { scopes: ['jobs', 'odata'] });
    const { refresh_token, access_token } = await issue(a, 'ivy', cred.secret);
    const before = now();
    for (const headers of [basic('ivy', cred.secret), { authorization: `Bearer ${access_token}` }, { 'x-admin-token': t.adminToken }]) {
      const res = await introspect(b, refresh_token, headers);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ active: true, token_type: 'refresh_token', client_id: 'ivy', sub: 'ivy', scope: 'jobs odata', credential_id: cred.credential_id, iss: 'http://lakeport.test/auth' });
      expect(Math.abs(body.iat - before)).toBeLessThanOrEqual(5);
      expect(body.exp - body.iat).toBe(30 * 86_400);
    }
    expect((await introspect(b, changedAt(refresh_token, -1), { 'x-admin-token': t.adminToken })).json()).toEqual({ active: false });
    expect((await revoke(a, refresh_token, { authorization: `Bearer ${access_token}` })).statusCode).toBe(200);
    expect((await introspect(b, refresh_token, { 'x-admin-token': t.adminToken })).json()).toEqual({ active: false });
  });

  it('another client can neither use, introspect nor revoke it', async () => {
    const owner = await credential('otis');
    const other = await credential('mallory');
    const { refresh_token } = await issue(a, 'otis', owner.secret);
    const asOther = basic('mallory', other.secret);
    const used = await refresh(a, refresh_token, { id: 'mallory', secret: other.secret });
    expect(used.statusCode).toBe(400);
    expect(used.json().error).toBe('invalid_grant');
    expect((await introspect(a, refresh_token, asOther)).json()).toEqual({ active: false });
    expect((await revoke(a, refresh_token, asOther)).statusCode).toBe(200); // RFC 7009: answered, left alone
    expect(await t.db.kysely.selectFrom('refresh_tokens').select('token_hash').where('token_hash', '=', sha256Hex(refresh_token)).execute()).toEqual([]);
    for (const app of [a, b]) expect((await refresh(app, refresh_token)).statusCode).toBe(200);
  });
});

describe('row-based refresh tokens (issued before, and to interactive sessions)', () => {
  it('keep working until revoked, here at once and on the other server within the bound', async () => {
    const cred = await credential('olaf');
    const token = await insertRowBasedRefreshToken(t.db, cred.credential_id, 'olaf');
    for (const app of [a, b]) {
      const res = await refresh(app, token);
      expect(res.statusCode).toBe(200);
      expect(res.json().scope).toBe('jobs odata');
    }
    expect((await introspect(a, token, basic('olaf', cred.secret))).json()).toMatchObject({ active: true, token_type: 'refresh_token', credential_id: cred.credential_id });
    expect((await revoke(b, token, basic('olaf', cred.secret))).statusCode).toBe(200);
    expect((await refresh(b, token)).statusCode).toBe(400);
    await within(BOUND_MS, async () => (await refresh(a, token)).statusCode === 400);
    expect((await introspect(a, token, basic('olaf', cred.secret))).json()).toEqual({ active: false });
  });

  it('an expired one is refused', async () => {
    const cred = await credential('xena');
    const token = await insertRowBasedRefreshToken(t.db, cred.credential_id, 'xena', ['jobs'], -1_000);
    expect((await refresh(a, token)).statusCode).toBe(400);
  });
});
