import fs from 'node:fs/promises';
import path from 'node:path';
import { QueryEngineCrashedError, SandboxInterruptedError, SandboxQueryError, type InterruptReason, type QueryEngine, type QueryRequest, type QueryRun } from '../../core/engine/index.ts';
import { readdirIfExists, statIfExists } from '../../core/files.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { ExternalReadFailure, type ExternalFetcher, type FetchedReads } from './external/index.ts';
import { jobError, type PreparedQuery, type QueryPlanner } from './planner.ts';
import type { JobRow } from './repo.ts';
import type { JobOutcome, JobRunner } from './worker.ts';

/** What a runner needs to read private storage: the fetcher and where jobs' copies go. */
export interface ExternalReading {
  fetcher: ExternalFetcher;
  /** Jobs' private directories of copied objects are made here (one per job, removed when it ends). */
  directory: string;
}

/** A job directory of copies left by a process that died is removed after this long. */
const STALE_COPIES_MS = 24 * 3600_000;

/** The engines jobs run on: one shared by all jobs, and a fresh one for a job under suspicion. */
export interface JobEngines {
  shared: QueryEngine;
  /** An engine of its own for one job (closed after it): a job that was running when its engine died. */
  isolated(): QueryEngine;
}

export interface ResultLimits {
  /** Bytes one job's result may take. */
  perJob: number;
  /** Bytes of results one identity may keep at once (checked when its job starts). */
  perIdentity: number;
  /** Bytes of results the identity keeps now. */
  retainedBy(owner: string): Promise<number>;
}

/** After a timeout or cancel, a job that does not stop within this long is finished anyway. */
const STOP_GRACE_MS = 2_000;

/**
 * Runs a claimed job: plan it for its owner, run it on a query engine (core/engine: a sandboxed
 * DuckDB holding only the views it may read, normally in a child process), publish the result once
 * as Parquet at `results/<execution_id>.parquet`.
 *
 * Private storage (READ_* with credentials): the objects are first copied into a directory of the
 * job's own (ExternalFetcher), the calls are rewritten to read those copies, and the engine gives
 * the job a sandbox of its own that may read exactly those files (never pooled). The directory is
 * removed when the job ends, however it ends: success, failure, cancel or timeout.
 *
 * The time limit covers the job's whole life: a job still busy STOP_GRACE_MS after its timeout or
 * cancel (planning, copying, a query that does not answer the interrupt) is finished then, and
 * whatever it produces later is thrown away.
 *
 * Poison jobs: a job whose engine process died under it is re-queued once ('requeue'); its next
 * attempt runs on an engine of its own, and if that one dies too the job fails with ENGINE_CRASHED
 * and is never run again. Jobs that only shared the engine with it succeed on their second run.
 */
/** A job's snapshot leases outlive its time limit by this much (the stop grace, copying results). */
const LEASE_MARGIN_MS = 5 * 60_000;

export class SandboxJobRunner implements JobRunner {
  private swept = false;

  constructor(
    private readonly planner: QueryPlanner,
    private readonly blobs: BlobStore,
    readonly engines: JobEngines,
    private readonly limits: ResultLimits,
    private readonly external?: ExternalReading,
    private readonly log: Logger = silentLogger,
  ) {}

  start(job: JobRow) {
    let run: QueryRun | undefined;
    let stop: InterruptReason | undefined;
    let giveUp: ((outcome: JobOutcome) => void) | undefined;
    const abort = new AbortController();
    const abandoned = new Promise<JobOutcome>((resolve) => (giveUp = resolve));
    const work = this.run(job, (r) => (run = r), () => stop, abort.signal);
    let settled = false;
    let givenUp = false;
    // What a job given up on produces later is thrown away; a failure then still goes to the log.
    work.then(
      () => (settled = true),
      (error: unknown) => {
        settled = true;
        if (givenUp) this.log.warn({ err: error, execution_id: job.execution_id }, 'a job finished without waiting for it failed afterwards');
      },
    );
    return {
      done: Promise.race([work, abandoned]),
      cancel: (reason: 'cancelled' | 'timeout') => {
        if (stop) return;
        stop = reason;
        abort.abort(new SandboxInterruptedError(reason));
        run?.interrupt(reason);
        setTimeout(() => {
          if (settled) return;
          givenUp = true;
          this.log.warn({ execution_id: job.execution_id, reason, grace_ms: STOP_GRACE_MS }, 'a job did not stop within its grace time; it is finished without waiting for it');
          giveUp?.(this.stopped(reason, job));
        }, STOP_GRACE_MS).unref();
      },
    };
  }

