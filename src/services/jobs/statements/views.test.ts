/**
 * Logical views (CREATE [OR REPLACE] VIEW, DROP VIEW), COMMENT ON and ALTER DATASET … SORTED BY
 * through the job service, and where views show: query resolution under the reader's grants
 * (invoker's rights, docs/views.md), /check, OData and the effective-permissions CSV.
 */
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../../test/harness.ts';
import { seedSnapshot } from '../../../../test/seed.ts';

let t: TestApp;
let alice: TestUser; // owner of sales
let rob: TestUser; // reader on sales.* (views and their sources)
let rita: TestUser; // reader on sales.reports.* only (the views, not their sources)
let wendy: TestUser; // writer on sales.reports.* only
let eve: TestUser; // owner of ops, another tenant

const J = '/jobs/api/v1';
const P = '/policy/v1/access/workspace';
const daily = { workspace: 'sales', collection: 'orders', dataset: 'daily' };
const columns = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'amount', type: 'DOUBLE', nullable: true },
];

beforeAll(async () => {
  t = await createTestApp();
  [alice, rob, rita, wendy, eve] = await Promise.all(['alice', 'rob', 'rita', 'wendy', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  await createWorkspace(alice, 'sales', { rob: 'reader' });
  await createWorkspace(eve, 'ops');
  for (const [who, role] of [['rita', 'reader'], ['wendy', 'writer']]) {
    const res = await alice.request('POST', `${P}/sales/policies`, { principal: { identity: who }, role, pattern: 'sales.reports.*' });
    expect(res.statusCode, res.body).toBe(201);
  }
  await seedSnapshot(t, daily, columns, 'SELECT i AS id, i * 1.5 AS amount FROM range(1, 11) t(i)');
  await seedSnapshot(t, { workspace: 'ops', collection: 'data', dataset: 'costs' }, columns, 'SELECT i AS id, i * 10.0 AS amount FROM range(1, 4) t(i)');
});
afterAll(async () => t.close());

const submit = (user: TestUser, sql_text: string) => user.request('POST', `${J}/jobs`, { sql_text });
const check = async (user: TestUser, sql_text: string) => (await user.request('POST', `${J}/check`, { sql_text })).json();
async function ok(user: TestUser, sql: string): Promise<string> {
  const checked = await check(user, sql);
  expect(checked, JSON.stringify(checked)).toMatchObject({ ok: true });
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(201);
  expect(res.json().status).toBe('succeeded');
  const results = await user.request('GET', `${J}/jobs/${res.json().execution_id}/results`);
  return results.json().data[0][0];
}
/** A refused statement: the submit's status and code, and the same code at the same place from /check. */
async function refused(user: TestUser, sql: string, status: number, code: string, at?: string, occurrence: 'first' | 'last' = 'first') {
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().code).toBe(code);
  const checked = await check(user, sql);
  expect(checked, JSON.stringify(checked)).toMatchObject({ ok: false, error: { code } });
  if (at !== undefined) {
    const start = occurrence === 'first' ? sql.indexOf(at) : sql.lastIndexOf(at);
    expect(res.json().start).toBe(start);
    expect(checked.error.start).toBe(start);
    expect(sql.slice(checked.error.start, checked.error.end)).toBe(at);
  }
  return res.json() as { detail: string };
}
async function query(user: TestUser, sql: string) {
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(201);
  const status = (await user.request('GET', `${J}/jobs/${res.json().execution_id}/status?wait=30`)).json();
  if (status.status !== 'succeeded') return { status: status.status as string, error: status.error as { code: string; message: string }, rows: [] };
  const results = (await user.request('GET', `${J}/jobs/${res.json().execution_id}/results`)).json();
  return { status: status.status as string, error: undefined, rows: results.data as unknown[][] };
}
const dataset = (ref: { workspace: string; collection: string; dataset: string }) => t.app.lakeport.catalog.findDataset(ref);

describe('CREATE VIEW and reading it (invoker\'s rights)', () => {
  it('creates a view of kind view with its columns, description and definition; a reader with the view and its sources gets rows', async () => {
    const sql = "CREATE VIEW sales.reports.big COMMENT 'Orders above 5' AS SELECT id, amount * 2 AS doubled FROM sales.orders.daily WHERE amount > 5;";
    expect(await ok(alice, sql)).toBe('View sales.reports.big created (2 columns; reads sales.orders.daily)');
    const view = await dataset({ workspace: 'sales', collection: 'reports', dataset: 'big' });
    expect(view).toMatchObject({ kind: 'view', description: 'Orders above 5', current_snapshot_id: null });
    expect(view!.columns.map((c) => [c.name, c.type])).toEqual([['id', 'BIGINT'], ['doubled', 'DOUBLE']]);
    expect(view!.properties).toMatchObject({
      view: { definition: 'SELECT id, amount * 2 AS doubled FROM sales.orders.daily WHERE amount > 5', sources: ['sales.orders.daily'] },
      llm_described: false,
    });
    const read = await query(rob, 'SELECT count(*)::INT AS n, sum(doubled) AS total FROM sales.reports.big');
    expect(read).toMatchObject({ status: 'succeeded', rows: [[7, 2 * 1.5 * (4 + 5 + 6 + 7 + 8 + 9 + 10)]] });
    // Qualified column names and aliases work as for a dataset.
    expect((await query(rob, 'SELECT b.id FROM sales.reports.big b ORDER BY 1 LIMIT 1')).rows).toEqual([[4]]);
  });

  it('refuses a reader of the view who may not read its sources, naming the view and the source (never its data)', async () => {
    const read = await query(rita, 'SELECT * FROM sales.reports.big');
    expect(read.status).toBe('failed');
    expect(read.error!.code).toBe('VIEW_SOURCE_NOT_READABLE');
    expect(read.error!.message).toContain('View sales.reports.big');
    expect(read.error!.message).toContain('sales.orders.daily');
    expect(read.error!.message).toContain('invoker');
    // /check says the same, at the view's name.
    const sql = 'SELECT id FROM sales.reports.big';
    const checked = await check(rita, sql);
    expect(checked).toMatchObject({ ok: false, error: { code: 'VIEW_SOURCE_NOT_READABLE', start: sql.indexOf('sales.reports.big') } });
    // Granted the source, the same reader gets the rows.
    await ok(alice, 'GRANT reader ON sales.orders.daily TO rita');
    expect((await query(rita, 'SELECT count(*)::INT FROM sales.reports.big')).rows).toEqual([[7]]);
    await ok(alice, 'REVOKE reader ON sales.orders.daily FROM rita');
    expect((await query(rita, 'SELECT count(*)::INT FROM sales.reports.big')).error?.code).toBe('VIEW_SOURCE_NOT_READABLE');
  });

  it('/check lists views among the relations, as kind view, and gives a query over a view its columns', async () => {
    const checked = await check(rob, 'SELECT doubled FROM sales.reports.big');
    expect(checked.ok).toBe(true);
    expect(checked.columns).toEqual([{ name: 'doubled', type: 'DOUBLE' }]);
    expect(checked.relations).toContainEqual({ name: 'sales.reports.big', kind: 'view', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'doubled', type: 'DOUBLE' }] });
    expect(checked.relations).toContainEqual(expect.objectContaining({ name: 'sales.orders.daily', kind: 'table' }));
  });

  it('resolves nested views, refuses a cycle made by OR REPLACE and time travel on a view', async () => {
    await ok(alice, 'CREATE VIEW sales.reports.top AS SELECT id FROM sales.reports.big WHERE doubled > 20');
    expect((await query(rob, 'SELECT count(*)::INT FROM sales.reports.top')).rows).toEqual([[4]]);
    expect((await query(rita, 'SELECT count(*)::INT FROM sales.reports.top')).error).toMatchObject({ code: 'VIEW_SOURCE_NOT_READABLE', message: expect.stringContaining('View sales.reports.top → sales.reports.big') });
    const cycle = 'CREATE OR REPLACE VIEW sales.reports.big AS SELECT id, 1.0 AS doubled FROM sales.reports.top';
    const refusal = await refused(alice, cycle, 400, 'VIEW_CYCLE', 'sales.reports.top');
    expect(refusal.detail).toContain('sales.reports.big → sales.reports.top → sales.reports.big');
    await refused(alice, 'CREATE VIEW sales.reports.self AS SELECT 1 AS x FROM sales.reports.self', 404, 'DATASET_NOT_FOUND', 'sales.reports.self', 'last');
    await refused(alice, 'CREATE TAG v1 ON sales.reports.big', 400, 'VERSIONING_NOT_SUPPORTED', 'sales.reports.big');
    const travel = await query(rob, "SELECT * FROM sales.reports.big AT (VERSION => 1)");
    expect(travel.error).toMatchObject({ code: 'INVALID_TIME_TRAVEL', message: expect.stringContaining('logical view') });
  });

  it('checks the SELECT as a query job of the creator, with positions in the whole statement', async () => {
    const prefix = 'CREATE VIEW sales.reports.bad AS ';
    const unknown = `${prefix}SELECT nosuch FROM sales.orders.daily`;
    const res = await refused(alice, unknown, 400, 'INVALID_VIEW_DEFINITION', 'nosuch');
    expect(res.detail).toMatch(/nosuch/);
    await refused(alice, `${prefix}SELECT * FROM sales.orders.missing`, 404, 'DATASET_NOT_FOUND', 'sales.orders.missing');
    await refused(alice, `${prefix}SELECT * FROM sales.orders.daily WHERE id = :p`, 400, 'UNSUPPORTED_PARAMETER', ':p');
    await refused(alice, `${prefix}SELECT * FROM read_csv('/etc/passwd')`, 400, 'TABLE_FUNCTION_NOT_ALLOWED', 'read_csv');
    // Duplicate names get DuckDB's suffix, as in a job's result.
    expect(await ok(alice, 'CREATE VIEW sales.reports.dups AS SELECT 1 AS a, 2 AS a')).toBe('View sales.reports.dups created (2 columns; reads no dataset)');
    expect((await query(rob, 'SELECT a_1 FROM sales.reports.dups')).rows).toEqual([[2]]);
    await refused(alice, 'CREATE VIEW sales.reports.bad AS ', 400, 'SYNTAX_ERROR');
    await refused(alice, 'CREATE VIEW sales.reports AS SELECT 1 AS x', 400, 'SYNTAX_ERROR', 'AS');
    await refused(alice, 'CREATE VIEW sales.reports.bad SELECT 1 AS x', 400, 'SYNTAX_ERROR', 'SELECT');
    await refused(alice, `${prefix}SELECT 1 AS x; SELECT 2`, 400, 'MULTIPLE_STATEMENTS');
    expect(await dataset({ workspace: 'sales', collection: 'reports', dataset: 'bad' })).toBeUndefined();
  });

  it('needs writer on the view\'s name and reader on its sources (the view is planned with the creator\'s own grants)', async () => {
    // wendy may write sales.reports.* but not read sales.orders.daily.
    await refused(wendy, 'CREATE VIEW sales.reports.w AS SELECT * FROM sales.orders.daily', 404, 'DATASET_NOT_FOUND', 'sales.orders.daily');
    expect(await ok(wendy, 'CREATE VIEW sales.reports.w AS SELECT 42 AS answer')).toBe('View sales.reports.w created (1 column; reads no dataset)');
    await refused(rob, 'CREATE VIEW sales.reports.r AS SELECT 1 AS x', 403, 'PERMISSION_DENIED', 'sales.reports.r');
    await refused(wendy, 'CREATE VIEW sales.orders.w AS SELECT 1 AS x', 403, 'PERMISSION_DENIED', 'sales.orders.w');
  });

  it('OR REPLACE replaces a view (never a table); CREATE without it refuses an existing name', async () => {
    await refused(alice, 'CREATE VIEW sales.reports.w AS SELECT 1 AS x', 409, 'ALREADY_EXISTS', 'sales.reports.w');
    const table = await refused(alice, 'CREATE OR REPLACE VIEW sales.orders.daily AS SELECT 1 AS x', 409, 'WRONG_OBJECT_KIND', 'sales.orders.daily');
    expect(table.detail).toContain('is a table');
    await ok(alice, "COMMENT ON COLUMN sales.reports.w.answer IS 'The answer'");
    expect(await ok(alice, 'CREATE OR REPLACE VIEW sales.reports.w AS SELECT 43 AS answer, 1 AS one')).toBe('View sales.reports.w replaced (2 columns; reads no dataset)');
    const view = await dataset({ workspace: 'sales', collection: 'reports', dataset: 'w' });
    expect(view!.columns).toEqual([
      { name: 'answer', type: 'INTEGER', nullable: true, description: 'The answer' },
      { name: 'one', type: 'INTEGER', nullable: true },
    ]);
    expect((await query(rita, 'SELECT * FROM sales.reports.w')).rows).toEqual([[43, 1]]);
  });

  it('a view over a dropped dataset, or one whose columns changed, fails naming the view and the dataset', async () => {
    const src = { workspace: 'sales', collection: 'orders', dataset: 'scratch' };
    await seedSnapshot(t, src, columns, 'SELECT 1::BIGINT AS id, 2.0 AS amount');
    await ok(alice, 'CREATE VIEW sales.reports.fragile AS SELECT id, amount FROM sales.orders.scratch');
    await t.app.lakeport.catalog.dropDataset(src);
    const dropped = await query(rob, 'SELECT * FROM sales.reports.fragile');
    expect(dropped.error).toMatchObject({ code: 'DATASET_NOT_FOUND', message: expect.stringContaining('View sales.reports.fragile: it reads sales.orders.scratch, which no longer exists') });
    // Recreated with other columns: DuckDB's binder error, prefixed with the view.
    await seedSnapshot(t, src, [{ name: 'id', type: 'BIGINT', nullable: false }], 'SELECT 1::BIGINT AS id');
    const changed = await query(rob, 'SELECT * FROM sales.reports.fragile');
    expect(changed.error?.code).toBe('QUERY_ERROR');
    expect(changed.error?.message).toMatch(/^View sales\.reports\.fragile: .*amount/);
    const checked = await check(rob, 'SELECT * FROM sales.reports.fragile');
    expect(checked).toMatchObject({ ok: false, error: { code: 'QUERY_ERROR', message: expect.stringContaining('View sales.reports.fragile') } });
  });

  it('follows the same rule across workspaces and tenants', async () => {
    // alice cannot read ops: she cannot make a view of it.
    await refused(alice, 'CREATE VIEW sales.reports.x AS SELECT * FROM ops.data.costs', 404, 'DATASET_NOT_FOUND', 'ops.data.costs');
    // eve grants alice ops.data.costs: the view can be made and alice reads it; rob, without ops, is refused naming it.
    const grant = await eve.request('POST', `${P}/ops/policies`, { principal: { identity: 'alice' }, role: 'reader', pattern: 'ops.data.costs' });
    expect(grant.statusCode, grant.body).toBe(201);
    await ok(alice, 'CREATE VIEW sales.reports.x AS SELECT d.id, c.amount FROM sales.orders.daily d JOIN ops.data.costs c USING (id)');
    expect((await query(alice, 'SELECT count(*)::INT FROM sales.reports.x')).rows).toEqual([[3]]);
    const robs = await query(rob, 'SELECT * FROM sales.reports.x');
    expect(robs.error).toMatchObject({ code: 'VIEW_SOURCE_NOT_READABLE', message: expect.stringContaining('ops.data.costs') });
    expect(robs.error!.message).not.toContain('10');
    // Another tenant sees nothing of sales' views and cannot change them.
    expect((await query(eve, 'SELECT * FROM sales.reports.big')).error?.code).toBe('DATASET_NOT_FOUND');
    await refused(eve, 'DROP VIEW sales.reports.big', 404, 'DATASET_NOT_FOUND', 'sales.reports.big');
    await refused(eve, 'CREATE OR REPLACE VIEW sales.reports.big AS SELECT 1 AS x', 403, 'PERMISSION_DENIED', 'sales.reports.big');
    await refused(eve, "COMMENT ON VIEW sales.reports.big IS 'mine'", 404, 'DATASET_NOT_FOUND', 'sales.reports.big');
    await refused(eve, 'ALTER DATASET sales.orders.daily SET SORTED BY (id)', 404, 'DATASET_NOT_FOUND', 'sales.orders.daily');
    await refused(eve, 'CREATE VIEW ops.data.peek AS SELECT * FROM sales.orders.daily', 404, 'DATASET_NOT_FOUND', 'sales.orders.daily');
  });
});

