import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { DEFAULT_SCOPES, type Principal } from '../../core/authz/index.ts';
import { signInFactsOf, type SignInPolicy } from '../../core/authz/sign-in-policy.ts';
import { newId, safeEqual, sha256Hex } from '../../core/crypto/index.ts';
import type { PermissionPair } from '../../core/db/index.ts';
import { InvalidTokenError, type TokenVerifier } from '../../core/http/index.ts';
import { SIGNING_ALG, type SigningKeyStore } from './keys.ts';
import { authError } from './errors.ts';
import type { SignedIn } from './interactive.ts';
import { oauthError } from './oauth-error.ts';
import type { LastUsedTimes } from './last-used.ts';
import type { AuthRepo, CredentialRow } from './repo.ts';
import { CREDENTIAL_SECRET_PREFIX, generateSecret, isWellFormedSecret, REFRESH_TOKEN_PREFIX } from './secrets.ts';
import { isSignedRefreshToken, type RefreshTokenSigner } from './signed-refresh-tokens.ts';
import { sourceKey, tooManyAttempts, type FailedAttemptThrottle } from './throttle.ts';

export const ACCESS_TOKEN_AUDIENCE = 'lakeport';

export interface TokenSettings {
  /** `iss` of every token: the auth service's public URL. A function because the port may settle late. */
  issuer: () => string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  /** The sign-in policy that judges refreshes of interactive sessions. */
  signInPolicy: () => SignInPolicy;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

interface AccessTokenClaims {
  sub: string;
  client_id: string;
  cid: string;
  scope: string;
  permissions: PermissionPair[];
  /** Interactive sessions: when (epoch seconds) and how the person signed in, and at which provider. */
  auth_time?: number;
  amr?: string[];
  idp?: string;
}

/** A refresh token as the grant, introspection and revocation see it, whichever its format. */
interface RefreshTokenView {
  hash: string;
  credential_id: string;
  client_id: string;
  scopes: string[];
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  credential_revoked_at: Date | null;
  credential_expires_at: Date | null;
  permissions: PermissionPair[];
  session_id: string | null;
  /** A self-describing token (no row of its own unless revoked). */
  signed: boolean;
}

/** A refresh token works while neither it nor its credential is revoked or expired. */
function refreshTokenLive(row: { revoked_at: Date | null; expires_at: Date; credential_revoked_at: Date | null; credential_expires_at: Date | null }, now = Date.now()): boolean {
  return (
    row.revoked_at === null &&
    row.expires_at.getTime() > now &&
    row.credential_revoked_at === null &&
    (row.credential_expires_at === null || row.credential_expires_at.getTime() > now)
  );
}

/** Issues, refreshes, revokes and introspects tokens. */
export class TokenService {
  constructor(
    private readonly repo: AuthRepo,
    private readonly keys: SigningKeyStore,
    private readonly throttle: FailedAttemptThrottle,
    private readonly settings: TokenSettings,
    private readonly lastUsed: LastUsedTimes,
    private readonly refreshTokens: RefreshTokenSigner,
  ) {}

  /**
   * The refresh token `token` names, with its credential's state (kept for the grant when `kept`):
   * a self-describing token whose MAC holds, else a row-based one by its hash; undefined for
   * anything else. Liveness is the caller's to judge (refreshTokenLive).
   */
  private async findRefreshToken(token: string, kept: boolean): Promise<RefreshTokenView | undefined> {
    if (isSignedRefreshToken(token)) {
      const claims = this.refreshTokens.verify(token);
      if (!claims) return undefined;
      const hash = sha256Hex(token);
      const state = await this.repo.signedRefreshTokenState(hash, claims.credentialId, kept);
      // Signed only for the credential's own client_id; checked against the credential anyway.
      if (!state || state.client_id !== claims.clientId) return undefined;
      return {
        ...state,
        hash,
        scopes: claims.scopes,
        created_at: new Date(claims.issuedAt * 1000),
        expires_at: new Date(claims.expiresAt * 1000),
        signed: true,
      };
    }
    if (!isWellFormedSecret(token, REFRESH_TOKEN_PREFIX)) return undefined;
    const hash = sha256Hex(token);
    const row = kept ? await this.repo.refreshTokenForGrant(hash) : await this.repo.findRefreshToken(hash);
    return row && { ...row, hash, signed: false };
  }

  private async signAccessToken(claims: AccessTokenClaims): Promise<{ token: string; jti: string }> {
    const jti = newId('at');
    const iat = Math.floor(Date.now() / 1000);
    const payload = { ...claims, iss: this.settings.issuer(), aud: ACCESS_TOKEN_AUDIENCE, iat, exp: iat + this.settings.accessTokenTtlSeconds, jti };
    return { token: await this.keys.signJwt(payload, 'at+jwt'), jti };
  }

