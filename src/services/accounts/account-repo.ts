import type { Kysely, Selectable } from 'kysely';
import type { AccountRole, AccountsTable, Database, MembersTable } from '../../core/db/index.ts';
import { lockIdentity, serviceAccountOwner } from './service-account-repo.ts';

export type AccountRow = Selectable<AccountsTable>;
export type MemberRow = Selectable<MembersTable>;

/** The partial unique index that keeps membership exclusive (one active membership per identity). */
export const ACTIVE_MEMBERSHIP_INDEX = 'members_one_active_membership';

/** Whether `error` is PostgreSQL's unique violation (23505), optionally on one named constraint; both drivers surface `code`. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { code?: unknown; constraint?: unknown };
  return e.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

export interface AccountPatch {
  name?: string;
  tax_id?: string | null;
  address?: Record<string, unknown> | null;
  member_min_age_ms?: number | null;
}

/**
 * The account service's SQL. Built over the root Kysely instance, or over a transaction by
 * `transaction()`: inside a transaction only the repo handed to the callback may be used.
 */
export class AccountRepo {
  constructor(private readonly db: Kysely<Database>) {}

  /** The Kysely instance (a transaction's, inside one) that other writes join, such as notifications. */
  get executor(): Kysely<Database> {
    return this.db;
  }

