import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startServer, type RunningServer } from './server.ts';

/**
 * A real crash: a `lakeport worker` process is killed (SIGKILL) while it runs a job; another worker
 * process notices the missing heartbeat, re-queues the job and finishes it. Several processes share
 * one queue only through PostgreSQL, so this runs when DATABASE_URL is set.
 */
describe.runIf(process.env.DATABASE_URL)('a worker that dies mid-job', () => {
  let server: RunningServer;
  let token: string;
  const workers: ChildProcess[] = [];

  function startWorker(): Promise<ChildProcess> {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin/lakeport.cjs'), 'worker'], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: server.databaseUrl!, LAKEPORT_DATA_DIR: server.dataDir, LAKEPORT_LOG_LEVEL: 'warn', LAKEPORT_JOB_WORKERS: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    workers.push(child);
    return new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`worker exited early (${code})`)));
      readline.createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line.startsWith('Lakeport worker')) resolve(child);
      });
    });
  }

  const api = (pathname: string, init: RequestInit = {}) =>
    fetch(`${server.url}${pathname}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } }).then((r) => r.json());

  beforeAll(async () => {
    server = await startServer({ env: { LAKEPORT_JOB_WORKERS: '0' } });
    const cred = await fetch(`${server.url}/auth/clients/alice/credentials`, { method: 'POST', headers: { 'x-admin-token': server.adminToken, 'content-type': 'application/json' }, body: '{}' }).then((r) => r.json());
    const grant = await fetch(`${server.url}/auth/token`, { method: 'POST', body: new URLSearchParams({ client_id: 'alice', client_secret: cred.secret }) }).then((r) => r.json());
    token = grant.access_token;
  }, 120_000);

  afterAll(async () => {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    await server?.stop();
  });

  it('is re-queued and finished by another worker', { timeout: 180_000 }, async () => {
    const first = await startWorker();
    const job = await api('/jobs/api/v1/jobs', { method: 'POST', body: JSON.stringify({ sql_text: 'SELECT count(*) AS n FROM range(3000000000) t(i) WHERE i % 7 = 3' }) });
    let status = await api(`/jobs/api/v1/jobs/${job.execution_id}/status`);
    for (let i = 0; i < 100 && status.status === 'queued'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await api(`/jobs/api/v1/jobs/${job.execution_id}/status`);
    }
    expect(status.status).toBe('running');
    first.kill('SIGKILL');
    await startWorker();
    let final = status;
    for (let i = 0; i < 6 && (final.status === 'queued' || final.status === 'running'); i++) {
      final = await api(`/jobs/api/v1/jobs/${job.execution_id}/status?wait=30`);
    }
    expect(final.status, JSON.stringify(final.error)).toBe('succeeded');
    const results = await api(`/jobs/api/v1/jobs/${job.execution_id}/results`);
    expect(results.data).toEqual([[Math.floor((3_000_000_000 - 1 - 3) / 7) + 1]]);
  });
});
