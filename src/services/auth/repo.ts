import { sql, type Selectable } from 'kysely';
import { WriteCoalescer } from '../../core/db/coalesce.ts';
import type { CredentialsTable, Db, PermissionPair, RefreshTokensTable } from '../../core/db/index.ts';
import { KeptReads } from '../../core/kept.ts';

export type CredentialRow = Selectable<CredentialsTable>;
export type RefreshTokenRow = Selectable<RefreshTokensTable>;
export type RefreshTokenWithCredential = NonNullable<Awaited<ReturnType<AuthRepo['findRefreshToken']>>>;

export interface NewRefreshToken {
  token_hash: string;
  credential_id: string;
  client_id: string;
  scopes: string[];
  expires_at: Date;
}

/**
 * What the refresh grant needs besides a self-describing refresh token's own claims: its
 * credential's state, and whether the token was revoked (docs/auth.md, "Refresh tokens of client_credentials").
 */
export interface SignedRefreshTokenState {
  credential_id: string;
  client_id: string;
  credential_revoked_at: Date | null;
  credential_expires_at: Date | null;
  permissions: PermissionPair[];
  session_id: string | null;
  /** When the token itself was revoked (POST /auth/revoke), or null. */
  revoked_at: Date | null;
}

/** A self-describing refresh token being revoked: recorded as a revoked row of refresh_tokens. */
export interface RevokedSignedRefreshToken extends NewRefreshToken {
  created_at: Date;
}

/** Which credentials a revocation touches: by credential id or client id (and the key: a refresh token's hash). */
export type Revoked = (row: { credential_id: string; client_id: string }, key?: string) => boolean;

/** At most this many credentials and refresh tokens each are kept (see AuthRepo). */
const KEPT_MAX = 10_000;
/** Expired refresh tokens are deleted this many at a time (each upkeep, every minute). */
const PURGE_BATCH = 10_000;

/**
 * The auth service's SQL. What the token endpoint reads on every exchange — a credential by its
 * secret's digest, a refresh token with its credential — is kept for `cacheMs`
 * (LAKEPORT_AUTH_CACHE_SECONDS): this process's own revocations drop it at once, another server's
 * bite here within that time; so is a self-describing refresh token's credential state and revocation.
 * New (interactive sessions') refresh tokens that arrive together are inserted in one statement.
 */
export class AuthRepo {
  private readonly bySecret: KeptReads<string, CredentialRow | undefined>;
  /** Told of every revocation, before and after it commits (the access-token verifier). */
  private readonly revocationListeners: ((revoked: Revoked) => void)[] = [];
  private readonly refreshTokens: KeptReads<string, RefreshTokenWithCredential | undefined>;
  /** By the token's hash: self-describing refresh tokens' credential state and revocation. */
  private readonly signedTokenStates: KeptReads<string, SignedRefreshTokenState | undefined>;
  private readonly refreshTokenInserts: WriteCoalescer<NewRefreshToken>;

  constructor(
    private readonly db: Db,
    cacheMs = 0,
  ) {
    this.bySecret = new KeptReads({ ttlMs: cacheMs, max: KEPT_MAX });
    this.refreshTokens = new KeptReads({ ttlMs: cacheMs, max: KEPT_MAX });
    this.signedTokenStates = new KeptReads({ ttlMs: cacheMs, max: KEPT_MAX });
    // Visible to every server once committed; a PostgreSQL crash within a fraction of a second may
    // lose them, which fails closed: the client authenticates with its secret again (docs/auth.md).
    this.refreshTokenInserts = new WriteCoalescer(async (rows) => {
      await this.db.relaxedCommit(async (q) => {
        await q
          .insertInto('refresh_tokens')
          .values(rows.map((row) => ({ ...row, scopes: JSON.stringify(row.scopes) })))
          .execute();
      });
    });
  }

  /**
   * Deletes up to `limit` refresh-token rows past their expiry (an expired token is refused by its
   * expiry alone, so its row, revoked or not, tells nothing any more); how many it deleted.
   */
  async purgeExpiredRefreshTokens(limit = PURGE_BATCH): Promise<number> {
    const expired = this.db.kysely.selectFrom('refresh_tokens').select('token_hash').where('expires_at', '<', new Date()).limit(limit);
    const deleted = await this.db.kysely.deleteFrom('refresh_tokens').where('token_hash', 'in', expired).executeTakeFirst();
    return Number(deleted.numDeletedRows);
  }

  /** `listener` is told of every revocation made here, before and after it commits. */
  onRevocation(listener: (revoked: Revoked) => void): void {
    this.revocationListeners.push(listener);
  }

  /**
   * Runs a revocation with what is kept of the credentials and tokens it touches dropped before
   * and after (once committed), here and by the listeners, so no read overlapping it keeps the old state.
   */
  private async revoking<T>(which: Revoked, revoke: () => Promise<T>): Promise<T> {
    const forget = () => {
      this.bySecret.forget((key, row) => row !== undefined && which(row, key));
      this.refreshTokens.forget((key, row) => row !== undefined && which(row, key));
      this.signedTokenStates.forget((key, row) => row !== undefined && which(row, key));
      for (const listener of this.revocationListeners) listener(which);
    };
    forget();
    try {
      return await revoke();
    } finally {
      forget();
    }
  }

