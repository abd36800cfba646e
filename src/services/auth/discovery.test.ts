/**
 * The discovery documents against the validators clients run: a port of authlib's
 * `AuthorizationServerMetadata.validate()` (RFC 8414 §2) and `OpenIDProviderMetadata.validate()`
 * (OpenID Connect Discovery 1.0 §3), RFC 8414's §3.2/§3.3 response rules, and openid-client's
 * `discovery()` against a listening server at every well-known URL. What the document says and why:
 * docs/auth.md, "Discovery and keys".
 */
import type { AddressInfo } from 'node:net';
import { generateKeyPair, jwtVerify, createLocalJWKSet, SignJWT } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';

type Metadata = Record<string, unknown>;

/** authlib's `is_secure_transport`: https, or anything when insecure transport is allowed (AUTHLIB_INSECURE_TRANSPORT). */
const secure = (url: string, allowHttp: boolean) => allowHttp || url.toLowerCase().startsWith('https://');
const isUrl = (value: unknown) => typeof value === 'string' && URL.canParse(value) && /^https?:$/.test(new URL(value).protocol);

/**
 * RFC 8414 §2 as authlib checks it (authlib/oauth2/rfc8414/models.py), plus §3.2 (claims with
 * zero elements are omitted) and §3.3 (the issuer is the one the metadata URL was derived from).
 * Returns the problems; [] means the document passes.
 */
function rfc8414Problems(doc: Metadata, options: { allowHttp: boolean; expectedIssuer?: string }): string[] {
  const problems: string[] = [];
  const arrayOrAbsent = (key: string) => {
    if (doc[key] !== undefined && !Array.isArray(doc[key])) problems.push(`"${key}" MUST be JSON array`);
  };
  const endpoint = (key: string) => {
    const url = doc[key];
    if (url !== undefined && (typeof url !== 'string' || !secure(url, options.allowHttp))) problems.push(`"${key}" MUST use "https" scheme`);
  };
  const list = (key: string, fallback: string[]) => (Array.isArray(doc[key]) ? (doc[key] as string[]) : fallback);
  const algValues = (key: string, methods: string[]) => {
    const value = doc[key];
    if (value && !Array.isArray(value)) problems.push(`"${key}" MUST be JSON array`);
    if (methods.some((m) => m === 'private_key_jwt' || m === 'client_secret_jwt') && !(Array.isArray(value) && value.length)) problems.push(`"${key}" is required`);
    if (Array.isArray(value) && value.includes('none')) problems.push(`the value "none" MUST NOT be used in "${key}"`);
  };

  // issuer: REQUIRED, https, no query or fragment
  const issuer = doc.issuer;
  if (typeof issuer !== 'string' || !issuer) problems.push('"issuer" is required');
  else {
    if (!secure(issuer, options.allowHttp)) problems.push('"issuer" MUST use "https" scheme');
    const parsed = URL.canParse(issuer) ? new URL(issuer) : undefined;
    if (!parsed) problems.push('"issuer" is not a URL');
    else if (parsed.search || parsed.hash || issuer.includes('?') || issuer.includes('#')) problems.push('"issuer" has no query or fragment');
    if (options.expectedIssuer !== undefined && issuer !== options.expectedIssuer) problems.push(`"issuer" ${issuer} is not the issuer the URL was derived from (${options.expectedIssuer})`);
  }
  const grantTypes = list('grant_types_supported', ['authorization_code', 'implicit']);
  // authorization_endpoint: REQUIRED unless no supported grant type uses it
  if (doc.authorization_endpoint) endpoint('authorization_endpoint');
  else if (grantTypes.some((g) => g === 'authorization_code' || g === 'implicit')) problems.push('"authorization_endpoint" is required');
  // token_endpoint: REQUIRED unless only the implicit grant is supported
  if (!(grantTypes.length === 1 && grantTypes[0] === 'implicit')) {
    if (!doc.token_endpoint) problems.push('"token_endpoint" is required');
    else endpoint('token_endpoint');
  }
  for (const key of ['jwks_uri', 'registration_endpoint', 'revocation_endpoint', 'introspection_endpoint']) endpoint(key);
  // response_types_supported: REQUIRED, a non-empty array
  if (!Array.isArray(doc.response_types_supported) || doc.response_types_supported.length === 0) problems.push('"response_types_supported" is required');
  for (const key of [
    'scopes_supported',
    'response_modes_supported',
    'grant_types_supported',
    'token_endpoint_auth_methods_supported',
    'ui_locales_supported',
    'revocation_endpoint_auth_methods_supported',
    'introspection_endpoint_auth_methods_supported',
    'code_challenge_methods_supported',
  ]) {
    arrayOrAbsent(key);
  }
  algValues('token_endpoint_auth_signing_alg_values_supported', list('token_endpoint_auth_methods_supported', ['client_secret_basic']));
  algValues('revocation_endpoint_auth_signing_alg_values_supported', list('revocation_endpoint_auth_methods_supported', ['client_secret_basic']));
  algValues('introspection_endpoint_auth_signing_alg_values_supported', list('introspection_endpoint_auth_methods_supported', ['client_secret_basic']));
  for (const key of ['service_documentation', 'op_policy_uri', 'op_tos_uri']) {
    if (doc[key] !== undefined && !isUrl(doc[key])) problems.push(`"${key}" MUST be a URL`);
  }
  // RFC 8414 §3.2: claims with zero elements MUST be omitted.
  for (const [key, value] of Object.entries(doc)) if (Array.isArray(value) && value.length === 0) problems.push(`"${key}" has zero elements and MUST be omitted`);
  return problems;
}

