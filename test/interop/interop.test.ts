/**
 * Interoperability: Lakeport started as `npm start` starts it (test/e2e/server.ts: a child process on
 * a free port, a temporary data dir, its own PostgreSQL database when DATABASE_URL is set), then
 * talked to only by other people's code and rules:
 *   - authlib's metadata validators (ported rule by rule, ./authlib-metadata.ts) on both discovery documents,
 *   - openid-client: discovery, client_credentials, refresh, introspection, revocation,
 *   - jose: the access token against the published JWKS, and PyJWT's usual refusals,
 *   - @odata/client: $metadata, a key lookup Set(n), /$count and a $filter with a non-ASCII literal.
 * What Lakeport publishes, and the two authlib rules it does not meet on purpose: docs/auth.md,
 * "Discovery and keys".
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { OData } from '@odata/client';
import { convert } from '@sap-ux/annotation-converter';
import { parse } from '@sap-ux/edmx-parser';
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify, UnsecuredJWT, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { describe, expect, it } from 'vitest';
import { once } from '../async.ts';
import { describeRun, lakeport } from '../e2e/cli.ts';
import { httpApi } from '../e2e/http.ts';
import { serverForSuite } from '../e2e/server.ts';
import { authorizationServerMetadataFailures, openIdProviderMetadataFailures, RULES } from './authlib-metadata.ts';

type Metadata = Record<string, unknown>;

const CLIENT_ID = 'interop';
const ENTITY_SET = 'sales__orders__daily';
/** The uploaded rows; `_lakeport_row_id` is each row's position, from 0. */
const ROWS = [
  { id: 1, city: 'Zürich', amount: 10.5 },
  { id: 2, city: 'Kraków', amount: 7.25 },
  { id: 3, city: 'São Paulo', amount: 3 },
  { id: 4, city: 'Zürich', amount: 1.75 },
];

const suite = serverForSuite('interop');
const { call, expectStatus, ownWorkspace } = httpApi(() => suite.server);
const issuer = () => `${suite.server.url}/auth`;

/** The server answers /healthz, then a credential for CLIENT_ID exists (secret shown once). */
const credential = once(async () => {
  expect(expectStatus(await call('GET', '/healthz'), 200)).toEqual({ status: 'ok' });
  return expectStatus(await call('POST', `/auth/clients/${CLIENT_ID}/credentials`, { admin: true, json: { type: 'interop' } }), 200).secret as string;
});

/** A token straight from the token endpoint (client_secret_post), as curl gets it. */
async function tokenFor(secret: string, scope?: string): Promise<{ access_token: string; refresh_token: string; expires_in: number; scope: string }> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: secret, ...(scope ? { scope } : {}) });
  const response = await fetch(`${issuer()}/token`, { method: 'POST', body: form });
  expect(response.status).toBe(200);
  return (await response.json()) as never;
}

/** The discovery documents a client finds: OpenID Connect's (issuer + /.well-known/…) and the bare root. */
const DISCOVERY_PATHS = ['/auth/.well-known/openid-configuration', '/.well-known/openid-configuration'];
async function discoveryDocument(pathname: string): Promise<Metadata> {
  const response = await fetch(`${suite.server.url}${pathname}`);
  expect(response.status, pathname).toBe(200);
  return (await response.json()) as Metadata;
}

/** A workspace `sales` owned by CLIENT_ID and ROWS uploaded to sales.orders.daily with `lakeport upload`. */
const uploaded = once(async () => {
  const secret = await credential();
  await ownWorkspace((await tokenFor(secret)).access_token, CLIENT_ID, 'sales');
  const file = path.join(suite.work, 'orders.csv');
  await fs.writeFile(file, ['id,city,amount', ...ROWS.map((r) => `${r.id},${r.city},${r.amount}`)].join('\n') + '\n');
  const env: NodeJS.ProcessEnv = { ...process.env, LAKEPORT_URL: suite.server.url, LAKEPORT_CLIENT_ID: CLIENT_ID, LAKEPORT_CLIENT_SECRET: secret };
  delete env.LAKEPORT_TOKEN;
  const run = await lakeport(['upload', file, '--to', 'sales.orders.daily', '--accept'], env);
  expect(run.code, describeRun(run)).toBe(0);
  return secret;
});

