/**
 * Materialized views with several processes on one metadata database (PostgreSQL in CI; PGlite here
 * too): two apps, each with its own scheduler and worker pool, like two `lakeport worker` processes.
 * A view is refreshed by schedule and by REFRESH from both at once: never two refreshes of it
 * running at the same time, and every snapshot is the commit of exactly one refresh job. A worker
 * that died mid-refresh leaves the last snapshot, and its job is recovered and run again.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../app.ts';
import { createWorkspace, signIn, type TestUser } from '../../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../../test/harness.ts';
import { seedSnapshot } from '../../../../test/seed.ts';

let t: TestApp;
let second: FastifyInstance | undefined;
let alice: TestUser;
const J = '/jobs/api/v1';
const lines = { workspace: 'sales', collection: 'raw', dataset: 'lines' };

beforeAll(async () => {
  // No workers here at first: the "dead worker" test claims a job by hand before any pool runs.
  t = await createTestApp({}, { workers: false });
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
  await seedSnapshot(t, lines, [{ name: 'region', type: 'VARCHAR', nullable: true }, { name: 'amount', type: 'BIGINT', nullable: true }], "SELECT * FROM (VALUES ('north', 10), ('south', 7)) v(region, amount)");
});
afterAll(async () => {
  await second?.close();
  await t.close();
});

/** Another "process": every service again over the same database and lake, with its own pool and scheduler. */
async function process2(): Promise<FastifyInstance> {
  const app = await buildApp({ ...t.deps, jobs: { ...t.deps.jobs, materializedViews: { tickMs: 100 } } }, { workers: true });
  await app.ready();
  return app;
}

const submit = async (app: FastifyInstance, sql_text: string) => {
  const res = await app.inject({ method: 'POST', url: `${J}/jobs`, headers: { authorization: `Bearer ${alice.token}` }, payload: { sql_text } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().execution_id as string;
};
const datasetId = async (name: string) => (await t.app.lakeport.catalog.getDataset({ workspace: 'sales', collection: 'agg', dataset: name })).dataset_id;
const refreshJobs = async (id: string) => t.db.kysely.selectFrom('jobs').selectAll().where('refresh_of', '=', id).orderBy('created_at').execute();
async function until<T>(fn: () => Promise<T | undefined>, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('several processes', () => {
  it('a worker that died mid-refresh: the view keeps its last snapshot, and the job is recovered and run again', async () => {
    const created = await submit(t.app, "CREATE MATERIALIZED VIEW sales.agg.recovered AS SELECT region, sum(amount) AS total FROM sales.raw.lines GROUP BY region");
    expect(created).toMatch(/^job_/);
    const id = await datasetId('recovered');
    const [job] = await refreshJobs(id);
    expect(job.status).toBe('queued');
    // A worker claimed it and died: running, its heartbeat long stale.
    await t.db.kysely
      .updateTable('jobs')
      .set({ status: 'running', worker_id: 'worker_dead', attempts: 1, started_at: new Date(Date.now() - 3_600_000), heartbeat_at: new Date(Date.now() - 3_600_000) })
      .where('execution_id', '=', job.execution_id)
      .execute();
    // Still no snapshot: nothing was committed; a REFRESH meanwhile returns that job, not a second one.
    expect((await t.app.lakeport.catalog.getDatasetById(id)).current_snapshot_id).toBeNull();
    expect(await submit(t.app, 'REFRESH MATERIALIZED VIEW sales.agg.recovered')).toBe(job.execution_id);

    second = await process2();
    const done = await until(async () => {
      const row = await t.db.kysely.selectFrom('jobs').selectAll().where('execution_id', '=', job.execution_id).executeTakeFirst();
      return row?.status === 'succeeded' ? row : undefined;
    }, 'the recovered refresh');
    expect(done.attempts).toBe(2);
    expect(done.worker_id).not.toBe('worker_dead');
    const snapshots = await t.app.lakeport.catalog.listSnapshots(id);
    expect(snapshots.map((s) => s.message)).toEqual(['refresh (create)']);
  });

  it('two processes refreshing one view by schedule and on request never run two refreshes of it at once, nor commit one twice', async () => {
    // The first app starts its pool and scheduler too now: two of each.
    const first = await buildApp({ ...t.deps, jobs: { ...t.deps.jobs, materializedViews: { tickMs: 100 } } }, { workers: true });
    await first.ready();
    try {
      second ??= await process2();
      await submit(first, "CREATE MATERIALIZED VIEW sales.agg.contended REFRESH EVERY '1 second' AS SELECT region, sum(amount) AS total FROM sales.raw.lines GROUP BY region");
      const id = await datasetId('contended');
      // Both processes ask for refreshes while both schedulers tick.
      // At least 3.5 s, and on until a scheduled refresh has committed (a loaded machine can be slow to tick).
      const deadline = Date.now() + 3_500;
      const giveUp = Date.now() + 30_000;
      const scheduled = async () => (await t.app.lakeport.catalog.listSnapshots(id)).some((s) => s.message === 'refresh (schedule)');
      const asked = new Set<string>();
      while (Date.now() < deadline || (Date.now() < giveUp && !(await scheduled()))) {
        for (const app of [first, second]) asked.add(await submit(app, 'REFRESH MATERIALIZED VIEW sales.agg.contended'));
        await new Promise((r) => setTimeout(r, 150));
      }
      await t.db.kysely.updateTable('materialized_views').set({ refresh_mode: 'manual', refresh_every_ms: null, next_refresh_at: null }).where('dataset_id', '=', id).execute();
      const jobs = await until(async () => {
        const all = await refreshJobs(id);
        return all.every((j) => j.status !== 'queued' && j.status !== 'running') ? all : undefined;
      }, 'every refresh to end');
      // Each REFRESH answered with a refresh job of the view.
      for (const a of asked) expect(jobs.some((j) => j.execution_id === a)).toBe(true);
      expect(jobs.length).toBeGreaterThan(2);
      // Never two running at once: the runs do not overlap.
      const runs = jobs.filter((j) => j.started_at).map((j) => [j.started_at!.getTime(), j.finished_at!.getTime()]).sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < runs.length; i++) expect(runs[i][0]).toBeGreaterThanOrEqual(runs[i - 1][1]);
      // Every snapshot is one succeeded refresh; no refresh failed for a conflict.
      const snapshots = await t.app.lakeport.catalog.listSnapshots(id);
      const succeeded = jobs.filter((j) => j.status === 'succeeded');
      expect(jobs.filter((j) => j.status !== 'succeeded').map((j) => j.error)).toEqual([]);
      expect(snapshots.length).toBe(succeeded.length);
      expect(new Set(snapshots.map((s) => s.message))).toEqual(new Set(['refresh (create)', 'refresh (manual)', 'refresh (schedule)']));
    } finally {
      await first.close();
    }
  }, 90_000);
});
