import { randomBytes } from 'node:crypto';
import * as oidc from 'openid-client';
import type { IdentityProviderConfig } from '../../config.ts';
import { DEFAULT_SCOPES } from '../../core/authz/index.ts';
import type { SignInFacts, SignInPolicy, SignInVerdict } from '../../core/authz/sign-in-policy.ts';
import { newId, sha256Hex } from '../../core/crypto/index.ts';
import type { Db } from '../../core/db/index.ts';
import { AppError } from '../../core/errors/index.ts';
import type { PublicUrl } from '../../core/http/index.ts';
import { authError } from './errors.ts';

export type ProviderId = 'idp_a' | 'idp_b';

const DEFAULT_RETURN_TO = '/';

/**
 * `return_to` only to this server's own origin: a relative path `/…`; never `//host`, a scheme,
 * a backslash (browsers read `/\host` as `//host`) or control characters. Anything else → `/`.
 */
export function safeReturnTo(value: string | undefined): string {
  if (value === undefined || value.length > 2048) return DEFAULT_RETURN_TO;
  if (!value.startsWith('/') || value.startsWith('//')) return DEFAULT_RETURN_TO;
  if (/[\\\u0000-\u001f\u007f]/.test(value)) return DEFAULT_RETURN_TO;
  // Resolved against a dummy origin it must stay there (catches encodings the checks above miss).
  try {
    const resolved = new URL(value, 'http://lakeport.invalid');
    if (resolved.origin !== 'http://lakeport.invalid') return DEFAULT_RETURN_TO;
  } catch {
    return DEFAULT_RETURN_TO;
  }
  return value;
}

/** The Lakeport identity a provider's person gets at first sign-in: email local part or preferred_username, in the identity charset. */
export function identityBase(email: string | null, preferredUsername: string | undefined): string {
  const raw = email !== null ? email.slice(0, email.lastIndexOf('@')) : (preferredUsername ?? '');
  const cleaned = raw
    .toLowerCase()
    .replace(/[^a-z0-9._+-]/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 100);
  return cleaned === '' ? 'user' : cleaned;
}

/** What the callback produces: a new interactive session and where to send the browser. */
export interface SignedIn {
  identity: string;
  returnTo: string;
  facts: SignInFacts;
  verdict: SignInVerdict;
}

const stringArray = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

function isTimeout(error: unknown): boolean {
  const e = error as { name?: string; cause?: { name?: string; code?: string } } | undefined;
  return e?.name === 'TimeoutError' || e?.cause?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.cause?.code === 'UND_ERR_CONNECT_TIMEOUT';
}

/**
 * Interactive sign-in through the configured OpenID Connect providers: discovery (lazy, cached),
 * the authorization-code flow with PKCE, state and nonce, and ID-token validation, all by
 * openid-client. A pending login is a row keyed by its state and deleted when used, so a callback
 * works once.
 */
export class InteractiveSignIn {
  private readonly configurations = new Map<ProviderId, Promise<oidc.Configuration>>();

  constructor(
    private readonly db: Db,
    private readonly providers: readonly IdentityProviderConfig[],
    private readonly publicUrl: PublicUrl,
    private readonly policy: () => SignInPolicy,
    private readonly settings: { loginTtlSeconds: number; timeoutSeconds: number },
  ) {}

  /** The configured providers, for a sign-in page: id and display name (never secrets). */
  list(): { id: ProviderId; name: string; issuer: string }[] {
    return this.providers.map((p) => ({ id: p.id, name: p.name, issuer: p.issuer }));
  }

  redirectUri(): string {
    return `${this.publicUrl.service('/auth')}/callback`;
  }

  private provider(id: string): IdentityProviderConfig {
    const provider = this.providers.find((p) => p.id === id);
    if (!provider) {
      const known = this.providers.map((p) => p.id).join(', ') || 'none';
      throw authError('IDP_NOT_CONFIGURED', `No identity provider '${id}' is configured on this server (configured: ${known})`);
    }
    return provider;
  }

