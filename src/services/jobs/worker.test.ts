import { afterEach, describe, expect, it } from 'vitest';
import { recordingLogger } from '../../../test/recording-logger.ts';
import { appError } from '../../core/errors/index.ts';
import type { Logger } from '../../core/logger.ts';
import type { JobRepo, JobRow } from './repo.ts';
import { WorkerPool, type JobOutcome, type JobRunner, type WorkerOptions } from './worker.ts';

/** The queue in memory, counting the statements the pool sends. */
class FakeRepo {
  queued: JobRow[] = [];
  rows = new Map<string, JobRow>();
  calls = { claim: 0, anyQueued: 0, finish: 0, heartbeat: 0, recoverStale: 0 };
  heartbeats: string[][] = [];
  /** When set, claims wait for it (to interleave a submit with a claim in flight). */
  claimGate: Promise<void> | undefined;
  /** This many finishes fail (the database unavailable for a moment) before they work again. */
  finishFailures = 0;

  add(id: string): JobRow {
    const row = { execution_id: id, owner: 'alice', status: 'queued', timeout_ms: 60_000, created_at: new Date() } as unknown as JobRow;
    this.queued.push(row);
    this.rows.set(id, row);
    return row;
  }

  async claim(workerId: string, limit = 1): Promise<JobRow[]> {
    this.calls.claim++;
    await this.claimGate;
    const taken = this.queued.splice(0, limit);
    return taken.map((row) => Object.assign(row, { status: 'running', worker_id: workerId, attempts: (row.attempts ?? 0) + 1 }));
  }

  async requeue(executionId: string): Promise<boolean> {
    const row = Object.assign(this.rows.get(executionId)!, { status: 'queued', worker_id: null });
    this.queued.push(row);
    return true;
  }

  async anyQueued(): Promise<boolean> {
    this.calls.anyQueued++;
    return this.queued.length > 0;
  }

  async finish(executionId: string, _workerId: string, outcome: JobOutcome): Promise<JobRow | undefined> {
    this.calls.finish++;
    if (this.finishFailures-- > 0) throw new Error('connection terminated unexpectedly');
    const row = this.rows.get(executionId)!;
    return Object.assign(row, { status: outcome.status, finished_at: new Date() });
  }

  async heartbeat(_workerId: string, ids: string[]): Promise<string[]> {
    this.calls.heartbeat++;
    this.heartbeats.push(ids);
    return [];
  }

  async recoverStale() {
    this.calls.recoverStale++;
    return { requeued: 0, failed: 0 };
  }
}

/** Jobs named `slow…` take `slowMs`, the rest finish at once; jobs named `fail…` fail. */
function runner(slowMs = 200): JobRunner & { started: string[] } {
  const started: string[] = [];
  return {
    started,
    start(job: JobRow) {
      started.push(job.execution_id);
      const ms = job.execution_id.startsWith('slow') ? slowMs : 1;
      return {
        done: new Promise<JobOutcome>((resolve) =>
          setTimeout(
            () =>
              resolve(
                job.execution_id.startsWith('fail')
                  ? { status: 'failed', error: { code: 'QUERY_ERROR', message: 'no' } }
                  : { status: 'succeeded', result_key: 'k', result_bytes: 1, row_count: 1, columns: [] },
              ),
            ms,
          ),
        ),
        cancel() {},
      };
    },
  };
}

const pools: WorkerPool[] = [];
function start(repo: FakeRepo, run: JobRunner, options: Partial<WorkerOptions> = {}, log?: Logger) {
  const pool = new WorkerPool(repo as unknown as JobRepo, run, { concurrency: 2, perIdentity: 2, pollMs: 60_000, heartbeatMs: 60_000, staleAfterMs: 60_000, maxAttempts: 2, ...options }, log);
  pools.push(pool);
  pool.start();
  return pool;
}

const settle = (ms = 30) => new Promise((r) => setTimeout(r, ms));

afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.stop(100);
});

