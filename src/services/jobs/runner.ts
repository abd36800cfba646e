import fs from 'node:fs/promises';
import path from 'node:path';
import { Sandbox, SandboxInterruptedError, SandboxPool, SandboxQueryError, type SandboxOptions, type SandboxPoolOptions } from '../../core/engine/index.ts';
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

/**
 * Runs a claimed job: plan it for its owner, take a sandboxed DuckDB holding only the views it may
 * read (a warm engine from the pool when one with exactly this owner and these views is idle, else
 * a new one), write the result once as Parquet to `results/<execution_id>.parquet`.
 *
 * The result: the engine's allowed_paths are fixed when it is made, so a pooled engine cannot be
 * told about a per-job file. Each job on it (one at a time) writes the engine's private
 * `result.parquet` (in its allowed_paths, under its own work directory), which runToParquet then
 * renames to a fresh temporary file of the blob store and putFile renames into place; the file
 * never stays where the next job on that engine could see it.
 *
 * Private storage (READ_* with credentials): the objects are first copied into a directory of the
 * job's own (ExternalFetcher), the calls are rewritten to read those copies, and the job runs on an
 * engine of its own, made with exactly those files added to allowed_paths and closed when the job
 * ends: it never enters the pool. (Its allowed_paths name files no other job will ever have, so a
 * pooled engine could never be reused anyway, and none outlives the files.) The directory is
 * removed when the job ends, however it ends: success, failure, cancel or timeout.
 */
export class SandboxJobRunner implements JobRunner {
  readonly sandboxes: SandboxPool;
  private readonly engineOptions: Omit<SandboxOptions, 'timeoutMs' | 'resultPaths' | 'readPaths'>;
  private swept = false;

  constructor(
    private readonly planner: QueryPlanner,
    private readonly blobs: BlobStore,
    sandboxOptions: SandboxOptions,
    poolOptions: Partial<Omit<SandboxPoolOptions, 'engine'>> = {},
    private readonly external?: ExternalReading,
  ) {
    const { memoryLimit, threads, tempDirectory } = sandboxOptions;
    this.engineOptions = { memoryLimit, threads, tempDirectory };
    this.sandboxes = new SandboxPool({ ...poolOptions, engine: { memoryLimit, threads, tempDirectory } });
  }

  start(job: JobRow) {
    let sandbox: Sandbox | undefined;
    let stop: 'cancelled' | 'timeout' | undefined;
    const abort = new AbortController();
    const done = this.run(job, (s) => (sandbox = s), () => stop, abort.signal);
    return {
      done,
      cancel(reason: 'cancelled' | 'timeout') {
        stop ??= reason;
        abort.abort(new SandboxInterruptedError(reason));
        sandbox?.interrupt();
      },
    };
  }

  /** Closes the idle engines (the worker pool is stopping). */
  close(): Promise<void> {
    return this.sandboxes.drain();
  }

  private stopped(reason: 'cancelled' | 'timeout', job: JobRow): JobOutcome {
    return reason === 'cancelled'
      ? { status: 'cancelled', error: { code: 'CANCELLED', message: 'Cancelled by its owner' } }
      : { status: 'failed', error: { code: 'JOB_TIMEOUT', message: `The job ran longer than its ${Math.round(job.timeout_ms / 1000)} s limit and was stopped` } };
  }

  private async run(job: JobRow, opened: (s: Sandbox) => void, stopReason: () => 'cancelled' | 'timeout' | undefined, signal: AbortSignal): Promise<JobOutcome> {
    const prepared = await this.planner.prepare({ identity: job.owner, permissions: job.permissions }, job.sql_text, job.parameters, { withFiles: true });
    if (!prepared.ok) return { status: 'failed', error: prepared.error };
    const { query } = prepared;
    const early = stopReason();
    if (early) return this.stopped(early, job);
    if (query.external.length > 0) return this.runExternal(job, query, opened, stopReason, signal);
    const sandbox = await this.sandboxes.acquire(job.owner, query.views);
    opened(sandbox);
    try {
      return await this.execute(job, sandbox, query, query.sql, stopReason);
    } finally {
      sandbox.close();
    }
  }

  /** A job that reads private storage: copies, a private engine over them, and cleanup whatever happens. */
  private async runExternal(
    job: JobRow,
    query: PreparedQuery,
    opened: (s: Sandbox) => void,
    stopReason: () => 'cancelled' | 'timeout' | undefined,
    signal: AbortSignal,
  ): Promise<JobOutcome> {
    const first = query.external[0];
    if (!this.external) return { status: 'failed', error: jobError(job.sql_text, 'EXTERNAL_READ_NOT_AVAILABLE', 'This server does not read private storage', first.position) };
    await fs.mkdir(this.external.directory, { recursive: true });
    if (!this.swept) {
      this.swept = true;
      await this.sweepStaleCopies();
    }
    const directory = await fs.mkdtemp(path.join(this.external.directory, `${job.execution_id}-`));
    let sandbox: Sandbox | undefined;
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
      const late = stopReason();
      if (late) return this.stopped(late, job);
      if (this.engineOptions.tempDirectory) await fs.mkdir(this.engineOptions.tempDirectory, { recursive: true });
      sandbox = await Sandbox.open(query.views, { ...this.engineOptions, readPaths: fetched.files.flat() });
      opened(sandbox);
      return await this.execute(job, sandbox, query, query.render(fetched.files), stopReason, (message) => this.objectNames(message, directory, fetched.urls));
    } finally {
      sandbox?.close();
      await fs.rm(directory, { recursive: true, force: true });
    }
  }

  /** Runs the SQL on the sandbox and publishes the result. */
  private async execute(
    job: JobRow,
    sandbox: Sandbox,
    query: PreparedQuery,
    sql: string,
    stopReason: () => 'cancelled' | 'timeout' | undefined,
    describe: (message: string) => string = (m) => m,
  ): Promise<JobOutcome> {
    let local: string | undefined;
    try {
      const late = stopReason();
      if (late) return this.stopped(late, job);
      local = await this.blobs.tempPath('.parquet');
      const result = await sandbox.runToParquet(sql, query.params, local);
      const key = `results/${job.execution_id}.parquet`;
      await this.blobs.putFile(key, local);
      local = undefined; // consumed
      return { status: 'succeeded', result_key: key, row_count: result.rowCount, columns: result.columns };
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
    const entries = await fs.readdir(this.external.directory, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const full = path.join(this.external.directory, entry.name);
      const stat = await fs.stat(full).catch(() => undefined);
      if (stat && Date.now() - stat.mtimeMs > STALE_COPIES_MS) await fs.rm(full, { recursive: true, force: true });
    }
  }
}
