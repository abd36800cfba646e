/**
 * Materialized views end to end: CREATE / REFRESH / DROP MATERIALIZED VIEW through the job service,
 * refresh jobs run by the worker pool, the scheduler (REFRESH EVERY), ON COMMIT after an upload, the
 * snapshots over OData (@previous, tags), Custom.MaterializedView, errors with positions, other
 * tenants, and an owner who lost access.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../../test/harness.ts';
import { multipartBody } from '../../../../test/multipart.ts';
import { seedSnapshot } from '../../../../test/seed.ts';
import type { JobRow } from '../repo.ts';

let t: TestApp;
let alice: TestUser; // owner of sales
let wendy: TestUser; // writer on sales.*
let rita: TestUser; // reader on sales.*
let eve: TestUser; // owner of ops, nothing on sales
/** Set by a test to make the next refresh throw just before its commit. */
let crashBeforeCommit: ((job: JobRow) => Promise<void>) | undefined;

const J = '/jobs/api/v1';
const O = '/odata/api/v4';
const lines = { workspace: 'sales', collection: 'raw', dataset: 'lines' };
const COLUMNS = [
  { name: 'region', type: 'VARCHAR', nullable: true },
  { name: 'amount', type: 'BIGINT', nullable: true },
];

beforeAll(async () => {
  t = await createTestApp({}, { materializedViews: { tickMs: 100, beforeCommit: async (job) => crashBeforeCommit?.(job) } });
  [alice, wendy, rita, eve] = await Promise.all(['alice', 'wendy', 'rita', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  await createWorkspace(alice, 'sales', { wendy: 'writer', rita: 'reader' });
  await createWorkspace(eve, 'ops');
  await seedSnapshot(t, lines, COLUMNS, "SELECT * FROM (VALUES ('north', 10), ('north', 5), ('south', 7)) v(region, amount)");
});
afterAll(async () => t.close());

const submit = (user: TestUser, sql_text: string) => user.request('POST', `${J}/jobs`, { sql_text });
const check = async (user: TestUser, sql_text: string) => (await user.request('POST', `${J}/check`, { sql_text })).json();
const status = async (user: TestUser, id: string) => (await user.request('GET', `${J}/jobs/${id}/status?wait=30`)).json();
async function ok(user: TestUser, sql: string): Promise<{ id: string; message: string }> {
  const checked = await check(user, sql);
  expect(checked, JSON.stringify(checked)).toMatchObject({ ok: true });
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(201);
  const id = res.json().execution_id;
  const done = await status(user, id);
  expect(done.status, JSON.stringify(done)).toBe('succeeded');
  const results = await user.request('GET', `${J}/jobs/${id}/results`);
  return { id, message: results.json().data[0][0] };
}
async function refused(user: TestUser, sql: string, statusCode: number, code: string) {
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(statusCode);
  expect(res.json().code).toBe(code);
  const checked = await check(user, sql);
  expect(checked, JSON.stringify(checked)).toMatchObject({ ok: false, error: { code } });
  return { body: res.json(), check: checked };
}
/** The refresh job a CREATE's message names. */
const refreshJob = (message: string) => /job (job_\S+)$/.exec(message)![1];
async function rows(user: TestUser, set: string) {
  const res = await user.request('GET', `${O}/${set}?$orderby=region`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().value.map((r: Record<string, unknown>) => [r.region, Number(r.total)]);
}
async function until<T>(fn: () => Promise<T | undefined>, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const snapshots = (name: string) => t.app.lakeport.catalog.listSnapshots({ workspace: 'sales', collection: 'agg', dataset: name });

async function upload(user: TestUser, destination: string, csv: string) {
  const body = await multipartBody({ contract: { destination }, samples: [{ name: 'x.csv', content: csv }] });
  const res = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${user.token}` }, payload: body.payload });
  expect(res.statusCode, res.body).toBe(201);
  const c = res.json();
  if (c.state === 'proposed') expect((await user.request('PUT', `/upload/v2/contracts/${c.contract_id}/accept`, { schema_fingerprint: c.schema_fingerprint })).statusCode).toBe(200);
  const w = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${c.contract_id}/data`, headers: { authorization: `Bearer ${user.token}`, 'content-type': 'text/csv', 'x-file-name': 'x.csv' }, payload: csv });
  expect(w.statusCode, w.body).toBe(200);
  const done = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${c.contract_id}/commit`, headers: { authorization: `Bearer ${user.token}` } });
  expect(done.statusCode, done.body).toBe(200);
}

const TOTALS = 'SELECT region, sum(amount) AS total FROM sales.raw.lines GROUP BY region';

describe('CREATE MATERIALIZED VIEW and REFRESH', () => {
  it('creates the view, refreshes it as a job, and serves its rows over OData; REFRESH commits a new snapshot readable by @previous and by tag', async () => {
    const created = await ok(wendy, `CREATE MATERIALIZED VIEW sales.agg.totals COMMENT 'Totals by region' AS ${TOTALS}`);
    expect(created.message).toMatch(/^Materialized view sales\.agg\.totals created \(refreshed MANUAL\); its first refresh is job job_/);
    const first = await status(wendy, refreshJob(created.message));
    expect(first, JSON.stringify(first)).toMatchObject({ status: 'succeeded', sql_text: 'REFRESH MATERIALIZED VIEW sales.agg.totals' });
    const dataset = await t.app.lakeport.catalog.getDataset({ workspace: 'sales', collection: 'agg', dataset: 'totals' });
    expect(dataset).toMatchObject({ kind: 'materialized_view', description: 'Totals by region' });
    expect(dataset.columns.map((c) => `${c.name} ${c.type}`)).toEqual(['region VARCHAR', 'total DOUBLE']);
    expect(await rows(rita, 'sales/agg/totals')).toEqual([['north', 15], ['south', 7]]);
    const [s1] = await snapshots('totals');
    expect(s1).toMatchObject({ author: 'wendy', message: 'refresh (create)', operation: 'create', total_records: 2 });

    // Custom.MaterializedView in $metadata
    const meta = (await rita.request('GET', `${O}/sales/agg/totals/$metadata`)).body;
    expect(meta).toContain('Term="Custom.MaterializedView"');
    expect(meta).toContain(`String="${TOTALS}"`);
    expect(meta).toContain('String="MANUAL"');
    expect(meta).toContain('<String>sales.raw.lines</String>');
    expect(meta).toContain('Property="LastRefreshed"');

    // Listed like any dataset: the service document, and the effective-permissions CSV with its kind.
    expect((await rita.request('GET', `${O}/`)).json().value.map((v: { url: string }) => v.url)).toContain('sales/agg/totals');
    const csv = (await alice.request('GET', '/policy/v1/access/workspace/sales/effective-permissions.csv')).body;
    expect(csv.split('\n').find((line) => line.includes('totals'))).toContain('materialized_view');

    await ok(wendy, 'CREATE TAG before_south ON sales.agg.totals');
    await seedSnapshot(t, lines, COLUMNS, "SELECT 'south' AS region, 100 AS amount");
    const res = await submit(wendy, 'REFRESH MATERIALIZED VIEW sales.agg.totals');
    expect(res.statusCode, res.body).toBe(201);
    const refresh = await status(wendy, res.json().execution_id);
    expect(refresh.status).toBe('succeeded');
    expect((await wendy.request('GET', `${J}/jobs/${refresh.execution_id}/results`)).json().data[0][0]).toMatch(/^Refreshed sales\.agg\.totals: snapshot \d+ with 2 rows$/);
    expect(await rows(rita, 'sales/agg/totals')).toEqual([['north', 15], ['south', 107]]);
    expect(await rows(rita, 'sales/agg/totals@previous')).toEqual([['north', 15], ['south', 7]]);
    expect(await rows(rita, 'sales/agg/totals@before_south')).toEqual([['north', 15], ['south', 7]]);
    const all = await snapshots('totals');
    expect(all.map((s) => [s.operation, s.message])).toEqual([
      ['create', 'refresh (create)'],
      ['overwrite', 'refresh (manual)'],
    ]);
    // Time travel in SQL, like any dataset.
    const q = await ok(rita, `SELECT count(*) FROM sales.agg.totals AT (VERSION => ${s1.snapshot_id})`);
    expect(Number(q.message)).toBe(2);
  });

  it('REFRESH returns the refresh already queued or running instead of a second one', async () => {
    // The refresh of CREATE is held before its commit: REFRESH answers with that same job.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    crashBeforeCommit = () => held;
    let first: string;
    try {
      first = refreshJob((await ok(wendy, `CREATE MATERIALIZED VIEW sales.agg.busy AS ${TOTALS}`)).message);
      const again = await Promise.all([submit(wendy, 'REFRESH MATERIALIZED VIEW sales.agg.busy'), submit(wendy, 'REFRESH MATERIALIZED VIEW sales.agg.busy')]);
      for (const r of again) expect(r.json(), r.body).toMatchObject({ execution_id: first, status: expect.stringMatching(/queued|running/) });
      const checked = await check(wendy, 'REFRESH MATERIALIZED VIEW sales.agg.busy');
      expect(checked.ok).toBe(true);
    } finally {
      crashBeforeCommit = undefined;
      release();
    }
    expect((await status(wendy, first)).status).toBe('succeeded');
    expect((await snapshots('busy')).length).toBe(1);
    const jobs = await t.db.kysely.selectFrom('jobs').select(['execution_id', 'status']).where('refresh_of', '=', (await t.app.lakeport.catalog.getDataset({ workspace: 'sales', collection: 'agg', dataset: 'busy' })).dataset_id).execute();
    // Never two in progress at once (the unique index), and every refresh ends.
    for (const j of jobs) await until(async () => ((await t.db.kysely.selectFrom('jobs').select('status').where('execution_id', '=', j.execution_id).executeTakeFirst())!.status.match(/queued|running/) ? undefined : true), 'refresh to end');
    const inProgressAtOnce = await t.db.kysely.selectFrom('jobs').select('execution_id').where('refresh_of', 'is not', null).where('status', 'in', ['queued', 'running']).execute();
    expect(inProgressAtOnce.length).toBeLessThanOrEqual(1);
  });

  it('REFRESH EVERY: the scheduler refreshes the view on its own', async () => {
    const created = await ok(wendy, `CREATE MATERIALIZED VIEW sales.agg.ticking REFRESH EVERY INTERVAL '1 second' AS ${TOTALS}`);
    expect(created.message).toContain('refreshed EVERY 1 second');
    const snaps = await until(async () => {
      const s = await snapshots('ticking');
      return s.length >= 3 ? s : undefined;
    }, 'scheduled refreshes');
    expect(snaps.slice(1).every((s) => s.message === 'refresh (schedule)' && s.operation === 'overwrite')).toBe(true);
    expect((await rita.request('GET', `${O}/sales/agg/ticking/$metadata`)).body).toContain('String="EVERY 1 second"');
    await ok(wendy, 'DROP MATERIALIZED VIEW sales.agg.ticking');
  });

  it('ON COMMIT: an upload committed to a source refreshes the view', async () => {
    await upload(alice, 'sales.raw.events', 'kind,n\na,1\nb,2\n');
    const created = await ok(wendy, 'CREATE MATERIALIZED VIEW sales.agg.kinds REFRESH ON COMMIT AS SELECT kind, sum(n) AS total FROM sales.raw.events GROUP BY kind');
    await status(wendy, refreshJob(created.message));
    expect((await snapshots('kinds')).length).toBe(1);
    await upload(alice, 'sales.raw.events', 'kind,n\na,40\n');
    const snaps = await until(async () => {
      const s = await snapshots('kinds');
      return s.length >= 2 ? s : undefined;
    }, 'the ON COMMIT refresh');
    expect(snaps[1]).toMatchObject({ message: 'refresh (on commit)', author: 'wendy' });
    const res = (await rita.request('GET', `${O}/sales/agg/kinds?$orderby=kind`)).json();
    expect(res.value.map((r: { kind: string; total: unknown }) => [r.kind, Number(r.total)])).toEqual([['a', 41], ['b', 2]]);

    // A view over that view, ON COMMIT too: a refresh of the first commits, and so refreshes the second.
    await ok(wendy, 'CREATE MATERIALIZED VIEW sales.agg.kinds_total REFRESH ON COMMIT AS SELECT sum(total) AS total FROM sales.agg.kinds');
    await until(async () => ((await snapshots('kinds_total')).length >= 1 ? true : undefined), 'first refresh');
    await upload(alice, 'sales.raw.events', 'kind,n\nb,100\n');
    await until(async () => {
      const r = (await rita.request('GET', `${O}/sales/agg/kinds_total`)).json().value;
      return Number(r[0]?.total) === 143 ? true : undefined;
    }, 'the view over the view to follow');

    // A rollback of the source is a commit too: the view follows it back to the first upload.
    const [first] = await t.app.lakeport.catalog.listSnapshots({ workspace: 'sales', collection: 'raw', dataset: 'events' });
    await ok(wendy, `ALTER DATASET sales.raw.events ROLLBACK TO SNAPSHOT ${first.snapshot_id}`);
    await until(async () => {
      const r = (await rita.request('GET', `${O}/sales/agg/kinds?$orderby=kind`)).json().value as { kind: string; total: unknown }[];
      return r.map((x) => `${x.kind}=${Number(x.total)}`).join(',') === 'a=1,b=2' ? true : undefined;
    }, 'the ON COMMIT refresh after a rollback');
  });

  it('a refresh leases the source snapshot it reads: EXPIRE SNAPSHOTS keeps it while the refresh runs', async () => {
    await upload(alice, 'sales.raw.leased', 'kind,n\na,1\n');
    const created = await ok(wendy, 'CREATE MATERIALIZED VIEW sales.agg.leased AS SELECT kind, sum(n) AS total FROM sales.raw.leased GROUP BY kind');
    await status(wendy, refreshJob(created.message));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const atCommit = new Promise<void>((resolve) => (reached = resolve));
    crashBeforeCommit = () => {
      reached();
      return held;
    };
    let refresh: string;
    try {
      // REFRESH answers with the refresh job itself (held here before its commit).
      refresh = (await submit(wendy, 'REFRESH MATERIALIZED VIEW sales.agg.leased')).json().execution_id;
      await atCommit;
      // The snapshot the refresh read stops being current; an expiry of everything older keeps it.
      await upload(alice, 'sales.raw.leased', 'kind,n\nb,2\n');
      expect((await ok(alice, 'ALTER DATASET sales.raw.leased EXPIRE SNAPSHOTS OLDER THAN 0 SECONDS')).message).toMatch(/^Expired 0 snapshots .*1 in use by running readers/);
    } finally {
      crashBeforeCommit = undefined;
      release();
    }
    expect((await status(wendy, refresh)).status).toBe('succeeded');
  });

  it('a crash before the commit leaves the last good snapshot; the view is read as it was', async () => {
    await ok(wendy, `CREATE MATERIALIZED VIEW sales.agg.fragile AS ${TOTALS}`);
    await until(async () => ((await snapshots('fragile')).length === 1 ? true : undefined), 'first refresh');
    const before = await rows(rita, 'sales/agg/fragile');
    crashBeforeCommit = async () => {
      throw new Error('the worker died here');
    };
    try {
      await seedSnapshot(t, lines, COLUMNS, "SELECT 'west' AS region, 1 AS amount");
      const res = await submit(wendy, 'REFRESH MATERIALIZED VIEW sales.agg.fragile');
      const failed = await status(wendy, res.json().execution_id);
      expect(failed.status).toBe('failed');
      expect(failed.error.code).toBe('INTERNAL_ERROR');
    } finally {
      crashBeforeCommit = undefined;
    }
    expect((await snapshots('fragile')).length).toBe(1);
    expect(await rows(rita, 'sales/agg/fragile')).toEqual(before);
    // No file of the failed refresh is left in the lake.
    const ds = await t.app.lakeport.catalog.getDataset({ workspace: 'sales', collection: 'agg', dataset: 'fragile' });
    const files = await t.app.lakeport.catalog.snapshotFiles(ds.current_snapshot_id!);
    expect(files.length).toBe(1);
    // The next refresh works.
    const again = await submit(wendy, 'REFRESH MATERIALIZED VIEW sales.agg.fragile');
    expect((await status(wendy, again.json().execution_id)).status).toBe('succeeded');
    expect((await rows(rita, 'sales/agg/fragile')).map((r: unknown[]) => r[0])).toContain('west');
  });
});

describe('ON COMMIT catch-up (the scheduler refreshes a view a source commit left behind)', () => {
  const refreshesOf = async (name: string) => {
    const ds = await t.app.lakeport.catalog.getDataset({ workspace: 'sales', collection: 'agg', dataset: name });
    return t.db.kysely.selectFrom('jobs').select(['status', 'execution_id']).where('refresh_of', '=', ds.dataset_id).orderBy('created_at').execute();
  };
  const settled = async (name: string) => until(async () => ((await refreshesOf(name)).every((j) => j.status !== 'queued' && j.status !== 'running') ? true : undefined), `${name}'s refreshes to end`);
  const source = (name: string) => ({ workspace: 'sales', collection: 'raw', dataset: name });
  /** sales.raw.<name> holding `firstRow`, and sales.agg.<name> REFRESH ON COMMIT AS `select` over it, once its first refresh succeeded. */
  async function onCommitView(name: string, firstRow: string, select: string) {
    await seedSnapshot(t, source(name), COLUMNS, firstRow);
    const created = await ok(wendy, `CREATE MATERIALIZED VIEW sales.agg.${name} REFRESH ON COMMIT AS ${select}`);
    expect((await status(wendy, refreshJob(created.message))).status).toBe('succeeded');
  }

  it('a commit whose refresh was never queued (the process stopped in between) is refreshed by the next tick', async () => {
    await onCommitView('ledger', "SELECT 'north' AS region, 1 AS amount", 'SELECT region, sum(amount) AS total FROM sales.raw.ledger GROUP BY region');
    // Committed straight to the catalog: no ON COMMIT refresh is queued for it, as after a crash.
    await seedSnapshot(t, source('ledger'), COLUMNS, "SELECT 'south' AS region, 9 AS amount");
    const snaps = await until(async () => {
      const s = await snapshots('ledger');
      return s.length >= 2 ? s : undefined;
    }, 'the catch-up refresh');
    expect(snaps[1]).toMatchObject({ message: 'refresh (on commit)', author: 'wendy' });
    expect(await rows(rita, 'sales/agg/ledger')).toEqual([['north', 1], ['south', 9]]);
    // Caught up: no further refresh.
    await settled('ledger');
    await new Promise((r) => setTimeout(r, 500));
    expect((await refreshesOf('ledger')).length).toBe(2);
  });

  it('a commit that lands while a refresh reads the snapshot before it gets a refresh of its own', async () => {
    // Set before the view exists, so its first refresh cannot commit before the hook is in place.
    let landed = false;
    crashBeforeCommit = async (job) => {
      // The refresh has read the first snapshot; a commit lands before it commits (its ON COMMIT request finds it running).
      if (landed || job.sql_text !== 'REFRESH MATERIALIZED VIEW sales.agg.stock') return;
      landed = true;
      await seedSnapshot(t, source('stock'), COLUMNS, "SELECT 'east' AS region, 4 AS amount");
    };
    try {
      await onCommitView('stock', "SELECT 'north' AS region, 1 AS amount", 'SELECT region, sum(amount) AS total FROM sales.raw.stock GROUP BY region');
    } finally {
      crashBeforeCommit = undefined;
    }
    expect(landed).toBe(true);
    await until(async () => ((await rows(rita, 'sales/agg/stock')).length === 2 ? true : undefined), 'a refresh that reads the commit');
    expect(await rows(rita, 'sales/agg/stock')).toEqual([['east', 4], ['north', 1]]);
  });

  it('a refresh that fails is not queued again until a source moves on', async () => {
    await onCommitView('codes', "SELECT '1' AS region, 1 AS amount", 'SELECT CAST(region AS INTEGER) AS code, sum(amount) AS total FROM sales.raw.codes GROUP BY 1');
    // A value the definition cannot cast: every refresh from now on fails.
    await seedSnapshot(t, source('codes'), COLUMNS, "SELECT 'x' AS region, 2 AS amount");
    await until(async () => ((await refreshesOf('codes')).length === 2 ? true : undefined), 'the catch-up refresh');
    await settled('codes');
    await new Promise((r) => setTimeout(r, 1_000)); // ten ticks
    const jobs = await refreshesOf('codes');
    expect(jobs.map((j) => j.status)).toEqual(['succeeded', 'failed']);
    await seedSnapshot(t, source('codes'), COLUMNS, "SELECT '3' AS region, 3 AS amount");
    await until(async () => ((await refreshesOf('codes')).length === 3 ? true : undefined), 'one refresh for the next commit');
    await settled('codes');
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await refreshesOf('codes')).map((j) => j.status)).toEqual(['succeeded', 'failed', 'failed']);
    expect(await snapshots('codes')).toHaveLength(1);
  });
});

