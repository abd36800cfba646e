import type { Selectable } from 'kysely';
import type { CredentialsTable, Db, PermissionPair, RefreshTokensTable } from '../../core/db/index.ts';

export type CredentialRow = Selectable<CredentialsTable>;
export type RefreshTokenRow = Selectable<RefreshTokensTable>;

export class AuthRepo {
  constructor(private readonly db: Db) {}

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

  findBySecretHash(hash: string): Promise<CredentialRow | undefined> {
    return this.db.kysely.selectFrom('credentials').selectAll().where('secret_hash', '=', hash).executeTakeFirst();
  }

  findCredential(credentialId: string): Promise<CredentialRow | undefined> {
    return this.db.kysely.selectFrom('credentials').selectAll().where('credential_id', '=', credentialId).executeTakeFirst();
  }

  /** Revokes the credential and every refresh token issued from it, in one transaction. */
  async revokeCredential(clientId: string, credentialId: string): Promise<Date | undefined> {
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

  async touchCredential(credentialId: string): Promise<void> {
    await this.db.kysely.updateTable('credentials').set({ last_used_at: new Date() }).where('credential_id', '=', credentialId).execute();
  }

  async insertRefreshToken(row: {
    token_hash: string;
    credential_id: string;
    client_id: string;
    scopes: string[];
    expires_at: Date;
  }): Promise<void> {
    await this.db.kysely
      .insertInto('refresh_tokens')
      .values({ ...row, scopes: JSON.stringify(row.scopes) })
      .execute();
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

  async touchRefreshToken(hash: string): Promise<void> {
    await this.db.kysely.updateTable('refresh_tokens').set({ last_used_at: new Date() }).where('token_hash', '=', hash).execute();
  }

  async revokeRefreshToken(hash: string): Promise<void> {
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
