/**
 * End to end: `npm start` as a user runs it, then real clients against it: openid-client for the
 * OAuth 2.0 grants, jose for token verification through the published JWKS, and plain fetch.
 * With DATABASE_URL set the server runs on a fresh PostgreSQL database, else on PGlite.
 */
import { createRemoteJWKSet, jwtVerify, type JWTVerifyResult } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { once } from '../async.ts';
import { startServer, type RunningServer } from './server.ts';

const SERVICE_PREFIXES = ['/auth', '/upload', '/jobs', '/billing', '/control', '/policy', '/odata'];
const CLIENT_ID = 'alice';

let server: RunningServer;

beforeAll(async () => {
  server = await startServer({ startTimeoutMs: 90_000 });
}, 120_000);

afterAll(async () => {
  await server?.stop();
}, 60_000);

async function json(response: Response): Promise<any> {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`expected JSON from ${response.url} (${response.status}), got: ${text}`);
  }
}

/** POST /auth/token as a plain form request. */
function tokenRequest(fields: Record<string, string>): Promise<Response> {
  return fetch(`${server.url}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(fields),
  });
}

describe('server start-up (npm start)', { timeout: 30_000 }, () => {
  it('announces a URL on a real port and prints the generated admin token once', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(server.url).port)).toBeGreaterThan(0);
    expect(server.publicUrl).toBe(server.url);
    expect(server.adminToken).toMatch(/^lpadm_[A-Za-z0-9_-]{43}$/);
    const out = server.stdout();
    const tokenLines = out.split('\n').filter((line) => line.startsWith('admin token (shown once'));
    expect(tokenLines).toHaveLength(1);
    expect(tokenLines[0].endsWith(`: ${server.adminToken}`)).toBe(true);
    expect(out.split(server.adminToken).length - 1).toBe(1);
    expect(out).toMatch(process.env.DATABASE_URL ? /^metadata: PostgreSQL$/m : /^metadata: PGlite in /m);
  });

  it('answers /healthz', async () => {
    const response = await fetch(`${server.url}/healthz`);
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({ status: 'ok' });
  });

  it.each(SERVICE_PREFIXES)('serves %s/openapi.json', async (prefix) => {
    const response = await fetch(`${server.url}${prefix}/openapi.json`);
    expect(response.status).toBe(200);
    const doc = await json(response);
    expect(doc.openapi).toEqual(expect.any(String));
  });
});

describe('client credentials with real clients', { timeout: 30_000 }, () => {
  /**
   * One credential's life, each step run once on first use: create it with the admin token, discover
   * the issuer, get tokens, refresh. Two credentials live it: `live` stays valid, `doomed` is revoked
   * — so every test awaits the steps it builds on and runs alone and in any order.
   */
  function credentialFlow() {
    const created = once(async () => {
      const response = await fetch(`${server.url}/auth/clients/${CLIENT_ID}/credentials`, {
        method: 'POST',
        headers: { 'x-admin-token': server.adminToken, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'e2e' }),
      });
      const body = await json(response);
      expect(response.status, JSON.stringify(body)).toBe(200);
      return body as { secret: string; credential_id: string; client_id: string; type: string };
    });
    const discovered = once(async () => {
      const { secret } = await created();
      return client.discovery(new URL(`${server.url}/auth`), CLIENT_ID, secret, undefined, { execute: [client.allowInsecureRequests] });
    });
    const granted = once(async () => client.clientCredentialsGrant(await discovered()));
    const refreshed = once(async () => client.refreshTokenGrant(await discovered(), (await granted()).refresh_token!));
    /** Everything the tests use: the secret, the credential id, the configuration and both access tokens. */
    const all = once(async () => {
      const [{ secret, credential_id: credentialId }, config, tokens, refreshedTokens] = await Promise.all([created(), discovered(), granted(), refreshed()]);
      return { secret, credentialId, config, accessToken: tokens.access_token, refreshToken: tokens.refresh_token!, refreshedAccessToken: refreshedTokens.access_token };
    });
    return { created, discovered, granted, refreshed, all };
  }
  const live = credentialFlow();
  const doomed = credentialFlow();
  /** doomed's credential revoked with the admin token, once both its access tokens were seen to work. */
  const revoked = once(async () => {
    const { credentialId, accessToken, refreshedAccessToken } = await doomed.all();
    for (const token of [accessToken, refreshedAccessToken]) {
      expect((await fetch(`${server.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    }
    const response = await fetch(`${server.url}/auth/clients/${CLIENT_ID}/credentials/${credentialId}`, {
      method: 'DELETE',
      headers: { 'x-admin-token': server.adminToken },
    });
    return { response, body: await json(response) };
  });

  it('creates a credential for alice with the admin token', async () => {
    const body = await live.created();
    expect(body.secret).toMatch(/^lpsk_/);
    expect(body.credential_id).toEqual(expect.any(String));
    expect(body.client_id).toBe(CLIENT_ID);
    expect(body.type).toBe('e2e');
  });

  it('discovers the issuer with openid-client', async () => {
    const config = await live.discovered();
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(`${server.url}/auth`);
    expect(metadata.token_endpoint).toBe(`${server.url}/auth/token`);
    expect(metadata.jwks_uri).toBe(`${server.url}/auth/jwks`);
  });

  it('gets tokens with the client_credentials grant', async () => {
    const tokens = await live.granted();
    expect(tokens.access_token).toEqual(expect.any(String));
    expect(tokens.refresh_token).toMatch(/^lprt_/);
    expect(tokens.expires_in).toBeGreaterThan(0);
    expect(tokens.expiresIn()).toBeGreaterThan(0);
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
  });

  it('gets a new access token with the refresh_token grant', async () => {
    const tokens = await live.refreshed();
    expect(tokens.access_token).toEqual(expect.any(String));
    expect(tokens.access_token).not.toBe((await live.granted()).access_token);
    expect(tokens.expires_in).toBeGreaterThan(0);
  });

  it('verifies both access tokens with jose through the JWKS', async () => {
    const { accessToken, refreshedAccessToken, credentialId } = await live.all();
    const jwks = createRemoteJWKSet(new URL(`${server.url}/auth/jwks`));
    const published = await json(await fetch(`${server.url}/auth/jwks`));
    const publishedKids = (published.keys as { kid?: string }[]).map((k) => k.kid);
    for (const token of [accessToken, refreshedAccessToken]) {
      const { payload, protectedHeader }: JWTVerifyResult = await jwtVerify(token, jwks, {
        issuer: `${server.url}/auth`,
        audience: 'lakeport',
      });
      expect(payload.sub).toBe(CLIENT_ID);
      expect(payload.cid).toBe(credentialId);
      expect(payload.exp).toBeGreaterThan(Math.floor(Date.now() / 1000));
      expect(protectedHeader.alg).toBe('EdDSA');
      expect(protectedHeader.kid).toEqual(expect.any(String));
      expect(publishedKids).toContain(protectedHeader.kid);
    }
  });

  it('identifies the caller at /auth/me', async () => {
    const { accessToken, refreshedAccessToken, credentialId } = await live.all();
    for (const token of [accessToken, refreshedAccessToken]) {
      const response = await fetch(`${server.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } });
      const body = await json(response);
      expect(response.status, JSON.stringify(body)).toBe(200);
      expect(body.identity).toBe(CLIENT_ID);
      expect(body.client_id).toBe(CLIENT_ID);
      expect(body.credential_id).toBe(credentialId);
    }
  });

  it('revokes the credential with the admin token', async () => {
    const { response, body } = await revoked();
    const { credentialId } = await doomed.all();
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body.credential_id).toBe(credentialId);
    expect(body.client_id).toBe(CLIENT_ID);
  });

  it('refuses the revoked secret (openid-client)', async () => {
    await revoked();
    const { config } = await doomed.all();
    const failure = await client.clientCredentialsGrant(config).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(client.ResponseBodyError);
    expect(failure).toMatchObject({ status: 401, error: 'invalid_client' });
  });

  it('refuses the revoked secret (plain fetch)', async () => {
    await revoked();
    const { secret } = await doomed.all();
    const response = await tokenRequest({ grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: secret });
    expect(response.status).toBe(401);
    expect(await json(response)).toMatchObject({ error: 'invalid_client' });
  });

  it('refuses the refresh token of the revoked credential', async () => {
    await revoked();
    const { config, refreshToken } = await doomed.all();
    // Without client authentication the refresh token itself is judged: invalid_grant.
    const response = await tokenRequest({ grant_type: 'refresh_token', refresh_token: refreshToken });
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({ error: 'invalid_grant' });
    // openid-client authenticates with the (revoked) secret as well, so it is refused too.
    await expect(client.refreshTokenGrant(config, refreshToken)).rejects.toBeInstanceOf(client.ResponseBodyError);
  });

  it('stops accepting the access tokens of the revoked credential', async () => {
    await revoked();
    const { accessToken, refreshedAccessToken } = await doomed.all();
    // Verified tokens are cached and their status rechecked every few seconds.
    const deadline = Date.now() + 20_000;
    let statuses: number[] = [];
    while (Date.now() < deadline) {
      statuses = await Promise.all(
        [accessToken, refreshedAccessToken].map(
          async (token) => (await fetch(`${server.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status,
        ),
      );
      if (statuses.every((s) => s === 401)) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(statuses).toEqual([401, 401]);
  }, 30_000);
});