/** openid-client's Configuration from the issuer; http is allowed for the loopback server. */
async function openIdConfiguration(secret: string, auth = oidc.ClientSecretPost(secret)) {
  return oidc.discovery(new URL(issuer()), CLIENT_ID, undefined, auth, { execute: [oidc.allowInsecureRequests] });
}

describe('authlib metadata validation (ported)', () => {
  /**
   * The rules Lakeport does not meet, by design (docs/auth.md). On a plain-http loopback address every
   * URL fails authlib's https rule unless AUTHLIB_INSECURE_TRANSPORT is set (authlib excuses only
   * `http://localhost:`); behind TLS the public URL is https and these do not arise.
   */
  const HTTPS_RULES = {
    rfc8414: ['validate_issuer', 'validate_token_endpoint', 'validate_jwks_uri', 'validate_revocation_endpoint', 'validate_introspection_endpoint'],
    // OpenIDProviderMetadata leaves revocation and introspection out of its REGISTRY_KEYS.
    oidc: ['validate_issuer', 'validate_token_endpoint', 'validate_jwks_uri'],
  };
  /** Lakeport issues no ID tokens and signs only with EdDSA, so it does not claim RS256. */
  const NOT_AN_OPENID_PROVIDER = [{ rule: 'validate_id_token_signing_alg_values_supported', message: '"RS256" MUST be included in "id_token_signing_alg_values_supported"' }];

  it('the port catches what authlib raises', () => {
    const good = { issuer: 'https://as.example/auth', token_endpoint: 'https://as.example/auth/token', jwks_uri: 'https://as.example/auth/jwks', response_types_supported: ['code'], authorization_endpoint: 'https://as.example/auth/authorize', subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['RS256'] };
    const strict = { insecureTransport: false };
    const rules = (doc: Metadata) => authorizationServerMetadataFailures(doc, strict).map((f) => f.message);
    expect(authorizationServerMetadataFailures(good, strict)).toEqual([]);
    expect(openIdProviderMetadataFailures(good, strict)).toEqual([]);
    expect(rules({ ...good, issuer: 'http://as.example/auth' })).toEqual(['"issuer" MUST use "https" scheme']);
    expect(rules({ ...good, issuer: 'http://localhost:8080/auth' })).toEqual([]);
    expect(rules({ ...good, issuer: 'https://as.example/auth?x=1' })).toEqual(['"issuer" has no query or fragment']);
    expect(rules({ ...good, response_types_supported: [] })).toEqual(['"response_types_supported" is required']);
    expect(rules({ ...good, authorization_endpoint: undefined })).toEqual(['"authorization_endpoint" is required']);
    expect(rules({ ...good, authorization_endpoint: undefined, grant_types_supported: ['client_credentials'] })).toEqual([]);
    expect(rules({ ...good, token_endpoint_auth_methods_supported: ['private_key_jwt'] })).toEqual(['"token_endpoint_auth_signing_alg_values_supported" is required']);
    expect(rules({ ...good, introspection_endpoint_auth_signing_alg_values_supported: ['none'] })).toEqual(['the value "none" MUST NOT be used in "introspection_endpoint_auth_signing_alg_values_supported"']);
    expect(rules({ ...good, scopes_supported: 'odata' })).toEqual(['"scopes_supported" MUST be JSON array']);
    expect(rules({ ...good, service_documentation: 'docs' })).toEqual(['"service_documentation" MUST be a URL']);
    const oidcRules = (doc: Metadata) => openIdProviderMetadataFailures(doc, strict).map((f) => f.message);
    expect(oidcRules({ ...good, jwks_uri: undefined })).toEqual(['"jwks_uri" is required']);
    expect(oidcRules({ ...good, subject_types_supported: ['secret'] })).toEqual(['"subject_types_supported" contains invalid values']);
    expect(oidcRules({ ...good, display_values_supported: ['tv'] })).toEqual(['"display_values_supported" contains invalid values']);
    expect(oidcRules({ ...good, claims_parameter_supported: 'yes' })).toEqual(['"claims_parameter_supported" MUST be boolean']);
    expect(oidcRules({ ...good, request_object_signing_alg_values_supported: ['RS256'] })).toEqual(['"request_object_signing_alg_values_supported" SHOULD support none and RS256']);
    expect(RULES.rfc8414).toHaveLength(22);
    expect(RULES.oidc).toHaveLength(34);
  });

  it('AuthorizationServerMetadata.validate(): both documents pass with AUTHLIB_INSECURE_TRANSPORT; strictly, only the https rules fail', async () => {
    for (const pathname of DISCOVERY_PATHS) {
      const doc = await discoveryDocument(pathname);
      expect(doc.issuer, pathname).toBe(issuer());
      expect(authorizationServerMetadataFailures(doc, { insecureTransport: true }), pathname).toEqual([]);
      const strict = authorizationServerMetadataFailures(doc, { insecureTransport: false });
      expect(strict.map((f) => f.rule), pathname).toEqual(HTTPS_RULES.rfc8414);
      for (const failure of strict) expect(failure.message).toMatch(/MUST use "https" scheme$/);
    }
  });

  it('OpenIDProviderMetadata.validate(): both documents fail only the RS256 rule (and, strictly, the https rules)', async () => {
    for (const pathname of DISCOVERY_PATHS) {
      const doc = await discoveryDocument(pathname);
      expect(openIdProviderMetadataFailures(doc, { insecureTransport: true }), pathname).toEqual(NOT_AN_OPENID_PROVIDER);
      expect(openIdProviderMetadataFailures(doc, { insecureTransport: false }).map((f) => f.rule), pathname).toEqual([...HTTPS_RULES.oidc, NOT_AN_OPENID_PROVIDER[0].rule]);
    }
  });
});

