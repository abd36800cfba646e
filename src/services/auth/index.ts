import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Sealer } from '../../core/crypto/index.ts';
import type { Db } from '../../core/db/index.ts';
import { serviceModule, type AdminToken, type PublicUrl } from '../../core/http/index.ts';
import { CredentialService, type CreateCredentialInput } from './credentials.ts';
import type { Principal } from '../../core/authz/index.ts';
import { SigningKeyStore } from './keys.ts';
import { AuthRepo } from './repo.ts';
import { AUTH_PREFIX, authRoutes, discoveryDocument, grantToken, type TokenRequestForm } from './routes.ts';
import { adminTokenThrottle, DEFAULT_THROTTLE, FailedAttemptThrottle } from './throttle.ts';
import { LastUsedTimes } from './last-used.ts';
import type { Logger } from '../../core/logger.ts';
import { AccessTokenVerifier, TokenService } from './tokens.ts';
import { RefreshTokenSigner } from './signed-refresh-tokens.ts';
import { loadRefreshTokenKey } from './refresh-token-key.ts';
import type { IdentityProviderConfig } from '../../config.ts';
import { ALLOW_ALL_SIGN_INS, type SignInPolicy } from '../../core/authz/sign-in-policy.ts';
import { InteractiveSignIn } from './interactive.ts';
import { interactiveRoutes } from './interactive-routes.ts';

export { AUTH_PREFIX, discoveryDocument, type TokenRequestForm } from './routes.ts';
export type { TokenResponse } from './tokens.ts';
export { AccessTokenVerifier, ACCESS_TOKEN_AUDIENCE } from './tokens.ts';
export { CredentialService, type CreateCredentialInput, type CredentialMetadata } from './credentials.ts';
export { CreateCredentialRequest, CreateCredentialResponse, CredentialMetadata as CredentialMetadataSchema, RevokeCredentialResponse } from './schemas.ts';
export { SigningKeyStore } from './keys.ts';

export interface AuthServiceOptions {
  db: Db;
  sealer: Sealer;
  adminToken: AdminToken;
  publicUrl: PublicUrl;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  /** How long verified credentials and tokens are kept (LAKEPORT_AUTH_CACHE_SECONDS; default 5, 0: none). */
  cacheSeconds?: number;
  /** Where failures off the request path go (writing last-used times). */
  log?: Logger;
  billingAccountOf?: (identity: string) => Promise<string | null>;
  /** Interactive sign-in: the configured OpenID Connect providers (none: /auth/login answers 404), and how long a login may take. */
  identityProviders?: readonly IdentityProviderConfig[];
  loginTtlSeconds?: number;
  /** A provider request taking longer is answered 504 (default 10 s). */
  idpTimeoutSeconds?: number;
  /** Judges interactive sign-ins and refreshes; default: everything allowed. `useSignInPolicy` replaces it later. */
  signInPolicy?: SignInPolicy;
}

/**
 * The authentication service: its parts, for other services and the CLI, and its API. Two pieces
 * belong to the app as a whole: the admin token guard and the RFC 8414 documents outside /auth.
 */
