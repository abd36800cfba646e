import { sql, type Selectable } from 'kysely';
import type { Db, MaterializedViewsTable, PermissionPair, RefreshMode } from '../../../core/db/index.ts';
import type { Executor } from '../../../core/catalog/index.ts';
import type { JobRepo, JobRow, NewJob } from '../repo.ts';

export type MaterializedViewRow = Selectable<MaterializedViewsTable>;

/** The source snapshots a refresh read, by dataset id (null: the source had none). */
export type RefreshedFrom = Record<string, number | null>;

/** What causes a refresh; it names the snapshot a refresh commits ("refresh (schedule)"). */
export type RefreshTrigger = 'create' | 'manual' | 'schedule' | 'on commit';

export interface MaterializedViewDefinition {
  dataset_id: string;
  definition: string;
  refresh_mode: RefreshMode;
  refresh_every_ms: number | null;
  source_ids: string[];
  sources: string[];
  owner: string;
  owner_permissions: PermissionPair[];
}

/**
 * The materialized views' definitions and schedule (table materialized_views), and their refresh jobs:
 * a job whose `refresh_of` names the view. The partial unique index on jobs (refresh_of) WHERE status
 * IN ('queued', 'running') keeps at most one refresh of a view in progress, across every process.
 */
export class MaterializedViewRepo {
  constructor(
    private readonly db: Db,
    private readonly jobs: JobRepo,
  ) {}

  get(datasetId: string): Promise<MaterializedViewRow | undefined> {
    return this.db.kysely.selectFrom('materialized_views').selectAll().where('dataset_id', '=', datasetId).executeTakeFirst();
  }

  /** Creates or replaces a view's definition; a REFRESH EVERY view is next due one period from now. */
  async put(view: MaterializedViewDefinition): Promise<void> {
    const row = {
      ...view,
      source_ids: JSON.stringify(view.source_ids),
      sources: JSON.stringify(view.sources),
      owner_permissions: JSON.stringify(view.owner_permissions),
      next_refresh_at: view.refresh_every_ms === null ? null : sql<Date>`now() + ${view.refresh_every_ms}::float8 * interval '1 millisecond'`,
      updated_at: sql<Date>`now()`,
    };
    await this.db.kysely
      .insertInto('materialized_views')
      .values(row as never)
      .onConflict((oc) => oc.column('dataset_id').doUpdateSet(row as never))
      .execute();
  }

  async delete(datasetId: string): Promise<void> {
    await this.db.kysely.deleteFrom('materialized_views').where('dataset_id', '=', datasetId).execute();
  }

  /**
   * Claims the REFRESH EVERY views that are due, moving each one's next_refresh_at on by its period
   * in the same statement (compare-and-set): of several schedulers ticking at once, each due view is
   * claimed by exactly one.
   */
  async claimDue(limit = 100): Promise<MaterializedViewRow[]> {
    const result = await sql<MaterializedViewRow>`
      UPDATE materialized_views m
      SET next_refresh_at = now() + m.refresh_every_ms::float8 * interval '1 millisecond'
      FROM (
        SELECT dataset_id FROM materialized_views
        WHERE refresh_mode = 'every' AND next_refresh_at <= now()
        ORDER BY next_refresh_at LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      ) due
      WHERE m.dataset_id = due.dataset_id AND m.next_refresh_at <= now()
      RETURNING m.*`.execute(this.db.kysely);
    return result.rows;
  }

  /** The REFRESH ON COMMIT views that read `datasetId`. */
  dependents(datasetId: string): Promise<MaterializedViewRow[]> {
    return this.db.kysely
      .selectFrom('materialized_views')
      .selectAll()
      .where('refresh_mode', '=', 'on_commit')
      .where(sql<boolean>`source_ids @> jsonb_build_array(${datasetId}::text)`)
      .execute();
  }

  /** The refresh of a view queued or running now, if any. */
  inProgress(datasetId: string): Promise<JobRow | undefined> {
    return this.db.kysely.selectFrom('jobs').selectAll().where('refresh_of', '=', datasetId).where('status', 'in', ['queued', 'running']).executeTakeFirst();
  }

  /**
   * Queues a refresh of the view unless one is queued or running already (the unique index decides,
   * so two processes asking at once get one job): the new job, or the one in progress.
   */
  async enqueueRefresh(job: NewJob & { refresh_of: string }): Promise<{ job: JobRow; created: boolean }> {
    for (;;) {
      const inserted = await this.jobs.enqueueRefresh(job);
      if (inserted) return { job: inserted, created: true };
      const existing = await this.inProgress(job.refresh_of);
      // The one in progress finished between the insert and the read: try again.
      if (existing) return { job: existing, created: false };
    }
  }

  /** Cancels a view's queued refresh and flags a running one (DROP MATERIALIZED VIEW). */
  async cancelRefreshes(datasetId: string): Promise<string[]> {
    const running = await this.db.kysely.selectFrom('jobs').select('execution_id').where('refresh_of', '=', datasetId).where('status', 'in', ['queued', 'running']).execute();
    for (const { execution_id } of running) await this.jobs.requestCancel(execution_id);
    return running.map((r) => r.execution_id);
  }

  /**
   * Records how a refresh ended (a failed one leaves the view's snapshot as it was) and the source
   * snapshots it read (`from`, see MaterializedViews.behind).
   */
  async recordRefresh(
    datasetId: string,
    executionId: string,
    outcome: { status: 'succeeded' | 'failed'; error?: string; from: RefreshedFrom },
    executor: Executor = this.db.kysely,
  ): Promise<void> {
    await executor
      .updateTable('materialized_views')
      .set({ last_refresh_at: sql<Date>`now()`, last_refresh_job: executionId, last_refresh_status: outcome.status, last_refresh_error: outcome.error ?? null, refreshed_from: JSON.stringify(outcome.from) })
      .where('dataset_id', '=', datasetId)
      .execute();
  }

  /** Records the source snapshots a refresh that was stopped (cancelled, timed out) had read, so it is not queued again for them. */
  async recordSources(datasetId: string, from: RefreshedFrom): Promise<void> {
    await this.db.kysely.updateTable('materialized_views').set({ refreshed_from: JSON.stringify(from) }).where('dataset_id', '=', datasetId).execute();
  }

  /**
   * The REFRESH ON COMMIT views whose last refresh attempt recorded the source snapshots it read, with
   * no refresh queued or running (MaterializedViews.tick compares them with the sources' current ones).
   */
  idleOnCommit(): Promise<MaterializedViewRow[]> {
    return this.db.kysely
      .selectFrom('materialized_views as m')
      .selectAll('m')
      .where('m.refresh_mode', '=', 'on_commit')
      .where('m.refreshed_from', 'is not', null)
      .where(({ exists, not, selectFrom }) => not(exists(selectFrom('jobs as j').select(sql`1`.as('one')).whereRef('j.refresh_of', '=', 'm.dataset_id').where('j.status', 'in', ['queued', 'running']))))
      .execute();
  }
}