describe('openid-client', () => {
  it('discovers the issuer and gets a token by client_credentials (client_secret_post and client_secret_basic)', async () => {
    const secret = await credential();
    for (const auth of [oidc.ClientSecretPost(secret), oidc.ClientSecretBasic(secret)]) {
      const config = await openIdConfiguration(secret, auth);
      expect(config.serverMetadata()).toMatchObject({ issuer: issuer(), token_endpoint: `${issuer()}/token`, jwks_uri: `${issuer()}/jwks` });
      const tokens = await oidc.clientCredentialsGrant(config, { scope: 'odata jobs' });
      expect(tokens.token_type.toLowerCase()).toBe('bearer');
      expect(tokens.scope?.split(' ').sort()).toEqual(['jobs', 'odata']);
      expect(tokens.expiresIn()).toBeGreaterThan(800);
    }
  });

  it('refreshes, introspects and revokes through the endpoints discovery names', async () => {
    const config = await openIdConfiguration(await credential());
    const metadata = config.serverMetadata();
    expect(metadata.introspection_endpoint).toBe(`${issuer()}/introspect`);
    expect(metadata.revocation_endpoint).toBe(`${issuer()}/revoke`);
    const tokens = await oidc.clientCredentialsGrant(config);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).not.toBe(tokens.access_token);

    const active = await oidc.tokenIntrospection(config, refreshed.access_token);
    expect(active).toMatchObject({ active: true, token_type: 'access_token', sub: CLIENT_ID, client_id: CLIENT_ID, iss: issuer() });
    expect(await oidc.tokenIntrospection(config, tokens.refresh_token!)).toMatchObject({ active: true, token_type: 'refresh_token' });

    await oidc.tokenRevocation(config, refreshed.access_token);
    expect(await oidc.tokenIntrospection(config, refreshed.access_token)).toEqual({ active: false });
    expect((await call('GET', '/auth/me', { token: refreshed.access_token })).status).toBe(401);
    await oidc.tokenRevocation(config, tokens.refresh_token!);
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});

describe('jose (the checks PyJWT makes)', () => {
  /** A fresh token, the published JWKS and the algorithms discovery names. */
  const verified = once(async () => {
    const token = await tokenFor(await credential());
    const doc = await discoveryDocument(DISCOVERY_PATHS[0]);
    const jwks = createRemoteJWKSet(new URL(doc.jwks_uri as string));
    return { token, jwks, algorithms: doc.id_token_signing_alg_values_supported as string[] };
  });
  const options = (algorithms: string[]) => ({ issuer: issuer(), audience: 'lakeport', algorithms, typ: 'at+jwt', requiredClaims: ['exp', 'iat', 'sub', 'jti'] });

  it('verifies the access token against jwks_uri: signature, issuer, audience, exp/iat, a published alg', async () => {
    const { token, jwks, algorithms } = await verified();
    expect(algorithms).toEqual(['EdDSA']);
    const now = Math.floor(Date.now() / 1000);
    const { payload, protectedHeader } = await jwtVerify(token.access_token, jwks, options(algorithms));
    expect(algorithms).toContain(protectedHeader.alg);
    expect(protectedHeader.kid).toBeTruthy();
    expect(payload).toMatchObject({ iss: issuer(), aud: 'lakeport', sub: CLIENT_ID, client_id: CLIENT_ID });
    expect(payload.iat!).toBeLessThanOrEqual(now + 1);
    expect(payload.exp! - payload.iat!).toBe(token.expires_in);
    if (payload.nbf !== undefined) expect(payload.nbf).toBeLessThanOrEqual(now + 1);
    // The key that verified it is published for signatures with the same algorithm.
    const keys = ((await (await fetch(`${issuer()}/jwks`)).json()) as { keys: Record<string, string>[] }).keys;
    expect(keys.find((k) => k.kid === protectedHeader.kid)).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
  });

  it('refuses a tampered token, a wrong audience or issuer, an expired token, alg none and an unpublished alg', async () => {
    const { token, jwks, algorithms } = await verified();
    const [header, payload, signature] = token.access_token.split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: 'admin' })).toString('base64url');
    const tampered = [header, forged, signature].join('.');
    await expect(jwtVerify(tampered, jwks, options(algorithms))).rejects.toBeInstanceOf(errors.JWSSignatureVerificationFailed);
    expect((await call('GET', '/auth/me', { token: tampered })).status).toBe(401);

    await expect(jwtVerify(token.access_token, jwks, { ...options(algorithms), audience: 'someone-else' })).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' });
    await expect(jwtVerify(token.access_token, jwks, { ...options(algorithms), issuer: suite.server.url })).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'iss' });
    // Expired: judged one second past `exp`, as PyJWT does with its clock.
    const { exp } = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { exp: number };
    await expect(jwtVerify(token.access_token, jwks, { ...options(algorithms), currentDate: new Date((exp + 1) * 1000) })).rejects.toBeInstanceOf(errors.JWTExpired);
    // Only the published algorithm: RS256 (what an OpenID Provider must offer) is refused for this token.
    await expect(jwtVerify(token.access_token, jwks, options(['RS256']))).rejects.toBeInstanceOf(errors.JOSEAlgNotAllowed);
    // alg none and HS256 keyed with the public key (alg confusion): jose and the server refuse both.
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const unsecured = new UnsecuredJWT(claims).encode();
    await expect(jwtVerify(unsecured, jwks, options(algorithms))).rejects.toBeInstanceOf(errors.JOSEAlgNotAllowed);
    const keys = ((await (await fetch(`${issuer()}/jwks`)).json()) as { keys: { x: string }[] }).keys;
    const hmac = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: decodeProtectedHeader(token.access_token).kid, typ: 'at+jwt' }).sign(Buffer.from(keys[0].x, 'base64url'));
    await expect(jwtVerify(hmac, jwks, options(algorithms))).rejects.toBeInstanceOf(errors.JOSEAlgNotAllowed);
    for (const bad of [unsecured, hmac]) expect((await call('GET', '/auth/me', { token: bad })).status).toBe(401);
  });
});