  /** Closes the shared engine (the worker pool is stopping). */
  close(): Promise<void> {
    return this.engines.shared.close();
  }

  private stopped(reason: InterruptReason, job: JobRow): JobOutcome {
    if (reason === 'cancelled') return { status: 'cancelled', error: { code: 'CANCELLED', message: 'Cancelled by its owner' } };
    if (reason === 'too_large') return { status: 'failed', error: { code: 'RESULT_TOO_LARGE', message: 'The result grew past the size limit and the job was stopped; select fewer rows or columns, or aggregate' } };
    return { status: 'failed', error: { code: 'JOB_TIMEOUT', message: `The job ran longer than its ${Math.round(job.timeout_ms / 1000)} s limit and was stopped` } };
  }

  private async run(job: JobRow, started: (r: QueryRun) => void, stopReason: () => InterruptReason | undefined, signal: AbortSignal): Promise<JobOutcome> {
    // The snapshots the job reads are leased for its run (expiring by themselves if this process dies).
    const lease = { holder: `job:${job.execution_id}`, ttlMs: job.timeout_ms + LEASE_MARGIN_MS };
    try {
      return await this.runLeased(job, lease, started, stopReason, signal);
    } finally {
      await this.planner.releaseLeases(lease.holder).catch((error: unknown) => this.log.warn({ err: error, execution_id: job.execution_id }, 'could not release the leases of a job; they expire by themselves'));
    }
  }

  private async runLeased(
    job: JobRow,
    lease: { holder: string; ttlMs: number },
    started: (r: QueryRun) => void,
    stopReason: () => InterruptReason | undefined,
    signal: AbortSignal,
  ): Promise<JobOutcome> {
    const prepared = await this.planner.prepare({ identity: job.owner, permissions: job.permissions }, job.sql_text, job.parameters, { withFiles: true, lease });
    if (!prepared.ok) return { status: 'failed', error: prepared.error };
    const { query } = prepared;
    const retained = await this.limits.retainedBy(job.owner);
    const room = this.limits.perIdentity - retained;
    if (room <= 0) {
      return { status: 'failed', error: { code: 'RESULT_QUOTA_EXCEEDED', message: `Your kept results take ${retained} bytes, the most one identity may keep; they are removed after their retention time` } };
    }
    const early = stopReason();
    if (early) return this.stopped(early, job);
    // A second attempt was running when its engine (or its whole process) died: it runs alone.
    const isolated = job.attempts > 1;
    const engine = isolated ? this.engines.isolated() : this.engines.shared;
    try {
      const request = { identity: job.owner, views: query.views, params: query.params, maxResultBytes: Math.min(this.limits.perJob, room) };
      if (query.external.length > 0) return await this.runExternal(job, query, engine, request, started, stopReason, signal);
      return await this.execute(job, engine, { ...request, sql: query.sql }, query, started, stopReason);
    } catch (error) {
      if (!(error instanceof QueryEngineCrashedError)) throw error;
      if (!isolated) return { status: 'requeue', reason: error.message };
      return { status: 'failed', error: { code: 'ENGINE_CRASHED', message: 'The query stopped the query engine twice and will not be run again' } };
    } finally {
      if (isolated) await engine.close();
    }
  }