  async insertCredential(row: {
    credential_id: string;
    client_id: string;
    type: string;
    secret_hash: string;
    secret_hint: string;
    scopes: string[];
    permissions: PermissionPair[];
    created_by: string;
    expires_at: Date | null;
  }): Promise<CredentialRow> {
    return this.db.kysely
      .insertInto('credentials')
      .values({ ...row, scopes: JSON.stringify(row.scopes), permissions: JSON.stringify(row.permissions) })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** Every credential of a client_id not yet revoked, expired ones included. */
  listUnrevoked(clientId: string): Promise<CredentialRow[]> {
    return this.db.kysely
      .selectFrom('credentials')
      .selectAll()
      .where('client_id', '=', clientId)
      .where('revoked_at', 'is', null)
      .orderBy('created_at')
      .orderBy('credential_id')
      .execute();
  }

  /** The credential whose secret has this digest (kept: see the class). */
  findBySecretHash(hash: string): Promise<CredentialRow | undefined> {
    return this.bySecret.get(hash, () => this.db.kysely.selectFrom('credentials').selectAll().where('secret_hash', '=', hash).executeTakeFirst());
  }

  findCredential(credentialId: string): Promise<CredentialRow | undefined> {
    return this.db.kysely.selectFrom('credentials').selectAll().where('credential_id', '=', credentialId).executeTakeFirst();
  }

  /** Revokes the credential and every refresh token issued from it, in one transaction. */
  async revokeCredential(clientId: string, credentialId: string): Promise<Date | undefined> {
    return this.revoking((row) => row.credential_id === credentialId, () => this.revokeCredentialNow(clientId, credentialId));
  }

  private revokeCredentialNow(clientId: string, credentialId: string): Promise<Date | undefined> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const now = new Date();
      const row = await trx
        .updateTable('credentials')
        .set({ revoked_at: now })
        .where('credential_id', '=', credentialId)
        .where('client_id', '=', clientId)
        .where('revoked_at', 'is', null)
        .returning('revoked_at')
        .executeTakeFirst();
      if (!row) return undefined;
      await trx
        .updateTable('refresh_tokens')
        .set({ revoked_at: now })
        .where('credential_id', '=', credentialId)
        .where('revoked_at', 'is', null)
        .execute();
      return now;
    });
  }

  /** Revokes every unrevoked credential of a client_id and their refresh tokens, in one transaction. */
  async revokeAllCredentials(clientId: string): Promise<string[]> {
    return this.revoking((row) => row.client_id === clientId, () => this.revokeAllCredentialsNow(clientId));
  }

  private revokeAllCredentialsNow(clientId: string): Promise<string[]> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const now = new Date();
      const rows = await trx
        .updateTable('credentials')
        .set({ revoked_at: now })
        .where('client_id', '=', clientId)
        .where('revoked_at', 'is', null)
        .returning('credential_id')
        .execute();
      await trx
        .updateTable('refresh_tokens')
        .set({ revoked_at: now })
        .where('client_id', '=', clientId)
        .where('revoked_at', 'is', null)
        .execute();
      return rows.map((r) => r.credential_id);
    });
  }

  /** Sets last_used_at of each credential to the time given (epoch ms), never moving it back. */
  async touchCredentials(times: [credentialId: string, at: number][]): Promise<void> {
    await this.db.kysely
      .updateTable('credentials as c')
      .from(usedAt(times).as('v'))
      .set({ last_used_at: sql`v.t` })
      .where(sql<boolean>`c.credential_id = v.id AND (c.last_used_at IS NULL OR c.last_used_at < v.t)`)
      .execute();
  }

  /** Sets last_used_at of each refresh token (by hash) to the time given (epoch ms), never moving it back. */
  async touchRefreshTokens(times: [tokenHash: string, at: number][]): Promise<void> {
    await this.db.kysely
      .updateTable('refresh_tokens as r')
      .from(usedAt(times).as('v'))
      .set({ last_used_at: sql`v.t` })
      .where(sql<boolean>`r.token_hash = v.id AND (r.last_used_at IS NULL OR r.last_used_at < v.t)`)
      .execute();
  }

  /** Inserts a row-based refresh token (interactive sessions'); resolves once it is committed (with any others inserted at the same moment). */
  insertRefreshToken(row: NewRefreshToken): Promise<void> {
    return this.refreshTokenInserts.add(row);
  }

  /** A refresh token with its credential, for the refresh grant (kept: see the class). */
  refreshTokenForGrant(hash: string): Promise<RefreshTokenWithCredential | undefined> {
    return this.refreshTokens.get(hash, () => this.findRefreshToken(hash));
  }

  /** A refresh token with the credential it was issued from. */
  findRefreshToken(hash: string) {
    return this.db.kysely
      .selectFrom('refresh_tokens as r')
      .innerJoin('credentials as c', 'c.credential_id', 'r.credential_id')
      .leftJoin('interactive_sessions as s', 's.credential_id', 'r.credential_id')
      .select([
        'r.token_hash',
        'r.credential_id',
        'r.client_id',
        'r.scopes',
        'r.created_at',
        'r.expires_at',
        'r.revoked_at',
        'c.revoked_at as credential_revoked_at',
        'c.expires_at as credential_expires_at',
        'c.permissions',
        's.credential_id as session_id',
      ])
      .where('r.token_hash', '=', hash)
      .executeTakeFirst();
  }

  /**
   * A self-describing refresh token's credential state and revocation, by the token's hash (kept
   * like refreshTokenForGrant when `kept`); undefined when the credential does not exist.
   */
  signedRefreshTokenState(hash: string, credentialId: string, kept: boolean): Promise<SignedRefreshTokenState | undefined> {
    const read = () =>
      this.db.kysely
        .selectFrom('credentials as c')
        .leftJoin('interactive_sessions as s', 's.credential_id', 'c.credential_id')
        .select((eb) => [
          'c.credential_id',
          'c.client_id',
          'c.revoked_at as credential_revoked_at',
          'c.expires_at as credential_expires_at',
          'c.permissions',
          's.credential_id as session_id',
          eb.selectFrom('refresh_tokens').select('revoked_at').where('token_hash', '=', hash).as('revoked_at'),
        ])
        .where('c.credential_id', '=', credentialId)
        .executeTakeFirst();
    return kept ? this.signedTokenStates.get(hash, read) : read();
  }

  /** Records a self-describing refresh token as revoked (a row of refresh_tokens with revoked_at set; the first revocation's time stays). */
  async revokeSignedRefreshToken(token: RevokedSignedRefreshToken): Promise<void> {
    await this.revoking(
      (_row, key) => key === token.token_hash,
      async () => {
        await this.db.kysely
          .insertInto('refresh_tokens')
          .values({ ...token, scopes: JSON.stringify(token.scopes), revoked_at: new Date() })
          .onConflict((oc) => oc.column('token_hash').doUpdateSet({ revoked_at: sql`coalesce(refresh_tokens.revoked_at, excluded.revoked_at)` }))
          .execute();
      },
    );
  }

  async revokeRefreshToken(hash: string): Promise<void> {
    await this.revoking((_row, key) => key === hash, () => this.revokeRefreshTokenNow(hash));
  }

  private async revokeRefreshTokenNow(hash: string): Promise<void> {
    await this.db.kysely
      .updateTable('refresh_tokens')
      .set({ revoked_at: new Date() })
      .where('token_hash', '=', hash)
      .where('revoked_at', 'is', null)
      .execute();
  }

  async revokeAccessToken(jti: string, expiresAt: Date): Promise<void> {
    await this.db.kysely
      .insertInto('revoked_access_tokens')
      .values({ jti, expires_at: expiresAt })
      .onConflict((oc) => oc.column('jti').doNothing())
      .execute();
    await this.db.kysely.deleteFrom('revoked_access_tokens').where('expires_at', '<', new Date()).execute();
  }

  /** Whether an access token may still be used: its credential is live and the token itself not revoked. */
  async accessTokenLive(credentialId: string, jti: string): Promise<boolean> {
    const row = await this.db.kysely
      .selectFrom('credentials as c')
      .select((eb) => [
        'c.revoked_at',
        'c.expires_at',
        eb.exists(eb.selectFrom('revoked_access_tokens').select('jti').where('jti', '=', jti)).as('token_revoked'),
      ])
      .where('c.credential_id', '=', credentialId)
      .executeTakeFirst();
    if (!row || row.revoked_at !== null || row.token_revoked) return false;
    return row.expires_at === null || row.expires_at.getTime() > Date.now();
  }

  /** How the person behind an `interactive` credential signed in. */
  findInteractiveSession(credentialId: string) {
    return this.db.kysely.selectFrom('interactive_sessions').selectAll().where('credential_id', '=', credentialId).executeTakeFirst();
  }

  /** Revokes every live interactive session of `identity` (their credentials and refresh tokens); returns the credential ids. */
  async revokeInteractiveSessions(identity: string): Promise<string[]> {
    const rows = await this.db.kysely
      .selectFrom('credentials as c')
      .innerJoin('interactive_sessions as s', 's.credential_id', 'c.credential_id')
      .select('c.credential_id')
      .where('c.client_id', '=', identity)
      .where('c.revoked_at', 'is', null)
      .execute();
    for (const row of rows) await this.revokeCredential(identity, row.credential_id);
    return rows.map((r) => r.credential_id);
  }
}

/** (id, epoch ms) pairs as a derived table `(id text, t timestamptz)`. */
function usedAt(times: [string, number][]) {
  const rows = JSON.stringify(times.map(([id, at]) => ({ id, t: new Date(at).toISOString() })));
  return sql<{ id: string; t: Date }>`(SELECT * FROM jsonb_to_recordset(${rows}::jsonb) AS x(id text, t timestamptz))`;
}
