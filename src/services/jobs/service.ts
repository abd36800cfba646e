import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import crypto from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { mayAccessOwned, seesOnlyNarrowedRecords, type Principal } from '../../core/authz/index.ts';
import { newId } from '../../core/crypto/index.ts';
import type { Ingestor } from '../../core/engine/index.ts';
import { AppError, RequestValidationError, scrubServerPaths } from '../../core/errors/index.ts';
import type { Logger } from '../../core/logger.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { jobsError } from './errors.ts';
import { DOWNLOAD_LIMIT } from './schemas.ts';
import type { JobRepo, JobRow } from './repo.ts';
import type { LakeportStatements } from './statements/index.ts';
import type { ParamValue } from './types.ts';
import type { WorkerPool } from './worker.ts';

export interface JobsDeps {
  repo: JobRepo;
  pool: WorkerPool;
  ingestor: Ingestor;
  blobs: BlobStore;
  scratchDir: string;
  /** `<public url>/jobs`, for status_url, results_url and next_page. */
  baseUrl: () => string;
  timeoutMs: number;
  /** Lakeport's own statements (CREATE SECRET, GRANT, …), which run inside the submit. */
  statements: LakeportStatements;
  /**
   * Refuses, before a job exists, a query whose READ_* calls cannot be planned (their shape, secret,
   * permission, type or SCOPE): an HTTP error with the place of the call.
   */
  refuseExternalReads?: (caller: Principal, sqlText: string) => Promise<AppError | undefined>;
  /** Throws 409 `WORKSPACE_DELETED` while a workspace the statement reads is soft-deleted (results stay unreadable). */
  requireLiveSources?: (sqlText: string) => Promise<void>;
  /** Starts the work a run of `sqlText` will need (its analysis) while the job is being stored. */
  prepareAhead?: (sqlText: string) => void;
  /** A result is removed this long after its job finished. */
  resultRetentionMs?: number;
  log: Logger;
}

const STATUS_FILTERS = new Set(['queued', 'running', 'succeeded', 'failed', 'cancelled']);
const MAX_WAIT_SECONDS = 30;
/** How many jobs /jobs/recent answers. */
const RECENT_PAGE = 100;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * Timings in milliseconds, from the job's timestamps (all from the database's clock, see repo.ts);
 * never negative, also for rows stored before they were.
 */
function timings(job: JobRow) {
  const ms = (a: Date | null, b: Date | null) => (a && b ? Math.max(0, b.getTime() - a.getTime()) : null);
  return { queued_ms: ms(job.created_at, job.started_at ?? job.finished_at), running_ms: ms(job.started_at, job.finished_at), total_ms: ms(job.created_at, job.finished_at) };
}

export class JobsService {
  /**
   * Finished jobs' rows as status shows them: a finished row no longer changes what status answers
   * (only its results may expire, which status does not show) and is never deleted, so it is kept.
   */
  private readonly finishedRows = new LRUCache<string, JobRow>({ max: 10_000 });

  constructor(private readonly deps: JobsDeps) {}

  private url(job: Pick<JobRow, 'execution_id'>, suffix: string) {
    return `${this.deps.baseUrl()}/api/v1/jobs/${job.execution_id}/${suffix}`;
  }

  /** Jobs queued and running in the whole cluster (GET /metrics). */
  active(): Promise<{ queued: number; running: number }> {
    return this.deps.repo.active();
  }

  async submit(caller: Principal, input: { sql_text: string; client_info?: Record<string, unknown> | null; parameters?: Record<string, ParamValue> | null }) {
    if (input.sql_text.trim() === '') throw RequestValidationError.at(['body', 'sql_text'], 'the statement is empty');
    const ran = await this.deps.statements.submit(caller, input);
    if (ran) return { execution_id: ran.execution_id, status: ran.status, status_url: this.url(ran, 'status') };
    const refusal = await this.deps.refuseExternalReads?.(caller, input.sql_text);
    if (refusal) throw refusal;
    this.deps.prepareAhead?.(input.sql_text);
    const job = {
      execution_id: newId('job'),
      owner: caller.identity,
      sql_text: input.sql_text,
      // Request parameters take priority over saved variables; which ones the statement uses is known once it is parsed.
      parameters: input.parameters ?? {},
      client_info: input.client_info ? JSON.stringify(input.client_info) : null,
      permissions: JSON.stringify(caller.permissions),
      timeout_ms: this.deps.timeoutMs,
    };
    const { pool, repo } = this.deps;
    if (!pool.reserve(caller.identity)) {
      const queued = await repo.enqueue(job);
      pool.notify();
      return { execution_id: queued.execution_id, status: queued.status, status_url: this.url(queued, 'status') };
    }
    // A worker of this process is free and nothing waits ahead: the job starts as it is inserted.
    let running: JobRow;
    try {
      running = await repo.enqueueClaimed(job, pool.id);
    } catch (error) {
      pool.release();
      throw error;
    }
    pool.adopt(running);
    return { execution_id: running.execution_id, status: running.status, status_url: this.url(running, 'status') };
  }