describe('@odata/client (OData v4, no generated code)', () => {
  /** The client gets its own token with client_credentials, from the token endpoint discovery names. */
  const client = async (headers: Record<string, string> = {}) => {
    const secret = await uploaded();
    return OData.New4({
      serviceEndpoint: `${suite.server.url}/odata/api/v4/`,
      credential: { tokenUrl: `${issuer()}/token`, clientId: CLIENT_ID, clientSecret: secret },
      commonHeaders: headers,
    });
  };

  it('reads $metadata: the entity set, its key _lakeport_row_id and the column types', async () => {
    const odata = await client();
    // The client addresses everything relative to the service root; $metadata answers XML, handed back as text.
    const xml = (await odata.newRequest({ collection: '$metadata' })) as unknown as string;
    const model = convert(parse(xml));
    const set = model.entitySets.find((s) => s.name === ENTITY_SET);
    expect(set, JSON.stringify(model.entitySets.map((s) => s.name))).toBeDefined();
    const type = model.entityTypes.find((t) => t.fullyQualifiedName === set!.entityTypeName)!;
    expect(type.keys.map((k) => k.name)).toEqual(['_lakeport_row_id']);
    expect(type.entityProperties.map((p) => [p.name, p.type])).toEqual(expect.arrayContaining([['id', 'Edm.Int64'], ['city', 'Edm.String'], ['_lakeport_row_id', 'Edm.Int64']]));
  });

  it('looks an entity up by key, Set(n), as retrieve() sends it', async () => {
    const orders = (await client()).getEntitySet(ENTITY_SET);
    for (const [n, row] of ROWS.entries()) {
      // Row ids count from 0, and retrieve() drops a falsy key (retrieve(0) would request the whole
      // set), so the first row goes by the named form Set(_lakeport_row_id=0).
      const entity = await orders.retrieve(n === 0 ? { _lakeport_row_id: 0 } : n);
      expect(entity).toEqual({ '@odata.context': expect.stringMatching(/#sales__orders__daily\/\$entity$/), ...row, _lakeport_row_id: n });
    }
    // A key past the last row is 404 ENTITY_NOT_FOUND; the client finds it by OData's `error` member.
    await expect(orders.retrieve(ROWS.length)).rejects.toThrow(/No row|not found|ENTITY_NOT_FOUND/i);
    const token = (await tokenFor(await uploaded(), 'odata')).access_token;
    expect((await call('GET', `/odata/api/v4/${ENTITY_SET}(${ROWS.length})`, { token })).status).toBe(404);
  });

  it('with IEEE754Compatible=true the key and other Edm.Int64 values arrive as strings', async () => {
    const orders = (await client({ accept: 'application/json;IEEE754Compatible=true' })).getEntitySet(ENTITY_SET);
    expect(await orders.retrieve(1)).toMatchObject({ id: '2', city: 'Kraków', _lakeport_row_id: '1' });
  });

  it('counts with /$count and with count(), with and without a non-ASCII $filter', async () => {
    const odata = await client();
    const orders = odata.getEntitySet(ENTITY_SET);
    const zurich = () => odata.newFilter().property('city').eqString('Zürich');
    expect(await odata.newRequest({ collection: `${ENTITY_SET}/$count` }) as unknown).toBe(String(ROWS.length));
    expect(await odata.newRequest({ collection: `${ENTITY_SET}/$count`, params: odata.newParam().filter(zurich()) }) as unknown).toBe('2');
    expect(await orders.count()).toBe(ROWS.length);
    expect(await orders.count(zurich())).toBe(2);
  });

  it('filters on a non-ASCII literal', async () => {
    const odata = await client();
    const orders = odata.getEntitySet(ENTITY_SET);
    const rows = await orders.query(odata.newParam().filter(odata.newFilter().property('city').eqString('Zürich')).orderby('id', 'asc'));
    expect(rows.map((r) => [r.id, r.city])).toEqual([[1, 'Zürich'], [4, 'Zürich']]);
    expect((await orders.query(odata.newParam().filter(odata.newFilter().property('city').eqString('São Paulo')))).map((r) => r.id)).toEqual([3]);
  });
});
