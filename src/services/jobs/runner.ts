import fs from 'node:fs/promises';
import { Sandbox, SandboxInterruptedError, SandboxPool, SandboxQueryError, type SandboxOptions, type SandboxPoolOptions } from '../../core/engine/index.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { jobError, type QueryPlanner } from './planner.ts';
import type { JobRow } from './repo.ts';
import type { JobOutcome, JobRunner } from './worker.ts';

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
 */
export class SandboxJobRunner implements JobRunner {
  readonly sandboxes: SandboxPool;

  constructor(
    private readonly planner: QueryPlanner,
    private readonly blobs: BlobStore,
    sandboxOptions: SandboxOptions,
    poolOptions: Partial<Omit<SandboxPoolOptions, 'engine'>> = {},
  ) {
    const { memoryLimit, threads, tempDirectory } = sandboxOptions;
    this.sandboxes = new SandboxPool({ ...poolOptions, engine: { memoryLimit, threads, tempDirectory } });
  }

  start(job: JobRow) {
    let sandbox: Sandbox | undefined;
    let stop: 'cancelled' | 'timeout' | undefined;
    const done = this.run(job, (s) => (sandbox = s), () => stop);
    return {
      done,
      cancel(reason: 'cancelled' | 'timeout') {
        stop ??= reason;
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

  private async run(job: JobRow, opened: (s: Sandbox) => void, stopReason: () => 'cancelled' | 'timeout' | undefined): Promise<JobOutcome> {
    const prepared = await this.planner.prepare({ identity: job.owner, permissions: job.permissions }, job.sql_text, job.parameters, { withFiles: true });
    if (!prepared.ok) return { status: 'failed', error: prepared.error };
    const { query } = prepared;
    const early = stopReason();
    if (early) return this.stopped(early, job);
    const sandbox = await this.sandboxes.acquire(job.owner, query.views);
    opened(sandbox);
    let local: string | undefined;
    try {
      const late = stopReason();
      if (late) return this.stopped(late, job);
      local = await this.blobs.tempPath('.parquet');
      const result = await sandbox.runToParquet(query.sql, query.params, local);
      const key = `results/${job.execution_id}.parquet`;
      await this.blobs.putFile(key, local);
      local = undefined; // consumed
      return { status: 'succeeded', result_key: key, row_count: result.rowCount, columns: result.columns };
    } catch (error) {
      if (error instanceof SandboxInterruptedError) return this.stopped(stopReason() ?? error.reason, job);
      if (error instanceof SandboxQueryError) {
        const position = error.position === undefined ? undefined : query.toOriginal(error.position);
        return { status: 'failed', error: jobError(job.sql_text, 'QUERY_ERROR', error.message, position) };
      }
      throw error;
    } finally {
      sandbox.close();
      if (local) await fs.rm(local, { force: true });
    }
  }
}
