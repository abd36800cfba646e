import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import type { Catalog, Dataset } from '../../../core/catalog/index.ts';
import type { ColumnStats } from '../../../core/db/index.ts';
import { normalizeType, SandboxInterruptedError, SandboxQueryError, QueryEngineCrashedError, type InterruptReason, type QueryEngine, type QueryRun } from '../../../core/engine/index.ts';
import { isAppError, scrubServerPaths } from '../../../core/errors/index.ts';
import { silentLogger, type Logger } from '../../../core/logger.ts';
import type { BlobStore } from '../../../core/storage/index.ts';
import type { JobFailure, JobFailureCode } from '../errors.ts';
import type { QueryPlanner } from '../planner.ts';
import type { FinishedColumns, JobRepo, JobRow } from '../repo.ts';
import type { JobOutcome, JobRunner } from '../worker.ts';
import type { MaterializedViewRepo, RefreshedFrom, RefreshTrigger } from './repo.ts';

export interface RefreshDeps {
  views: MaterializedViewRepo;
  catalog: Catalog;
  planner: QueryPlanner;
  blobs: BlobStore;
  /** The engine refreshes run on (the jobs' shared one). */
  engine(): QueryEngine;
  /** Per-column min, max and null count of a Parquet file (the upload path's statistics). */
  statistics(file: string, columns: { name: string; type: string }[]): Promise<Record<string, ColumnStats>>;
  /** Writes the one-row `status` result of a job, returning its blob key. */
  writeResult(executionId: string, message: string): Promise<string>;
  /** Records a job's end in the given transaction (JobRepo.finish): undefined when it is no longer this worker's. */
  finish: JobRepo['finish'];
  /** Called after a refresh committed a snapshot of the view (ON COMMIT views over it are then queued). */
  committed(datasetId: string): Promise<void>;
  /** Tests: runs just before the commit (throwing there is a crash mid-refresh). */
  beforeCommit?: (job: JobRow) => Promise<void>;
  log?: Logger;
}

const STATUS_COLUMNS = [{ name: 'status', type: 'VARCHAR' }];

/** Why the refresh stopped being this worker's (recovered or cancelled meanwhile): nothing is committed then. */
class NotOurs extends Error {}

/** The trigger a refresh job was queued by (kept in its client_info). */
export function triggerOf(job: Pick<JobRow, 'client_info'>): RefreshTrigger {
  const value = job.client_info?.refresh;
  return value === 'schedule' || value === 'on commit' || value === 'create' ? value : 'manual';
}

/**
 * Runs the refresh job of a materialized view: plans the stored definition with the view owner's
 * grants as narrowed when the view was created, runs it on the query engine into a Parquet file,
 * stores the file under the view's lake path and commits it as an 'overwrite' snapshot whose
 * parent must still be the one the refresh started from. The commit is the only step anyone sees: a
 * refresh that fails or stops before it leaves the view's last snapshot as it was. The commit also
 * checks, under a lock of the job's row, that the job is still this worker's (not re-queued after a
 * lost heartbeat), so a refresh runs at most once to its commit.
 */
export class MaterializedViewRefresher {
  private readonly log: Logger;

  constructor(private readonly deps: RefreshDeps) {
    this.log = deps.log ?? silentLogger;
  }

  start(job: JobRow): { done: Promise<JobOutcome>; cancel(reason: 'cancelled' | 'timeout'): void } {
    let stop: InterruptReason | undefined;
    let run: QueryRun | undefined;
    const done = this.run(job, () => stop, (r) => (run = r));
    return {
      done,
      cancel: (reason) => {
        stop ??= reason;
        run?.interrupt(reason);
      },
    };
  }