  private configuration(provider: IdentityProviderConfig): Promise<oidc.Configuration> {
    let pending = this.configurations.get(provider.id);
    if (!pending) {
      const issuer = new URL(provider.issuer);
      pending = oidc
        .discovery(issuer, provider.clientId, { client_secret: provider.clientSecret }, oidc.ClientSecretPost(provider.clientSecret), {
          timeout: this.settings.timeoutSeconds,
          // config.ts admits http:// issuers only on loopback hosts.
          execute: issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
        })
        .catch((error: unknown) => {
          this.configurations.delete(provider.id);
          throw this.providerFailure(provider, 'discovery', error);
        });
      this.configurations.set(provider.id, pending);
    }
    return pending;
  }

  private providerFailure(provider: IdentityProviderConfig, step: string, error: unknown): AppError {
    if (error instanceof AppError) return error;
    if (isTimeout(error)) return authError('IDP_TIMEOUT', `Identity provider '${provider.id}' (${provider.issuer}) did not answer ${step} within ${this.settings.timeoutSeconds} s`);
    const message = error instanceof Error ? error.message : String(error);
    return authError('IDP_UNREACHABLE', `Identity provider '${provider.id}' (${provider.issuer}) failed at ${step}: ${message}`);
  }

  /** GET /auth/login: remembers the login under a fresh state; answers the provider's authorization URL. */
  async start(providerId: string, returnTo: string | undefined): Promise<URL> {
    const provider = this.provider(providerId);
    const config = await this.configuration(provider);
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const now = Date.now();
    await this.db.kysely.deleteFrom('oidc_pending_logins').where('expires_at', '<', new Date(now)).execute();
    await this.db.kysely
      .insertInto('oidc_pending_logins')
      .values({
        state,
        provider: provider.id,
        nonce,
        code_verifier: codeVerifier,
        return_to: safeReturnTo(returnTo),
        expires_at: new Date(now + this.settings.loginTtlSeconds * 1000),
      })
      .execute();
    return oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri(),
      scope: 'openid email profile',
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
  }

