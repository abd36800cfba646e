/**
 * Operations (docs/deploy.md): GET /readyz reports the metadata database and the storage, GET
 * /metrics is Prometheus text for the admin or metrics token only, with route patterns (never URLs)
 * and no tenant names in its labels, and every answer — errors too — carries its request id.
 */
import fs from 'node:fs';
import net from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { buildApp } from '../src/app.ts';
import { migrate, openDatabase, type Db } from '../src/core/db/index.ts';
import { createBlobStore } from '../src/core/storage/index.ts';
import { createWorkspace, signIn, type TestUser } from './clients.ts';
import { createPostgresDatabaseUrl, createTestApp, createTestDb, TEST_DATABASE_URL, tempDir, type TestApp } from './harness.ts';
import { multipartBody } from './multipart.ts';
import { startS3Server, type TestS3Server } from './s3-server.ts';

const METRICS_TOKEN = 'metrics-token-for-the-scraper-0123456789';

let t: TestApp;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  t = await createTestApp({ metricsToken: METRICS_TOKEN });
  [alice, bob] = await Promise.all([signIn(t.app, t.adminToken, 'alice-ops'), signIn(t.app, t.adminToken, 'bob-ops')]);
  await createWorkspace(alice, 'tenant_alpha');
  await createWorkspace(bob, 'tenant_beta');
});
afterAll(async () => {
  await t?.close();
});