  private narrowScopes(granted: string[], requested: string | undefined): string[] {
    if (requested === undefined || requested.trim() === '') return granted;
    const wanted = [...new Set(requested.trim().split(/\s+/))];
    const extra = wanted.filter((s) => !granted.includes(s));
    if (extra.length > 0) throw oauthError('invalid_scope', `Scope(s) not granted to this credential: ${extra.join(', ')}`);
    return wanted;
  }

  /**
   * Authenticates a client by its secret; returns the live credential. Throttled per (client_id,
   * source address) with a per-client_id ceiling for unknown sources (see FailedAttemptThrottle):
   * a blocked source is refused before its secret is looked at, a failure is counted atomically and
   * answered 401 only within the limit, and a success is re-checked, so racing guesses get at most
   * the limit of verdicts. A success writes nothing unless its source is not yet remembered as known.
   */
  async authenticateClient(clientId: string, clientSecret: string, sourceAddress: string | undefined): Promise<CredentialRow> {
    const key = { kind: 'client', clientId, source: sourceKey(sourceAddress) } as const;
    const gate = await this.throttle.check(key);
    if (gate.retryAfter > 0) throw tooManyAttempts(gate.retryAfter, 'client authentications', true);
    const credential = isWellFormedSecret(clientSecret, CREDENTIAL_SECRET_PREFIX)
      ? await this.repo.findBySecretHash(sha256Hex(clientSecret))
      : undefined;
    // The secret's digest is the lookup key, so reaching a row already proves the secret; the
    // client_id must also be the credential's own.
    const live =
      credential !== undefined &&
      safeEqual(credential.client_id, clientId) &&
      credential.revoked_at === null &&
      (credential.expires_at === null || credential.expires_at.getTime() > Date.now());
    if (!credential || !live) {
      const counted = await this.throttle.recordFailure(key);
      if (counted.retryAfter > 0) throw tooManyAttempts(counted.retryAfter, 'client authentications', true);
      throw oauthError('invalid_client', 'Client authentication failed: unknown client, wrong secret, or a revoked or expired credential');
    }
    // Failures racing this attempt may have reached the limit meanwhile: then it is one too many.
    const after = await this.throttle.confirm(key);
    if (after.retryAfter > 0) throw tooManyAttempts(after.retryAfter, 'client authentications', true);
    if (!after.knownRecently) await this.throttle.recordSuccess(key);
    return credential;
  }

  /** The client_credentials grant. */
  async clientCredentials(clientId: string, clientSecret: string, requestedScope: string | undefined, sourceAddress: string | undefined): Promise<TokenResponse> {
    const credential = await this.authenticateClient(clientId, clientSecret, sourceAddress);
    const scopes = this.narrowScopes(credential.scopes, requestedScope);
    const access = await this.signAccessToken({
      sub: credential.client_id,
      client_id: credential.client_id,
      cid: credential.credential_id,
      scope: scopes.join(' '),
      permissions: credential.permissions,
    });
    // Self-describing: nothing is written (docs/auth.md, "Refresh tokens of client_credentials").
    const issuedAt = Math.floor(Date.now() / 1000);
    const ttlExpiry = issuedAt + this.settings.refreshTokenTtlDays * 86_400;
    // A refresh token never outlives its credential.
    const credentialExpiry = credential.expires_at === null ? Infinity : Math.floor(credential.expires_at.getTime() / 1000);
    const refreshToken = this.refreshTokens.sign({
      credentialId: credential.credential_id,
      clientId: credential.client_id,
      scopes,
      issuedAt,
      expiresAt: Math.min(ttlExpiry, credentialExpiry),
    });
    this.lastUsed.credential(credential.credential_id);
    return {
      access_token: access.token,
      token_type: 'Bearer',
      expires_in: this.settings.accessTokenTtlSeconds,
      refresh_token: refreshToken,
      scope: scopes.join(' '),
    };
  }

  /** Tokens of a new interactive session (the callback): an access token carrying auth_time/amr/idp, and a refresh token. */
  async issueInteractive(signedIn: SignedIn, credentialId: string, expiresAt: Date): Promise<TokenResponse> {
    const { facts } = signedIn;
    const access = await this.signAccessToken({
      sub: facts.identity,
      client_id: facts.identity,
      cid: credentialId,
      scope: DEFAULT_SCOPES.join(' '),
      permissions: [],
      auth_time: Math.floor(facts.authTime.getTime() / 1000),
      amr: facts.amr,
      idp: facts.provider,
    });
    const refreshToken = generateSecret(REFRESH_TOKEN_PREFIX);
    await this.repo.insertRefreshToken({ token_hash: sha256Hex(refreshToken), credential_id: credentialId, client_id: facts.identity, scopes: DEFAULT_SCOPES, expires_at: expiresAt });
    return { access_token: access.token, token_type: 'Bearer', expires_in: this.settings.accessTokenTtlSeconds, refresh_token: refreshToken, scope: DEFAULT_SCOPES.join(' ') };
  }

