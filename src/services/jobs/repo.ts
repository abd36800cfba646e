import { sql, type InsertObject, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { Database, Db, JobsTable, VariablesTable } from '../../core/db/index.ts';
import type { ParamValue } from './types.ts';
import type { JobFailure } from './errors.ts';

export type JobRow = Selectable<JobsTable>;
/** What a finish changes on a job's row. */
export type FinishedColumns = Pick<JobRow, 'status' | 'error' | 'result_key' | 'row_count' | 'columns' | 'finished_at'>;
export type VariableRow = Selectable<VariablesTable>;
/** A job as submitted: its request parameters (saved variables are merged in by the insert). */
export type NewJob = Omit<Insertable<JobsTable>, 'parameters' | 'status'> & { parameters: Record<string, ParamValue> };

export const IN_PROGRESS = ['queued', 'running'] as const;

/**
 * Every timestamp of a job comes from one clock, the metadata database's (`now()`, the time its
 * statement's transaction started): created_at by the column's default, started_at, heartbeat_at and
 * finished_at by the statements below, whichever process or host runs them. (The server's clock,
 * read before a statement waits its turn, could be behind the database's time of an insert that
 * went first.) A job is claimed or finished only by a statement that sees it inserted (or claimed),
 * but on PostgreSQL that statement's transaction may have started a moment before the insert's did:
 * its now() is then earlier. So each later timestamp is taken as `now()` but never before the ones
 * before it (`NOW_AFTER_EARLIER`): no timing is negative.
 */
const NOW = sql<Date>`now()`;
/** now(), but not before the job's created_at and started_at (in an UPDATE of jobs; greatest() skips NULLs). */
const NOW_AFTER_EARLIER = sql<Date>`greatest(now(), jobs.created_at, jobs.started_at)`;
/** The database's time `ms` milliseconds ago. */
const ago = (ms: number) => sql<Date>`now() - ${ms}::float8 * interval '1 millisecond'`;

export class JobRepo {
  constructor(private readonly db: Db) {}

  /** Inserts a job that already ran to its end (a Lakeport statement) for `ranForMs`, ending now. */
  async insertFinished(row: Omit<Insertable<JobsTable>, 'created_at' | 'started_at' | 'finished_at'>, ranForMs: number): Promise<JobRow> {
    const started = ago(Math.max(0, ranForMs));
    return this.db.kysely.insertInto('jobs').values({ ...row, created_at: started, started_at: started, finished_at: NOW }).returningAll().executeTakeFirstOrThrow();
  }

  /**
   * Queues a job in one statement: its parameters are the owner's saved variables overridden by
   * `parameters` (read inside the insert, so no separate read of the variables).
   */
  async enqueue(row: NewJob): Promise<Pick<JobRow, 'execution_id' | 'status'>> {
    return this.db.kysely.insertInto('jobs').values(this.newJob(row, { status: 'queued' })).returning(['execution_id', 'status']).executeTakeFirstOrThrow();
  }

  /**
   * Queues the refresh of a materialized view, unless one of it is queued or running already (the
   * partial unique index jobs_one_refresh_in_progress): the new row, or undefined.
   */
  async enqueueRefresh(row: NewJob & { refresh_of: string }): Promise<JobRow | undefined> {
    const result = await sql<JobRow>`
      INSERT INTO jobs (execution_id, owner, sql_text, parameters, client_info, permissions, status, timeout_ms, refresh_of)
      VALUES (${row.execution_id}, ${row.owner}, ${row.sql_text}, ${JSON.stringify(row.parameters)}::jsonb, ${row.client_info ?? null}::jsonb, ${row.permissions}::jsonb, 'queued', ${row.timeout_ms}, ${row.refresh_of})
      ON CONFLICT (refresh_of) WHERE refresh_of IS NOT NULL AND status IN ('queued', 'running') DO NOTHING
      RETURNING *`.execute(this.db.kysely);
    return result.rows[0];
  }

  /** As enqueue, but the job is inserted already claimed by `workerId` (running, as claim() leaves it): one statement instead of two. */
  async enqueueClaimed(row: NewJob, workerId: string): Promise<JobRow> {
    // created_at and started_at are the same now(): queued_ms is 0.
    const claimed = { status: 'running' as const, worker_id: workerId, created_at: NOW, started_at: NOW, heartbeat_at: NOW, attempts: 1 };
    return this.db.kysely.insertInto('jobs').values(this.newJob(row, claimed)).returningAll().executeTakeFirstOrThrow();
  }

  private newJob(row: NewJob, state: Pick<Insertable<JobsTable>, 'status'> & Partial<InsertObject<Database, 'jobs'>>): InsertObject<Database, 'jobs'> {
    const saved = sql`coalesce((SELECT jsonb_object_agg(name, value) FROM variables WHERE owner = ${row.owner}), '{}'::jsonb)`;
    return { ...row, ...state, parameters: sql`${saved} || ${JSON.stringify(row.parameters)}::jsonb` };
  }

  get(executionId: string): Promise<JobRow | undefined> {
    return this.db.kysely.selectFrom('jobs').selectAll().where('execution_id', '=', executionId).executeTakeFirst();
  }

  /**
   * The caller's jobs, newest first; `status` or a text match narrows them, `narrowedOnly` leaves out
   * jobs submitted unnarrowed (`permissions` = []), and `after` continues after that job.
   */
  recent(owner: string, filter: { statuses?: string[]; text?: string; narrowedOnly?: boolean; after?: string }, limit: number): Promise<JobRow[]> {
    let query = this.db.kysely.selectFrom('jobs').selectAll().where('owner', '=', owner);
    if (filter.narrowedOnly) query = query.where(sql<boolean>`jsonb_array_length(permissions) > 0`);
    if (filter.after !== undefined) {
      // Compared with the row's own stored values, so no timestamp precision is lost on the way.
      query = query.where(sql<boolean>`(created_at, execution_id) < (SELECT j.created_at, j.execution_id FROM jobs j WHERE j.execution_id = ${filter.after})`);
    }
    if (filter.statuses) query = query.where('status', 'in', filter.statuses as JobRow['status'][]);
    if (filter.text !== undefined) {
      const pattern = `%${filter.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      query = query.where(sql<boolean>`sql_text ILIKE ${pattern} ESCAPE '\\'`);
    }
    return query.orderBy('created_at', 'desc').orderBy('execution_id', 'desc').limit(limit).execute();
  }

  /**
   * Claims (and starts) up to `limit` of the oldest queued jobs for a worker, in one statement;
   * concurrent workers skip each other's rows (`FOR UPDATE SKIP LOCKED`). Oldest first. Jobs of an
   * owner with `perOwner` jobs running already (anywhere) wait, so one identity cannot take every slot.
   */
  async claim(workerId: string, limit = 1, perOwner = 1_000_000): Promise<JobRow[]> {
    // `place`: the job's rank among its owner's queued jobs after the ones already running; a job
    // is taken only while its owner stays within `perOwner`. The pick is a CTE so it runs once:
    // as an `IN (subquery)` the planner may rescan it, and a rescan of LIMIT … SKIP LOCKED picks again.
    const result = await sql<JobRow>`
      WITH running AS (
        SELECT owner, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY owner
      ), eligible AS (
        SELECT q.execution_id, q.created_at
        FROM (SELECT execution_id, owner, created_at, row_number() OVER (PARTITION BY owner ORDER BY created_at) AS place FROM jobs WHERE status = 'queued') q
        LEFT JOIN running r ON r.owner = q.owner
        WHERE q.place + coalesce(r.n, 0) <= ${perOwner}
        ORDER BY q.created_at
        LIMIT ${limit}
      ), picked AS (
        SELECT execution_id FROM jobs WHERE execution_id IN (SELECT execution_id FROM eligible) AND status = 'queued' FOR UPDATE SKIP LOCKED
      )
      UPDATE jobs SET status = 'running', worker_id = ${workerId}, started_at = greatest(now(), jobs.created_at), heartbeat_at = greatest(now(), jobs.created_at), attempts = jobs.attempts + 1
      FROM picked WHERE jobs.execution_id = picked.execution_id
      RETURNING jobs.*`.execute(this.db.kysely);
    return result.rows.sort((a, b) => a.created_at.getTime() - b.created_at.getTime());
  }

  /** Puts a running job of this worker back in the queue (its engine died under it). */
  async requeue(executionId: string, workerId: string): Promise<boolean> {
    const row = await this.db.kysely
      .updateTable('jobs')
      .set({ status: 'queued', worker_id: null, heartbeat_at: null, started_at: null })
      .where('execution_id', '=', executionId)
      .where('worker_id', '=', workerId)
      .where('status', '=', 'running')
      .returning('execution_id')
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Bytes of the results `owner` keeps now. */
  async retainedResultBytes(owner: string): Promise<number> {
    const row = await this.db.kysely
      .selectFrom('jobs')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('result_bytes'), sql<number>`0`).as('bytes'))
      .where('owner', '=', owner)
      .where('result_key', 'is not', null)
      .executeTakeFirst();
    return Number(row?.bytes ?? 0);
  }

  /** Marks up to `limit` results finished more than `olderThanMs` ago as removed and returns their jobs and keys (the caller deletes the files). */
  async expireResults(olderThanMs: number, limit: number): Promise<{ executionId: string; key: string }[]> {
    const rows = await this.db.kysely
      .updateTable('jobs')
      .set({ result_key: null, result_bytes: null, results_expired_at: NOW })
      .where('execution_id', 'in', (eb) => eb.selectFrom('jobs').select('execution_id').where('result_key', 'is not', null).where('finished_at', '<', ago(olderThanMs)).limit(limit))
      .returning((eb) => eb.ref('execution_id').as('id'))
      .execute();
    return rows.map((r) => ({ executionId: r.id, key: `results/${r.id}.parquet` }));
  }

  /** Whether any job is queued: a read, much cheaper than a claim that finds nothing. */
  /** Jobs queued and running in the whole cluster (each count through its partial index). */
  async active(): Promise<{ queued: number; running: number }> {
    const count = (status: 'queued' | 'running') => this.db.kysely.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', status).executeTakeFirstOrThrow();
    const [queued, running] = await Promise.all([count('queued'), count('running')]);
    return { queued: Number(queued.n), running: Number(running.n) };
  }

  async anyQueued(): Promise<boolean> {
    const row = await this.db.kysely.selectFrom('jobs').select('execution_id').where('status', '=', 'queued').limit(1).executeTakeFirst();
    return row !== undefined;
  }

  async heartbeat(workerId: string, executionIds: string[]): Promise<string[]> {
    if (executionIds.length === 0) return [];
    const rows = await this.db.kysely
      .updateTable('jobs')
      .set({ heartbeat_at: NOW })
      .where('worker_id', '=', workerId)
      .where('execution_id', 'in', executionIds)
      .where('status', '=', 'running')
      .returning(['execution_id', 'cancel_requested'])
      .execute();
    return rows.filter((r) => r.cancel_requested).map((r) => r.execution_id);
  }

  /**
   * Finishes a running job: the columns it changed (the rest of the row is as claimed), or undefined
   * when it is no longer this worker's (re-queued or cancelled meanwhile).
   */
  async finish(
    executionId: string,
    workerId: string,
    outcome: { status: 'succeeded' | 'failed' | 'cancelled'; error?: JobFailure; result_key?: string; result_bytes?: number; row_count?: number; columns?: { name: string; type: string }[] },
    executor: Kysely<Database> = this.db.kysely,
  ): Promise<FinishedColumns | undefined> {
    return executor
      .updateTable('jobs')
      .set({
        status: outcome.status,
        error: outcome.error ? JSON.stringify(outcome.error) : null,
        result_key: outcome.result_key ?? null,
        result_bytes: outcome.result_bytes ?? null,
        row_count: outcome.row_count ?? null,
        columns: outcome.columns ? JSON.stringify(outcome.columns) : null,
        finished_at: NOW_AFTER_EARLIER,
      })
      .where('execution_id', '=', executionId)
      .where('worker_id', '=', workerId)
      .where('status', '=', 'running')
      .returning(['status', 'error', 'result_key', 'row_count', 'columns', 'finished_at'])
      .executeTakeFirst();
  }

  /** Cancels a queued job at once, or flags a running one for its worker; returns the row after. */
  async requestCancel(executionId: string): Promise<JobRow | undefined> {
    await this.db.kysely
      .updateTable('jobs')
      .set({ status: 'cancelled', finished_at: NOW_AFTER_EARLIER, error: JSON.stringify({ code: 'CANCELLED', message: 'Cancelled before it started' } satisfies JobFailure) })
      .where('execution_id', '=', executionId)
      .where('status', '=', 'queued')
      .execute();
    await this.db.kysely.updateTable('jobs').set({ cancel_requested: true }).where('execution_id', '=', executionId).where('status', '=', 'running').execute();
    return this.get(executionId);
  }

  /**
   * Jobs whose worker stopped heart-beating more than `staleAfterMs` ago: re-queued while they have
   * attempts left, else failed. Returns how many of each.
   */
  async recoverStale(staleAfterMs: number, maxAttempts: number): Promise<{ requeued: number; failed: number }> {
    const staleBefore = ago(staleAfterMs);
    const requeued = await this.db.kysely
      .updateTable('jobs')
      .set({ status: 'queued', worker_id: null, heartbeat_at: null, started_at: null })
      .where('status', '=', 'running')
      .where('heartbeat_at', '<', staleBefore)
      .where('attempts', '<', maxAttempts)
      .where('cancel_requested', '=', false)
      .returning('execution_id')
      .execute();
    const failed = await this.db.kysely
      .updateTable('jobs')
      .set((eb) => ({
        status: eb.case().when('cancel_requested', '=', true).then(sql.lit('cancelled')).else(sql.lit('failed')).end() as never,
        finished_at: NOW_AFTER_EARLIER,
        error: JSON.stringify({ code: 'WORKER_LOST', message: 'The worker running this job stopped; it was not retried again' } satisfies JobFailure),
      }))
      .where('status', '=', 'running')
      .where('heartbeat_at', '<', staleBefore)
      .returning('execution_id')
      .execute();
    return { requeued: requeued.length, failed: failed.length };
  }

  // ── variables ──

  variables(owner: string): Promise<VariableRow[]> {
    return this.db.kysely.selectFrom('variables').selectAll().where('owner', '=', owner).orderBy('name').execute();
  }

  async putVariable(owner: string, name: string, type: VariableRow['type'], value: string | number | boolean): Promise<void> {
    await this.db.kysely
      .insertInto('variables')
      .values({ owner, name, type, value: JSON.stringify(value) })
      .onConflict((oc) => oc.columns(['owner', 'name']).doUpdateSet({ type, value: JSON.stringify(value), updated_at: new Date() }))
      .execute();
  }

  async deleteVariable(owner: string, name: string): Promise<void> {
    await this.db.kysely.deleteFrom('variables').where('owner', '=', owner).where('name', '=', name).execute();
  }
}