/**
 * OpenID Connect Discovery 1.0 §3 as authlib checks it (authlib/oidc/discovery/models.py: jwks_uri,
 * subject_types_supported, id_token_signing_alg_values_supported with RS256, the value sets of
 * display, claim types and prompt values), plus the REQUIRED fields of §3 that authlib leaves to
 * RFC 8414's rules (authorization_endpoint, token_endpoint). RFC 8414's checks apply as well.
 */
function oidcProblems(doc: Metadata, options: { allowHttp: boolean; expectedIssuer?: string }): string[] {
  const problems = rfc8414Problems(doc, options);
  const oneOf = (key: string, allowed: string[]) => {
    const values = doc[key];
    if (values === undefined || values === null) return;
    if (!Array.isArray(values)) problems.push(`"${key}" MUST be JSON array`);
    else if (!values.every((v) => allowed.includes(v))) problems.push(`"${key}" contains invalid values`);
  };
  if (!doc.authorization_endpoint) problems.push('"authorization_endpoint" is required (OIDC Discovery §3)');
  if (!doc.token_endpoint) problems.push('"token_endpoint" is required (OIDC Discovery §3)');
  if (doc.jwks_uri === undefined) problems.push('"jwks_uri" is required');
  if (doc.subject_types_supported === undefined) problems.push('"subject_types_supported" is required');
  oneOf('subject_types_supported', ['pairwise', 'public']);
  const idTokenAlgs = doc.id_token_signing_alg_values_supported;
  if (idTokenAlgs === undefined) problems.push('"id_token_signing_alg_values_supported" is required');
  else if (!Array.isArray(idTokenAlgs)) problems.push('"id_token_signing_alg_values_supported" MUST be JSON array');
  else if (!idTokenAlgs.includes('RS256')) problems.push('"RS256" MUST be included in "id_token_signing_alg_values_supported"');
  oneOf('display_values_supported', ['page', 'popup', 'touch', 'wap']);
  oneOf('claim_types_supported', ['normal', 'aggregated', 'distributed']);
  oneOf('prompt_values_supported', ['none', 'login', 'consent', 'select_account', 'create']);
  for (const key of ['acr_values_supported', 'claims_supported', 'claims_locales_supported', 'request_object_signing_alg_values_supported']) {
    if (doc[key] !== undefined && !Array.isArray(doc[key])) problems.push(`"${key}" MUST be JSON array`);
  }
  for (const key of ['claims_parameter_supported', 'request_parameter_supported', 'request_uri_parameter_supported', 'require_request_uri_registration']) {
    if (doc[key] !== undefined && typeof doc[key] !== 'boolean') problems.push(`"${key}" MUST be boolean`);
  }
  return problems;
}