  private async run(job: JobRow, stopReason: () => InterruptReason | undefined, started: (r: QueryRun) => void): Promise<JobOutcome> {
    const datasetId = job.refresh_of!;
    const [view, dataset] = await Promise.all([this.deps.views.get(datasetId), this.deps.catalog.findDataset(datasetId)]);
    if (!view || !dataset) return { status: 'failed', error: { code: 'MATERIALIZED_VIEW_NOT_FOUND', message: 'The materialized view was dropped before its refresh ran' } };
    const label = `${dataset.workspace}.${dataset.collection}.${dataset.name}`;
    // The source snapshots this attempt read (before it planned: the sources' current ones), recorded
    // however it ends, so the scheduler queues the view again only once a source moves on (MaterializedViews.behind).
    let from: RefreshedFrom | undefined;
    const sources = async () => from ?? (from = Object.fromEntries(await this.deps.catalog.currentSnapshotsOf(view.source_ids)));
    const fail = async (code: JobFailureCode, message: string): Promise<JobOutcome> => {
      const error: JobFailure = { code, message: scrubServerPaths(message) };
      await this.deps.views.recordRefresh(datasetId, job.execution_id, { status: 'failed', error: `${code}: ${error.message}`, from: await sources() });
      return { status: 'failed', error };
    };
    const stopped = async (reason: InterruptReason): Promise<JobOutcome> => {
      await this.deps.views.recordSources(datasetId, await sources());
      return reason === 'cancelled'
        ? { status: 'cancelled', error: { code: 'CANCELLED', message: 'The refresh was cancelled; the view keeps its last snapshot' } }
        : { status: 'failed', error: { code: 'JOB_TIMEOUT', message: `The refresh ran longer than its ${Math.round(job.timeout_ms / 1000)} s limit; the view keeps its last snapshot` } };
    };

    const parent = dataset.current_snapshot_id;
    // The sources' snapshots are leased for the refresh, so EXPIRE SNAPSHOTS cannot take them meanwhile (docs/lifecycle.md).
    const lease = { holder: `job:${job.execution_id}`, ttlMs: job.timeout_ms + 5 * 60_000 };
    // Not awaited: nothing waits for it (a lease left behind only keeps snapshots until it expires).
    const releaseLease = () => void this.deps.planner.releaseLeases(lease.holder).catch((error: unknown) => this.log.warn({ err: error, execution_id: job.execution_id }, 'could not release the leases of a refresh; they expire by themselves'));
    const prepared = await this.deps.planner.prepare({ identity: view.owner, permissions: view.owner_permissions }, view.definition, {}, { withFiles: true, lease });
    if (prepared.ok) from = prepared.query.current;
    else {
      releaseLease();
      return fail(prepared.error.code, `Refresh of ${label} failed (it runs with the grants of its owner ${view.owner}; the view keeps its last snapshot): ${prepared.error.message}`);
    }
    let local: string | undefined = await this.deps.blobs.tempPath('.parquet');
    let key: string | undefined;
    let resultKey: string | undefined;
    try {
      const early = stopReason();
      if (early) return await stopped(early);
      // The snapshot's id is taken while the query runs, so the status line naming it is written beside the data.
      const reservedId = this.deps.catalog.reserveSnapshotId();
      reservedId.catch(() => undefined); // awaited below
      const run = this.deps.engine().run({ identity: view.owner, views: prepared.query.views, params: prepared.query.params, sql: prepared.query.sql, resultPath: local });
      started(run);
      const result = await run.done;
      const late = stopReason();
      if (late) return await stopped(late);
      let columns = dataset.columns;
      const changed = columnChange(dataset, result.columns);
      if (changed && parent !== null) return fail('REFRESH_FAILED', `Refresh of ${label} failed: ${changed}; re-create it with CREATE OR REPLACE MATERIALIZED VIEW (the view keeps its last snapshot)`);
      if (changed) {
        // Before the first snapshot the view takes the columns as the Parquet file holds them (e.g. HUGEINT is stored as DOUBLE).
        columns = result.columns.map((c) => ({ name: c.name, type: normalizeType(c.type) ?? c.type, nullable: true }));
        await this.deps.catalog.alterDataset(datasetId, { columns }, view.owner);
      }
      const snapshotId = await reservedId;
      const file = local;
      const storing = async () => {
        const [stats, { size }] = await Promise.all([this.deps.statistics(file, columns), fs.stat(file)]);
        key = `lake/${dataset.workspace}/${dataset.collection}/${dataset.name}/${crypto.randomUUID()}.parquet`;
        await this.deps.blobs.putFile(key, file);
        local = undefined;
        return { path: key, row_count: result.rowCount, size_bytes: size, column_stats: stats };
      };
      const writing = async () => (resultKey = await this.deps.writeResult(job.execution_id, `Refreshed ${label}: snapshot ${snapshotId} with ${result.rowCount} rows`));
      const [stored, written] = await Promise.allSettled([storing(), writing()]);
      if (stored.status === 'rejected') throw stored.reason;
      if (written.status === 'rejected') throw written.reason;
      await this.deps.beforeCommit?.(job);
      const outcome = { status: 'succeeded', result_key: written.value, result_bytes: 0, row_count: 1, columns: STATUS_COLUMNS } as const;
      let recorded: FinishedColumns | undefined;
      await this.deps.catalog.commitWith(
        {
          dataset: datasetId,
          snapshotId,
          expectedParent: parent,
          operation: parent === null ? 'create' : 'overwrite',
          removeAllFiles: parent !== null,
          author: view.owner,
          message: `refresh (${triggerOf(job)})`,
          addFiles: [stored.value],
        },
        {
          before: async (trx) => {
            const row = await trx.selectFrom('jobs').select(['status', 'worker_id', 'cancel_requested']).where('execution_id', '=', job.execution_id).forUpdate().executeTakeFirst();
            if (!row || row.status !== 'running' || row.worker_id !== job.worker_id || row.cancel_requested) throw new NotOurs();
          },
          // The view's record and the job's end are written with the snapshot: all three or none.
          within: async (trx) => {
            await this.deps.views.recordRefresh(datasetId, job.execution_id, { status: 'succeeded', from: prepared.query.current }, trx);
            recorded = await this.deps.finish(job.execution_id, job.worker_id!, outcome, trx);
          },
        },
      );
      key = undefined; // the catalog names it now
      resultKey = undefined; // and the job
      void this.deps.committed(datasetId).catch((error: unknown) => this.log.error({ err: error, dataset_id: datasetId }, 'could not queue the refreshes of views over a refreshed view'));
      return { ...outcome, recorded };
    } catch (error) {
      if (error instanceof NotOurs) return await stopped(stopReason() ?? 'cancelled');
      if (error instanceof SandboxInterruptedError) return await stopped(stopReason() ?? (error.reason === 'too_large' ? 'timeout' : error.reason));
      if (error instanceof SandboxQueryError) return fail('QUERY_ERROR', `Refresh of ${label} failed; the view keeps its last snapshot: ${error.message}`);
      // As for queries: the engine died under it once, it runs again; twice, it is not run again.
      if (error instanceof QueryEngineCrashedError) return job.attempts > 1 ? fail('ENGINE_CRASHED', `Refresh of ${label} stopped the query engine twice; the view keeps its last snapshot`) : { status: 'requeue', reason: error.message };
      if (isAppError(error, 'COMMIT_CONFLICT')) return fail('COMMIT_CONFLICT', `Refresh of ${label} was not committed: ${(error as Error).message}`);
      if (isAppError(error, 'DATASET_NOT_FOUND')) return { status: 'failed', error: { code: 'MATERIALIZED_VIEW_NOT_FOUND', message: `${label} was dropped while it was being refreshed` } };
      throw error;
    } finally {
      releaseLease();
      if (local) await fs.rm(local, { force: true });
      for (const leftover of [key, resultKey]) {
        if (leftover) await this.deps.blobs.delete(leftover).catch((error: unknown) => this.log.warn({ err: error, key: leftover }, 'could not remove a file of a refresh that was not committed'));
      }
    }
  }
}

/** What differs between the view's columns and a refresh's result (a source changed), or undefined. */
function columnChange(dataset: Dataset, columns: { name: string; type: string }[]): string | undefined {
  const want = dataset.columns.map((c) => `${c.name} ${c.type}`);
  const got = columns.map((c) => `${c.name} ${normalizeType(c.type) ?? c.type}`);
  if (want.join(', ') === got.join(', ')) return undefined;
  return `its definition now returns (${got.join(', ')}) where the view has (${want.join(', ')})`;
}

/** The job runner of a worker pool: refreshes of materialized views here, every other job by `queries`. */
export class RefreshingJobRunner implements JobRunner {
  constructor(
    readonly queries: JobRunner,
    private readonly refresher: MaterializedViewRefresher,
  ) {}

  start(job: JobRow) {
    return job.refresh_of ? this.refresher.start(job) : this.queries.start(job);
  }

  close(): Promise<void> {
    return this.queries.close?.() ?? Promise.resolve();
  }
}