export async function createAuthService(options: AuthServiceOptions) {
  // What is kept of credentials and tokens, and for how long: docs/auth.md, "Performance and caching".
  const cacheMs = (options.cacheSeconds ?? 5) * 1000;
  const repo = new AuthRepo(options.db, cacheMs);
  // A rotated-out key stays published for a token lifetime plus five minutes of slack.
  const keys = new SigningKeyStore(options.db, options.sealer, options.accessTokenTtlSeconds + 300);
  await keys.init();
  const refreshTokenSigner = new RefreshTokenSigner(await loadRefreshTokenKey(options.db, options.sealer));
  const issuer = () => options.publicUrl.service(AUTH_PREFIX);
  const verifier = new AccessTokenVerifier(keys, repo, issuer, cacheMs);
  const throttle = new FailedAttemptThrottle(options.db, { ...DEFAULT_THROTTLE, keepMs: Math.min(DEFAULT_THROTTLE.keepMs, cacheMs) });
  const lastUsed = new LastUsedTimes(repo, options.log);
  // The accounts module, built after this one, plugs its policy in through useSignInPolicy.
  let signInPolicy = options.signInPolicy ?? ALLOW_ALL_SIGN_INS;
  const tokens = new TokenService(repo, keys, throttle, {
    issuer,
    accessTokenTtlSeconds: options.accessTokenTtlSeconds,
    refreshTokenTtlDays: options.refreshTokenTtlDays,
    signInPolicy: () => signInPolicy,
  }, lastUsed, refreshTokenSigner);
  const signIn = new InteractiveSignIn(options.db, options.identityProviders ?? [], options.publicUrl, () => signInPolicy, {
    loginTtlSeconds: options.loginTtlSeconds ?? 600,
    timeoutSeconds: options.idpTimeoutSeconds ?? 10,
  });
  const interactive = interactiveRoutes({ signIn, tokens, verifier, repo, publicUrl: options.publicUrl, refreshTokenTtlDays: options.refreshTokenTtlDays });
  const credentials = new CredentialService(repo, { checkCredentialMint: (identity, days) => signInPolicy.checkCredentialMint(identity, days) });
  /**
   * Credentials of identities another service has authorized `principal` to manage (the account
   * service: a billing_admin and its account's service accounts). Their tokens are refused at once
   * here once revoked (elsewhere within LAKEPORT_AUTH_CACHE_SECONDS), as for every revocation.
   */
  const delegated = {
    create: (principal: Principal, clientId: string, input: CreateCredentialInput) => credentials.create({ kind: 'delegate', principal }, clientId, input),
    list: (principal: Principal, clientId: string) => credentials.list({ kind: 'delegate', principal }, clientId),
    revoke: (principal: Principal, clientId: string, credentialId: string) => credentials.revoke({ kind: 'delegate', principal }, clientId, credentialId),
    revokeAll: (clientId: string) => credentials.revokeAll(clientId),
  };
  const routes = authRoutes({
    credentials,
    tokens,
    verifier,
    keys,
    adminToken: options.adminToken,
    publicUrl: options.publicUrl,
    billingAccountOf: options.billingAccountOf ?? (async () => null),
  });
  /**
   * Metadata outside /auth: RFC 8414 §3 places it for the issuer `…/auth` at
   * `/.well-known/oauth-authorization-server/auth` (and §5 the OIDC suffix the same way); the bare
   * `/.well-known/openid-configuration` serves tools that look only at the root. Every copy names
   * the one issuer, `…/auth`.
   */
  const rootWellKnown = async (app: FastifyInstance) => {
    app.get(`/.well-known/oauth-authorization-server${AUTH_PREFIX}`, { schema: { hide: true } }, async () => discoveryDocument(options.publicUrl));
    app.get(`/.well-known/openid-configuration${AUTH_PREFIX}`, { schema: { hide: true } }, async () => discoveryDocument(options.publicUrl));
    app.get('/.well-known/openid-configuration', { schema: { hide: true } }, async () => discoveryDocument(options.publicUrl));
  };
  /** An onRequest hook for the whole app: throttles bad x-admin-token headers per source address. */
  const adminTokenGuard = adminTokenThrottle(options.adminToken, throttle);
  return serviceModule({
    keys,
    verifier,
    tokens,
    credentials,
    delegated,
    rootWellKnown,
    adminTokenGuard,
    signIn,
    /**
     * For the accounts module: ends every interactive session of an identity (an IdP-policy write
     * that invalidates them); their access tokens are refused here at once, elsewhere within
     * LAKEPORT_AUTH_CACHE_SECONDS.
     */
    interactiveSessions: {
      end: async (identity: string): Promise<number> => (await repo.revokeInteractiveSessions(identity)).length,
    },
    /** The token endpoint's grants, for another service's token endpoint (the Iceberg REST catalog's). */
    grantToken: (request: FastifyRequest, form: TokenRequestForm) => grantToken(tokens, request, form),
    useSignInPolicy: (policy: SignInPolicy) => {
      signInPolicy = policy;
    },
    /** Writes the last-used times not yet written. */
    close: () => lastUsed.close(),
    /** Deletes refresh-token rows past their expiry (interactive sessions add one at every refresh). */
    upkeep: async () => {
      await repo.purgeExpiredRefreshTokens().catch((error: unknown) => options.log?.warn({ err: error }, 'could not purge expired refresh tokens; the next upkeep tries again'));
    },
    apis: [
      {
        prefix: AUTH_PREFIX,
        title: 'authentication service',
        description: 'OAuth 2.0 tokens, JWKS, client credentials and interactive sign-in.',
        routes: [routes, interactive],
      },
    ],
  });
}

export type AuthService = Awaited<ReturnType<typeof createAuthService>>;
/** The credentials port other services manage delegated identities through. */
export type DelegatedCredentials = AuthService['delegated'];