  /**
   * A job the caller may see (`known`: its row as this process knows it, else it is read): its
   * identity's, made under permissions within the caller's (core/authz `mayAccessOwned`), so a
   * narrowed credential never sees work of wider ones. Anything else is 404, like an unknown id.
   */
  private async own(caller: Principal, executionId: string, known?: JobRow): Promise<JobRow> {
    const job = known ?? (await this.deps.repo.get(executionId));
    if (!job || !mayAccessOwned(caller, job)) throw jobsError('JOB_NOT_FOUND', `No job ${executionId}`);
    return job;
  }

  view(job: JobRow) {
    const done = job.status === 'succeeded';
    return {
      execution_id: job.execution_id,
      status: job.status,
      in_progress: job.status === 'queued' || job.status === 'running',
      sql_text: job.sql_text,
      client_info: job.client_info,
      created_at: job.created_at.toISOString(),
      started_at: job.started_at?.toISOString() ?? null,
      finished_at: job.finished_at?.toISOString() ?? null,
      timings: timings(job),
      row_count: job.row_count === null ? null : Number(job.row_count),
      // Also for errors stored before paths were scrubbed, or by a worker that failed outright.
      error: job.error && { ...job.error, message: scrubServerPaths(job.error.message) },
      status_url: this.url(job, 'status'),
      ...(done ? { results_url: this.url(job, 'results'), download_url: this.downloadUrl(job, 'csv', DOWNLOAD_LIMIT, 0) } : {}),
    };
  }

  /** Status; with `wait` (seconds, at most 30) it answers as soon as the job leaves queued/running. */
  async status(caller: Principal, executionId: string, waitSeconds = 0) {
    // A job running in this process, or finished here moments ago, is answered from memory (a finished row no longer changes).
    let job = await this.own(caller, executionId, this.deps.pool.knownHere(executionId) ?? this.finishedRows.get(executionId));
    if (job.status !== 'queued' && job.status !== 'running') this.finishedRows.set(executionId, job);
    const deadline = Date.now() + Math.min(waitSeconds, MAX_WAIT_SECONDS) * 1000;
    while ((job.status === 'queued' || job.status === 'running') && Date.now() < deadline) {
      // A job that finishes in this process hands its final row to the waiter; otherwise re-read.
      job = (await this.deps.pool.waitLocal(executionId, Math.min(250, deadline - Date.now()))) ?? (await this.deps.repo.get(executionId))!;
    }
    return this.view(job);
  }

  async cancel(caller: Principal, executionId: string) {
    const job = await this.own(caller, executionId);
    if (job.status !== 'queued' && job.status !== 'running') return this.view(job);
    const after = await this.deps.repo.requestCancel(executionId);
    this.deps.pool.cancelLocal(executionId);
    return this.view(after ?? job);
  }

  async recent(caller: Principal, filter: string | null | undefined) {
    const f = filter?.trim();
    const statuses = !f ? undefined : f === 'in_progress' ? ['queued', 'running'] : STATUS_FILTERS.has(f.toLowerCase()) ? [f.toLowerCase()] : undefined;
    const query = { statuses, text: f && !statuses ? f : undefined, narrowedOnly: seesOnlyNarrowedRecords(caller) };
    // The newest jobs the caller may see: a narrowed caller's page is filtered, so read on until it is full.
    const visible: JobRow[] = [];
    let after: string | undefined;
    for (;;) {
      const batch = await this.deps.repo.recent(caller.identity, { ...query, after }, RECENT_PAGE);
      visible.push(...batch.filter((j) => mayAccessOwned(caller, j)));
      if (batch.length < RECENT_PAGE || visible.length >= RECENT_PAGE) break;
      after = batch[batch.length - 1].execution_id;
    }
    return visible.slice(0, RECENT_PAGE).map((j) => this.view(j));
  }

  private async finished(caller: Principal, executionId: string): Promise<JobRow & { result_key: string }> {
    const job = await this.own(caller, executionId, this.deps.pool.finishedHere(executionId));
    if (job.status === 'queued' || job.status === 'running') throw jobsError('JOB_IN_PROGRESS', `Job ${executionId} is still ${job.status}; poll its status_url`);
    if (job.status === 'succeeded' && job.results_expired_at) {
      throw jobsError('RESULTS_EXPIRED', `The results of job ${executionId} were removed at ${job.results_expired_at.toISOString()}, after their retention time; run the query again`);
    }
    if (job.status !== 'succeeded' || !job.result_key) throw jobsError('JOB_HAS_NO_RESULTS', `Job ${executionId} ${job.status}; it has no results`);
    await this.deps.requireLiveSources?.(job.sql_text);
    return job as JobRow & { result_key: string };
  }

