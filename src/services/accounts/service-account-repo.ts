import { sql, type Kysely, type Selectable } from 'kysely';
import type { AccountRole, Database, ServiceAccountsTable } from '../../core/db/index.ts';

export type ServiceAccountRow = Selectable<ServiceAccountsTable>;

/** Advisory-lock space of identity-level locks: membership and service-account changes of one identity take turns. */
export const IDENTITY_LOCK_SPACE = 7_242_015;

/** Takes the transaction-scoped lock of one identity (see IDENTITY_LOCK_SPACE). */
export async function lockIdentity(db: Kysely<Database>, identity: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${IDENTITY_LOCK_SPACE}, hashtext(${identity}))`.execute(db);
}

/** The account of an identity's service account, while that account is active; else undefined. */
export async function serviceAccountOwner(db: Kysely<Database>, identity: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('service_accounts as s')
    .innerJoin('accounts as a', 'a.account_id', 's.account_id')
    .select('s.account_id')
    .where('s.identity', '=', identity)
    .where('a.status', '=', 'active')
    .executeTakeFirst();
  return row?.account_id;
}

/** The service accounts' SQL; inside `transaction()` only the repo handed to the callback may be used. */
export class ServiceAccountRepo {
  constructor(private readonly db: Kysely<Database>) {}

  transaction<T>(fn: (repo: ServiceAccountRepo) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => fn(new ServiceAccountRepo(trx)));
  }

  /** The account's status and plan; `lock` takes its row lock, which serialises adds against the quota. */
  findAccount(accountId: string, lock = false) {
    let query = this.db.selectFrom('accounts').select(['account_id', 'status', 'plan']).where('account_id', '=', accountId);
    if (lock) query = query.forUpdate();
    return query.executeTakeFirst();
  }

  lockIdentity(identity: string): Promise<void> {
    return lockIdentity(this.db, identity);
  }

  /** The identity's active membership (any account), or its pending invite to `accountId`. */
  membershipOf(identity: string, accountId: string): Promise<{ account_id: string; role: AccountRole; state: 'pending' | 'active' } | undefined> {
    return this.db
      .selectFrom('members')
      .select(['account_id', 'role', 'state'])
      .where('identity', '=', identity)
      .where((eb) => eb.or([eb('state', '=', 'active'), eb('account_id', '=', accountId)]))
      .orderBy('state')
      .executeTakeFirst();
  }

  find(identity: string): Promise<ServiceAccountRow | undefined> {
    return this.db.selectFrom('service_accounts').selectAll().where('identity', '=', identity).executeTakeFirst();
  }

  list(accountId: string): Promise<ServiceAccountRow[]> {
    return this.db.selectFrom('service_accounts').selectAll().where('account_id', '=', accountId).orderBy('identity').execute();
  }

  async count(accountId: string): Promise<number> {
    const row = await this.db
      .selectFrom('service_accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  insert(row: { identity: string; account_id: string; added_by: string; added_at: Date }): Promise<ServiceAccountRow> {
    return this.db.insertInto('service_accounts').values(row).returningAll().executeTakeFirstOrThrow();
  }

  /** Whether a row was deleted. */
  async delete(accountId: string, identity: string): Promise<boolean> {
    const rows = await this.db.deleteFrom('service_accounts').where('account_id', '=', accountId).where('identity', '=', identity).returning('identity').execute();
    return rows.length > 0;
  }

  /** Sets the account's plan (null: the default plan); whether the account exists. */
  async setPlan(accountId: string, plan: string | null): Promise<boolean> {
    const rows = await this.db.updateTable('accounts').set({ plan }).where('account_id', '=', accountId).returning('account_id').execute();
    return rows.length > 0;
  }
}