describe('errors, positions and permissions', () => {
  it('statement errors point into the statement, the select included', async () => {
    const sql = 'CREATE MATERIALIZED VIEW sales.agg.bad AS SELECT region, nope FROM sales.raw.lines';
    const { check: c } = await refused(wendy, sql, 400, 'QUERY_ERROR');
    expect(c.error.start).toBe(sql.indexOf('nope'));
    const missing = 'CREATE MATERIALIZED VIEW sales.agg.bad AS SELECT * FROM sales.raw.missing';
    const { check: m } = await refused(wendy, missing, 404, 'DATASET_NOT_FOUND');
    expect(m.error.start).toBe(missing.indexOf('sales.raw.missing'));
    const interval = "CREATE MATERIALIZED VIEW sales.agg.bad REFRESH EVERY '5 fortnights' AS SELECT 1 FROM sales.raw.lines";
    expect((await refused(wendy, interval, 400, 'INVALID_INTERVAL')).check.error.start).toBe(interval.indexOf("'5 fortnights'"));
    await refused(wendy, "CREATE MATERIALIZED VIEW sales.agg.bad REFRESH EVERY '0 seconds' AS SELECT 1 FROM sales.raw.lines", 400, 'INVALID_INTERVAL');
    await refused(wendy, 'CREATE MATERIALIZED VIEW sales.agg.bad REFRESH SOMETIMES AS SELECT 1 FROM sales.raw.lines', 400, 'SYNTAX_ERROR');
    await refused(wendy, 'CREATE MATERIALIZED VIEW sales.agg.bad AS', 400, 'SYNTAX_ERROR');
    const param = 'CREATE MATERIALIZED VIEW sales.agg.bad AS SELECT * FROM sales.raw.lines WHERE amount > :min';
    expect((await refused(wendy, param, 400, 'INVALID_MATERIALIZED_VIEW')).check.error.start).toBe(param.indexOf(':min'));
    await refused(wendy, 'CREATE MATERIALIZED VIEW sales.agg.bad AS SELECT 1', 400, 'INVALID_MATERIALIZED_VIEW');
    await refused(wendy, `CREATE MATERIALIZED VIEW sales.agg.totals AS ${TOTALS}`, 409, 'ALREADY_EXISTS');
    await refused(wendy, `CREATE OR REPLACE MATERIALIZED VIEW sales.raw.lines AS ${TOTALS}`, 409, 'WRONG_OBJECT_KIND');
    await refused(wendy, 'REFRESH MATERIALIZED VIEW sales.raw.lines', 409, 'WRONG_OBJECT_KIND');
    await refused(wendy, 'DROP MATERIALIZED VIEW sales.raw.lines', 409, 'WRONG_OBJECT_KIND');
    await refused(wendy, 'REFRESH MATERIALIZED VIEW sales.agg.nothing', 404, 'DATASET_NOT_FOUND');
    expect((await ok(wendy, 'DROP MATERIALIZED VIEW IF EXISTS sales.agg.nothing')).message).toBe('Materialized view sales.agg.nothing does not exist; nothing dropped');
    await refused(wendy, 'CREATE MATERIALIZED VIEW sales.agg.bad AS SELECT * FROM sales.raw.lines; SELECT 1', 400, 'MULTIPLE_STATEMENTS');
    // A check changed nothing.
    expect(await t.app.lakeport.catalog.findDataset({ workspace: 'sales', collection: 'agg', dataset: 'bad' })).toBeUndefined();
  });

  it('a reader cannot create, refresh or drop; another tenant sees nothing', async () => {
    await refused(rita, `CREATE MATERIALIZED VIEW sales.agg.mine AS ${TOTALS}`, 403, 'PERMISSION_DENIED');
    await refused(rita, 'REFRESH MATERIALIZED VIEW sales.agg.totals', 403, 'PERMISSION_DENIED');
    await refused(rita, 'DROP MATERIALIZED VIEW sales.agg.totals', 403, 'PERMISSION_DENIED');
    await refused(eve, 'REFRESH MATERIALIZED VIEW sales.agg.totals', 404, 'DATASET_NOT_FOUND');
    await refused(eve, 'DROP MATERIALIZED VIEW sales.agg.totals', 404, 'DATASET_NOT_FOUND');
    await refused(eve, `CREATE MATERIALIZED VIEW sales.agg.stolen AS ${TOTALS}`, 403, 'PERMISSION_DENIED');
    // In her own workspace, over sales' data: the select is planned with her grants.
    await refused(eve, `CREATE MATERIALIZED VIEW ops.x.stolen AS ${TOTALS}`, 404, 'DATASET_NOT_FOUND');
    expect([403, 404]).toContain((await eve.request('GET', `${O}/sales/agg/totals`)).statusCode);
    // Eve cannot poll wendy's refresh jobs either.
    const [job] = await t.db.kysely.selectFrom('jobs').select('execution_id').where('refresh_of', 'is not', null).where('owner', '=', 'wendy').limit(1).execute();
    expect((await eve.request('GET', `${J}/jobs/${job.execution_id}/status`)).statusCode).toBe(404);
  });

  it('refreshes run with the owner grants: an owner who lost access makes the refresh fail, and the view keeps its snapshot', async () => {
    const carol = await signIn(t.app, t.adminToken, 'carol');
    const grant = await alice.request('POST', '/policy/v1/access/workspace/sales/policies', { principal: { identity: 'carol' }, role: 'writer', pattern: 'sales.*' });
    expect(grant.statusCode, grant.body).toBe(201);
    const created = await ok(carol, `CREATE MATERIALIZED VIEW sales.agg.carols AS ${TOTALS}`);
    expect((await status(carol, refreshJob(created.message))).status).toBe('succeeded');
    const before = await rows(rita, 'sales/agg/carols');
    const revoke = await alice.request('DELETE', `/policy/v1/access/workspace/sales/policies/${grant.json().policy_id}`);
    expect(revoke.statusCode, revoke.body).toBe(200);
    // Wendy (a writer) asks for a refresh; it still runs as carol, who can no longer read the source.
    const res = await submit(wendy, 'REFRESH MATERIALIZED VIEW sales.agg.carols');
    const failed = await status(wendy, res.json().execution_id);
    expect(failed.status).toBe('failed');
    expect(failed.error.code).toBe('DATASET_NOT_FOUND');
    expect(failed.error.message).toContain('grants of its owner carol');
    expect(failed.error.message).toContain('sales.raw.lines');
    expect((await snapshots('carols')).length).toBe(1);
    expect(await rows(rita, 'sales/agg/carols')).toEqual(before);
    const view = await t.app.lakeport.catalog.getDataset({ workspace: 'sales', collection: 'agg', dataset: 'carols' });
    expect(await t.db.kysely.selectFrom('materialized_views').select(['last_refresh_status', 'owner']).where('dataset_id', '=', view.dataset_id).executeTakeFirst()).toEqual({ last_refresh_status: 'failed', owner: 'carol' });
  });

  it('DROP MATERIALIZED VIEW is refused under drop_protection (423) and drops the view otherwise', async () => {
    await ok(wendy, `CREATE MATERIALIZED VIEW sales.agg.doomed AS ${TOTALS}`);
    await t.app.lakeport.catalog.setNamespaceProperties('sales', { drop_protection: true });
    try {
      await refused(wendy, 'DROP MATERIALIZED VIEW sales.agg.doomed', 423, 'GUARDED');
    } finally {
      await t.app.lakeport.catalog.setNamespaceProperties('sales', { drop_protection: null });
    }
    expect((await ok(wendy, 'DROP MATERIALIZED VIEW sales.agg.doomed')).message).toMatch(/^Materialized view sales\.agg\.doomed dropped; UNDROP DATASET/);
    expect(await t.app.lakeport.catalog.findDataset({ workspace: 'sales', collection: 'agg', dataset: 'doomed' })).toBeUndefined();
    expect((await rita.request('GET', `${O}/sales/agg/doomed`)).statusCode).toBe(404);
  });

  it('DROP during a refresh cancels it; nothing of it is committed or left in the lake', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const atCommit = new Promise<void>((resolve) => (reached = resolve));
    crashBeforeCommit = () => {
      reached();
      return held;
    };
    let refresh: string;
    try {
      refresh = refreshJob((await ok(wendy, `CREATE MATERIALIZED VIEW sales.agg.dropped AS ${TOTALS}`)).message);
      await atCommit;
      expect((await ok(wendy, 'DROP MATERIALIZED VIEW sales.agg.dropped')).message).toMatch(/^Materialized view sales\.agg\.dropped dropped; UNDROP DATASET/);
    } finally {
      crashBeforeCommit = undefined;
      release();
    }
    const ended = await status(wendy, refresh);
    expect(ended.status).toBe('cancelled');
    const lake: unknown[] = [];
    for await (const blob of t.deps.blobs.list('lake/sales/agg/dropped/')) lake.push(blob);
    expect(lake).toEqual([]);
  });

  it('CREATE OR REPLACE changes the definition and refreshes', async () => {
    const replaced = await ok(wendy, "CREATE OR REPLACE MATERIALIZED VIEW sales.agg.totals AS SELECT region, count(*) AS total FROM sales.raw.lines GROUP BY region");
    expect(replaced.message).toContain('replaced');
    expect((await status(wendy, refreshJob(replaced.message))).status).toBe('succeeded');
    expect((await rows(rita, 'sales/agg/totals')).find((r: unknown[]) => r[0] === 'north')).toEqual(['north', 2]);
  });
});
