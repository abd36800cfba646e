import { DuckDBInstance } from '@duckdb/node-api';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, tempDir, type TestApp } from '../../../test/harness.ts';
import { seedSnapshot } from '../../../test/seed.ts';

let t: TestApp;
let alice: TestUser; // owner of sales
let rita: TestUser; // reader on sales.orders.* only
let eve: TestUser; // owner of ops, nothing in sales
let firstSnapshot: number;

const J = '/jobs/api/v1';
const orderColumns = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'category', type: 'VARCHAR', nullable: true },
  { name: 'amount', type: 'DECIMAL(18,2)', nullable: true },
];

beforeAll(async () => {
  t = await createTestApp();
  [alice, rita, eve] = await Promise.all(['alice', 'rita', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  await createWorkspace(alice, 'sales');
  await alice.request('POST', '/policy/v1/access/workspace/sales/policies', { principal: { identity: 'rita' }, role: 'reader', pattern: 'sales.orders.*' });
  await createWorkspace(eve, 'ops');
  const order = { workspace: 'sales', collection: 'orders', dataset: 'daily' };
  firstSnapshot = await seedSnapshot(t, order, orderColumns, `SELECT i AS id, 'cat_' || (i % 3) AS category, (i * 1.5)::DECIMAL(18,2) AS amount FROM range(1, 101) t(i)`);
  await seedSnapshot(t, order, orderColumns, `SELECT i AS id, 'cat_' || (i % 3) AS category, (i * 1.5)::DECIMAL(18,2) AS amount FROM range(101, 121) t(i)`);
  await seedSnapshot(t, { workspace: 'sales', collection: 'hr', dataset: 'people' }, [{ name: 'name', type: 'VARCHAR', nullable: true }], `SELECT 'secret person' AS name`);
  await seedSnapshot(t, { workspace: 'ops', collection: 'x', dataset: 'y' }, [{ name: 'v', type: 'BIGINT', nullable: true }], 'SELECT 42 AS v');
});
afterAll(async () => t.close());

async function run(user: TestUser, sql: string, parameters?: Record<string, unknown>) {
  const submitted = await user.request('POST', `${J}/jobs`, { sql_text: sql, parameters, client_info: { application: 'tests' } });
  expect(submitted.statusCode, submitted.body).toBe(201);
  const { execution_id, status, status_url } = submitted.json();
  // Queued, or already running when a worker of this process was free.
  expect(['queued', 'running']).toContain(status);
  expect(status_url).toBe(`http://lakeport.test/jobs/api/v1/jobs/${execution_id}/status`);
  const done = await user.request('GET', `${J}/jobs/${execution_id}/status?wait=30`);
  expect(done.statusCode).toBe(200);
  return done.json();
}

describe('running queries', () => {
  it('runs a SELECT over a dataset and pages its results', async () => {
    const job = await run(alice, 'SELECT id, amount FROM sales.orders.daily ORDER BY id');
    expect(job).toMatchObject({ status: 'succeeded', row_count: 120, in_progress: false, client_info: { application: 'tests' } });
    expect(job.results_url).toContain(`/jobs/${job.execution_id}/results`);
    const page = (await alice.request('GET', `${J}/jobs/${job.execution_id}/results?num_rows=50`)).json();
    expect(page).toMatchObject({ total_rows: 120, offset: 0, num_rows: 50, columns: ['id', 'amount'] });
    expect(page.data[0]).toEqual([1, '1.50']);
    expect(page.next_page).toBe(`http://lakeport.test/jobs/api/v1/jobs/${job.execution_id}/results?num_rows=50&offset=50`);
    const last = (await alice.request('GET', `${J}/jobs/${job.execution_id}/results?num_rows=50&offset=100&verbose=true`)).json();
    expect(last.num_rows).toBe(20);
    expect(last.next_page).toBeNull();
    expect(last.columns).toEqual([{ name: 'id', type: 'BIGINT' }, { name: 'amount', type: 'DECIMAL(18,2)' }]);
  });

  it('downloads csv, newline-delimited json and parquet', async () => {
    const job = await run(alice, 'SELECT id, category FROM sales.orders.daily ORDER BY id');
    const csv = await alice.request('GET', `${J}/jobs/${job.execution_id}/download?limit=3`);
    expect(csv.headers['content-type']).toMatch(/text\/csv/);
    expect(csv.body.trim().split('\n')).toEqual(['id,category', '1,cat_1', '2,cat_2', '3,cat_0']);
    const json = await alice.request('GET', `${J}/jobs/${job.execution_id}/download?file_format=json&offset=1&limit=2`);
    expect(json.body.trim().split('\n').map((l) => JSON.parse(l))).toEqual([{ id: 2, category: 'cat_2' }, { id: 3, category: 'cat_0' }]);
    const parquet = await t.app.inject({ method: 'GET', url: `${J}/jobs/${job.execution_id}/download?file_format=parquet&limit=1000`, headers: { authorization: `Bearer ${alice.token}` } });
    const dir = tempDir();
    try {
      const file = path.join(dir.dir, 'r.parquet');
      fs.writeFileSync(file, parquet.rawPayload);
      const db = await DuckDBInstance.create(':memory:');
      const c = await db.connect();
      const rows = (await c.runAndReadAll(`SELECT count(*)::INT AS n FROM read_parquet('${file}')`)).getRowObjectsJson();
      expect(rows[0]).toEqual({ n: 120 });
      c.closeSync();
    } finally {
      dir.remove();
    }
  });

  it('says what a download holds of the whole result: total, range, truncated, and a Link to the next range', async () => {
    const job = await run(alice, 'SELECT i FROM range(25000) t(i)');
    const base = `http://lakeport.test/jobs/api/v1/jobs/${job.execution_id}/download`;
    // The default limit stays 10000, and the status says so.
    expect(job.download_url).toBe(`${base}?file_format=csv&limit=10000&offset=0`);
    const first = await alice.request('GET', `${J}/jobs/${job.execution_id}/download`);
    expect(first.body.trim().split('\n')).toHaveLength(10_001);
    expect(first.headers).toMatchObject({ 'lakeport-total-rows': '25000', 'lakeport-range': 'rows 0-9999/25000', 'lakeport-truncated': 'true', link: `<${base}?file_format=csv&limit=10000&offset=10000>; rel="next"` });
    const last = await alice.request('GET', `${J}/jobs/${job.execution_id}/download?file_format=json&limit=10000&offset=20000`);
    expect(last.body.trim().split('\n')).toHaveLength(5000);
    expect(last.headers).toMatchObject({ 'lakeport-total-rows': '25000', 'lakeport-range': 'rows 20000-24999/25000', 'lakeport-truncated': 'false' });
    expect(last.headers.link).toBeUndefined();
    const whole = await alice.request('GET', `${J}/jobs/${job.execution_id}/download?limit=25000`);
    expect(whole.headers).toMatchObject({ 'lakeport-range': 'rows 0-24999/25000', 'lakeport-truncated': 'false' });
    const past = await alice.request('GET', `${J}/jobs/${job.execution_id}/download?offset=30000`);
    expect(past.headers).toMatchObject({ 'lakeport-range': 'rows */25000', 'lakeport-truncated': 'false' });
  });

  it('binds parameters, then saved variables, and names a missing one', async () => {
    const bound = await run(alice, 'SELECT count(*) AS n FROM sales.orders.daily WHERE category = :cat AND id > :min', { cat: 'cat_1', min: 100 });
    expect(bound.status).toBe('succeeded');
    expect((await alice.request('GET', `${J}/jobs/${bound.execution_id}/results`)).json().data).toEqual([[6]]);
    const injection = await run(alice, 'SELECT count(*) AS n FROM sales.orders.daily WHERE category = :cat', { cat: "x' OR '1'='1" });
    expect((await alice.request('GET', `${J}/jobs/${injection.execution_id}/results`)).json().data).toEqual([[0]]);
    expect((await alice.request('PUT', `${J}/variables/min`, { type: 'number', value: 115 })).statusCode).toBe(200);
    const saved = await run(alice, 'SELECT count(*) AS n FROM sales.orders.daily WHERE id > :min');
    expect((await alice.request('GET', `${J}/jobs/${saved.execution_id}/results`)).json().data).toEqual([[5]]);
    const overridden = await run(alice, 'SELECT count(*) AS n FROM sales.orders.daily WHERE id > :min', { min: 110 });
    expect((await alice.request('GET', `${J}/jobs/${overridden.execution_id}/results`)).json().data).toEqual([[10]]);
    const missing = await run(alice, 'SELECT *\nFROM sales.orders.daily WHERE id = :nope');
    expect(missing).toMatchObject({ status: 'failed', error: { code: 'PARAMETER_NOT_DEFINED', line: 2, column: 36 } });
    expect(missing.error.message).toContain(':nope');
  });

  it('travels in time by snapshot id', async () => {
    const job = await run(alice, `SELECT count(*) AS n FROM sales.orders.daily AT (VERSION => ${firstSnapshot})`);
    expect(job.status).toBe('succeeded');
    expect((await alice.request('GET', `${J}/jobs/${job.execution_id}/results`)).json().data).toEqual([[100]]);
    const both = await run(alice, `SELECT (SELECT count(*) FROM sales.orders.daily) - (SELECT count(*) FROM sales.orders.daily AT (VERSION => ${firstSnapshot})) AS added`);
    expect((await alice.request('GET', `${J}/jobs/${both.execution_id}/results`)).json().data).toEqual([[20]]);
    const unknown = await run(alice, 'SELECT * FROM sales.orders.daily AT (VERSION => 999999)');
    expect(unknown.error.code).toBe('SNAPSHOT_NOT_FOUND');
  });

  it('travels in time by tag', async () => {
    const { catalog } = t.app.lakeport;
    await catalog.createTag({ workspace: 'sales', collection: 'orders', dataset: 'daily' }, 'first_load', firstSnapshot, 'alice');
    const job = await run(alice, "SELECT count(*) AS n FROM sales.orders.daily AT (VERSION => 'first_load')");
    expect(job.status, JSON.stringify(job.error)).toBe('succeeded');
    expect((await alice.request('GET', `${J}/jobs/${job.execution_id}/results`)).json().data).toEqual([[100]]);
    expect((await run(alice, "SELECT 1 FROM sales.orders.daily AT (VERSION => 'no_such_tag')")).error.code).toBe('SNAPSHOT_NOT_FOUND');
  });

  it('reports query errors with their place', async () => {
    const job = await run(alice, 'SELECT no_such_column FROM sales.orders.daily');
    expect(job).toMatchObject({ status: 'failed', error: { code: 'QUERY_ERROR' } });
    const syntax = await run(alice, 'SELECT FROM WHERE');
    expect(syntax.error).toMatchObject({ code: 'SYNTAX_ERROR', line: 1 });
  });
});

describe('the sandbox refuses', () => {
  it.each([
    ['COPY (SELECT 1) TO \'/tmp/x.csv\'', 'STATEMENT_NOT_ALLOWED'],
    ["ATTACH '/tmp/x.db'", 'STATEMENT_NOT_ALLOWED'],
    ['INSTALL httpfs', 'STATEMENT_NOT_ALLOWED'],
    ['LOAD httpfs', 'STATEMENT_NOT_ALLOWED'],
    ['PRAGMA version', 'STATEMENT_NOT_ALLOWED'],
    ['SET threads = 8', 'STATEMENT_NOT_ALLOWED'],
    ["EXPORT DATABASE '/tmp/x'", 'STATEMENT_NOT_ALLOWED'],
    ['SELECT 1; SELECT 2', 'MULTIPLE_STATEMENTS'],
    ["SELECT * FROM read_csv('/etc/passwd')", 'TABLE_FUNCTION_NOT_ALLOWED'],
    ["SELECT read_text('/etc/passwd')", 'FUNCTION_NOT_ALLOWED'],
    ["SELECT * FROM glob('/*')", 'TABLE_FUNCTION_NOT_ALLOWED'],
    ["SELECT * FROM '/etc/passwd'", 'FILE_ACCESS_NOT_ALLOWED'],
    ["SELECT * FROM 'data.parquet'", 'FILE_ACCESS_NOT_ALLOWED'],
    ['SELECT * FROM duckdb_settings()', 'TABLE_FUNCTION_NOT_ALLOWED'],
    ['SELECT * FROM ops.x.y', 'DATASET_NOT_FOUND'],
    ['SELECT * FROM orders', 'UNKNOWN_TABLE'],
  ])('%s', async (sql, code) => {
    const job = await run(alice, sql);
    expect(job.status).toBe('failed');
    expect(job.error.code).toBe(code);
  });

  it('hides datasets without a grant exactly like missing ones', async () => {
    const hidden = await run(rita, 'SELECT * FROM sales.hr.people');
    const missing = await run(rita, 'SELECT * FROM sales.hr.nobody');
    expect(hidden.error).toMatchObject({ code: 'DATASET_NOT_FOUND' });
    expect(missing.error.code).toBe(hidden.error.code);
    expect((await run(rita, 'SELECT count(*) FROM sales.orders.daily')).status).toBe('succeeded');
    const narrowed = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.hr.*', 'reader']] });
    expect((await run(narrowed, 'SELECT * FROM sales.orders.daily')).error.code).toBe('DATASET_NOT_FOUND');
  });
});

describe('ownership, history and cancellation', () => {
  it("answers 404 to anyone but the job's owner", async () => {
    const job = await run(alice, 'SELECT 1 AS one');
    for (const suffix of ['status', 'results', 'download']) expect((await eve.request('GET', `${J}/jobs/${job.execution_id}/${suffix}`)).statusCode).toBe(404);
    expect((await eve.request('POST', `${J}/jobs/${job.execution_id}/cancel`)).statusCode).toBe(404);
    expect((await alice.request('GET', `${J}/jobs/job_missing/status`)).statusCode).toBe(404);
  });

  it('lists recent jobs newest first, filtered by status or text', async () => {
    // Jobs of its own, so the list does not lean on the tests before it.
    const ok = await run(alice, 'SELECT 1 AS one');
    const ok2 = await run(alice, 'SELECT 2 AS two');
    const failedJob = await run(alice, 'SELECT * FROM sales.orders.daily AT (VERSION => 999999)');
    expect(failedJob.status).toBe('failed');
    const ok3 = await run(alice, 'SELECT 3 AS three');
    expect((await run(eve, 'SELECT v FROM ops.x.y')).status).toBe('succeeded');
    const recent = (await alice.request('GET', `${J}/jobs/recent`)).json();
    expect(recent.length).toBeGreaterThan(3);
    const ids = recent.map((j: { execution_id: string }) => j.execution_id);
    for (const job of [ok, ok2, failedJob, ok3]) expect(ids).toContain(job.execution_id);
    const times = recent.map((j: { created_at: string }) => j.created_at);
    expect([...times].sort().reverse()).toEqual(times);
    expect(recent.every((j: { sql_text: string }) => typeof j.sql_text === 'string')).toBe(true);
    const failed = (await alice.request('GET', `${J}/jobs/recent?filter=failed`)).json();
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((j: { status: string }) => j.status === 'failed')).toBe(true);
    expect(failed.map((j: { execution_id: string }) => j.execution_id)).toContain(failedJob.execution_id);
    const text = (await alice.request('GET', `${J}/jobs/recent?filter=AT (VERSION`)).json();
    expect(text.length).toBeGreaterThan(0);
    expect(text.map((j: { execution_id: string }) => j.execution_id)).toContain(failedJob.execution_id);
    expect(text.every((j: { sql_text: string }) => j.sql_text.toUpperCase().includes('AT (VERSION'))).toBe(true);
    const eves = (await eve.request('GET', `${J}/jobs/recent`)).json();
    expect(eves.length).toBeGreaterThan(0);
    expect(eves.every((j: { sql_text: string }) => !j.sql_text.includes('sales'))).toBe(true);
  });

  it('cancels a running job', async () => {
    const submittedRes = await alice.request('POST', `${J}/jobs`, { sql_text: 'SELECT count(*) FROM range(1000000000000) a' });
    expect(submittedRes.statusCode, submittedRes.body).toBe(201);
    const submitted = submittedRes.json();
    // Cancel a job that is really running (not one still queued), without guessing how long that takes.
    await expect.poll(async () => (await alice.request('GET', `${J}/jobs/${submitted.execution_id}/status`)).json().status, { timeout: 10_000, interval: 25 }).toBe('running');
    const cancel = await alice.request('POST', `${J}/jobs/${submitted.execution_id}/cancel`);
    expect(cancel.statusCode).toBe(200);
    const final = (await alice.request('GET', `${J}/jobs/${submitted.execution_id}/status?wait=20`)).json();
    expect(final.status).toBe('cancelled');
    expect((await alice.request('GET', `${J}/jobs/${submitted.execution_id}/results`)).statusCode).toBe(409);
  });

  it('re-queues a job whose worker died, and it then succeeds', async () => {
    const { jobs: _ } = t.app.lakeport;
    await t.db.kysely
      .insertInto('jobs')
      .values({
        execution_id: 'job_orphan',
        owner: 'alice',
        sql_text: 'SELECT 7 AS seven',
        parameters: '{}',
        permissions: '[]',
        status: 'running',
        worker_id: 'worker_dead',
        attempts: 1,
        heartbeat_at: new Date(Date.now() - 120_000),
        started_at: new Date(Date.now() - 120_000),
        timeout_ms: 30_000,
      })
      .execute();
    await t.app.lakeport.workers.recover();
    const final = (await alice.request('GET', `${J}/jobs/job_orphan/status?wait=20`)).json();
    expect(final.status).toBe('succeeded');
    expect((await alice.request('GET', `${J}/jobs/job_orphan/results`)).json().data).toEqual([[7]]);
  });
});

describe('variables', () => {
  it('saves, lists, validates and deletes', async () => {
    const put = await rita.request('PUT', `${J}/variables/region`, { type: 'string', value: 'emea' });
    expect(put.statusCode).toBe(200);
    expect(put.json().variables).toEqual([expect.objectContaining({ name: 'region', type: 'string', value: 'emea' })]);
    const mismatch = await rita.request('PUT', `${J}/variables/region`, { type: 'number', value: 'emea' });
    expect(mismatch.statusCode).toBe(422);
    expect(mismatch.json().detail[0].loc).toEqual(['body', 'value']);
    expect((await rita.request('PUT', `${J}/variables/9bad`, { type: 'string', value: 'x' })).statusCode).toBe(422);
    expect((await eve.request('GET', `${J}/variables`)).json().variables).toEqual([]);
    expect((await rita.request('DELETE', `${J}/variables/region`)).statusCode).toBe(204);
    expect((await rita.request('GET', `${J}/variables`)).json().variables).toEqual([]);
  });
});

describe('statement check', () => {
  it('answers the result shape and the relations in scope', async () => {
    const res = await rita.request('POST', `${J}/check`, { sql_text: 'SELECT category, sum(amount) AS total FROM sales.orders.daily GROUP BY 1' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, columns: [{ name: 'category', type: 'VARCHAR' }, { name: 'total' }] });
    expect(res.json().relations.map((r: { name: string }) => r.name)).toEqual(['sales.orders.daily']);
  });

  it('answers ok false with the place to underline', async () => {
    const res = (await alice.request('POST', `${J}/check`, { sql_text: 'SELECT nope FROM sales.orders.daily' })).json();
    expect(res.ok).toBe(false);
    expect(res.error.code).toBe('QUERY_ERROR');
    const missing = (await alice.request('POST', `${J}/check`, { sql_text: 'SELECT * FROM sales.orders.daily WHERE id = :x' })).json();
    expect(missing.error).toMatchObject({ code: 'PARAMETER_NOT_DEFINED', line: 1, column: 45, start: 44, end: 46 });
    const ok = (await alice.request('POST', `${J}/check`, { sql_text: 'SELECT * FROM sales.orders.daily WHERE id = :x', parameters: { x: 1 } })).json();
    expect(ok.ok).toBe(true);
  });
});

describe('concurrency', () => {
  it('runs 50 jobs from several identities with correct, isolated results', async () => {
    const users = [alice, rita, eve];
    const submitted = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const user = users[i % 3];
        const sql = user === eve ? `SELECT v + ${i} AS r FROM ops.x.y` : `SELECT count(*) + ${i} AS r FROM sales.orders.daily WHERE id <= :n`;
        const res = await user.request('POST', `${J}/jobs`, { sql_text: sql, parameters: user === eve ? {} : { n: i } });
        return { user, i, id: res.json().execution_id as string };
      }),
    );
    for (const { user, i, id } of submitted) {
      const status = (await user.request('GET', `${J}/jobs/${id}/status?wait=30`)).json();
      expect(status.status, JSON.stringify(status.error)).toBe('succeeded');
      const data = (await user.request('GET', `${J}/jobs/${id}/results`)).json().data;
      expect(data).toEqual([[user === eve ? 42 + i : Math.min(i, 120) + i]]);
    }
  });
});