  /**
   * An interactive session's refresh is judged by the sign-in policy: refused, the session ends (its
   * credential is revoked: its access tokens are refused here at once, elsewhere within
   * LAKEPORT_AUTH_CACHE_SECONDS) and the person is sent back to interactive sign-in.
   */
  private async judgeInteractiveRefresh(clientId: string, credentialId: string): Promise<Pick<AccessTokenClaims, 'auth_time' | 'amr' | 'idp'>> {
    const session = await this.repo.findInteractiveSession(credentialId);
    if (!session) throw oauthError('invalid_grant', 'The interactive session is unknown: sign in interactively again at /auth/login');
    const verdict = await this.settings.signInPolicy().judgeRefresh(signInFactsOf(clientId, session), { startedAt: session.started_at, policyVersion: session.policy_version });
    if (!verdict.allowed) {
      await this.repo.revokeCredential(clientId, credentialId);
      const description = `Sign in interactively again at /auth/login: this session may no longer be refreshed (${verdict.code}: ${verdict.reason})`;
      throw authError('SIGN_IN_REQUIRED', description, {
        headers: { 'cache-control': 'no-store' },
        extra: { error: 'invalid_grant', error_description: description, reason_code: verdict.code },
      });
    }
    return { auth_time: Math.floor(session.auth_time.getTime() / 1000), amr: session.amr, idp: session.provider };
  }

  /** The refresh_token grant: a new access token; the refresh token stays valid (see docs/auth.md). */
  async refresh(refreshToken: string, authenticatedClientId?: string, requestedScope?: string): Promise<TokenResponse> {
    const row = await this.findRefreshToken(refreshToken, true);
    if (!row || !refreshTokenLive(row)) {
      throw oauthError('invalid_grant', 'The refresh token is invalid, expired or revoked, or its credential is');
    }
    if (authenticatedClientId !== undefined && authenticatedClientId !== row.client_id) {
      throw oauthError('invalid_grant', 'The refresh token was not issued to this client');
    }
    const scopes = this.narrowScopes(row.scopes, requestedScope);
    const interactive = row.session_id !== null ? await this.judgeInteractiveRefresh(row.client_id, row.credential_id) : {};
    const access = await this.signAccessToken({
      sub: row.client_id,
      client_id: row.client_id,
      cid: row.credential_id,
      scope: scopes.join(' '),
      permissions: row.permissions,
      ...interactive,
    });
    // A self-describing token has no row: its use is noted on its credential (docs/auth.md).
    if (row.signed) this.lastUsed.credential(row.credential_id);
    else this.lastUsed.refreshToken(row.hash);
    return { access_token: access.token, token_type: 'Bearer', expires_in: this.settings.accessTokenTtlSeconds, scope: scopes.join(' ') };
  }

  /**
   * What is known of a token (RFC 7662). `owner` limits the answer to tokens of that identity;
   * undefined (the admin token) sees every token.
   */
  async introspect(token: string, owner: string | undefined, verifier: AccessTokenVerifier): Promise<{ active: boolean; [claim: string]: unknown }> {
    if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
      const row = await this.findRefreshToken(token, false);
      if (!row || (owner !== undefined && owner !== row.client_id) || !refreshTokenLive(row)) return { active: false };
      return {
        active: true,
        token_type: 'refresh_token',
        client_id: row.client_id,
        sub: row.client_id,
        scope: row.scopes.join(' '),
        iat: Math.floor(row.created_at.getTime() / 1000),
        exp: Math.floor(row.expires_at.getTime() / 1000),
        iss: this.settings.issuer(),
        credential_id: row.credential_id,
      };
    }
    try {
      const principal = await verifier.verify(token);
      if (owner !== undefined && owner !== principal.identity) return { active: false };
      return {
        active: true,
        token_type: 'access_token',
        client_id: principal.identity,
        sub: principal.identity,
        scope: principal.scopes.join(' '),
        exp: Math.floor(principal.expiresAt.getTime() / 1000),
        iss: this.settings.issuer(),
        aud: ACCESS_TOKEN_AUDIENCE,
        jti: principal.tokenId,
        credential_id: principal.credentialId,
        permissions: principal.permissions,
      };
    } catch (error) {
      if (error instanceof InvalidTokenError) return { active: false };
      throw error;
    }
  }

