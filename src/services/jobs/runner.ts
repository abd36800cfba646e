import fs from 'node:fs/promises';
import { Sandbox, SandboxInterruptedError, SandboxQueryError, type SandboxOptions } from '../../core/engine/index.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { jobError, type QueryPlanner } from './planner.ts';
import type { JobRow } from './repo.ts';
import type { JobOutcome, JobRunner } from './worker.ts';

/**
 * Runs a claimed job: plan it for its owner, open a fresh sandboxed DuckDB holding only the views
 * it may read, write the result once as Parquet to `results/<execution_id>.parquet`.
 */
export class SandboxJobRunner implements JobRunner {
  constructor(
    private readonly planner: QueryPlanner,
    private readonly blobs: BlobStore,
    private readonly sandboxOptions: SandboxOptions,
  ) {}

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

  private stopped(reason: 'cancelled' | 'timeout', job: JobRow): JobOutcome {
    return reason === 'cancelled'
      ? { status: 'cancelled', error: { code: 'CANCELLED', message: 'Cancelled by its owner' } }
      : { status: 'failed', error: { code: 'JOB_TIMEOUT', message: `The job ran longer than its ${Math.round(job.timeout_ms / 1000)} s limit and was stopped` } };
  }

  private async run(job: JobRow, opened: (s: Sandbox) => void, stopReason: () => 'cancelled' | 'timeout' | undefined): Promise<JobOutcome> {
    const prepared = await this.planner.prepare({ identity: job.owner, permissions: job.permissions }, job.sql_text, job.parameters, { withFiles: true });
    if (!prepared.ok) return { status: 'failed', error: prepared.error };
    const { query } = prepared;
    const local = await this.blobs.tempPath('.parquet');
    if (this.sandboxOptions.tempDirectory) await fs.mkdir(this.sandboxOptions.tempDirectory, { recursive: true });
    let sandbox: Sandbox;
    try {
      sandbox = await Sandbox.open(query.views, { ...this.sandboxOptions, resultPaths: [local] });
    } catch (error) {
      await fs.rm(local, { force: true });
      throw error;
    }
    opened(sandbox);
    try {
      const early = stopReason();
      if (early) return this.stopped(early, job);
      const result = await sandbox.runToParquet(query.sql, query.params, local);
      const key = `results/${job.execution_id}.parquet`;
      await this.blobs.putFile(key, local);
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
      await fs.rm(local, { force: true });
    }
  }
}
