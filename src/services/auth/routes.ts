import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SCOPES } from '../../core/authz/index.ts';
import {
  setSessionCookies,
  authenticateRequest,
  principalOf,
  requireAuth,
  type AdminToken,
  type PublicUrl,
} from '../../core/http/index.ts';
import type { CredentialCaller, CredentialService } from './credentials.ts';
import type { SigningKeyStore } from './keys.ts';
import { SIGNING_ALG } from './keys.ts';
import { REFRESH_TOKEN_COOKIE } from './interactive-routes.ts';
import { oauthError } from './oauth-error.ts';
import * as S from './schemas.ts';
import type { AccessTokenVerifier, TokenResponse, TokenService } from './tokens.ts';

export interface AuthRouteDeps {
  credentials: CredentialService;
  tokens: TokenService;
  verifier: AccessTokenVerifier;
  keys: SigningKeyStore;
  adminToken: AdminToken;
  publicUrl: PublicUrl;
  /** The caller's billing account id, once accounts exist. */
  billingAccountOf: (identity: string) => Promise<string | null>;
}

export const AUTH_PREFIX = '/auth';

/**
 * The metadata document served at every well-known path (RFC 8414 and OpenID Connect Discovery).
 * Lakeport is a machine-to-machine authorization server: it has a token endpoint and no
 * authorization endpoint, issues access tokens and no ID tokens. What each field says, and why
 * `authorization_endpoint` is absent and `response_types_supported` is `["none"]`: docs/auth.md,
 * "Discovery and keys".
 */
export function discoveryDocument(publicUrl: PublicUrl) {
  const base = publicUrl.service(AUTH_PREFIX);
  const authMethods = ['client_secret_basic', 'client_secret_post'];
  return {
    issuer: base,
    token_endpoint: `${base}/token`,
    jwks_uri: `${base}/jwks`,
    revocation_endpoint: `${base}/revoke`,
    introspection_endpoint: `${base}/introspect`,
    grant_types_supported: ['client_credentials', 'refresh_token'],
    token_endpoint_auth_methods_supported: authMethods,
    revocation_endpoint_auth_methods_supported: authMethods,
    introspection_endpoint_auth_methods_supported: [...authMethods, 'bearer'],
    // REQUIRED by RFC 8414 and OIDC Discovery, and an empty array is refused (RFC 8414 §3.2 omits
    // zero-element claims; authlib rejects []). "none" is the registered response type under which
    // the authorization endpoint issues no credential, which is true here: there is no such
    // endpoint (so no authorization_endpoint either), and every token comes from token_endpoint.
    response_types_supported: ['none'],
    // OIDC Discovery requires these two: subjects are the identities, the same for every client;
    // no ID token is ever issued, and EdDSA is the only algorithm this server signs with.
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [SIGNING_ALG],
    scopes_supported: [...SCOPES],
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'scope', 'client_id', 'cid', 'permissions'],
    service_documentation: `${base}/openapi.json`,
  };
}