describe('DROP VIEW', () => {
  it('drops a view; IF EXISTS makes a missing one a no-op; a table is refused with a pointer to DROP DATASET', async () => {
    await ok(alice, 'CREATE VIEW sales.reports.gone AS SELECT 1 AS x');
    await refused(rita, 'DROP VIEW sales.reports.gone', 403, 'PERMISSION_DENIED', 'sales.reports.gone');
    expect(await ok(alice, 'DROP VIEW sales.reports.gone;')).toBe('View sales.reports.gone dropped');
    expect(await dataset({ workspace: 'sales', collection: 'reports', dataset: 'gone' })).toBeUndefined();
    expect(await ok(alice, 'DROP VIEW IF EXISTS sales.reports.gone')).toBe('View sales.reports.gone does not exist; nothing dropped');
    await refused(alice, 'DROP VIEW sales.reports.gone', 404, 'DATASET_NOT_FOUND', 'sales.reports.gone');
    const table = await refused(alice, 'DROP VIEW sales.orders.daily', 409, 'WRONG_OBJECT_KIND', 'sales.orders.daily');
    expect(table.detail).toContain('DROP DATASET');
    await refused(alice, 'DROP VIEW IF sales.reports.gone', 400, 'SYNTAX_ERROR', 'sales');
  });

  it('is refused with 423 while the workspace holds drop_protection', async () => {
    await ok(alice, 'CREATE VIEW sales.reports.kept AS SELECT 1 AS x');
    await t.app.lakeport.catalog.setNamespaceProperties('sales', { drop_protection: true });
    try {
      await refused(alice, 'DROP VIEW sales.reports.kept', 423, 'GUARDED');
    } finally {
      await t.app.lakeport.catalog.setNamespaceProperties('sales', { drop_protection: false });
    }
    await ok(alice, 'DROP VIEW sales.reports.kept');
  });
});