/**
 * The two OIDC Discovery rules Lakeport does not meet, on purpose: it is not an OpenID Provider. It
 * has no authorization endpoint to name, and it issues no ID tokens, so it does not claim RS256 (it
 * signs only with EdDSA). docs/auth.md explains both.
 */
const NOT_AN_OPENID_PROVIDER = ['"authorization_endpoint" is required (OIDC Discovery §3)', '"RS256" MUST be included in "id_token_signing_alg_values_supported"'];

describe('the validators themselves', () => {
  const good = {
    issuer: 'https://as.example/auth',
    token_endpoint: 'https://as.example/auth/token',
    jwks_uri: 'https://as.example/auth/jwks',
    response_types_supported: ['code'],
    authorization_endpoint: 'https://as.example/auth/authorize',
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
  };
  it('pass a conforming document', () => {
    expect(rfc8414Problems(good, { allowHttp: false, expectedIssuer: good.issuer })).toEqual([]);
    expect(oidcProblems(good, { allowHttp: false })).toEqual([]);
  });
  it('catch what authlib catches', () => {
    expect(rfc8414Problems({ ...good, response_types_supported: [] }, { allowHttp: false })).toContain('"response_types_supported" is required');
    expect(rfc8414Problems({ ...good, issuer: 'http://as.example/auth' }, { allowHttp: false })).toContain('"issuer" MUST use "https" scheme');
    expect(rfc8414Problems({ ...good, issuer: 'https://as.example/auth?x=1' }, { allowHttp: false })).toContain('"issuer" has no query or fragment');
    expect(rfc8414Problems({ ...good, issuer: 'https://as.example/auth#x' }, { allowHttp: false })).toContain('"issuer" has no query or fragment');
    expect(rfc8414Problems({ ...good, issuer: 'https://as.example' }, { allowHttp: false, expectedIssuer: good.issuer })).toHaveLength(1);
    expect(rfc8414Problems({ ...good, token_endpoint: undefined }, { allowHttp: false })).toContain('"token_endpoint" is required');
    expect(rfc8414Problems({ ...good, authorization_endpoint: undefined }, { allowHttp: false })).toContain('"authorization_endpoint" is required');
    expect(rfc8414Problems({ ...good, authorization_endpoint: undefined, grant_types_supported: ['client_credentials'] }, { allowHttp: false })).toEqual([]);
    expect(
      rfc8414Problems({ ...good, token_endpoint_auth_methods_supported: ['private_key_jwt'] }, { allowHttp: false }),
    ).toContain('"token_endpoint_auth_signing_alg_values_supported" is required');
    expect(
      rfc8414Problems({ ...good, introspection_endpoint_auth_signing_alg_values_supported: ['none'] }, { allowHttp: false }),
    ).toContain('the value "none" MUST NOT be used in "introspection_endpoint_auth_signing_alg_values_supported"');
    expect(oidcProblems({ ...good, subject_types_supported: ['secret'] }, { allowHttp: false })).toContain('"subject_types_supported" contains invalid values');
    expect(oidcProblems({ ...good, jwks_uri: undefined }, { allowHttp: false })).toContain('"jwks_uri" is required');
    expect(oidcProblems({ ...good, id_token_signing_alg_values_supported: ['EdDSA'] }, { allowHttp: false })).toEqual([NOT_AN_OPENID_PROVIDER[1]]);
  });
});

