import crypto from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { JobError } from '../../core/db/index.ts';
import type { JobRepo, JobRow } from './repo.ts';

/** What running one job produced. */
export type JobOutcome =
  | { status: 'succeeded'; result_key: string; row_count: number; columns: { name: string; type: string }[] }
  | { status: 'failed' | 'cancelled'; error: JobError };

/** Runs one claimed job; `cancel()` on the handle interrupts it. */
export interface JobRunner {
  start(job: JobRow): { done: Promise<JobOutcome>; cancel(reason: 'cancelled' | 'timeout'): void };
}

export interface WorkerOptions {
  /** Jobs run at once by this process. */
  concurrency: number;
  pollMs: number;
  heartbeatMs: number;
  /** A running job whose heartbeat is older than this is taken to have lost its worker. */
  staleAfterMs: number;
  maxAttempts: number;
}

export const DEFAULT_WORKER_OPTIONS: WorkerOptions = { concurrency: 4, pollMs: 250, heartbeatMs: 2_000, staleAfterMs: 15_000, maxAttempts: 2 };

/**
 * A pool of job workers in this process. Workers claim queued jobs from the metadata database with
 * `FOR UPDATE SKIP LOCKED`, so any number of processes can share one queue; heartbeats let any of
 * them re-queue (or fail) the jobs of a worker that died.
 */
export class WorkerPool {
  readonly id = `worker_${crypto.randomBytes(6).toString('hex')}`;
  private readonly running = new Map<string, { cancel(reason: 'cancelled' | 'timeout'): void }>();
  private readonly events = new EventEmitter();
  private timers: NodeJS.Timeout[] = [];
  private stopped = true;
  private claiming = false;
  /** A wake-up that arrived while a claim was under way: claim once more afterwards. */
  private wokenWhileClaiming = false;

  constructor(
    private readonly repo: JobRepo,
    private readonly runner: JobRunner,
    private readonly options: WorkerOptions = DEFAULT_WORKER_OPTIONS,
  ) {
    this.events.setMaxListeners(0);
  }

  start() {
    this.stopped = false;
    this.timers = [
      setInterval(() => void this.fill(), this.options.pollMs),
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
  }

  /** Wakes the pool now (a job was just submitted here). */
  notify() {
    void this.fill();
  }

  /** Resolves when the job finishes in this process, or after `ms`. */
  waitLocal(executionId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.events.off(executionId, done);
        resolve();
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

  private async fill() {
    if (this.stopped) return;
    if (this.claiming) {
      this.wokenWhileClaiming = true;
      return;
    }
    this.claiming = true;
    try {
      do {
        this.wokenWhileClaiming = false;
        while (!this.stopped && this.running.size < this.options.concurrency) {
          const job = await this.repo.claim(this.id);
          if (!job) break;
          this.run(job);
        }
      } while (this.wokenWhileClaiming && !this.stopped);
    } catch {
      // The database is unavailable for a moment; the next tick tries again.
    } finally {
      this.claiming = false;
    }
  }

  private run(job: JobRow) {
    const handle = this.runner.start(job);
    const timeout = setTimeout(() => handle.cancel('timeout'), job.timeout_ms);
    this.running.set(job.execution_id, handle);
    void handle.done
      .catch((error: unknown): JobOutcome => ({ status: 'failed', error: { code: 'INTERNAL_ERROR', message: error instanceof Error ? error.message : String(error) } }))
      .then(async (outcome) => {
        clearTimeout(timeout);
        await this.repo.finish(job.execution_id, this.id, outcome).catch(() => undefined);
        this.running.delete(job.execution_id);
        this.events.emit(job.execution_id);
        void this.fill();
      });
  }

  private async beat() {
    try {
      const cancelled = await this.repo.heartbeat(this.id, [...this.running.keys()]);
      for (const id of cancelled) this.running.get(id)?.cancel('cancelled');
    } catch {
      // Next beat.
    }
  }

  /** Re-queues (or fails) jobs whose worker stopped heart-beating; runs periodically. */
  async recover() {
    try {
      await this.repo.recoverStale(new Date(Date.now() - this.options.staleAfterMs), this.options.maxAttempts);
    } catch {
      // Next round.
    }
  }
}
