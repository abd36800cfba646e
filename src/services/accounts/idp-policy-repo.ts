import type { Kysely, Selectable } from 'kysely';
import type { Database, IdpDenialsTable, IdpLastSignInsTable, IdpPoliciesTable } from '../../core/db/index.ts';

export type IdpPolicyRow = Selectable<IdpPoliciesTable>;
export type IdpDenialRow = Selectable<IdpDenialsTable>;
export type LastSignInRow = Selectable<IdpLastSignInsTable>;

/** SQL of idp_policies, idp_denials and idp_last_sign_ins. */
export class IdpPolicyRepo {
  constructor(private readonly db: Kysely<Database>) {}

  find(accountId: string): Promise<IdpPolicyRow | undefined> {
    return this.db.selectFrom('idp_policies').selectAll().where('account_id', '=', accountId).executeTakeFirst();
  }

  /** Writes the document (null: removed) and increments the version in one statement. */
  write(accountId: string, document: object | null, by: string): Promise<IdpPolicyRow> {
    const doc = document === null ? null : JSON.stringify(document);
    const now = new Date();
    return this.db
      .insertInto('idp_policies')
      .values({ account_id: accountId, document: doc, version: 1, updated_by: by, updated_at: now })
      .onConflict((oc) =>
        oc.column('account_id').doUpdateSet((eb) => ({ document: doc, version: eb('idp_policies.version', '+', 1), updated_by: by, updated_at: now })),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** The account's active members with their last admitted interactive sign-in (null: none recorded). */
  membersWithLastSignIn(accountId: string) {
    return this.db
      .selectFrom('members as m')
      .leftJoin('idp_last_sign_ins as s', 's.identity', 'm.identity')
      .select(['m.identity', 'm.role', 's.provider', 's.issuer', 's.subject', 's.email', 's.email_verified', 's.amr', 's.groups', 's.auth_time', 's.signed_in_at'])
      .where('m.account_id', '=', accountId)
      .where('m.state', '=', 'active')
      .orderBy('m.identity')
      .execute();
  }

  lastSignIn(identity: string): Promise<LastSignInRow | undefined> {
    return this.db.selectFrom('idp_last_sign_ins').selectAll().where('identity', '=', identity).executeTakeFirst();
  }

  async recordSignIn(row: Omit<LastSignInRow, 'amr' | 'groups'> & { amr: string[]; groups: string[] }): Promise<void> {
    const values = { ...row, amr: JSON.stringify(row.amr), groups: JSON.stringify(row.groups) };
    const { identity: _identity, ...update } = values;
    await this.db
      .insertInto('idp_last_sign_ins')
      .values(values)
      .onConflict((oc) => oc.column('identity').doUpdateSet(update))
      .execute();
  }

  async recordDenial(row: Omit<IdpDenialRow, 'seq'>): Promise<void> {
    await this.db.insertInto('idp_denials').values(row).execute();
  }

  denials(accountId: string, limit: number): Promise<IdpDenialRow[]> {
    return this.db
      .selectFrom('idp_denials')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('at', 'desc')
      .orderBy('seq', 'desc')
      .limit(limit)
      .execute();
  }
}