describe('COMMENT ON and ALTER DATASET … SORTED BY', () => {
  it('sets and removes descriptions of datasets, views and columns; BY MODEL marks them as written by a model', async () => {
    expect(await ok(alice, "COMMENT ON DATASET sales.orders.daily IS 'Daily orders' BY MODEL")).toBe('Description of sales.orders.daily set (written by a model)');
    let daily1 = await dataset(daily);
    expect(daily1).toMatchObject({ description: 'Daily orders', properties: { llm_described: true } });
    expect(await ok(alice, "COMMENT ON COLUMN sales.orders.daily.AMOUNT IS 'In euros, it''s gross'")).toBe('Description of column amount of sales.orders.daily set');
    daily1 = await dataset(daily);
    expect(daily1!.columns[1]).toMatchObject({ name: 'amount', description: "In euros, it's gross" });
    expect(daily1!.properties.llm_described).toBe(false);
    await ok(alice, "COMMENT ON TABLE sales.orders.daily IS 'Orders per day'");
    await ok(alice, "COMMENT ON VIEW sales.reports.big IS 'Big orders, doubled'");
    expect((await dataset({ workspace: 'sales', collection: 'reports', dataset: 'big' }))!.description).toBe('Big orders, doubled');
    expect(await ok(alice, 'COMMENT ON COLUMN sales.reports.big.id IS NULL')).toBe('Description of column id of sales.reports.big removed');
  });

  it('refuses what cannot be commented, with positions', async () => {
    await refused(alice, "COMMENT ON VIEW sales.orders.daily IS 'x'", 409, 'WRONG_OBJECT_KIND', 'VIEW');
    await refused(alice, "COMMENT ON COLUMN sales.orders.daily.nosuch IS 'x'", 400, 'COLUMN_NOT_FOUND', 'nosuch');
    await refused(alice, "COMMENT ON COLUMN sales.orders.daily IS 'x'", 400, 'SYNTAX_ERROR', 'IS');
    await refused(alice, 'COMMENT ON DATASET sales.orders.daily IS 42', 400, 'SYNTAX_ERROR', '42');
    await refused(alice, "COMMENT ON DATASET sales.orders.daily IS 'x' BY HUMAN", 400, 'SYNTAX_ERROR', 'HUMAN');
    await refused(alice, "COMMENT ON SCHEMA sales.orders IS 'x'", 400, 'SYNTAX_ERROR', 'SCHEMA');
    await refused(rob, "COMMENT ON DATASET sales.orders.daily IS 'x'", 403, 'PERMISSION_DENIED', 'sales.orders.daily');
    await refused(alice, "COMMENT ON DATASET sales.orders.nosuch IS 'x'", 404, 'DATASET_NOT_FOUND', 'sales.orders.nosuch');
  });

  it('declares and removes a sort order; columns must exist; views have none', async () => {
    expect(await ok(alice, 'ALTER DATASET sales.orders.daily SET SORTED BY (Amount DESC, id)')).toBe('sales.orders.daily is declared sorted by amount DESC, id ASC');
    expect((await dataset(daily))!.properties.sort_order).toEqual([{ column: 'amount', direction: 'desc' }, { column: 'id', direction: 'asc' }]);
    await refused(alice, 'ALTER DATASET sales.orders.daily SET SORTED BY (id, nosuch ASC)', 400, 'COLUMN_NOT_FOUND', 'nosuch ASC');
    await refused(alice, 'ALTER DATASET sales.orders.daily SET SORTED BY (id, id)', 400, 'SYNTAX_ERROR', 'id', 'last');
    await refused(alice, 'ALTER DATASET sales.orders.daily SET SORTED BY id', 400, 'SYNTAX_ERROR', 'id');
    await refused(alice, 'ALTER DATASET sales.orders.daily SET SORTED BY (id', 400, 'SYNTAX_ERROR');
    await refused(alice, 'ALTER DATASET sales.orders.daily SHUFFLE', 400, 'SYNTAX_ERROR', 'SHUFFLE');
    await refused(alice, 'ALTER DATASET sales.reports.big SET SORTED BY (id)', 409, 'WRONG_OBJECT_KIND', 'sales.reports.big');
    await refused(rob, 'ALTER DATASET sales.orders.daily UNSET SORTED BY', 403, 'PERMISSION_DENIED', 'sales.orders.daily');
    await ok(alice, 'ALTER DATASET sales.orders.daily UNSET SORTED BY');
    expect((await dataset(daily))!.properties.sort_order).toBeUndefined();
    await ok(alice, 'ALTER DATASET sales.orders.daily SET SORTED BY (id ASC)');
  });

  it('/check changes nothing', async () => {
    const before = await dataset(daily);
    expect((await check(alice, "COMMENT ON DATASET sales.orders.daily IS 'changed?'")).ok).toBe(true);
    expect((await check(alice, 'ALTER DATASET sales.orders.daily UNSET SORTED BY')).ok).toBe(true);
    expect((await check(alice, 'CREATE VIEW sales.reports.maybe AS SELECT 1 AS x')).ok).toBe(true);
    expect((await check(alice, 'DROP VIEW sales.reports.big')).ok).toBe(true);
    expect(await dataset(daily)).toEqual(before);
    expect(await dataset({ workspace: 'sales', collection: 'reports', dataset: 'maybe' })).toBeUndefined();
    expect(await dataset({ workspace: 'sales', collection: 'reports', dataset: 'big' })).toBeDefined();
  });
});