/** One sample line per metric series: `name{labels} value`. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) throw new Error(`not a Prometheus sample: ${line}`);
      const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
      return { name: m[1], labels, value: Number(m[3]) };
    });
}

async function scrape(app = t.app): Promise<{ text: string; samples: Sample[] }> {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return { text: res.body, samples: parse(res.body) };
}

const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

describe('GET /readyz', () => {
  it('answers 200 with each check when the database and the storage answer, without credentials', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', checks: { database: 'ok', storage: 'ok' } });
    expect(res.headers['x-request-id']).toEqual(expect.any(String));
  });

  it('answers 503 naming the storage when the file store has lost its directory, and 200 once it is back', async () => {
    const away = `${t.dataDir}-away`;
    fs.renameSync(t.dataDir, away);
    try {
      const res = await t.app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ status: 'unavailable', checks: { database: 'ok', storage: 'failed' } });
      // Why is the log's business, not the caller's: no path in the answer.
      expect(res.body).not.toContain(t.dataDir);
    } finally {
      fs.renameSync(away, t.dataDir);
    }
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });

  it('answers 503 naming the database when the metadata database is gone', { timeout: 60_000 }, async () => {
    // A database of this app's own, taken away under it: dropped (PostgreSQL) or closed (PGlite).
    let db: Db;
    let takeAway: () => Promise<void>;
    if (TEST_DATABASE_URL) {
      const database = await createPostgresDatabaseUrl();
      db = await openDatabase({ databaseUrl: database.url });
      await migrate(db);
      takeAway = () => database.drop();
      onTestFinished(async () => {
        await db.close().catch(() => undefined);
        await database.drop();
      });
    } else {
      const own = await createTestDb();
      db = own.db;
      takeAway = () => own.dispose();
    }
    const app = await createTestApp({ db }, { workers: false });
    onTestFinished(() => app.close().catch(() => undefined));
    expect((await app.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    await takeAway();
    const res = await app.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode, res.body).toBe(503);
    expect(res.json()).toEqual({ status: 'unavailable', checks: { database: 'failed', storage: 'ok' } });
  });

  it.runIf(TEST_DATABASE_URL)('is ready again by itself once PostgreSQL has dropped every connection (as in a restart)', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const { rows } = await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.db.kysely);
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    try {
      const ended = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [rows[0].name]);
      expect(ended.rowCount).toBeGreaterThanOrEqual(1);
    } finally {
      await admin.end();
    }
    const answers: number[] = [];
    for (let i = 0; i < 20 && answers.at(-1) !== 200; i++) {
      answers.push((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode);
      if (answers.at(-1) !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(answers.at(-1), answers.join(', ')).toBe(200);
    expect((await alice.request('GET', '/auth/me')).statusCode).toBe(200);
  });

  describe('on S3-compatible storage', () => {
    let s3: TestS3Server;
    let scratch: { dir: string; remove(): void };
    beforeAll(async () => {
      s3 = await startS3Server();
      scratch = tempDir('lakeport-readyz-s3-');
    });
    afterAll(async () => {
      await s3?.stop();
      scratch?.remove();
    });

    const s3App = async (endpoint: string) => {
      const blobs = await createBlobStore({ storageUrl: `s3://${s3.bucket}/ops`, dataDir: scratch.dir, s3Endpoint: endpoint, s3AccessKeyId: s3.accessKeyId, s3SecretAccessKey: s3.secretAccessKey });
      const app = await createTestApp({ blobs }, { workers: false });
      onTestFinished(() => app.close());
      return app.app;
    };

    it('answers 200 when the bucket answers', async () => {
      const res = await (await s3App(s3.endpoint)).inject({ method: 'GET', url: '/readyz' });
      expect(res.json()).toEqual({ status: 'ok', checks: { database: 'ok', storage: 'ok' } });
    });

    it('answers 503 when the endpoint drops every connection, and within its time limit when it never answers', { timeout: 60_000 }, async () => {
      // Servers on loopback that accept connections and then close them at once, or hold them unanswered.
      const sockets = new Set<net.Socket>();
      const refusing = net.createServer((socket) => socket.destroy());
      const silent = net.createServer((socket) => void sockets.add(socket));
      for (const server of [refusing, silent]) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      onTestFinished(async () => {
        for (const socket of sockets) socket.destroy();
        await Promise.all([refusing, silent].map((server) => new Promise((resolve) => server.close(resolve))));
      });
      const url = (server: net.Server) => `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;

      const dropped = await (await s3App(url(refusing))).inject({ method: 'GET', url: '/readyz' });
      expect(dropped.statusCode).toBe(503);
      expect(dropped.json()).toEqual({ status: 'unavailable', checks: { database: 'ok', storage: 'failed' } });

      const app = await s3App(url(silent));
      const started = Date.now();
      const [hung, alongside] = await Promise.all([app.inject({ method: 'GET', url: '/readyz' }), app.inject({ method: 'GET', url: '/readyz' })]);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(hung.statusCode).toBe(503);
      expect(hung.json()).toEqual({ status: 'unavailable', checks: { database: 'ok', storage: 'timeout' } });
      expect(alongside.json()).toEqual(hung.json());
    });
  });
});

describe('GET /metrics', () => {
  it('answers only the admin token or the metrics token (401 otherwise, a tenant token included)', async () => {
    const ask = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/metrics', headers });
    for (const headers of [{}, { authorization: `Bearer ${alice.token}` }, { authorization: 'Bearer not-the-metrics-token-at-all' }, { authorization: METRICS_TOKEN }] as Record<string, string>[]) {
      const res = await ask(headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(401);
      expect(res.json()).toMatchObject({ code: 'UNAUTHORIZED', detail: expect.stringContaining('LAKEPORT_METRICS_TOKEN') });
    }
    expect((await ask({ 'x-admin-token': 'wrong-admin-token-xxxxxxxx' })).json()).toMatchObject({ code: 'INVALID_ADMIN_TOKEN' });
    expect((await ask({ 'x-admin-token': t.adminToken })).statusCode).toBe(200);
    expect((await ask({ authorization: `Bearer ${METRICS_TOKEN}` })).statusCode).toBe(200);
  });

  it('opens to the admin token alone when no metrics token is configured', async () => {
    const app = await createTestApp({}, { workers: false });
    onTestFinished(() => app.close());
    const res = await app.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.statusCode).toBe(401);
    expect(res.json().detail).toContain('x-admin-token');
    expect((await app.app.inject({ method: 'GET', url: '/metrics', headers: { 'x-admin-token': app.adminToken } })).statusCode).toBe(200);
  });

  it('counts requests by route pattern, method and status: never the URL, never a tenant', async () => {
    const before = (await scrape()).samples;
    const route = '/jobs/api/v1/jobs/:identifier/status';
    const was = value(before, 'lakeport_http_requests_total', { route, method: 'GET', status: '404' }) ?? 0;
    for (const id of ['job_tenant_alpha_secret1', 'job_tenant_alpha_secret2']) expect((await alice.request('GET', `/jobs/api/v1/jobs/${id}/status`)).statusCode).toBe(404);
    expect((await alice.request('GET', '/no/such/route/tenant_alpha_probe')).statusCode).toBe(404);
    const { text, samples } = await scrape();
    expect(value(samples, 'lakeport_http_requests_total', { route, method: 'GET', status: '404' })).toBe(was + 2);
    expect(value(samples, 'lakeport_http_request_duration_seconds_count', { route, method: 'GET', status: '404' })).toBe(was + 2);
    expect(value(samples, 'lakeport_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' })).toBeGreaterThanOrEqual(1);
    const routes = new Set(samples.filter((s) => s.name === 'lakeport_http_requests_total').map((s) => s.labels.route));
    expect(routes).toContain('/auth/token');
    expect([...routes].every((r) => r === 'unmatched' || r.startsWith('/'))).toBe(true);
    for (const tenant of ['tenant_alpha', 'tenant_beta', 'alice-ops', 'bob-ops', 'secret1']) expect(text).not.toContain(tenant);
  });

  it('reports jobs, worker slots, uploads, DuckDB and the database pool, moving with what happens', { timeout: 60_000 }, async () => {
    const before = (await scrape()).samples;
    // A job, run by this process's workers.
    const job = await alice.request('POST', '/jobs/api/v1/jobs', { sql_text: 'SELECT 42 AS answer' });
    expect(job.statusCode, job.body).toBe(201);
    const done = await alice.request('GET', `/jobs/api/v1/jobs/${job.json().execution_id}/status?wait=30`);
    expect(done.json().status).toBe('succeeded');
    // An upload's write.
    await t.app.lakeport.catalog.createDataset({ workspace: 'tenant_alpha', collection: 'c', dataset: 'd' }, { columns: [{ name: 'id', type: 'BIGINT', nullable: true }] }, 'alice-ops');
    const csv = 'id\n1\n2\n3\n';
    const body = await multipartBody({ contract: { destination: 'tenant_alpha.c.d', schema: { mode: 'dataset' } }, samples: [{ name: 'f.csv', content: csv }] });
    const negotiated = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload });
    expect(negotiated.statusCode, negotiated.body).toBe(201);
    const contract = negotiated.json();
    if (contract.state === 'proposed') await alice.request('PUT', `/upload/v2/contracts/${contract.contract_id}/accept`, { schema_fingerprint: contract.schema_fingerprint });
    const written = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contract.contract_id}/data`, headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'text/csv', 'x-file-name': 'f.csv' }, payload: csv });
    expect(written.statusCode, written.body).toBe(200);

    const { text, samples } = await scrape();
    expect(value(samples, 'lakeport_jobs_finished_total', { state: 'succeeded' })).toBe((value(before, 'lakeport_jobs_finished_total', { state: 'succeeded' }) ?? 0) + 1);
    expect(value(samples, 'lakeport_jobs', { state: 'queued' })).toBe(0);
    expect(value(samples, 'lakeport_jobs', { state: 'running' })).toBe(0);
    expect(value(samples, 'lakeport_job_queue_depth')).toBe(0);
    expect(value(samples, 'lakeport_job_worker_slots', { state: 'free' })).toBe(4);
    expect(value(samples, 'lakeport_job_worker_slots', { state: 'busy' })).toBe(0);
    expect(value(samples, 'lakeport_upload_writes_total')).toBe((value(before, 'lakeport_upload_writes_total') ?? 0) + 1);
    expect(value(samples, 'lakeport_upload_bytes_total')).toBe((value(before, 'lakeport_upload_bytes_total') ?? 0) + csv.length);
    expect(value(samples, 'lakeport_duckdb_memory_bytes', { engine: 'ingest' })).toBeGreaterThanOrEqual(0);
    expect(value(samples, 'lakeport_duckdb_memory_bytes', { engine: 'read' })).toBeGreaterThanOrEqual(0);
    // The job's sandbox went back to the pool, warm (the harness runs queries in this process).
    expect(value(samples, 'lakeport_duckdb_sandboxes', { state: 'idle' })).toBeGreaterThanOrEqual(1);
    expect(value(samples, 'lakeport_duckdb_sandboxes', { state: 'leased' })).toBe(0);
    // (Read while the scrape's own queries run: some may be in use or waiting.)
    expect(value(samples, 'lakeport_db_connections_waiting')).toBeGreaterThanOrEqual(0);
    expect(value(samples, 'lakeport_db_connections', { state: 'idle' })! + value(samples, 'lakeport_db_connections', { state: 'in_use' })!).toBeGreaterThanOrEqual(1);
    expect(value(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(value(samples, 'lakeport_metrics_collect_failures_total', { part: 'jobs' })).toBeUndefined();
    for (const tenant of ['tenant_alpha', 'alice-ops', contract.contract_id]) expect(text).not.toContain(tenant);
  });
});

describe('a worker (no APIs)', () => {
  it('answers /healthz, /readyz and /metrics only', async () => {
    const worker = await buildApp(t.deps, { apis: false, workers: true });
    onTestFinished(() => worker.close());
    expect((await worker.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await worker.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ok', checks: { database: 'ok', storage: 'ok' } });
    expect((await worker.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${alice.token}` } })).statusCode).toBe(404);
    expect((await worker.inject({ method: 'GET', url: '/auth/.well-known/openid-configuration' })).statusCode).toBe(404);
    const { samples } = await scrape(worker);
    expect(value(samples, 'lakeport_job_worker_slots', { state: 'free' })).toBe(4);
  });
});

describe('request ids', () => {
  it('every answer carries x-request-id, errors of both shapes included, and a safe caller id is kept', async () => {
    const answers = [
      await t.app.inject({ method: 'GET', url: '/healthz' }),
      await t.app.inject({ method: 'GET', url: '/no/such/route' }),
      await t.app.inject({ method: 'GET', url: '/auth/me' }),
      await alice.request('POST', '/jobs/api/v1/jobs', { sql_text: 42 }),
      await t.app.inject({ method: 'GET', url: '/metrics' }),
    ];
    expect(answers.map((a) => a.statusCode)).toEqual([200, 404, 401, 422, 401]);
    for (const answer of answers) expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    // The bodies keep the spec's exact shapes: the id is in the header only.
    expect(Object.keys(answers[1].json()).sort()).toEqual(['code', 'detail']);
    expect(Object.keys(answers[3].json())).toEqual(['detail']);
    const mine = await t.app.inject({ method: 'GET', url: '/no/such/route', headers: { 'x-request-id': 'trace-4711.a_b' } });
    expect(mine.headers['x-request-id']).toBe('trace-4711.a_b');
  });
});