/** Client credentials from HTTP Basic (RFC 6749 §2.3.1, form-encoded id and secret) or the form body, never both. */
function clientCredentialsOf(request: FastifyRequest, form: { client_id?: string; client_secret?: string }) {
  const header = request.headers.authorization;
  if (header && /^Basic\s/i.test(header)) {
    const decoded = Buffer.from(header.replace(/^Basic\s+/i, ''), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw oauthError('invalid_client', 'Malformed HTTP Basic credentials', { 'www-authenticate': 'Basic realm="lakeport"' });
    let clientId: string;
    let clientSecret: string;
    try {
      const decode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
      clientId = decode(decoded.slice(0, colon));
      clientSecret = decode(decoded.slice(colon + 1));
    } catch {
      throw oauthError('invalid_client', 'Malformed HTTP Basic credentials', { 'www-authenticate': 'Basic realm="lakeport"' });
    }
    if (`${clientId}${clientSecret}`.includes('\u0000')) {
      throw oauthError('invalid_client', 'Malformed HTTP Basic credentials: NUL characters are not allowed', { 'www-authenticate': 'Basic realm="lakeport"' });
    }
    if (form.client_secret !== undefined) throw oauthError('invalid_request', 'Use one client authentication method, not both Basic and client_secret');
    if (form.client_id !== undefined && form.client_id !== clientId) throw oauthError('invalid_request', 'client_id differs from the Basic credentials');
    return { clientId, clientSecret, basic: true };
  }
  return { clientId: form.client_id, clientSecret: form.client_secret, basic: false };
}

/** A token request's form: the grant and what it needs (RFC 6749 §4.4 and §6). */
export type TokenRequestForm = z.output<typeof S.TokenForm>;

/**
 * The token endpoint's grants: client_credentials (client_secret_post or _basic) and refresh_token
 * (a browser session's refresh cookie too). OAuth errors (RFC 6749 §5.2) for anything else. Also
 * serves the Iceberg REST catalog's token endpoint (services/iceberg), which passes its form here.
 */
export async function grantToken(tokens: TokenService, request: FastifyRequest, form: TokenRequestForm): Promise<TokenResponse> {
  const client = clientCredentialsOf(request, form);
  if (form.grant_type === 'client_credentials') {
    if (!client.clientId) throw oauthError('invalid_request', 'client_id is required for the client_credentials grant');
    if (client.clientSecret === undefined) throw oauthError('invalid_client', 'client_secret is required');
    return tokens.clientCredentials(client.clientId, client.clientSecret, form.scope, request.ip);
  }
  if (form.grant_type === 'refresh_token') {
    // A browser's interactive session sends its refresh token as the HttpOnly, SameSite=Strict cookie.
    const refreshToken = form.refresh_token ?? request.cookies[REFRESH_TOKEN_COOKIE];
    if (!refreshToken) throw oauthError('invalid_request', 'refresh_token is required for the refresh_token grant');
    let authenticated: string | undefined;
    if (client.clientId !== undefined && client.clientSecret !== undefined) {
      authenticated = (await tokens.authenticateClient(client.clientId, client.clientSecret, request.ip)).client_id;
    }
    return tokens.refresh(refreshToken, authenticated, form.scope);
  }
  throw oauthError('unsupported_grant_type', `grant_type '${form.grant_type}' is not supported; use client_credentials or refresh_token`);
}

const noStore = (reply: FastifyReply) => reply.headers({ 'cache-control': 'no-store', pragma: 'no-cache' });

export const authRoutes =
  (deps: AuthRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { credentials, tokens, verifier, keys, adminToken, publicUrl } = deps;

    async function credentialCaller(request: FastifyRequest): Promise<CredentialCaller> {
      if (adminToken.presentIn(request)) return { kind: 'admin' };
      return { kind: 'token', principal: await authenticateRequest(verifier, request) };
    }

    /** Who is asking to revoke or introspect: undefined for the admin token, else the authenticated identity. */
    async function tokenActionOwner(request: FastifyRequest, form: { client_id?: string; client_secret?: string }) {
      if (adminToken.presentIn(request)) return undefined;
      const client = clientCredentialsOf(request, form);
      if (client.clientId !== undefined && client.clientSecret !== undefined) {
        return (await tokens.authenticateClient(client.clientId, client.clientSecret, request.ip)).client_id;
      }
      if (request.headers.authorization && /^Bearer\s/i.test(request.headers.authorization)) {
        return (await authenticateRequest(verifier, request)).identity;
      }
      throw oauthError('invalid_client', 'Authenticate with client credentials, a bearer token or the admin token', {
        'www-authenticate': 'Basic realm="lakeport"',
      });
    }

    app.get(
      '/clients/:client_id/credentials',
      {
        schema: {
          summary: 'List credentials of a client (never their secrets)',
          params: S.ClientParams,
          response: { 200: z.array(S.CredentialMetadata) },
        },
      },
      async (request) => credentials.list(await credentialCaller(request), request.params.client_id),
    );

    app.post(
      '/clients/:client_id/credentials',
      {
        schema: {
          summary: 'Create a credential; the secret is shown only in this response',
          params: S.ClientParams,
          body: S.CreateCredentialRequest,
          response: { 200: S.CreateCredentialResponse },
        },
      },
      async (request, reply) => {
        noStore(reply);
        return credentials.create(await credentialCaller(request), request.params.client_id, request.body);
      },
    );

    app.delete(
      '/clients/:client_id/credentials/:credential_id',
      {
        schema: {
          summary: 'Revoke a credential and every refresh token issued from it',
          params: S.CredentialParams,
          response: { 200: S.RevokeCredentialResponse },
        },
      },
      async (request) => credentials.revoke(await credentialCaller(request), request.params.client_id, request.params.credential_id),
    );

    app.post(
      '/token',
      {
        schema: {
          summary: 'OAuth 2.0 token endpoint (client_credentials, refresh_token)',
          consumes: ['application/x-www-form-urlencoded'],
          body: S.TokenForm,
          querystring: S.TokenQuery,
          response: { 200: S.TokenResponse },
        },
      },
      async (request, reply) => {
        noStore(reply);
        const response = await grantToken(tokens, request, request.body);
        if (request.query.set_cookie) {
          setSessionCookies(reply, response.access_token, response.expires_in, publicUrl.value.startsWith('https:'));
        }
        return response;
      },
    );

    app.post(
      '/revoke',
      {
        schema: {
          summary: 'Revoke a refresh or access token (RFC 7009)',
          consumes: ['application/x-www-form-urlencoded'],
          body: S.TokenActionForm,
          response: { 200: S.RevokeResponse },
        },
      },
      async (request, reply) => {
        const owner = await tokenActionOwner(request, request.body);
        await tokens.revoke(request.body.token, owner, verifier);
        return reply.status(200).send({ revoked: true });
      },
    );

    app.post(
      '/introspect',
      {
        schema: {
          summary: 'Introspect a token (RFC 7662); a caller sees only its own identity’s tokens',
          consumes: ['application/x-www-form-urlencoded'],
          body: S.TokenActionForm,
          response: { 200: S.IntrospectionResponse },
        },
      },
      async (request, reply) => {
        noStore(reply);
        const owner = await tokenActionOwner(request, request.body);
        return tokens.introspect(request.body.token, owner, verifier);
      },
    );

    app.get('/jwks', { schema: { summary: 'JSON Web Key Set that verifies access tokens', response: { 200: S.JwksResponse } } }, async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return keys.jwks();
    });

    app.get('/.well-known/openid-configuration', { schema: { summary: 'OpenID Connect discovery', response: { 200: S.DiscoveryDocument } } }, async () =>
      discoveryDocument(publicUrl),
    );
    app.get('/.well-known/oauth-authorization-server', { schema: { summary: 'OAuth 2.0 authorization server metadata (RFC 8414)', response: { 200: S.DiscoveryDocument } } }, async () =>
      discoveryDocument(publicUrl),
    );

    app.get(
      '/me',
      { onRequest: requireAuth(verifier), schema: { summary: 'The caller: identity, billing account, scopes, permissions', response: { 200: S.MeResponse } } },
      async (request) => {
        const p = principalOf(request);
        return {
          identity: p.identity,
          client_id: p.identity,
          billing_account: await deps.billingAccountOf(p.identity),
          scopes: p.scopes,
          permissions: p.permissions,
          credential_id: p.credentialId,
          token_id: p.tokenId,
          expires_at: p.expiresAt.toISOString(),
          expires_in: Math.max(0, Math.floor((p.expiresAt.getTime() - Date.now()) / 1000)),
          ...(p.provider !== undefined ? { idp: p.provider } : {}),
          ...(p.amr !== undefined ? { amr: p.amr } : {}),
          ...(p.authTime !== undefined ? { auth_time: p.authTime.toISOString() } : {}),
        };
      },
    );

    app.post('/admin/keys/rotate', { schema: { summary: 'Rotate the token signing key (admin token)', response: { 200: S.KeyRotationResponse } } }, async (request) => {
      adminToken.require(request);
      return keys.rotate();
    });
  };