  /**
   * GET /auth/callback: consumes the pending login of `state` (once), redeems the code and
   * validates the ID token (openid-client: state, nonce, PKCE, issuer, audience, signature,
   * expiry), maps the person to an identity and asks the sign-in policy. `query` is the
   * callback's raw query string.
   */
  async complete(query: string): Promise<SignedIn> {
    const params = new URLSearchParams(query);
    const state = params.get('state');
    if (!state) throw authError('SIGN_IN_FAILED', 'The callback has no state: start again at /auth/login');
    const pending = await this.db.kysely.deleteFrom('oidc_pending_logins').where('state', '=', state).returningAll().executeTakeFirst();
    if (!pending || pending.expires_at.getTime() <= Date.now()) {
      throw authError('SIGN_IN_FAILED', 'Unknown, expired or already used sign-in state: start again at /auth/login');
    }
    const provider = this.provider(pending.provider);
    const config = await this.configuration(provider);
    const currentUrl = new URL(this.redirectUri());
    currentUrl.search = params.toString();
    let claims: oidc.IDToken;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: pending.code_verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims()!;
    } catch (error) {
      if (error instanceof oidc.AuthorizationResponseError) {
        throw authError('SIGN_IN_FAILED', `The identity provider refused the sign-in: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`);
      }
      if (error instanceof oidc.ResponseBodyError || error instanceof oidc.ClientError || (error as Error)?.name === 'OperationProcessingError') {
        // openid-client's message is generic; the cause names the check that failed (e.g. the ID token's nonce).
        const cause = (error as Error).cause;
        const why = cause instanceof Error && cause.message !== (error as Error).message ? `: ${cause.message}` : '';
        throw authError('SIGN_IN_FAILED', `Sign-in could not be verified: ${(error as Error).message}${why}`);
      }
      throw this.providerFailure(provider, 'the token request', error);
    }
    const emailVerified = claims.email_verified === true;
    const email = typeof claims.email === 'string' && emailVerified ? claims.email.toLowerCase() : null;
    const identity = await this.linkIdentity(claims.iss, claims.sub, email, typeof claims.preferred_username === 'string' ? claims.preferred_username : undefined);
    const facts: SignInFacts = {
      identity,
      provider: provider.id,
      issuer: claims.iss,
      subject: claims.sub,
      email,
      emailVerified,
      amr: stringArray(claims.amr),
      authTime: typeof claims.auth_time === 'number' ? new Date(claims.auth_time * 1000) : new Date(),
      groups: stringArray(claims.groups),
    };
    const verdict = await this.policy().judgeSignIn(facts);
    return { identity, returnTo: pending.return_to, facts, verdict };
  }

  /**
   * The identity linked to (issuer, subject); at first sign-in a new one, from the verified email's
   * local part or preferred_username, suffixed `-2`, `-3`… until no link or credential has it.
   */
  private async linkIdentity(issuer: string, subject: string, email: string | null, preferredUsername: string | undefined): Promise<string> {
    const k = this.db.kysely;
    const existing = await k
      .updateTable('identity_links')
      .set({ last_sign_in_at: new Date(), email })
      .where('issuer', '=', issuer)
      .where('subject', '=', subject)
      .returning('identity')
      .executeTakeFirst();
    if (existing) return existing.identity;
    const base = identityBase(email, preferredUsername);
    for (let n = 1; n <= 50; n++) {
      const candidate = n === 1 ? base : `${base}-${n === 50 ? randomBytes(4).toString('hex') : n}`;
      // Machine credentials' identities are not given to people (sessions' credentials are theirs).
      const taken = await k
        .selectFrom('credentials as c')
        .select('c.credential_id')
        .where('c.client_id', '=', candidate)
        .where(({ not, exists, selectFrom }) => not(exists(selectFrom('interactive_sessions as s').select('s.credential_id').whereRef('s.credential_id', '=', 'c.credential_id'))))
        .limit(1)
        .executeTakeFirst();
      if (taken) continue;
      const inserted = await k
        .insertInto('identity_links')
        .values({ issuer, subject, identity: candidate, email, last_sign_in_at: new Date() })
        .onConflict((oc) => oc.doNothing())
        .returning('identity')
        .executeTakeFirst();
      if (inserted) return inserted.identity;
      // A concurrent first sign-in of the same person may have linked it meanwhile.
      const raced = await k.selectFrom('identity_links').select('identity').where('issuer', '=', issuer).where('subject', '=', subject).executeTakeFirst();
      if (raced) return raced.identity;
    }
    throw authError('SIGN_IN_FAILED', 'Could not choose a unique identity for this person');
  }

  /** Creates the session: an `interactive` credential (no usable secret) and how the person signed in. */
  async createSession(signedIn: SignedIn, expiresAt: Date): Promise<string> {
    const credentialId = newId('cred');
    const { facts, verdict } = signedIn;
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx
        .insertInto('credentials')
        .values({
          credential_id: credentialId,
          client_id: facts.identity,
          type: 'interactive',
          // Nothing can authenticate with this: the digest of random bytes nobody keeps.
          secret_hash: sha256Hex(randomBytes(32).toString('hex')),
          secret_hint: `interactive:${facts.provider}`,
          scopes: JSON.stringify(DEFAULT_SCOPES),
          permissions: JSON.stringify([]),
          created_by: `${facts.provider}:${facts.subject}`,
          expires_at: expiresAt,
        })
        .execute();
      await trx
        .insertInto('interactive_sessions')
        .values({
          credential_id: credentialId,
          provider: facts.provider,
          issuer: facts.issuer,
          subject: facts.subject,
          email: facts.email,
          email_verified: facts.emailVerified,
          amr: JSON.stringify(facts.amr),
          groups: JSON.stringify(facts.groups),
          auth_time: facts.authTime,
          policy_version: verdict.policyVersion,
        })
        .execute();
    });
    return credentialId;
  }
}
