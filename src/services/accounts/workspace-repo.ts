import type { Kysely, Selectable } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { WorkspaceStates } from '../../core/authz/index.ts';
import type { Database, Db, WorkspaceMemberGrant, WorkspacesTable } from '../../core/db/index.ts';
import type { WorkspaceDirectory, WorkspaceEntry } from './workspace-directory.ts';
import { accountsError } from './errors.ts';

export type WorkspaceRow = Selectable<WorkspacesTable>;

/** More writes (notifications) made in the transaction of a workspace change. */
export type AlsoWrite = (trx: Kysely<Database>, row: WorkspaceRow) => Promise<void>;

/**
 * How long a workspace's state (deleted or not) is kept for core/authz. This process's own soft
 * deletes, restores and purges drop it at once; another process's are seen within this bound.
 */
export const WORKSPACE_STATE_TTL_MS = 1_000;

/** The account service's own workspace records; other modules see them as a WorkspaceDirectory (and core/authz as WorkspaceStates). */
export class WorkspaceRepo implements WorkspaceDirectory, WorkspaceStates {
  /** Whether each workspace is soft-deleted, as last read (authorization asks on every request). */
  private readonly states = new LRUCache<string, boolean>({ max: 10_000, ttl: WORKSPACE_STATE_TTL_MS });
  /** Moves with every state change made here, so a read that overlapped one does not keep its answer. */
  private generation = 0;

  constructor(private readonly db: Db) {}

  get(name: string): Promise<WorkspaceRow | undefined> {
    return this.db.kysely.selectFrom('workspaces').selectAll().where('name', '=', name).executeTakeFirst();
  }

  async find(name: string): Promise<WorkspaceEntry | undefined> {
    const row = await this.db.kysely.selectFrom('workspaces').select(['name', 'billing_account', 'deleted_at']).where('name', '=', name).executeTakeFirst();
    return row && { name: row.name, billingAccount: row.billing_account, live: row.deleted_at === null };
  }

  /**
   * Which of the named workspaces are soft-deleted: core/authz's WorkspaceStates. Answers kept for
   * WORKSPACE_STATE_TTL_MS; the others in one query on the primary key.
   */
  async deletedAmong(names: readonly string[]): Promise<ReadonlySet<string>> {
    const deleted = new Set<string>();
    const unknown: string[] = [];
    for (const name of names) {
      const kept = this.states.get(name);
      if (kept === undefined) unknown.push(name);
      else if (kept) deleted.add(name);
    }
    if (unknown.length === 0) return deleted;
    const generation = this.generation;
    const rows = await this.db.kysely.selectFrom('workspaces').select('name').where('name', 'in', unknown).where('deleted_at', 'is not', null).execute();
    const found = new Set(rows.map((r) => r.name));
    for (const name of unknown) {
      if (found.has(name)) deleted.add(name);
      if (generation === this.generation) this.states.set(name, found.has(name));
    }
    return deleted;
  }

  /** Runs a change of the workspace's state; its kept state is dropped before and after (once committed). */
  private async changing<T>(name: string, change: () => Promise<T>): Promise<T> {
    const forget = () => {
      this.generation++;
      this.states.delete(name);
    };
    forget();
    try {
      return await change();
    } finally {
      forget();
    }
  }

  /**
   * Inserts the record unless one exists and returns whatever record is there afterwards. The
   * billing account is share-locked and must be active, so a concurrent account deletion (which
   * locks it for update) either sees this workspace or makes this insert fail.
   */
  async insertIfAbsent(row: { name: string; billing_account: string; members: WorkspaceMemberGrant[]; created_by: string }): Promise<WorkspaceRow> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const account = await trx.selectFrom('accounts').select('status').where('account_id', '=', row.billing_account).forShare().executeTakeFirst();
      if (account?.status !== 'active') throw accountsError('ACCOUNT_NOT_FOUND', `Account ${row.billing_account} does not exist`);
      await trx
        .insertInto('workspaces')
        .values({ ...row, members: JSON.stringify(row.members) })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
      return trx.selectFrom('workspaces').selectAll().where('name', '=', row.name).executeTakeFirstOrThrow();
    });
  }

  listByAccount(accountId: string): Promise<WorkspaceRow[]> {
    return this.db.kysely.selectFrom('workspaces').selectAll().where('billing_account', '=', accountId).orderBy('name').execute();
  }

  async softDelete(name: string, by: string, purgeAfter: Date, also?: AlsoWrite): Promise<WorkspaceRow> {
    return this.changing(name, () => this.db.kysely.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('workspaces')
        .set({ deleted_at: new Date(), deleted_by: by, purge_after: purgeAfter })
        .where('name', '=', name)
        .returningAll()
        .executeTakeFirstOrThrow();
      await also?.(trx, row);
      return row;
    }));
  }

  /** Clears the deletion, but only while the grace window is open (returns undefined otherwise). */
  async restore(name: string, now: Date, also?: AlsoWrite): Promise<WorkspaceRow | undefined> {
    return this.changing(name, () => this.db.kysely.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('workspaces')
        .set({ deleted_at: null, deleted_by: null, purge_after: null })
        .where('name', '=', name)
        .where('purge_after', '>', now)
        .returningAll()
        .executeTakeFirst();
      if (row) await also?.(trx, row);
      return row;
    }));
  }

  dueForPurge(now: Date): Promise<WorkspaceRow[]> {
    return this.db.kysely.selectFrom('workspaces').selectAll().where('purge_after', '<=', now).execute();
  }

  /** Removes the record and leaves a tombstone, in one transaction. */
  async purge(name: string, also?: AlsoWrite): Promise<void> {
    await this.changing(name, () => this.db.kysely.transaction().execute(async (trx) => {
      const row = await trx.deleteFrom('workspaces').where('name', '=', name).returningAll().executeTakeFirst();
      if (row) await also?.(trx, row);
      await trx
        .insertInto('purged_workspaces')
        .values({ name, purged_at: new Date() })
        .onConflict((oc) => oc.column('name').doUpdateSet({ purged_at: new Date() }))
        .execute();
    }));
  }

  async wasPurged(name: string): Promise<boolean> {
    return (await this.db.kysely.selectFrom('purged_workspaces').select('name').where('name', '=', name).executeTakeFirst()) !== undefined;
  }

  async clearTombstone(name: string): Promise<void> {
    await this.db.kysely.deleteFrom('purged_workspaces').where('name', '=', name).execute();
  }
}
