/**
 * Dataset lifecycle in SQL (docs/lifecycle.md): DROP / UNDROP DATASET, ALTER DATASET … ROLLBACK TO and
 * … EXPIRE SNAPSHOTS, the guards set by ALTER WORKSPACE, leases held by running jobs and OData
 * cursors, and files deleted from storage once their grace has passed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Catalog, CatalogSweeper } from '../../../core/catalog/index.ts';
import { silentLogger } from '../../../core/logger.ts';
import { createWorkspace, signIn, type TestUser } from '../../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../../test/harness.ts';
import { seedSnapshot } from '../../../../test/seed.ts';
import { parseIntervalText } from './interval.ts';

let t: TestApp;
let alice: TestUser; // owner of sales
let adam: TestUser; // admin on sales.*
let wendy: TestUser; // writer on sales.*
let rita: TestUser; // reader on sales.*
let eve: TestUser; // owner of ops, nothing in sales

const J = '/jobs/api/v1';
const columns = [{ name: 'id', type: 'BIGINT', nullable: false }];
const ref = (dataset: string, collection = 'orders') => ({ workspace: 'sales', collection, dataset });
const rowsSql = (from: number, to: number) => `SELECT i AS id FROM range(${from}, ${to}) t(i)`;

beforeAll(async () => {
  // A zero grace so the sweeper deletes expired files at once (the configured grace is never below the job timeout).
  t = await createTestApp({ lifecycle: { fileGraceMs: 0 } });
  [alice, adam, wendy, rita, eve] = await Promise.all(['alice', 'adam', 'wendy', 'rita', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  await createWorkspace(alice, 'sales', { adam: 'admin', wendy: 'writer', rita: 'reader' });
  await createWorkspace(eve, 'ops');
});
afterAll(async () => t.close());

const catalog = () => t.app.lakeport.catalog;
const submit = (user: TestUser, sql_text: string) => user.request('POST', `${J}/jobs`, { sql_text });
const check = async (user: TestUser, sql_text: string) => (await user.request('POST', `${J}/check`, { sql_text })).json();
async function ok(user: TestUser, sql: string): Promise<string> {
  const checked = await check(user, sql);
  expect(checked, JSON.stringify(checked)).toMatchObject({ ok: true });
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(201);
  expect(res.json().status).toBe('succeeded');
  return (await user.request('GET', `${J}/jobs/${res.json().execution_id}/results`)).json().data[0][0];
}
async function refused(user: TestUser, sql: string, status: number, code: string) {
  const checked = await check(user, sql);
  expect(checked, JSON.stringify(checked)).toMatchObject({ ok: false, error: { code } });
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().code).toBe(code);
  return res.json() as { detail: string; start: number; end: number };
}
async function job(user: TestUser, sql: string) {
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().execution_id as string;
}
async function finished(user: TestUser, id: string) {
  for (;;) {
    const status = (await user.request('GET', `${J}/jobs/${id}/status?wait=30`)).json();
    if (!['queued', 'running'].includes(status.status)) return status;
  }
}
async function query(user: TestUser, sql: string) {
  const id = await job(user, sql);
  const status = await finished(user, id);
  if (status.status !== 'succeeded') return { status };
  return { status, data: (await user.request('GET', `${J}/jobs/${id}/results`)).json().data as unknown[][] };
}
const count = async (sql: string) => (await query(rita, sql)).data?.[0][0];
const odata = (user: TestUser, url: string) => t.app.inject({ method: 'GET', url: url.replace(/^https?:\/\/[^/]+/, ''), headers: { authorization: `Bearer ${user.token}` } });
const exists = async (path: string) => (await t.deps.blobs.head(path)) !== undefined;
const sweep = () => t.app.lakeport.catalogSweeper.run();

describe('intervals', () => {
  it('reads the three spellings and refuses the rest', () => {
    expect(parseIntervalText('7 days')).toBe(7 * 86_400_000);
    expect(parseIntervalText('1 day 12 HOURS')).toBe(36 * 3_600_000);
    expect(parseIntervalText('1.5 hours')).toBe(5_400_000);
    expect(parseIntervalText('2 weeks')).toBe(14 * 86_400_000);
    for (const bad of ['', '7', 'days', '7 fortnights', '-1 day', '1 day 2']) expect(parseIntervalText(bad), bad).toBeUndefined();
  });
});

describe('/check positions', () => {
  const at = async (sql: string, code: string, underlined: string) => {
    const checked = await check(alice, sql);
    expect(checked, JSON.stringify(checked)).toMatchObject({ ok: false, error: { code } });
    expect(sql.slice(checked.error.start, checked.error.end)).toBe(underlined);
  };
  it('underlines what is wrong', async () => {
    await at('ALTER DATASET sales.orders.daily ROLLBACK TO VERSION 3', 'SYNTAX_ERROR', 'VERSION');
    await at('ALTER DATASET sales.orders.daily ROLLBACK TO SNAPSHOT x', 'SYNTAX_ERROR', 'x');
    await at("ALTER DATASET sales.orders.daily EXPIRE SNAPSHOTS OLDER THAN '7 fortnights'", 'INVALID_INTERVAL', "'7 fortnights'");
    await at('ALTER DATASET sales.orders.daily EXPIRE SNAPSHOTS OLDER THAN INTERVAL 3 eons', 'INVALID_INTERVAL', 'INTERVAL 3 eons');
    await at('ALTER DATASET sales.orders.daily EXPIRE SNAPSHOTS OLDER THAN 7 DAYS RETAIN LAST many', 'SYNTAX_ERROR', 'many');
    await at('ALTER DATASET sales.orders.daily SHRINK', 'SYNTAX_ERROR', 'SHRINK');
    await at('DROP DATASET sales.orders', 'SYNTAX_ERROR', 'orders');
    await at('UNDROP DATASET sales.orders.nothing_here', 'DATASET_NOT_FOUND', 'sales.orders.nothing_here');
    await at('ALTER WORKSPACE sales SET retention = ON', 'UNKNOWN_PROPERTY', 'retention');
    await at('DROP DATASET sales.orders.nothing_here; SELECT 1', 'MULTIPLE_STATEMENTS', 'SELECT');
  });
});

describe('DROP DATASET and UNDROP DATASET', () => {
  it('drops softly: gone for readers, restorable with its history; IF EXISTS; roles', async () => {
    const first = await seedSnapshot(t, ref('daily'), columns, rowsSql(0, 10));
    await seedSnapshot(t, ref('daily'), columns, rowsSql(10, 15));
    await catalog().createTag(ref('daily'), 'v1', first, 'alice');

    await refused(wendy, 'DROP DATASET sales.orders.daily', 403, 'PERMISSION_DENIED');
    await refused(adam, 'DROP DATASET sales.orders.daily', 403, 'PERMISSION_DENIED');
    const hidden = await refused(eve, 'DROP DATASET sales.orders.daily', 404, 'DATASET_NOT_FOUND');
    const missing = await refused(eve, 'DROP DATASET sales.orders.nope', 404, 'DATASET_NOT_FOUND');
    expect(missing.detail.replace('nope', 'daily')).toBe(hidden.detail);
    expect(await ok(eve, 'DROP DATASET IF EXISTS sales.orders.daily')).toMatch(/does not exist; nothing dropped/);
    expect(await catalog().findDataset(ref('daily'))).toBeDefined();

    expect(await ok(alice, 'drop dataset Sales.Orders.Daily;')).toMatch(/^Dataset sales\.orders\.daily dropped; UNDROP DATASET sales\.orders\.daily restores it until /);
    expect((await query(rita, 'SELECT count(*) FROM sales.orders.daily')).status.error.code).toBe('DATASET_NOT_FOUND');
    expect((await odata(rita, '/odata/api/v4/sales/orders/daily')).statusCode).toBe(404);
    expect((await catalog().listDatasets('sales')).map((d) => d.name)).not.toContain('daily');
    const csv = await alice.request('GET', '/policy/v1/access/workspace/sales/effective-permissions.csv');
    expect(csv.statusCode).toBe(200);
    expect(csv.body).not.toContain('sales.orders.daily');
    const metadata = await odata(rita, '/odata/api/v4/$metadata');
    expect(metadata.statusCode).toBe(200);
    expect(metadata.body).not.toContain('sales__orders__daily');
    await refused(alice, 'DROP DATASET sales.orders.daily', 404, 'DATASET_NOT_FOUND');
    expect(await ok(alice, 'DROP DATASET IF EXISTS sales.orders.daily')).toMatch(/nothing dropped/);

    await refused(wendy, 'UNDROP DATASET sales.orders.daily', 403, 'PERMISSION_DENIED');
    await refused(eve, 'UNDROP DATASET sales.orders.daily', 404, 'DATASET_NOT_FOUND');
    expect(await ok(alice, 'UNDROP DATASET sales.orders.daily')).toMatch(/^Dataset sales\.orders\.daily restored \(dropped at .* by alice\)/);
    expect(await count('SELECT count(*) FROM sales.orders.daily')).toBe(15);
    expect(await count("SELECT count(*) FROM sales.orders.daily AT (VERSION => 'v1')")).toBe(10);
    expect((await alice.request('GET', '/policy/v1/access/workspace/sales/effective-permissions.csv')).body).toContain('sales.orders.daily');
    expect((await odata(rita, '/odata/api/v4/$metadata')).body).toContain('sales__orders__daily');
    await refused(alice, 'UNDROP DATASET sales.orders.daily', 404, 'DATASET_NOT_FOUND');
  });

  it('frees the name; UNDROP is 409 while a new dataset holds it, and restores the latest drop', async () => {
    await seedSnapshot(t, ref('reused'), columns, rowsSql(0, 3));
    await ok(alice, 'DROP DATASET sales.orders.reused');
    await seedSnapshot(t, ref('reused'), columns, rowsSql(0, 7));
    expect(await count('SELECT count(*) FROM sales.orders.reused')).toBe(7);
    await refused(alice, 'UNDROP DATASET sales.orders.reused', 409, 'ALREADY_EXISTS');
    await ok(alice, 'DROP DATASET sales.orders.reused');
    await ok(alice, 'UNDROP DATASET sales.orders.reused');
    expect(await count('SELECT count(*) FROM sales.orders.reused')).toBe(7);
  });

  it('refuses under drop_protection (set in SQL by the owner only), and the lock implies it', async () => {
    await seedSnapshot(t, ref('guarded'), columns, rowsSql(0, 3));
    await refused(adam, 'ALTER WORKSPACE sales SET drop_protection TO ON', 403, 'PERMISSION_DENIED');
    await refused(eve, 'ALTER WORKSPACE sales SET drop_protection TO ON', 403, 'PERMISSION_DENIED');
    expect(await ok(alice, 'ALTER WORKSPACE sales SET drop_protection = TRUE')).toMatch(/drop_protection is ON/);
    expect((await adam.request('GET', '/control/v1/workspaces/sales/properties')).json()).toMatchObject({ drop_protection: true, deletion_protection: false });
    const guarded = await refused(alice, 'DROP DATASET sales.orders.guarded', 423, 'GUARDED');
    expect(guarded.detail).toMatch(/drop_protection/);
    await ok(alice, 'ALTER WORKSPACE sales SET drop_protection TO OFF');
    // The workspace lock holds drop_protection unless it was set explicitly; clear it back to "follow the lock".
    await catalog().setNamespaceProperties('sales', { drop_protection: null });
    await ok(alice, 'ALTER WORKSPACE sales SET deletion_protection TO ON');
    await refused(alice, 'DROP DATASET sales.orders.guarded', 423, 'GUARDED');
    await ok(alice, 'ALTER WORKSPACE sales SET deletion_protection TO OFF');
    await ok(alice, 'ALTER WORKSPACE sales SET history_protection TO ON');
    await ok(alice, 'DROP DATASET sales.orders.guarded'); // history_protection does not keep datasets
    await ok(alice, 'ALTER WORKSPACE sales SET drop_protection TO ON');
    await ok(alice, 'UNDROP DATASET sales.orders.guarded'); // neither guard refuses a restore
    expect(await count('SELECT count(*) FROM sales.orders.guarded')).toBe(3);
    await ok(alice, 'ALTER WORKSPACE sales SET history_protection TO OFF');
    await catalog().setNamespaceProperties('sales', { drop_protection: null });
  });

  it('points views at DROP VIEW', async () => {
    await catalog().createDataset(ref('a_view'), { kind: 'view', columns }, 'alice');
    const res = await refused(alice, 'DROP DATASET sales.orders.a_view', 409, 'WRONG_OBJECT_KIND');
    expect(res.detail).toMatch(/use DROP VIEW sales\.orders\.a_view/);
  });

  it('purges datasets dropped before the window and deletes their files from storage', async () => {
    await seedSnapshot(t, ref('old'), columns, rowsSql(0, 3));
    const paths = (await catalog().snapshotFiles((await catalog().getDataset(ref('old'))).current_snapshot_id!)).map((f) => f.path);
    await ok(alice, 'DROP DATASET sales.orders.old');
    await sweep();
    expect(await exists(paths[0])).toBe(true); // within the window: kept
    // A catalog with no undrop window (the same database) purges it.
    const sweeper = new CatalogSweeper(new Catalog(t.db, { undropRetentionMs: 0, fileGraceMs: 0 }), t.deps.blobs, silentLogger);
    expect((await sweeper.run()).datasets).toBeGreaterThanOrEqual(1);
    expect(await exists(paths[0])).toBe(false);
    await refused(alice, 'UNDROP DATASET sales.orders.old', 404, 'DATASET_NOT_FOUND');
  });
});

describe('ALTER DATASET … ROLLBACK TO', () => {
  it('commits a new snapshot with exactly the old files; history kept; allowed under both guards', async () => {
    const s1 = await seedSnapshot(t, ref('rolled'), columns, rowsSql(0, 10));
    const s2 = await seedSnapshot(t, ref('rolled'), columns, rowsSql(100, 105), { overwrite: true });
    await catalog().createTag(ref('rolled'), 'good', s1, 'alice');
    await refused(rita, `ALTER DATASET sales.orders.rolled ROLLBACK TO SNAPSHOT ${s1}`, 403, 'PERMISSION_DENIED');
    await refused(eve, `ALTER DATASET sales.orders.rolled ROLLBACK TO SNAPSHOT ${s1}`, 404, 'DATASET_NOT_FOUND');
    const missing = await refused(wendy, 'ALTER DATASET sales.orders.rolled ROLLBACK TO SNAPSHOT 999999', 404, 'SNAPSHOT_NOT_FOUND');
    expect(missing.start).toBe('ALTER DATASET sales.orders.rolled ROLLBACK TO '.length);
    await refused(wendy, 'ALTER DATASET sales.orders.rolled ROLLBACK TO TAG nope', 404, 'TAG_NOT_FOUND');

    await catalog().setNamespaceProperties('sales', { drop_protection: true, history_protection: true });
    try {
      const message = await ok(wendy, `ALTER DATASET sales.orders.rolled ROLLBACK TO SNAPSHOT ${s1}`);
      expect(message).toMatch(new RegExp(`^Dataset sales\\.orders\\.rolled rolled back to snapshot ${s1}: new snapshot \\d+ \\(10 rows\\)$`));
    } finally {
      await catalog().setNamespaceProperties('sales', { drop_protection: null, history_protection: null });
    }
    const history = await catalog().listSnapshots(ref('rolled'));
    expect(history.map((s) => s.snapshot_id).slice(0, 2)).toEqual([s1, s2]);
    const s3 = history[2];
    expect(s3).toMatchObject({ operation: 'overwrite', changed_rows: true, parent_snapshot_id: s2, total_records: 10, rows_removed: 5, rows_added: 10 });
    // Zero copy: the new snapshot names the old snapshot's paths.
    const paths = async (id: number) => (await catalog().snapshotFiles(id)).map((f) => f.path);
    expect(await paths(s3.snapshot_id)).toEqual(await paths(s1));
    expect(await count('SELECT count(*) FROM sales.orders.rolled')).toBe(10);
    expect(await count('SELECT count(*) FROM sales.orders.rolled AT (VERSION => ' + s2 + ')')).toBe(5);
    const previous = (await odata(rita, '/odata/api/v4/sales/orders/rolled@previous?$count=true&$top=0')).json();
    expect(previous['@odata.count']).toBe(5);

    // Back and forth by tag, bare or quoted; rolling back to the current snapshot changes nothing.
    await ok(wendy, `ALTER DATASET sales.orders.rolled ROLLBACK TO SNAPSHOT ${s2}`);
    expect(await count('SELECT count(*) FROM sales.orders.rolled')).toBe(5);
    await ok(wendy, "ALTER DATASET sales.orders.rolled ROLLBACK TO TAG 'good'");
    expect(await count('SELECT count(*) FROM sales.orders.rolled')).toBe(10);
    await ok(wendy, 'ALTER DATASET sales.orders.rolled ROLLBACK TO TAG good');
    const current = (await catalog().getDataset(ref('rolled'))).current_snapshot_id;
    expect(await ok(wendy, `ALTER DATASET sales.orders.rolled ROLLBACK TO SNAPSHOT ${current}`)).toMatch(/already; nothing changed/);
    // An ordinary commit still cannot name a path the catalog knows.
    await expect(
      catalog().commitSnapshot({ dataset: ref('rolled'), operation: 'append', author: 'a', addFiles: [{ path: (await paths(s1))[0], row_count: 1, size_bytes: 1 }] }),
    ).rejects.toMatchObject({ code: 'INVALID_COMMIT' });
  });

  it('checks the expected parent: a commit in between is a conflict', async () => {
    const s1 = await seedSnapshot(t, ref('raced'), columns, rowsSql(0, 2));
    const s2 = await seedSnapshot(t, ref('raced'), columns, rowsSql(2, 4));
    await expect(catalog().rollbackDataset(ref('raced'), { kind: 'id', snapshotId: s1 }, 'a', { expectedParent: s1 })).rejects.toMatchObject({ code: 'COMMIT_CONFLICT' });
    expect((await catalog().getDataset(ref('raced'))).current_snapshot_id).toBe(s2);
  });
});

describe('ALTER DATASET … EXPIRE SNAPSHOTS', () => {
  it('expires old snapshots except the current, tagged and retained ones; deletes files no snapshot needs after the grace', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await seedSnapshot(t, ref('history'), columns, rowsSql(i * 10, i * 10 + 10), { overwrite: i > 0 }));
    await catalog().createTag(ref('history'), 'keep', ids[1], 'alice');
    const filesOf = async (id: number) => (await catalog().snapshotFiles(id)).map((f) => f.path);
    const doomed = [...(await filesOf(ids[0])), ...(await filesOf(ids[3]))];
    const kept = [...(await filesOf(ids[1])), ...(await filesOf(ids[2])), ...(await filesOf(ids[4]))];
    // A rollback to snapshot 3 names its file again: expiring 3 must not delete it.
    await ok(wendy, `ALTER DATASET sales.orders.history ROLLBACK TO SNAPSHOT ${ids[2]}`);

    const sql = 'ALTER DATASET sales.orders.history EXPIRE SNAPSHOTS OLDER THAN 0 SECONDS RETAIN LAST 2';
    await refused(wendy, sql, 403, 'PERMISSION_DENIED');
    await refused(eve, sql, 404, 'DATASET_NOT_FOUND');
    await ok(alice, 'ALTER WORKSPACE sales SET history_protection TO ON');
    expect((await refused(alice, sql, 423, 'GUARDED')).detail).toMatch(/history_protection/);
    await ok(alice, 'ALTER WORKSPACE sales SET history_protection TO OFF');
    await ok(alice, 'ALTER WORKSPACE sales SET drop_protection TO ON'); // does not keep history
    try {
      expect((await check(alice, sql)).ok).toBe(true);
      expect(await catalog().listSnapshots(ref('history'))).toSatisfy((all: { expired_at: Date | null }[]) => all.every((s) => s.expired_at === null));
      const message = await ok(alice, sql);
      // 6 snapshots: #5 and the rollback are the newest two (the rollback current), #2 is tagged: #1, #3 and #4 go.
      expect(message).toMatch(/^Expired 3 snapshots of sales\.orders\.history \(kept 1 tagged, 0 in use by running readers, 2 current or retained\); 2 file\(s\), \d+ bytes, queued for deletion after 0 second\(s\)$/);
    } finally {
      await ok(alice, 'ALTER WORKSPACE sales SET drop_protection TO OFF');
    }
    const history = await catalog().listSnapshots(ref('history'));
    expect(history).toHaveLength(6);
    expect(history.filter((s) => s.expired_at !== null).map((s) => s.snapshot_id)).toEqual([ids[0], ids[2], ids[3]]);

    // Reading an expired snapshot: 410 in OData, SNAPSHOT_EXPIRED in a job; tagged and current still read.
    const gone = await odata(rita, `/odata/api/v4/sales/orders/history@${ids[0]}`);
    expect([gone.statusCode, gone.json().code]).toEqual([410, 'SNAPSHOT_EXPIRED']);
    expect((await query(rita, `SELECT count(*) FROM sales.orders.history AT (VERSION => ${ids[0]})`)).status.error.code).toBe('SNAPSHOT_EXPIRED');
    expect(await count("SELECT count(*) FROM sales.orders.history AT (VERSION => 'keep')")).toBe(10);
    expect(await count('SELECT count(*) FROM sales.orders.history')).toBe(10);
    await refused(wendy, `ALTER DATASET sales.orders.history ROLLBACK TO SNAPSHOT ${ids[0]}`, 410, 'SNAPSHOT_EXPIRED');
    await refused(wendy, `CREATE TAG late ON sales.orders.history AT (VERSION => ${ids[0]})`, 410, 'SNAPSHOT_EXPIRED');

    // The files of snapshots 1 and 4 wait in the queue; the sweeper deletes them; everything else stays.
    expect((await catalog().queuedFileDeletions()).map((q) => q.path)).toEqual(expect.arrayContaining(doomed));
    await sweep();
    for (const path of doomed) expect(await exists(path), path).toBe(false);
    for (const path of kept) expect(await exists(path), path).toBe(true);
    expect(await count('SELECT count(*) FROM sales.orders.history')).toBe(10);
  });

  it('never expires a leased snapshot; a lease on an expired one is 410', async () => {
    const a = await seedSnapshot(t, ref('leased'), columns, rowsSql(0, 3));
    const b = await seedSnapshot(t, ref('leased'), columns, rowsSql(3, 6), { overwrite: true });
    await seedSnapshot(t, ref('leased'), columns, rowsSql(6, 9), { overwrite: true });
    await catalog().leaseSnapshots([a], 'test:holder', 60_000);
    const result = await catalog().expireSnapshots(ref('leased'), { olderThanMs: 0 });
    expect(result).toMatchObject({ expired: [b], kept: { leased: 1, tagged: 0, retained: 1 } });
    await expect(catalog().leaseSnapshots([b], 'test:other', 60_000)).rejects.toMatchObject({ status: 410, code: 'SNAPSHOT_EXPIRED' });
    await catalog().releaseLeases('test:holder');
    expect((await catalog().expireSnapshots(ref('leased'), { olderThanMs: 0 })).expired).toEqual([a]);
  });

  it('a job reading an old snapshot, started before the expiry, finishes with the right rows', async () => {
    const old = await seedSnapshot(t, ref('busy'), columns, rowsSql(0, 40));
    await seedSnapshot(t, ref('busy'), columns, rowsSql(0, 5), { overwrite: true });
    const oldPaths = (await catalog().snapshotFiles(old)).map((f) => f.path);
    // Slow enough to be running while the expiry runs: 40 rows × 5 million.
    const id = await job(rita, `SELECT count(*) AS n, sum(a.id) AS s FROM (SELECT id FROM sales.orders.busy AT (VERSION => ${old})) a, range(5000000) r WHERE hash(r.range + a.id) % 7 <> 8`);
    let leased = false;
    for (;;) {
      if ((await catalog().activeLeases(`job:${id}`)).length > 0) {
        leased = true;
        break;
      }
      const status = (await rita.request('GET', `${J}/jobs/${id}/status`)).json();
      if (!['queued', 'running'].includes(status.status)) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const message = await ok(alice, 'ALTER DATASET sales.orders.busy EXPIRE SNAPSHOTS OLDER THAN 0 SECONDS');
    await sweep();
    const status = await finished(rita, id);
    expect(status.status, JSON.stringify(status.error)).toBe('succeeded');
    expect((await rita.request('GET', `${J}/jobs/${id}/results`)).json().data).toEqual([[200_000_000, 3_900_000_000]]);
    if (leased) {
      expect(message).toMatch(/^Expired 0 snapshots .*1 in use by running readers/);
      expect(await exists(oldPaths[0])).toBe(true);
    }
    // The job's lease ended with it: now the snapshot expires and its file goes.
    expect(await catalog().activeLeases(`job:${id}`)).toEqual([]);
    expect(await ok(alice, 'ALTER DATASET sales.orders.busy EXPIRE SNAPSHOTS OLDER THAN 0 SECONDS')).toMatch(/^Expired 1 snapshot /);
    await sweep();
    expect(await exists(oldPaths[0])).toBe(false);
  });

  it('an OData cursor on an old snapshot keeps reading it after EXPIRE', async () => {
    const old = await seedSnapshot(t, ref('paged'), columns, rowsSql(0, 250));
    await seedSnapshot(t, ref('paged'), columns, rowsSql(1000, 1010), { overwrite: true });
    const first = (await odata(rita, `/odata/api/v4/sales/orders/paged@${old}`)).json();
    expect(first.value).toHaveLength(100);
    const message = await ok(alice, 'ALTER DATASET sales.orders.paged EXPIRE SNAPSHOTS OLDER THAN INTERVAL \'0 seconds\'');
    expect(message).toMatch(/^Expired 0 snapshots .*1 in use by running readers/);
    await sweep();
    const seen = first.value.map((r: { id: number }) => r.id);
    let next: string | undefined = first['@odata.nextLink'];
    while (next) {
      const page = await odata(rita, next);
      expect(page.statusCode, page.body).toBe(200);
      seen.push(...page.json().value.map((r: { id: number }) => r.id));
      next = page.json()['@odata.nextLink'];
    }
    expect(seen).toEqual(Array.from({ length: 250 }, (_, i) => i));
  });
});