  /** RFC 7009: revokes a refresh or access token of `owner` (any token for the admin token); unknown tokens are ignored. */
  async revoke(token: string, owner: string | undefined, verifier: AccessTokenVerifier): Promise<void> {
    if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
      const row = await this.findRefreshToken(token, false);
      if (!row || (owner !== undefined && owner !== row.client_id)) return;
      if (!row.signed) return this.repo.revokeRefreshToken(row.hash);
      // Recorded even when already expired or its credential revoked: harmless, and it never lives again.
      return this.repo.revokeSignedRefreshToken({
        token_hash: row.hash,
        credential_id: row.credential_id,
        client_id: row.client_id,
        scopes: row.scopes,
        created_at: row.created_at,
        expires_at: row.expires_at,
      });
    }
    try {
      const principal = await verifier.verify(token);
      if (owner !== undefined && owner !== principal.identity) return;
      await this.repo.revokeAccessToken(principal.tokenId, principal.expiresAt);
      verifier.forget(token);
    } catch (error) {
      if (!(error instanceof InvalidTokenError)) throw error;
    }
  }
}

const CACHE_LIMIT = 10_000;

/**
 * Verifies access tokens: signature by a published key (`kid`), EdDSA only, issuer, audience and
 * expiry; then that the credential is live and the token not revoked. Verified tokens are cached,
 * and their status is rechecked every `recheckMs` (LAKEPORT_AUTH_CACHE_SECONDS), so another
 * server's revocation bites within that time (this server's at once).
 */
export class AccessTokenVerifier implements TokenVerifier {
  private readonly cache = new Map<string, { principal: Principal; checkedAt: number }>();
  /** Moves with every forget, so a status check that overlapped one is not cached. */
  private generation = 0;

  constructor(
    private readonly keys: SigningKeyStore,
    private readonly repo: AuthRepo,
    private readonly issuer: () => string,
    private readonly recheckMs = 5_000,
  ) {
    // Tokens of what this server revokes are refused here at once (other servers: within recheckMs).
    repo.onRevocation((revoked) => this.forgetWhere((p) => revoked({ credential_id: p.credentialId, client_id: p.identity })));
  }

  forget(token: string) {
    this.generation++;
    this.cache.delete(token);
  }

  private forgetWhere(which: (principal: Principal) => boolean) {
    this.generation++;
    for (const [token, entry] of this.cache) if (which(entry.principal)) this.cache.delete(token);
  }

  async verify(token: string): Promise<Principal> {
    const now = Date.now();
    const cached = this.cache.get(token);
    if (cached) {
      if (cached.principal.expiresAt.getTime() <= now) {
        this.cache.delete(token);
        throw new InvalidTokenError('token expired');
      }
      if (now - cached.checkedAt < this.recheckMs) return cached.principal;
    }
    const principal = cached?.principal ?? (await this.verifySignature(token));
    const generation = this.generation;
    if (!(await this.repo.accessTokenLive(principal.credentialId, principal.tokenId))) {
      this.cache.delete(token);
      throw new InvalidTokenError('token or its credential has been revoked or has expired');
    }
    if (generation !== this.generation) return principal;
    if (!cached && this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(token, { principal, checkedAt: now });
    return principal;
  }

  private async verifySignature(token: string): Promise<Principal> {
    let kid: string | undefined;
    try {
      const header = decodeProtectedHeader(token);
      if (header.alg !== SIGNING_ALG) throw new InvalidTokenError(`unsupported algorithm ${String(header.alg)}`);
      kid = header.kid;
    } catch (error) {
      if (error instanceof InvalidTokenError) throw error;
      throw new InvalidTokenError('malformed token');
    }
    if (!kid) throw new InvalidTokenError('token has no key id');
    const key = await this.keys.verificationKey(kid);
    if (!key) throw new InvalidTokenError('token signed by an unknown key');
    try {
      const { payload } = await jwtVerify(token, key, {
        algorithms: [SIGNING_ALG],
        issuer: this.issuer(),
        audience: ACCESS_TOKEN_AUDIENCE,
        requiredClaims: ['sub', 'exp', 'iat', 'jti', 'cid'],
      });
      const scope = typeof payload.scope === 'string' ? payload.scope : '';
      return {
        identity: payload.sub!,
        scopes: scope === '' ? [] : scope.split(' '),
        permissions: Array.isArray(payload.permissions) ? (payload.permissions as PermissionPair[]) : [],
        credentialId: String(payload.cid),
        tokenId: payload.jti!,
        expiresAt: new Date(payload.exp! * 1000),
        ...(typeof payload.auth_time === 'number' ? { authTime: new Date(payload.auth_time * 1000) } : {}),
        ...(Array.isArray(payload.amr) ? { amr: payload.amr.filter((v): v is string => typeof v === 'string') } : {}),
        ...(typeof payload.idp === 'string' ? { provider: payload.idp } : {}),
      };
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw new InvalidTokenError('token expired');
      if (error instanceof joseErrors.JOSEError) throw new InvalidTokenError(error.message);
      throw error;
    }
  }
}
