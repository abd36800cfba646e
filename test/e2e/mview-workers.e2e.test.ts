import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRun, lakeport } from './cli.ts';
import { httpApi } from './http.ts';
import { REPO_ROOT, startServer, type RunningServer } from './server.ts';

/**
 * Two real `lakeport worker` processes (and a `serve` with no workers of its own) on one PostgreSQL:
 * a materialized view refreshed by schedule in all three processes' schedulers and by REFRESH
 * requests at the same time is never refreshed twice at once, and every snapshot it gets is the
 * commit of exactly one refresh job. Several processes meet only through PostgreSQL, so this runs
 * when DATABASE_URL is set.
 */
describe.runIf(process.env.DATABASE_URL)('materialized views with two worker processes', () => {
  let server: RunningServer;
  let token: string;
  let secret: string;
  const workers: ChildProcess[] = [];
  const workerIds: string[] = [];
  const { call, expectStatus, ownWorkspace } = httpApi(() => server);

  function startWorker(): Promise<void> {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin/lakeport.cjs'), 'worker'], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: server.databaseUrl!, LAKEPORT_DATA_DIR: server.dataDir, LAKEPORT_LOG_LEVEL: 'warn', LAKEPORT_JOB_WORKERS: '2' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    workers.push(child);
    return new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`worker exited early (${code})`)));
      readline.createInterface({ input: child.stdout! }).on('line', (line) => {
        const started = /^Lakeport worker (\S+)/.exec(line);
        if (started) {
          workerIds.push(started[1]);
          resolve();
        }
      });
    });
  }

  const submit = async (sql_text: string): Promise<string> => expectStatus(await call('POST', '/jobs/api/v1/jobs', { token, json: { sql_text } }), 201).execution_id;

  beforeAll(async () => {
    server = await startServer({ env: { LAKEPORT_JOB_WORKERS: '0' } });
    secret = expectStatus(await call('POST', '/auth/clients/alice/credentials', { admin: true, json: {} }), 200).secret;
    const grant = await fetch(`${server.url}/auth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'alice', client_secret: secret }) }).then((r) => r.json());
    token = grant.access_token;
    await ownWorkspace(token, 'alice', 'sales');
    const file = path.join(server.dataDir, 'lines.csv');
    await fs.writeFile(file, 'region,amount\nnorth,10\nsouth,7\nnorth,5\n');
    const env: NodeJS.ProcessEnv = { ...process.env, LAKEPORT_URL: server.url, LAKEPORT_CLIENT_ID: 'alice', LAKEPORT_CLIENT_SECRET: secret };
    delete env.LAKEPORT_TOKEN;
    const upload = await lakeport(['upload', file, '--to', 'sales.raw.lines', '--accept'], env);
    expect(upload.code, describeRun(upload)).toBe(0);
    await Promise.all([startWorker(), startWorker()]);
  }, 120_000);

  afterAll(async () => {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    await server?.stop();
  });

  it('never refreshes one view twice at once, and commits each refresh once', { timeout: 120_000 }, async () => {
    // The padding makes each refresh take a while, so the processes' claims and schedules overlap.
    await submit(
      "CREATE MATERIALIZED VIEW sales.agg.contended REFRESH EVERY '1 second' AS " +
        'SELECT region, sum(amount) AS total, (SELECT count(*) FROM range(30000000) t(i) WHERE i % 7 = 1) AS pad FROM sales.raw.lines GROUP BY region',
    );
    // The schedule alone until it has committed a refresh (at least 3 s), then REFRESH requests on top of it.
    const db = new pg.Client({ connectionString: server.databaseUrl });
    await db.connect();
    const { rows: [view] } = await db.query("SELECT dataset_id FROM catalog_datasets WHERE workspace = 'sales' AND collection = 'agg' AND name = 'contended'");
    const started = Date.now();
    const scheduled = async () => (await db.query("SELECT 1 FROM catalog_snapshots WHERE dataset_id = $1 AND message = 'refresh (schedule)'", [view.dataset_id])).rowCount! > 0;
    while (Date.now() - started < 3_000 || (Date.now() - started < 60_000 && !(await scheduled()))) await new Promise((r) => setTimeout(r, 200));
    const asked = new Set<string>();
    const deadline = Date.now() + 4_000;
    while (Date.now() < deadline) {
      const [a, b] = await Promise.all([submit('REFRESH MATERIALIZED VIEW sales.agg.contended'), submit('REFRESH MATERIALIZED VIEW sales.agg.contended')]);
      asked.add(a).add(b);
      await new Promise((r) => setTimeout(r, 100));
    }

    try {
      // Stop the schedule, then wait for the refresh in progress (if any) to end.
      await db.query("UPDATE materialized_views SET refresh_mode = 'manual', refresh_every_ms = NULL, next_refresh_at = NULL WHERE dataset_id = $1", [view.dataset_id]);
      let jobs: { execution_id: string; status: string; worker_id: string | null; started_at: Date | null; finished_at: Date | null; error: unknown }[] = [];
      for (let i = 0; i < 600; i++) {
        jobs = (await db.query('SELECT execution_id, status, worker_id, started_at, finished_at, error FROM jobs WHERE refresh_of = $1 ORDER BY created_at', [view.dataset_id])).rows;
        if (jobs.every((j) => j.status !== 'queued' && j.status !== 'running')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(jobs.filter((j) => j.status !== 'succeeded').map((j) => [j.status, j.error])).toEqual([]);
      for (const id of asked) expect(jobs.some((j) => j.execution_id === id)).toBe(true);
      expect(jobs.length).toBeGreaterThan(3);
      // Only the two worker processes ran refreshes (the server has no workers).
      // Usually both took some (which one wins each claim depends on load, so that is not asserted).
      console.log(`refreshes by worker: ${JSON.stringify(Object.fromEntries(workerIds.map((w) => [w, jobs.filter((j) => j.worker_id === w).length])))}`);
      for (const j of jobs) expect(workerIds).toContain(j.worker_id);
      // Never two at once: the runs do not overlap.
      const runs = jobs.map((j) => [j.started_at!.getTime(), j.finished_at!.getTime()]).sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < runs.length; i++) expect(runs[i][0]).toBeGreaterThanOrEqual(runs[i - 1][1]);
      // Each succeeded refresh committed exactly one snapshot, by schedule and on request.
      const { rows: snapshots } = await db.query('SELECT message FROM catalog_snapshots WHERE dataset_id = $1', [view.dataset_id]);
      expect(snapshots.length).toBe(jobs.length);
      expect(new Set(snapshots.map((s) => s.message))).toEqual(new Set(['refresh (create)', 'refresh (manual)', 'refresh (schedule)']));
    } finally {
      await db.end();
    }
  });
});