describe('Lakeport discovery', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp({}, { workers: false });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    // As `lakeport serve` does without LAKEPORT_PUBLIC_URL: the public URL is the listening address.
    t.deps.publicUrl.settle(base);
  });
  afterAll(async () => t?.close());

  const issuer = () => `${base}/auth`;
  /** Each well-known URL, and the issuer a client derives from it (undefined: the URL does not name one). */
  const urls = () => [
    { url: `${base}/auth/.well-known/openid-configuration`, derived: issuer() }, // OIDC Discovery §4: issuer + /.well-known/openid-configuration
    { url: `${base}/.well-known/oauth-authorization-server/auth`, derived: issuer() }, // RFC 8414 §3
    { url: `${base}/.well-known/openid-configuration/auth`, derived: issuer() }, // RFC 8414 §5, the OIDC suffix inserted the RFC 8414 way
    { url: `${base}/auth/.well-known/oauth-authorization-server`, derived: undefined }, // the common appended form
    { url: `${base}/.well-known/openid-configuration`, derived: undefined }, // the bare root
  ];

  async function fetchDoc(url: string) {
    const response = await fetch(url);
    expect(response.status, url).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    return (await response.json()) as Metadata;
  }

  it('serves one document, naming the issuer /auth, at every well-known URL', async () => {
    const docs = await Promise.all(urls().map(({ url }) => fetchDoc(url)));
    for (const doc of docs) expect(doc).toEqual(docs[0]);
    expect(docs[0]).toMatchObject({
      issuer: issuer(),
      token_endpoint: `${issuer()}/token`,
      jwks_uri: `${issuer()}/jwks`,
      response_types_supported: ['none'],
      grant_types_supported: ['client_credentials', 'refresh_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['EdDSA'],
    });
    expect(docs[0]).not.toHaveProperty('authorization_endpoint');
  });

  it('passes RFC 8414 as authlib checks it, at every URL', async () => {
    for (const { url, derived } of urls()) {
      expect(rfc8414Problems(await fetchDoc(url), { allowHttp: true, expectedIssuer: derived }), url).toEqual([]);
    }
  });

  it('passes OpenID Connect Discovery except the two rules only an OpenID Provider can meet', async () => {
    for (const { url, derived } of urls()) {
      expect(oidcProblems(await fetchDoc(url), { allowHttp: true, expectedIssuer: derived }), url).toEqual(NOT_AN_OPENID_PROVIDER);
    }
  });

  it("is discovered by openid-client's discovery() from the issuer (OIDC and RFC 8414) and from every well-known URL", async () => {
    const options = { execute: [client.allowInsecureRequests] };
    const fromIssuer = [
      await client.discovery(new URL(issuer()), 'alice', undefined, undefined, options),
      await client.discovery(new URL(issuer()), 'alice', undefined, undefined, { ...options, algorithm: 'oauth2' }),
    ];
    const fromUrls = await Promise.all(urls().map(({ url }) => client.discovery(new URL(url), 'alice', undefined, undefined, options)));
    for (const config of [...fromIssuer, ...fromUrls]) {
      const metadata = config.serverMetadata();
      expect(metadata.issuer).toBe(issuer());
      expect(metadata.token_endpoint).toBe(`${issuer()}/token`);
      expect(metadata.jwks_uri).toBe(`${issuer()}/jwks`);
    }
  });

  it('a configuration discovered at the bare root gets tokens that jose verifies as EdDSA', async () => {
    const created = await fetch(`${base}/auth/clients/alice/credentials`, {
      method: 'POST',
      headers: { 'x-admin-token': t.adminToken, 'content-type': 'application/json' },
      body: JSON.stringify({}),
    });
    expect(created.status).toBe(200);
    const { secret } = (await created.json()) as { secret: string };
    const config = await client.discovery(new URL(`${base}/.well-known/openid-configuration`), 'alice', secret, undefined, { execute: [client.allowInsecureRequests] });
    const tokens = await client.clientCredentialsGrant(config);
    const jwks = createLocalJWKSet(await (await fetch(config.serverMetadata().jwks_uri!)).json());
    const { protectedHeader, payload } = await jwtVerify(tokens.access_token, jwks, { issuer: issuer(), audience: 'lakeport', algorithms: ['EdDSA'] });
    expect(protectedHeader.alg).toBe('EdDSA');
    expect(payload.sub).toBe('alice');
  });
});

describe('EdDSA and the RFC 9864 name Ed25519', () => {
  it('a token signed as EdDSA is not accepted by a verifier that allows only Ed25519, so Lakeport does not publish Ed25519', async () => {
    const { privateKey, publicKey } = await generateKeyPair('EdDSA');
    const token = await new SignJWT({ sub: 'alice' }).setProtectedHeader({ alg: 'EdDSA' }).sign(privateKey);
    await expect(jwtVerify(token, publicKey, { algorithms: ['EdDSA'] })).resolves.toBeTruthy();
    await expect(jwtVerify(token, publicKey, { algorithms: ['Ed25519'] })).rejects.toThrow(/alg/);
  });
});