describe('worker round trips', () => {
  it('claims a job submitted here at once, in one statement, and does not claim again when the queue is empty', async () => {
    const repo = new FakeRepo();
    const pool = start(repo, runner());
    await settle();
    expect(repo.calls.claim).toBe(1); // at start
    repo.add('a');
    pool.notify();
    const row = await pool.waitLocal('a', 5_000);
    expect(row?.status).toBe('succeeded');
    await settle();
    // The claim that took `a` got fewer jobs than free slots: the finish does not claim again.
    expect(repo.calls).toMatchObject({ claim: 2, finish: 1, anyQueued: 0, heartbeat: 0 });
  });

  it('runs a job submitted into a free slot without a claim, and promises no slot it does not have', async () => {
    const repo = new FakeRepo();
    const run = runner(100);
    const pool = start(repo, run, { concurrency: 2 });
    await settle();
    const claimsAtStart = repo.calls.claim;
    // Nothing queued, both slots free: a submit may insert its job already claimed.
    expect(pool.reserve("alice")).toBe(true);
    expect(pool.reserve("alice")).toBe(true);
    expect(pool.reserve("alice")).toBe(false); // both slots promised
    pool.release();
    const row = Object.assign(repo.add('slow-direct'), { status: 'running' });
    repo.queued.length = 0; // inserted claimed, never queued
    pool.adopt(row);
    expect(run.started).toEqual(['slow-direct']);
    expect(pool.knownHere('slow-direct')?.status).toBe('running');
    expect((await pool.waitLocal('slow-direct', 5_000))?.status).toBe('succeeded');
    expect(repo.calls.claim).toBe(claimsAtStart);
    // A queued job may be waiting (a submit that could not reserve woke the pool): no jumping ahead.
    repo.add('queued-one');
    pool.notify();
    expect(pool.reserve("alice")).toBe(false);
    expect((await pool.waitLocal('queued-one', 5_000))?.status).toBe('succeeded');
  });

  it('claims as many jobs as it has free slots in one statement, and the rest as slots free up', async () => {
    const repo = new FakeRepo();
    for (const id of ['s1', 's2', 's3', 's4', 's5']) repo.add(`slow-${id}`);
    const run = runner(50);
    const pool = start(repo, run, { concurrency: 2 });
    await Promise.all(['s1', 's2', 's3', 's4', 's5'].map((id) => pool.waitLocal(`slow-${id}`, 5_000)));
    expect(run.started).toEqual(['slow-s1', 'slow-s2', 'slow-s3', 'slow-s4', 'slow-s5']);
    // One claim for two at start, then one per freed slot while jobs may be queued (the last finds
    // the queue empty); none after that.
    expect(repo.calls.claim).toBeLessThanOrEqual(5);
    const claims = repo.calls.claim;
    await settle(100);
    expect(repo.calls.claim).toBe(claims);
  });

  it('claims a job submitted while every slot was busy as soon as one frees up', async () => {
    const repo = new FakeRepo();
    const pool = start(repo, runner(80), { concurrency: 1 });
    await settle();
    repo.add('slow-1');
    pool.notify();
    await settle(10);
    repo.add('b');
    pool.notify(); // no free slot now
    expect((await pool.waitLocal('b', 5_000))?.status).toBe('succeeded');
  });

  it('does not lose a submit that arrives while a claim is in flight', async () => {
    const repo = new FakeRepo();
    const pool = start(repo, runner());
    await settle();
    let open!: () => void;
    repo.claimGate = new Promise<void>((r) => (open = r));
    pool.notify(); // a claim that will find nothing, held open
    await settle(10);
    repo.add('late');
    pool.notify(); // arrives during that claim
    repo.claimGate = undefined;
    open();
    expect((await pool.waitLocal('late', 2_000))?.status).toBe('succeeded');
  });

  it('finds jobs queued through another process by polling, with a cheap read first', async () => {
    const repo = new FakeRepo();
    const pool = start(repo, runner(), { pollMs: 20 });
    await settle(80);
    const claimsWhileIdle = repo.calls.claim;
    expect(claimsWhileIdle).toBe(1); // only the one at start: idle polls read, they do not claim
    expect(repo.calls.anyQueued).toBeGreaterThan(0);
    repo.add('elsewhere'); // no notify: another process inserted it
    expect((await pool.waitLocal('elsewhere', 2_000))?.status).toBe('succeeded');
  });

  it('hands the finished row to waiters, also to one that asks just after the finish', async () => {
    const repo = new FakeRepo();
    const pool = start(repo, runner());
    await settle();
    repo.add('x');
    const waiting = pool.waitLocal('x', 5_000);
    pool.notify();
    const row = await waiting;
    expect(row).toMatchObject({ execution_id: 'x', status: 'succeeded' });
    expect(pool.finishedHere('x')).toBe(row);
    const started = Date.now();
    expect(await pool.waitLocal('x', 5_000)).toBe(row);
    expect(Date.now() - started).toBeLessThan(50);
    expect(pool.finishedHere('unknown')).toBeUndefined();
    expect(await pool.waitLocal('unknown', 20)).toBeUndefined();
  });

  it('heartbeats only jobs that run longer than an interval', async () => {
    const repo = new FakeRepo();
    const pool = start(repo, runner(400), { heartbeatMs: 100, concurrency: 4 });
    await settle();
    for (let i = 0; i < 5; i++) repo.add(`quick-${i}`);
    repo.add('slow-1');
    pool.notify();
    await pool.waitLocal('slow-1', 5_000);
    expect(repo.calls.heartbeat).toBeGreaterThan(0);
    for (const ids of repo.heartbeats) expect(ids).toEqual(['slow-1']);
  });
});