  /** Runs `fn` in one transaction with a repo bound to it. */
  transaction<T>(fn: (repo: AccountRepo) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => fn(new AccountRepo(trx)));
  }

  // ---- accounts ----

  /** An account in any status; `lock` takes a row lock (FOR UPDATE) that serialises membership changes. */
  findAccount(accountId: string, lock = false): Promise<AccountRow | undefined> {
    let query = this.db.selectFrom('accounts').selectAll().where('account_id', '=', accountId);
    if (lock) query = query.forUpdate();
    return query.executeTakeFirst();
  }

  insertAccount(row: {
    account_id: string;
    name: string;
    tax_id: string | null;
    address: Record<string, unknown> | null;
    created_by: string;
    now: Date;
  }): Promise<AccountRow> {
    return this.db
      .insertInto('accounts')
      .values({
        account_id: row.account_id,
        name: row.name,
        tax_id: row.tax_id,
        address: row.address === null ? null : JSON.stringify(row.address),
        member_min_age_ms: null,
        status: 'active',
        created_by: row.created_by,
        created_at: row.now,
        updated_at: row.now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** Applies the given fields to an active account; undefined when there is none. */
  updateAccount(accountId: string, patch: AccountPatch, now: Date): Promise<AccountRow | undefined> {
    const { address, ...rest } = patch;
    return this.db
      .updateTable('accounts')
      .set({
        ...rest,
        ...(address !== undefined ? { address: address === null ? null : JSON.stringify(address) } : {}),
        updated_at: now,
      })
      .where('account_id', '=', accountId)
      .where('status', '=', 'active')
      .returningAll()
      .executeTakeFirst();
  }

  deactivateAccount(accountId: string, now: Date): Promise<AccountRow> {
    return this.db
      .updateTable('accounts')
      .set({ status: 'deactivated', deactivated_at: now, updated_at: now })
      .where('account_id', '=', accountId)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** The active accounts in which `identity` is an active member (at most one, by exclusivity). */
  accountsOfMember(identity: string): Promise<AccountRow[]> {
    return this.db
      .selectFrom('accounts as a')
      .innerJoin('members as m', 'm.account_id', 'a.account_id')
      .selectAll('a')
      .where('m.identity', '=', identity)
      .where('m.state', '=', 'active')
      .where('a.status', '=', 'active')
      .orderBy('a.created_at')
      .orderBy('a.account_id')
      .execute();
  }

  /** Names of the workspaces whose billing account is `accountId`, soft-deleted ones included. */
  async workspacesReferencing(accountId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('workspaces')
      .select('name')
      .where('billing_account', '=', accountId)
      .orderBy('name')
      .execute();
    return rows.map((r) => r.name);
  }

  // ---- service accounts (exclusive with membership) ----

  /** The active account whose service account `identity` is, if any. */
  serviceAccountOwner(identity: string): Promise<string | undefined> {
    return serviceAccountOwner(this.db, identity);
  }

  /** The identities of the account's service accounts. */
  async serviceAccountsOf(accountId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('service_accounts').select('identity').where('account_id', '=', accountId).orderBy('identity').execute();
    return rows.map((r) => r.identity);
  }

  /** Serialises membership and service-account changes of one identity (transaction-scoped). */
  lockIdentity(identity: string): Promise<void> {
    return lockIdentity(this.db, identity);
  }

  // ---- members ----

  findMember(accountId: string, identity: string): Promise<MemberRow | undefined> {
    return this.db
      .selectFrom('members')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('identity', '=', identity)
      .executeTakeFirst();
  }

  /** The identity's active membership in an active account, if any. */
  activeMembershipOf(identity: string): Promise<{ account_id: string; role: AccountRole } | undefined> {
    return this.db
      .selectFrom('members as m')
      .innerJoin('accounts as a', 'a.account_id', 'm.account_id')
      .select(['m.account_id', 'm.role'])
      .where('m.identity', '=', identity)
      .where('m.state', '=', 'active')
      .where('a.status', '=', 'active')
      .executeTakeFirst();
  }

  async countActiveBillingAdmins(accountId: string): Promise<number> {
    const row = await this.db
      .selectFrom('members')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .where('state', '=', 'active')
      .where('role', '=', 'billing_admin')
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  insertActiveMember(row: {
    account_id: string;
    identity: string;
    role: AccountRole;
    added_at: Date;
    min_age_ms: number | null;
    eligible_at: Date;
  }): Promise<MemberRow> {
    return this.db
      .insertInto('members')
      .values({ ...row, state: 'active', email: null, invited_by: null, invited_at: null, invite_expires_at: null })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /**
   * Writes a pending invite, or rewrites an existing pending one (email, role, inviter and a fresh
   * clock). Undefined when the identity is already an active member of the account.
   */
  upsertInvite(row: {
    account_id: string;
    identity: string;
    email: string;
    role: AccountRole;
    invited_by: string;
    invited_at: Date;
    invite_expires_at: Date;
  }): Promise<MemberRow | undefined> {
    return this.db
      .insertInto('members')
      .values({ ...row, state: 'pending', added_at: null, min_age_ms: null, eligible_at: null })
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'identity'])
          .doUpdateSet({
            email: row.email,
            role: row.role,
            invited_by: row.invited_by,
            invited_at: row.invited_at,
            invite_expires_at: row.invite_expires_at,
          })
          .where('members.state', '=', 'pending'),
      )
      .returningAll()
      .executeTakeFirst();
  }

  activateMember(
    accountId: string,
    identity: string,
    stamp: { added_at: Date; min_age_ms: number | null; eligible_at: Date },
  ): Promise<MemberRow> {
    return this.db
      .updateTable('members')
      .set({ ...stamp, state: 'active', invite_expires_at: null })
      .where('account_id', '=', accountId)
      .where('identity', '=', identity)
      .where('state', '=', 'pending')
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  updateMemberRole(accountId: string, identity: string, role: AccountRole): Promise<MemberRow> {
    return this.db
      .updateTable('members')
      .set({ role })
      .where('account_id', '=', accountId)
      .where('identity', '=', identity)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async deleteMember(accountId: string, identity: string): Promise<void> {
    await this.db.deleteFrom('members').where('account_id', '=', accountId).where('identity', '=', identity).execute();
  }

  async deleteAllMembers(accountId: string): Promise<void> {
    await this.db.deleteFrom('members').where('account_id', '=', accountId).execute();
  }

  /** Deletes the account's pending invites that expired before `now`. */
  async deleteExpiredInvites(accountId: string, now: Date): Promise<void> {
    await this.db
      .deleteFrom('members')
      .where('account_id', '=', accountId)
      .where('state', '=', 'pending')
      .where('invite_expires_at', '<', now)
      .execute();
  }

  /** Active members and unexpired invites: active first, then by identity. */
  listMembers(accountId: string, now: Date): Promise<MemberRow[]> {
    return this.db
      .selectFrom('members')
      .selectAll()
      .where('account_id', '=', accountId)
      .where((eb) => eb.or([eb('state', '=', 'active'), eb('invite_expires_at', '>=', now)]))
      .orderBy('state')
      .orderBy('identity')
      .execute();
  }
}