  /** A job that reads private storage: copies, a sandbox that may read them, and cleanup whatever happens. */
  private async runExternal(
    job: JobRow,
    query: PreparedQuery,
    engine: QueryEngine,
    request: Omit<QueryRequest, 'sql' | 'resultPath'>,
    started: (r: QueryRun) => void,
    stopReason: () => InterruptReason | undefined,
    signal: AbortSignal,
  ): Promise<JobOutcome> {
    const first = query.external[0];
    if (!this.external) return { status: 'failed', error: jobError(job.sql_text, 'EXTERNAL_READ_NOT_AVAILABLE', 'This server does not read private storage', first.position) };
    await fs.mkdir(this.external.directory, { recursive: true });
    if (!this.swept) {
      this.swept = true;
      // Best effort: a directory that cannot be removed now is tried again at the next start.
      await this.sweepStaleCopies().catch((error: unknown) => this.log.warn({ err: error }, 'could not remove stale copies of private storage'));
    }
    const directory = await fs.mkdtemp(path.join(this.external.directory, `${job.execution_id}-`));
    try {
      let fetched: FetchedReads;
      try {
        fetched = await this.external.fetcher.fetch(query.external, directory, signal);
      } catch (error) {
        const reason = stopReason();
        if (reason) return this.stopped(reason, job);
        if (error instanceof ExternalReadFailure) return { status: 'failed', error: jobError(job.sql_text, error.code, error.message, error.position) };
        throw error;
      }
      const sql = query.render(fetched.files);
      return await this.execute(job, engine, { ...request, sql, readPaths: fetched.files.flat() }, query, started, stopReason, (message) => this.objectNames(message, directory, fetched.urls));
    } finally {
      await fs.rm(directory, { recursive: true, force: true });
    }
  }

  /** Runs the SQL on the engine and publishes the result (unless the job was stopped meanwhile). */
  private async execute(
    job: JobRow,
    engine: QueryEngine,
    request: Omit<QueryRequest, 'resultPath'>,
    query: PreparedQuery,
    started: (r: QueryRun) => void,
    stopReason: () => InterruptReason | undefined,
    describe: (message: string) => string = (m) => m,
  ): Promise<JobOutcome> {
    let local: string | undefined;
    try {
      const late = stopReason();
      if (late) return this.stopped(late, job);
      local = await this.blobs.tempPath('.parquet');
      const run = engine.run({ ...request, resultPath: local });
      started(run);
      const result = await run.done;
      const stopped = stopReason();
      if (stopped) return this.stopped(stopped, job);
      const bytes = (await fs.stat(local)).size;
      const key = `results/${job.execution_id}.parquet`;
      await this.blobs.putFile(key, local);
      local = undefined; // consumed
      return { status: 'succeeded', result_key: key, result_bytes: bytes, row_count: result.rowCount, columns: result.columns };
    } catch (error) {
      if (error instanceof SandboxInterruptedError) return this.stopped(stopReason() ?? error.reason, job);
      if (error instanceof SandboxQueryError) {
        const position = error.position === undefined ? undefined : query.toOriginal(error.position);
        return { status: 'failed', error: jobError(job.sql_text, 'QUERY_ERROR', describe(error.message), position) };
      }
      throw error;
    } finally {
      if (local) await fs.rm(local, { force: true });
    }
  }

  /** DuckDB's message with the job's local copies named by their objects' URLs. */
  private objectNames(message: string, directory: string, urls: Map<string, string>): string {
    let out = message;
    for (const [local, url] of urls) out = out.split(local).join(url);
    return out.split(directory).join('<private storage>');
  }

  /** Removes job directories of copies older than a day: left by a process that stopped mid-job. */
  private async sweepStaleCopies(): Promise<void> {
    if (!this.external) return;
    for (const name of await readdirIfExists(this.external.directory)) {
      const full = path.join(this.external.directory, name);
      const stat = await statIfExists(full);
      if (stat?.isDirectory() && Date.now() - stat.mtimeMs > STALE_COPIES_MS) await fs.rm(full, { recursive: true, force: true });
    }
  }
}