describe('a finish the database refuses', () => {
  it('is logged and tried again, and the job still ends as it ran', async () => {
    const repo = new FakeRepo();
    const { log, entries } = recordingLogger();
    const pool = start(repo, runner(), {}, log);
    await settle();
    repo.finishFailures = 1;
    repo.add('ok');
    pool.notify();
    expect(await pool.waitLocal('ok', 5_000)).toMatchObject({ execution_id: 'ok', status: 'succeeded' });
    expect(repo.calls.finish).toBe(2);
    repo.finishFailures = 1;
    repo.add('fail-1');
    pool.notify();
    expect(await pool.waitLocal('fail-1', 5_000)).toMatchObject({ execution_id: 'fail-1', status: 'failed' });
    const retries = entries.filter((e) => e.message.startsWith('could not record a finished job'));
    expect(retries.map((e) => [e.level, e.fields.execution_id])).toEqual([
      ['warn', 'ok'],
      ['warn', 'fail-1'],
    ]);
    expect(retries[0].fields.err).toBeInstanceOf(Error);
  });

  it('is left for recovery, with an error in the log, when it keeps failing', async () => {
    const repo = new FakeRepo();
    const { log, entries } = recordingLogger();
    const pool = start(repo, runner(), {}, log);
    await settle();
    repo.finishFailures = Number.POSITIVE_INFINITY;
    repo.add('lost');
    pool.notify();
    expect(await pool.waitLocal('lost', 10_000)).toBeUndefined();
    expect(repo.rows.get('lost')?.status).toBe('running'); // recovery re-queues or fails it
    expect(repo.calls.finish).toBe(4);
    expect(entries.filter((e) => e.level === 'error').map((e) => [e.fields.execution_id, e.message])).toEqual([['lost', 'could not record a finished job; recovery will re-queue or fail it']]);
  });
});

describe('a job that meets unavailable storage', () => {
  it('is re-queued once, then failed with STORAGE_UNAVAILABLE and its message, not INTERNAL_ERROR', async () => {
    const repo = new FakeRepo();
    const outcomes: JobOutcome[] = [];
    const finish = repo.finish.bind(repo);
    repo.finish = async (id, worker, outcome) => (outcomes.push(outcome), finish(id, worker, outcome));
    const starts: number[] = [];
    const pool = start(repo, {
      start(job) {
        starts.push(job.attempts);
        return { done: Promise.reject(appError('STORAGE_UNAVAILABLE', 'The object storage is unavailable (503 SlowDown, after retries): retry shortly')), cancel() {} };
      },
    });
    repo.add('s3down');
    pool.notify();
    await settle(100);
    pool.notify();
    await settle(100);
    expect(starts).toEqual([1, 2]);
    expect(outcomes).toEqual([{ status: 'failed', error: { code: 'STORAGE_UNAVAILABLE', message: expect.stringContaining('object storage is unavailable') } }]);
  });
});