  /** A page of results; `next_page` continues where it ends. */
  async results(caller: Principal, executionId: string, page: { num_rows: number; offset: number; verbose: boolean }) {
    const job = await this.finished(caller, executionId);
    const total = Number(job.row_count ?? 0);
    const { columns, rows } = await this.deps.ingestor.readPage(await this.deps.blobs.localPath(job.result_key), page.offset, page.num_rows, total);
    const next = page.offset + rows.length;
    const nextPage = rows.length > 0 && next < total ? `${this.url(job, 'results')}?num_rows=${page.num_rows}&offset=${next}${page.verbose ? '&verbose=true' : ''}` : null;
    return {
      execution_id: job.execution_id,
      total_rows: total,
      offset: page.offset,
      num_rows: rows.length,
      columns: page.verbose ? (job.columns ?? columns) : columns.map((c) => c.name),
      data: rows,
      next_page: nextPage,
    };
  }

  /** A slice of the results as a file, streamed from a temporary copy that is removed once sent. */
  async download(caller: Principal, executionId: string, options: { file_format: 'csv' | 'json' | 'parquet'; limit: number; offset: number }) {
    const job = await this.finished(caller, executionId);
    const result = await this.deps.blobs.localPath(job.result_key);
    let stream: fs.ReadStream;
    if (options.file_format === 'parquet' && options.offset === 0 && options.limit >= Number(job.row_count ?? Infinity)) {
      // Every row as Parquet is the result file itself: sent as it is, not written again (no memory, no copy).
      stream = fs.createReadStream(result);
    } else {
      await fsp.mkdir(this.deps.scratchDir, { recursive: true });
      const file = path.join(this.deps.scratchDir, `${crypto.randomUUID()}.${options.file_format}`);
      await this.deps.ingestor.exportSlice(result, options.file_format, options.offset, options.limit, file);
      stream = fs.createReadStream(file);
      stream.once('close', () => void fsp.rm(file, { force: true }));
    }
    const types = { csv: 'text/csv; charset=utf-8', json: 'application/x-ndjson', parquet: 'application/vnd.apache.parquet' };
    const extension = { csv: 'csv', json: 'jsonl', parquet: 'parquet' }[options.file_format];
    return { stream, contentType: types[options.file_format], fileName: `${job.execution_id}.${extension}`, headers: this.rangeHeaders(job, options) };
  }

  /**
   * What a download holds of the whole result: `Lakeport-Total-Rows` (the result's rows),
   * `Lakeport-Range` (`rows <first>-<last>/<total>`, 0-based and inclusive like Content-Range; an
   * asterisk in place of `<first>-<last>` when the file has no rows), `Lakeport-Truncated` (`true`
   * when rows follow the range), and a `Link` with rel="next" to the following range (same format and limit) when they do.
   */
  private rangeHeaders(job: JobRow, options: { file_format: string; limit: number; offset: number }): Record<string, string> {
    const total = Number(job.row_count ?? 0);
    const served = Math.max(0, Math.min(options.limit, total - options.offset));
    const end = options.offset + served;
    const more = served > 0 && end < total;
    const headers: Record<string, string> = {
      'lakeport-total-rows': String(total),
      'lakeport-range': served > 0 ? `rows ${options.offset}-${end - 1}/${total}` : `rows */${total}`,
      'lakeport-truncated': String(more),
    };
    if (more) headers.link = `<${this.downloadUrl(job, options.file_format, options.limit, end)}>; rel="next"`;
    return headers;
  }

  private downloadUrl(job: Pick<JobRow, 'execution_id'>, format: string, limit: number, offset: number) {
    return `${this.url(job, 'download')}?file_format=${format}&limit=${limit}&offset=${offset}`;
  }

  /** Removes results past their retention time (in batches); returns how many. */
  async sweepExpiredResults(): Promise<number> {
    const retentionMs = this.deps.resultRetentionMs ?? 24 * 3600_000;
    let removed = 0;
    for (;;) {
      const expired = await this.deps.repo.expireResults(retentionMs, 500);
      for (const { executionId, key } of expired) {
        this.deps.pool.forget(executionId);
        // Its row no longer names the file: one that cannot be removed must not keep the others.
        await this.deps.blobs.delete(key).catch((error: unknown) => this.deps.log.error({ err: error, execution_id: executionId, key }, 'could not remove an expired job result'));
      }
      removed += expired.length;
      if (expired.length < 500) return removed;
    }
  }

  // ── saved variables ──

  async variables(caller: Principal) {
    const rows = await this.deps.repo.variables(caller.identity);
    return { variables: rows.map((v) => ({ name: v.name, type: v.type, value: v.value, updated_at: v.updated_at.toISOString() })) };
  }

  async putVariable(caller: Principal, name: string, input: { type: 'string' | 'number' | 'boolean'; value: unknown }) {
    if (!VARIABLE_NAME.test(name)) throw RequestValidationError.at(['path', 'name'], 'a variable name is 1-64 letters, digits or underscores, not starting with a digit');
    if (typeof input.value !== input.type || (input.type === 'number' && !Number.isFinite(input.value))) {
      throw RequestValidationError.at(['body', 'value'], `value must be a JSON ${input.type} to match type '${input.type}'`, `${input.type}_type`);
    }
    await this.deps.repo.putVariable(caller.identity, name, input.type, input.value as string | number | boolean);
    return this.variables(caller);
  }

  async deleteVariable(caller: Principal, name: string) {
    await this.deps.repo.deleteVariable(caller.identity, name);
  }
}
