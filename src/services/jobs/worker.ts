import crypto from 'node:crypto';
import { EventEmitter } from 'node:events';
import { silentLogger, type Logger } from '../../core/logger.ts';
import { isAppError } from '../../core/errors/index.ts';
import type { JobFailure } from './errors.ts';
import type { FinishedColumns, JobRepo, JobRow } from './repo.ts';

/** What running one job produced. */
export type JobOutcome =
  | {
      status: 'succeeded';
      result_key: string;
      result_bytes: number;
      row_count: number;
      columns: { name: string; type: string }[];
      /** The runner recorded the finish itself, in the transaction of its own writes (a refresh's commit): the pool does not. */
      recorded?: FinishedColumns;
    }
  | { status: 'failed' | 'cancelled'; error: JobFailure }
  /** The engine died under the job: it goes back to the queue (the runner decides how it runs next). */
  | { status: 'requeue'; reason: string };

/** Runs one claimed job; `cancel()` on the handle interrupts it. */
export interface JobRunner {
  start(job: JobRow): { done: Promise<JobOutcome>; cancel(reason: 'cancelled' | 'timeout'): void };
  /** Releases what the runner keeps between jobs (warm sandboxes); called when the pool stops. */
  close?(): Promise<void>;
}

export interface WorkerOptions {
  /** Jobs run at once by this process. */
  concurrency: number;
  /** Jobs of one identity running at once (over every process for queued jobs; here for the direct start). */
  perIdentity: number;
  pollMs: number;
  heartbeatMs: number;
  /** A running job whose heartbeat is older than this is taken to have lost its worker. */
  staleAfterMs: number;
  maxAttempts: number;
}

export const DEFAULT_WORKER_OPTIONS: WorkerOptions = { concurrency: 4, perIdentity: 4, pollMs: 250, heartbeatMs: 2_000, staleAfterMs: 15_000, maxAttempts: 2 };

/** A finish that fails is tried again after these pauses, then left for recovery (which re-queues or fails the job). */
const FINISH_RETRY_MS = [100, 500, 2_000];

/** How long a job finished here is remembered for long-poll waiters that looked just before it finished. */
const RECENT_MS = 10_000;
const RECENT_MAX = 10_000;

/**
 * A pool of job workers in this process. Workers claim queued jobs from the metadata database with
 * `FOR UPDATE SKIP LOCKED`, so any number of processes can share one queue; heartbeats let any of
 * them re-queue (or fail) the jobs of a worker that died.
 *
 * Round trips per job: a job submitted here while a slot is free and nothing is queued is inserted
 * already claimed and runs at once (reserve, adopt); otherwise the submit wakes the pool (notify),
 * which claims as many queued jobs as it has free slots in one statement (claim + start); the finish is one
 * statement whose row is handed to long-poll waiters in this process (waitLocal), so they need no
 * read of their own; status and results of a job running or just finished here are answered from
 * memory too (knownHere, finishedHere). Heartbeats cover only jobs running longer than one
 * heartbeat interval (a job is claimed with a fresh heartbeat), so short jobs cost none. The poll
 * timer still claims jobs submitted through other processes.
 */
export class WorkerPool {
  readonly id = `worker_${crypto.randomBytes(6).toString('hex')}`;
  /** Jobs running here: the row as claimed (in progress until this worker finishes it), and how to stop it. */
  private readonly running = new Map<string, { row: JobRow; cancel(reason: 'cancelled' | 'timeout'): void; since: number }>();
  private readonly events = new EventEmitter();
  /** Jobs finished here lately (execution_id → final row), oldest first: answers waiters that subscribed late. */
  private readonly recent = new Map<string, { row: JobRow; at: number }>();
  private timers: NodeJS.Timeout[] = [];
  private stopped = true;
  private claiming = false;
  /** A wake-up that arrived while a claim was under way: claim once more afterwards. */
  private wokenWhileClaiming = false;
  /**
   * False once a claim found fewer queued jobs than it asked for, until something may have queued
   * more (a submit here, a claim that filled every slot, a poll that saw one): a finished job then
   * claims again only when there may be something to claim.
   */
  private mayHaveQueued = true;
  /** Bumped whenever something may have queued a job, so a claim that started before does not clear mayHaveQueued. */
  private queueEpoch = 0;
  /** Jobs this pool ended, by outcome, since it started (GET /metrics). */
  readonly ended = { succeeded: 0, failed: 0, cancelled: 0, requeued: 0 };
  /** Slots promised to jobs being submitted here (reserve, then adopt or release). */
  private reserved = 0;
  /** A claim was asked for while slots were promised: it runs once they are settled. */
  private claimAfterReserved = false;

  constructor(
    private readonly repo: JobRepo,
    private readonly runner: JobRunner,
    private readonly options: WorkerOptions = DEFAULT_WORKER_OPTIONS,
    private readonly log: Logger = silentLogger,
  ) {
    this.events.setMaxListeners(0);
  }