describe('where views show', () => {
  const odata = (user: TestUser, path: string) => user.request('GET', `/odata/api/v4/${path}`);

  it('OData: the service document and $metadata list views; their annotations render; row reads and @selectors are 400', async () => {
    const doc = (await odata(rob, '')).json();
    const names = doc.value.map((v: { name: string }) => v.name);
    expect(names).toContain('sales__reports__big');
    expect(names).toContain('sales__orders__daily');

    const all = await odata(rob, '$metadata');
    expect(all.statusCode).toBe(200);
    expect(all.body).toContain('Name="sales__reports__big"');

    const meta = await odata(rob, 'sales/orders/daily/$metadata');
    expect(meta.statusCode, meta.body).toBe(200);
    expect(meta.body).toMatch(/Term="Custom.Description" String="Orders per day"/);
    expect(meta.body).toMatch(/Term="Custom.LLMDescribed" Bool="false"/);
    expect(meta.body).toContain('Custom.SortOrder');
    expect(meta.body).toMatch(/<PropertyValue Property="Column" String="id"\/>/);
    expect(meta.body).toMatch(/String="In euros, it&apos;s gross"|String="In euros, it's gross"/);

    const viewMeta = await odata(rob, 'sales/reports/big/$metadata');
    expect(viewMeta.statusCode, viewMeta.body).toBe(200);
    expect(viewMeta.body).toMatch(/Term="Custom.Description" String="Big orders, doubled"/);
    expect(viewMeta.body).toContain('Name="doubled"');
    expect(viewMeta.body).not.toContain('Term="Custom.Snapshot"');

    for (const path of ['sales/reports/big', 'sales/reports/big/$count', 'sales/reports/big@current?$top=1']) {
      const res = await odata(rob, path);
      expect(res.statusCode, path).toBe(400);
      expect(res.json().code).toBe('VIEW_ROWS_NOT_SUPPORTED');
    }
    for (const path of ['sales/reports/big@previous', 'sales/reports/big@v1/$metadata', 'sales/reports/big@1']) {
      const res = await odata(rob, path);
      expect(res.statusCode, path).toBe(400);
      expect(res.json().code).toBe('DATASET_NOT_VERSIONED');
    }
    // Another tenant: no view in its service document, 403 on the view.
    expect((await odata(eve, '')).json().value.map((v: { name: string }) => v.name)).not.toContain('sales__reports__big');
    expect((await odata(eve, 'sales/reports/big/$metadata')).statusCode).toBe(403);
  });

  it('OData: a COMMENT BY MODEL renders Custom.LLMDescribed true', async () => {
    await ok(alice, "COMMENT ON VIEW sales.reports.top IS 'Top orders' BY MODEL");
    const meta = await odata(rob, 'sales/reports/top/$metadata');
    expect(meta.body).toMatch(/Term="Custom.LLMDescribed" Bool="true"/);
  });

  it('the effective-permissions CSV lists views with kind view', async () => {
    const res = await alice.request('GET', `${P}/sales/effective-permissions.csv`);
    expect(res.statusCode).toBe(200);
    const rows: Record<string, string>[] = parse(res.body, { columns: true });
    expect(rows.find((r) => r.dataset === 'sales.reports.big' && r.principal === 'rita')).toMatchObject({ kind: 'view', pattern: 'sales.reports.*' });
    expect(rows.find((r) => r.dataset === 'sales.orders.daily' && r.principal === 'alice')).toMatchObject({ kind: 'table' });
  });
});
