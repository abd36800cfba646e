import type { Kysely, Selectable } from 'kysely';
import type { AccountDomainsTable, Database, DomainCheckOutcome } from '../../core/db/index.ts';

export type DomainRow = Selectable<AccountDomainsTable>;

/** The partial unique index that lets at most one account hold a domain verified. */
export const ONE_VERIFIED_INDEX = 'account_domains_one_verified';

export interface CheckRecord {
  now: Date;
  outcome: DomainCheckOutcome;
  error: string | null;
  found: string[];
}

/** SQL of account_domains; over the root Kysely instance or a transaction (`transaction()`). */
export class DomainRepo {
  constructor(private readonly db: Kysely<Database>) {}

  transaction<T>(fn: (repo: DomainRepo) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => fn(new DomainRepo(trx)));
  }

  list(accountId: string): Promise<DomainRow[]> {
    return this.db.selectFrom('account_domains').selectAll().where('account_id', '=', accountId).orderBy('domain').execute();
  }

  /** The account's claim; `lock` takes its row lock (FOR UPDATE), serialising verifies of one claim. */
  find(accountId: string, domain: string, lock = false): Promise<DomainRow | undefined> {
    let query = this.db.selectFrom('account_domains').selectAll().where('account_id', '=', accountId).where('domain', '=', domain);
    if (lock) query = query.forUpdate();
    return query.executeTakeFirst();
  }

  /** The active account other than `accountId` that has `domain` verified, if any. */
  async verifiedElsewhere(domain: string, accountId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('account_domains as d')
      .innerJoin('accounts as a', 'a.account_id', 'd.account_id')
      .select('d.account_id')
      .where('d.domain', '=', domain)
      .where('d.verified_at', 'is not', null)
      .where('d.account_id', '<>', accountId)
      .where('a.status', '=', 'active')
      .executeTakeFirst();
    return row?.account_id;
  }

  /** Whether the active account has the domain verified. */
  async isVerified(accountId: string, domain: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('account_domains as d')
      .innerJoin('accounts as a', 'a.account_id', 'd.account_id')
      .select('d.domain')
      .where('d.account_id', '=', accountId)
      .where('d.domain', '=', domain)
      .where('d.verified_at', 'is not', null)
      .where('a.status', '=', 'active')
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Inserts a claim unless the account already holds one; returns the account's claim either way. */
  async claim(row: { account_id: string; domain: string; token: string; claimed_by: string; claimed_at: Date }): Promise<DomainRow> {
    await this.db
      .insertInto('account_domains')
      .values(row)
      .onConflict((oc) => oc.columns(['account_id', 'domain']).doNothing())
      .execute();
    return (await this.find(row.account_id, row.domain))!;
  }

  /** Drops verifications held by deactivated accounts, so they stop blocking the domain. */
  async dropVerifiedOfInactive(domain: string): Promise<void> {
    await this.db
      .deleteFrom('account_domains')
      .where('domain', '=', domain)
      .where('verified_at', 'is not', null)
      .where('account_id', 'in', (qb) => qb.selectFrom('accounts').select('account_id').where('status', '<>', 'active'))
      .execute();
  }

  /** Records a check; a successful one stamps verified_at/verified_by the first time only. */
  recordCheck(accountId: string, domain: string, check: CheckRecord, verifiedBy?: string): Promise<DomainRow | undefined> {
    let query = this.db
      .updateTable('account_domains')
      .set({
        last_checked_at: check.now,
        last_outcome: check.outcome,
        last_error: check.error,
        last_found: JSON.stringify(check.found),
      })
      .where('account_id', '=', accountId)
      .where('domain', '=', domain);
    if (verifiedBy !== undefined) {
      query = query.set((eb) => ({
        verified_at: eb.fn.coalesce('verified_at', eb.val(check.now)),
        verified_by: eb.fn.coalesce('verified_by', eb.val(verifiedBy)),
      }));
    }
    return query.returningAll().executeTakeFirst();
  }

  async release(accountId: string, domain: string): Promise<DomainRow | undefined> {
    return this.db.deleteFrom('account_domains').where('account_id', '=', accountId).where('domain', '=', domain).returningAll().executeTakeFirst();
  }
}