  start() {
    this.stopped = false;
    this.timers = [
      setInterval(() => void this.poll(), this.options.pollMs),
      setInterval(() => void this.beat(), this.options.heartbeatMs),
      setInterval(() => void this.recover(), this.options.staleAfterMs),
    ];
    for (const t of this.timers) t.unref();
    void this.recover().then(() => this.fill());
  }

  /** Stops claiming and waits for the jobs in hand (or interrupts them after `graceMs`). */
  async stop(graceMs = 5_000) {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    const deadline = Date.now() + graceMs;
    while (this.running.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    for (const handle of this.running.values()) handle.cancel('cancelled');
    await this.runner.close?.();
  }

  /**
   * A free slot for a job being submitted here, when one is free and no job is known to be queued
   * ahead of it: the job is then inserted already claimed by this pool (one statement instead of an
   * insert and a claim) and handed over with adopt(); release() if the insert fails.
   */
  reserve(identity: string): boolean {
    if (this.stopped || this.claiming || this.mayHaveQueued || this.busy() >= this.options.concurrency) return false;
    if (this.runningFor(identity) >= this.options.perIdentity) return false;
    this.reserved++;
    return true;
  }

  /** Runs a job inserted already claimed by this pool, in the slot reserve() promised. */
  adopt(job: JobRow) {
    this.reserved--;
    this.run(job);
    this.afterReservations();
  }

  release() {
    this.reserved--;
    this.afterReservations();
  }

  /** A claim waits for the jobs being inserted already claimed, so it counts them (the per-identity share). */
  private afterReservations() {
    if (this.reserved > 0 || !this.claimAfterReserved) return;
    this.claimAfterReserved = false;
    void this.fill();
  }

  /** Job slots of this process (none while the pool is not running) and how many are in use. */
  slots(): { total: number; busy: number } {
    return { total: this.stopped ? 0 : this.options.concurrency, busy: this.busy() };
  }

  private busy() {
    return this.running.size + this.reserved;
  }

  private runningFor(identity: string): number {
    let n = 0;
    for (const { row } of this.running.values()) if (row.owner === identity) n++;
    return n;
  }

  /** Wakes the pool now (a job was just submitted here). */
  notify() {
    this.queueEpoch++;
    this.mayHaveQueued = true;
    void this.fill();
  }

  /**
   * The job if it finished in this process within the last seconds (its final row; a finished job
   * does not change any more), else undefined.
   */
  finishedHere(executionId: string): JobRow | undefined {
    return this.recent.get(executionId)?.row;
  }

  /** Drops what this process remembers of a finished job (its row changed: its results were removed). */
  forget(executionId: string): void {
    this.recent.delete(executionId);
  }

  /**
   * The job's row without a read when this process knows it: running here (as claimed: in progress
   * until this worker finishes it) or finished here lately (finishedHere); else undefined.
   */
  knownHere(executionId: string): JobRow | undefined {
    return this.running.get(executionId)?.row ?? this.finishedHere(executionId);
  }

  /**
   * Resolves when the job finishes in this process (with its final row, when this process recorded
   * it), or with undefined after `ms`. A job that finished here in the last seconds answers at once.
   */
  waitLocal(executionId: string, ms: number): Promise<JobRow | undefined> {
    const known = this.recent.get(executionId);
    if (known) return Promise.resolve(known.row);
    return new Promise((resolve) => {
      const done = (row?: JobRow) => {
        clearTimeout(timer);
        this.events.off(executionId, done);
        resolve(row);
      };
      const timer = setTimeout(done, ms);
      this.events.once(executionId, done);
    });
  }

  /** Interrupts a job running in this process; false when it runs elsewhere (its worker sees the flag). */
  cancelLocal(executionId: string): boolean {
    const handle = this.running.get(executionId);
    handle?.cancel('cancelled');
    return handle !== undefined;
  }

  /** The timer: jobs submitted through other processes (or re-queued) show up here. A cheap read first when nothing is expected. */
  private async poll() {
    if (this.stopped || this.claiming || this.busy() >= this.options.concurrency) return;
    if (!this.mayHaveQueued) {
      try {
        if (!(await this.repo.anyQueued())) return;
      } catch (error) {
        this.log.warn({ err: error }, 'could not look for queued jobs; the next poll tries again');
        return;
      }
      this.queueEpoch++;
      this.mayHaveQueued = true;
    }
    await this.fill();
  }

  private async fill() {
    if (this.stopped) return;
    if (this.claiming) {
      this.wokenWhileClaiming = true;
      return;
    }
    if (!this.mayHaveQueued) return;
    if (this.reserved > 0) {
      this.claimAfterReserved = true;
      return;
    }
    this.claiming = true;
    try {
      do {
        this.wokenWhileClaiming = false;
        while (!this.stopped && this.mayHaveQueued && this.busy() < this.options.concurrency) {
          const free = this.options.concurrency - this.busy();
          const epoch = this.queueEpoch;
          const jobs = await this.repo.claim(this.id, free, this.options.perIdentity);
          for (const job of jobs) this.run(job);
          if (jobs.length < free) {
            if (this.queueEpoch === epoch) this.mayHaveQueued = false;
            break;
          }
        }
      } while (this.wokenWhileClaiming && !this.stopped);
    } catch (error) {
      this.log.warn({ err: error }, 'could not claim jobs; the next poll tries again');
    } finally {
      this.claiming = false;
    }
  }

  private run(job: JobRow) {
    const handle = this.runner.start(job);
    const timeout = setTimeout(() => handle.cancel('timeout'), job.timeout_ms);
    this.running.set(job.execution_id, { row: job, cancel: (reason) => handle.cancel(reason), since: Date.now() });
    void handle.done
      .catch((error: unknown): JobOutcome => {
        // The storage or metadata database was out of reach, or the disk full: not the job's fault. It
        // is run again while it has attempts left, else failed with that code and its (safe) message.
        if (isAppError(error, 'STORAGE_UNAVAILABLE', 'METADATA_UNAVAILABLE', 'DISK_FULL')) {
          if (job.attempts < this.options.maxAttempts) return { status: 'requeue', reason: `${error.code}: ${error.message}` };
          return { status: 'failed', error: { code: error.code, message: error.message } };
        }
        // Details (paths, internals) go to the log, never into the job a user reads.
        this.log.error({ err: error, execution_id: job.execution_id }, 'job failed inside the server');
        return { status: 'failed', error: { code: 'INTERNAL_ERROR', message: `The job failed inside the server; the server log has the details under ${job.execution_id}` } };
      })
      .then(async (outcome) => {
        clearTimeout(timeout);
        this.ended[outcome.status === 'requeue' ? 'requeued' : outcome.status]++;
        if (outcome.status === 'requeue') {
          this.log.warn({ execution_id: job.execution_id, reason: outcome.reason }, 'job re-queued');
          await this.repo.requeue(job.execution_id, this.id).catch((error: unknown) => this.log.error({ err: error, execution_id: job.execution_id }, 'could not re-queue a job; recovery will'));
          this.running.delete(job.execution_id);
          this.notify();
          return;
        }
        const finished = outcome.status === 'succeeded' && outcome.recorded ? outcome.recorded : await this.finish(job.execution_id, outcome);
        const row = finished && { ...job, ...finished };
        this.running.delete(job.execution_id);
        if (row) this.remember(row);
        this.events.emit(job.execution_id, row);
        void this.fill();
      });
  }

  /** Records the outcome, trying again a few times when the database fails; undefined when it never could. */
  private async finish(executionId: string, outcome: Exclude<JobOutcome, { status: 'requeue' }>) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.repo.finish(executionId, this.id, outcome);
      } catch (error) {
        const pause = FINISH_RETRY_MS[attempt];
        if (pause === undefined) {
          this.log.error({ err: error, execution_id: executionId, status: outcome.status }, 'could not record a finished job; recovery will re-queue or fail it');
          return undefined;
        }
        this.log.warn({ err: error, execution_id: executionId, attempt: attempt + 1 }, 'could not record a finished job; trying again');
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  private remember(row: JobRow) {
    const now = Date.now();
    this.recent.set(row.execution_id, { row, at: now });
    for (const [id, entry] of this.recent) {
      if (this.recent.size <= RECENT_MAX && now - entry.at < RECENT_MS) break;
      this.recent.delete(id);
    }
  }

  private async beat() {
    // A job is claimed with a fresh heartbeat: only those running longer than an interval need one.
    const due = Date.now() - this.options.heartbeatMs;
    const ids = [...this.running].filter(([, r]) => r.since <= due).map(([id]) => id);
    if (ids.length === 0) return;
    try {
      const cancelled = await this.repo.heartbeat(this.id, ids);
      for (const id of cancelled) this.running.get(id)?.cancel('cancelled');
    } catch (error) {
      this.log.warn({ err: error, jobs: ids.length }, 'heartbeat failed; the next beat tries again');
    }
  }

  /** Re-queues (or fails) jobs whose worker stopped heart-beating; runs periodically. */
  async recover() {
    try {
      const { requeued, failed } = await this.repo.recoverStale(this.options.staleAfterMs, this.options.maxAttempts);
      if (requeued + failed > 0) this.log.info({ requeued, failed }, 'recovered jobs of workers that stopped');
    } catch (error) {
      this.log.warn({ err: error }, 'could not recover stale jobs; the next round tries again');
    }
  }
}
