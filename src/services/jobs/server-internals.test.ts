/**
 * What the query engine must not get wrong or give away: workspaces named like DuckDB's reserved
 * catalogs (main, system, temp) are queried like any other, settings are not readable from SQL, and
 * no error a user sees names a path on the server.
 */
import fs from 'node:fs';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { seedSnapshot } from '../../../test/seed.ts';

let t: TestApp;
let alice: TestUser;
const J = '/jobs/api/v1';
const columns = [{ name: 'v', type: 'BIGINT', nullable: false }];
const snapshots: Record<string, number> = {};
let account: string;

/** Another workspace on alice's account, created through the control API like any other. */
async function addWorkspace(workspace: string) {
  const res = await alice.request('PUT', `/control/v1/workspaces/${workspace}`, { billing_account: account, members: [{ identity: 'alice', role: 'owner' }] });
  expect(res.statusCode, res.body).toBe(200);
}

beforeAll(async () => {
  t = await createTestApp();
  alice = await signIn(t.app, t.adminToken, 'alice');
  account = await createWorkspace(alice, 'sales');
  for (const workspace of ['main', 'system', 'temp', 'memory', 'sales']) {
    if (workspace !== 'sales') await addWorkspace(workspace);
    snapshots[workspace] = await seedSnapshot(t, { workspace, collection: 'c', dataset: 'd' }, columns, `SELECT i AS v FROM range(1, 11) t(i)`);
    await seedSnapshot(t, { workspace, collection: 'c', dataset: 'd' }, columns, `SELECT 100 AS v`);
  }
});
afterAll(async () => t.close());

async function run(sql: string) {
  const submitted = await alice.request('POST', `${J}/jobs`, { sql_text: sql });
  expect(submitted.statusCode, submitted.body).toBe(201);
  const done = await alice.request('GET', `${J}/jobs/${submitted.json().execution_id}/status?wait=30`);
  const job = done.json();
  if (job.status !== 'succeeded') return { ...job, rows: undefined };
  return { ...job, rows: (await alice.request('GET', `${J}/jobs/${job.execution_id}/results`)).json().data };
}

describe("workspaces named like DuckDB's reserved catalogs", () => {
  it.each(['main', 'system', 'temp', 'memory'])('%s: its datasets can be queried, checked and travelled in time', async (ws) => {
    expect((await run(`SELECT sum(v) AS s FROM ${ws}.c.d`)).rows).toEqual([[155]]);
    expect((await run(`SELECT sum(d.v) AS s FROM ${ws.toUpperCase()}."c".d AS d WHERE d.v < 100`)).rows).toEqual([[55]]);
    expect((await run(`SELECT count(*) AS n FROM ${ws}.c.d AT (VERSION => ${snapshots[ws]})`)).rows).toEqual([[10]]);
    expect((await run(`SELECT count(*) AS n FROM ${ws}.c.d a JOIN sales.c.d b ON a.v = b.v`)).rows).toEqual([[11]]);
    const checked = await alice.request('POST', `${J}/check`, { sql_text: `SELECT v FROM ${ws}.c.d` });
    expect(checked.json()).toMatchObject({ ok: true, columns: [{ name: 'v', type: 'BIGINT' }] });
  });

  it('a reserved name without such a dataset is still just not found', async () => {
    expect((await run('SELECT * FROM system.main.duckdb_settings')).error.code).toBe('DATASET_NOT_FOUND');
    expect((await run('SELECT * FROM temp.c.nothing')).error.code).toBe('DATASET_NOT_FOUND');
  });
});

describe('settings are not readable from SQL', () => {
  it.each([
    ["SELECT current_setting('allowed_paths')", 'FUNCTION_NOT_ALLOWED'],
    ["SELECT current_setting('temp_directory') AS t", 'FUNCTION_NOT_ALLOWED'],
    ["SELECT list_transform([1], x -> current_setting('home_directory'))", 'FUNCTION_NOT_ALLOWED'],
    ['SELECT * FROM duckdb_settings()', 'TABLE_FUNCTION_NOT_ALLOWED'],
    ['SELECT * FROM duckdb_extensions()', 'TABLE_FUNCTION_NOT_ALLOWED'],
    ['SELECT * FROM duckdb_temporary_files()', 'TABLE_FUNCTION_NOT_ALLOWED'],
    ['SELECT * FROM duckdb_databases()', 'TABLE_FUNCTION_NOT_ALLOWED'],
    ['SELECT * FROM pragma_database_size()', 'TABLE_FUNCTION_NOT_ALLOWED'],
    ["SELECT * FROM which_secret('s3://x/y', 's3')", 'TABLE_FUNCTION_NOT_ALLOWED'],
  ])('%s', async (sql, code) => {
    const job = await run(sql);
    expect(job.status).toBe('failed');
    expect(job.error.code).toBe(code);
    const checked = await alice.request('POST', `${J}/check`, { sql_text: sql });
    expect(checked.json()).toMatchObject({ ok: false, error: { code } });
  });
});

describe('errors never name a server path', () => {
  it('a data file gone missing fails the job without saying where it was', async () => {
    await addWorkspace('broken');
    await seedSnapshot(t, { workspace: 'broken', collection: 'c', dataset: 'd' }, columns, 'SELECT 1 AS v');
    const [file] = await t.app.lakeport.catalog.snapshotFiles((await t.app.lakeport.catalog.findDataset({ workspace: 'broken', collection: 'c', dataset: 'd' }))!.current_snapshot_id!);
    fs.rmSync(await t.deps.blobs.localPath(file.path));
    const job = await run('SELECT * FROM broken.c.d');
    expect(job.status).toBe('failed');
    const text = JSON.stringify(job.error);
    // Not the user's doing: an internal error whose details stay in the server log.
    expect(job.error.code).toBe('INTERNAL_ERROR');
    for (const dir of [os.tmpdir(), t.deps.scratchDir, process.cwd()]) expect(text).not.toContain(dir);
  });
});
