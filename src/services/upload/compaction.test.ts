/**
 * Compaction (docs/compaction.md): ALTER DATASET … COMPACT and the Compactor keep every row in its
 * order, commit a maintenance snapshot that @previous skips, fold in appends that race them, and run
 * once per dataset across compactors sharing one database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Catalog } from '../../core/catalog/index.ts';
import type { Ingestor } from '../../core/engine/index.ts';
import { silentLogger } from '../../core/logger.ts';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { seedSnapshot } from '../../../test/seed.ts';
import { Compactor, type CompactionSettings } from './compaction.ts';

let t: TestApp;
let alice: TestUser; // owner of sales
let wendy: TestUser; // writer on sales.*
let rita: TestUser; // reader on sales.*
let eve: TestUser; // owner of ops, nothing on sales

const J = '/jobs/api/v1';
const columns = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'name', type: 'VARCHAR', nullable: true },
];
const settings: CompactionSettings = { automatic: false, minSmallFiles: 4, smallFileBytes: 8 * 2 ** 20, targetFileBytes: 128 * 2 ** 20, delayMs: 20 };

beforeAll(async () => {
  t = await createTestApp({ compaction: settings, lifecycle: { fileGraceMs: 0 } }, { workers: true });
  [alice, wendy, rita, eve] = await Promise.all(['alice', 'wendy', 'rita', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  await createWorkspace(alice, 'sales', { wendy: 'writer', rita: 'reader' });
  await createWorkspace(eve, 'ops');
});
afterAll(async () => t.close());

const ref = (dataset: string) => ({ workspace: 'sales', collection: 'orders', dataset });

/** One one-row commit per id, in order. */
async function appendOneRowCommits(dataset: string, ids: number[]): Promise<void> {
  for (const i of ids) await seedSnapshot(t, ref(dataset), columns, `SELECT ${i}::BIGINT AS id, 'row ${i}' AS name`);
}

const submit = (user: TestUser, sql_text: string) => user.request('POST', `${J}/jobs`, { sql_text });
async function statement(user: TestUser, sql: string): Promise<string> {
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(201);
  expect(res.json().status).toBe('succeeded');
  return (await user.request('GET', `${J}/jobs/${res.json().execution_id}/results`)).json().data[0][0];
}
async function queryRows(user: TestUser, sql: string): Promise<unknown[][]> {
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(201);
  const status = (await user.request('GET', `${J}/jobs/${res.json().execution_id}/status?wait=30`)).json();
  expect(status.status, JSON.stringify(status)).toBe('succeeded');
  return (await user.request('GET', `${J}/jobs/${res.json().execution_id}/results`)).json().data;
}
async function odata(user: TestUser, path: string) {
  const res = await user.request('GET', `/odata/api/v4/${path}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { value: { id: number; name: string }[]; '@odata.count'?: number };
}
async function check(user: TestUser, sql: string) {
  return (await user.request('POST', `${J}/check`, { sql_text: sql })).json();
}

describe('ALTER DATASET … COMPACT', () => {
  it('rewrites the small files into one: same rows in the same order over OData and jobs, a maintenance snapshot @previous skips', async () => {
    await appendOneRowCommits('daily', Array.from({ length: 40 }, (_, i) => i));
    const { catalog } = t.app.lakeport;
    const dataset = await catalog.getDataset(ref('daily'));
    const oldFiles = await catalog.snapshotFiles(dataset.current_snapshot_id!);
    expect(oldFiles).toHaveLength(40);
    const previousBefore = await catalog.resolveSnapshot(dataset.dataset_id, { kind: 'previous' });
    const rowsBefore = await odata(rita, 'sales/orders/daily?$count=true');
    const previousRowsBefore = await odata(rita, 'sales/orders/daily@previous?$count=true');
    const jobBefore = await queryRows(rita, "SELECT count(*), sum(id), string_agg(name, ',' ORDER BY id) FROM sales.orders.daily");
    expect(rowsBefore.value.map((r) => r.id)).toEqual(Array.from({ length: 40 }, (_, i) => i));

    const checked = await check(wendy, 'ALTER DATASET sales.orders.daily COMPACT');
    expect(checked, JSON.stringify(checked)).toMatchObject({ ok: true });
    expect((await catalog.getDataset(ref('daily'))).current_snapshot_id).toBe(dataset.current_snapshot_id);

    const message = await statement(wendy, 'alter dataset sales.orders.daily compact;');
    const after = await catalog.getDataset(ref('daily'));
    // Two outputs: the rows of the previous version, and the last commit's (so @previous reads one file too).
    expect(message).toBe(`Compacted sales.orders.daily: 40 files before, 2 after (40 rewritten into 2, 40 rows); maintenance snapshot ${after.current_snapshot_id}`);
    const snapshot = await catalog.getSnapshot(after.current_snapshot_id!);
    expect(snapshot).toMatchObject({ operation: 'maintenance', changed_rows: false, rows_added: 0, rows_removed: 0, total_records: 40, author: 'wendy' });
    const files = await catalog.snapshotFiles(snapshot.snapshot_id);
    expect(files).toHaveLength(2);
    expect(files[0].path).toMatch(/^lake\/sales\/orders\/daily\/compacted-.*-00000\.parquet$/);
    expect(files[1].path).toBe(files[0].path.replace('-00000.', '-00001.'));
    expect(files[0].column_stats).toEqual({ id: { min: '0', max: '38', null_count: 0 }, name: { min: 'row 0', max: 'row 9', null_count: 0 } });
    expect(files[1]).toMatchObject({ row_count: 1, column_stats: { id: { min: '39', max: '39', null_count: 0 } } });
    // The previous version reads the first output instead of its 39 files; what it names is unchanged.
    expect((await catalog.readFiles(previousBefore.snapshot_id)).map((f) => f.path)).toEqual([files[0].path]);
    expect(await catalog.snapshotFiles(previousBefore.snapshot_id)).toHaveLength(39);

    // Same rows, same order, same row numbers; the job agrees.
    expect(await odata(rita, 'sales/orders/daily?$count=true')).toEqual(rowsBefore);
    expect(await queryRows(rita, "SELECT count(*), sum(id), string_agg(name, ',' ORDER BY id) FROM sales.orders.daily")).toEqual(jobBefore);
    // @previous names the same version as before, with the same rows.
    expect((await catalog.resolveSnapshot(dataset.dataset_id, { kind: 'previous' })).snapshot_id).toBe(previousBefore.snapshot_id);
    expect(await odata(rita, 'sales/orders/daily@previous?$count=true')).toEqual(previousRowsBefore);
    expect(previousRowsBefore['@odata.count']).toBe(39);
    // Older snapshots still read their own files: nothing was deleted.
    for (const f of oldFiles.slice(0, 3)) expect(await t.deps.blobs.head(f.path)).toBeDefined();
    expect((await odata(rita, `sales/orders/daily@${oldFiles[9].added_in_snapshot}?$count=true`))['@odata.count']).toBe(10);

    // Nothing left to merge.
    expect(await statement(alice, 'ALTER DATASET sales.orders.daily COMPACT')).toBe('Nothing to compact in sales.orders.daily: 2 file(s), none to merge');
    // Appends after it go after the compacted rows; the next compaction merges them with it.
    await appendOneRowCommits('daily', [40, 41]);
    expect((await check(wendy, 'ALTER DATASET sales.orders.daily COMPACT')).ok).toBe(true);
    expect((await check(wendy, 'ALTER DATASET sales.orders.daily COMPACT')).ok).toBe(true);
    expect(await statement(wendy, 'ALTER DATASET sales.orders.daily COMPACT')).toMatch(/^Compacted sales.orders.daily: 4 files before, 2 after \(4 rewritten into 2, 42 rows\)/);
    expect((await odata(rita, 'sales/orders/daily')).value.map((r) => r.id)).toEqual(Array.from({ length: 42 }, (_, i) => i));
    expect((await catalog.resolveSnapshot(dataset.dataset_id, { kind: 'previous' })).total_records).toBe(41);
  });

  it('keeps files written under an older definition readable: missing columns are NULL', async () => {
    await appendOneRowCommits('evolving', [1, 2]);
    const { catalog } = t.app.lakeport;
    await catalog.alterDataset(ref('evolving'), { columns: [...columns, { name: 'extra', type: 'DOUBLE', nullable: true }] }, 'alice');
    await seedSnapshot(t, ref('evolving'), columns, "SELECT 3::BIGINT AS id, 'row 3' AS name, 1.5::DOUBLE AS extra");
    const before = await odata(rita, 'sales/orders/evolving');
    expect(await statement(alice, 'ALTER DATASET sales.orders.evolving COMPACT')).toMatch(/^Compacted .*3 files before, 2 after/);
    expect(await odata(rita, 'sales/orders/evolving')).toEqual(before);
    expect(before.value.map((r) => (r as unknown as { extra: number | null }).extra)).toEqual([null, null, 1.5]);
  });

  it('refuses readers, other tenants, unknown datasets and malformed statements, with positions at /check', async () => {
    await appendOneRowCommits('guarded', [1, 2]);
    const refused = async (user: TestUser, sql: string, status: number, code: string, at: string) => {
      const res = await submit(user, sql);
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json().code).toBe(code);
      const checked = await check(user, sql);
      expect(checked, JSON.stringify(checked)).toMatchObject({ ok: false, error: { code, start: sql.indexOf(at) } });
      return checked.error;
    };
    await refused(rita, 'ALTER DATASET sales.orders.guarded COMPACT', 403, 'PERMISSION_DENIED', 'sales.orders.guarded');
    // Another tenant learns nothing: the dataset looks missing.
    await refused(eve, 'ALTER DATASET sales.orders.guarded COMPACT', 404, 'DATASET_NOT_FOUND', 'sales.orders.guarded');
    await refused(eve, 'ALTER DATASET sales.orders.nothing COMPACT', 404, 'DATASET_NOT_FOUND', 'sales.orders.nothing');
    await refused(alice, 'ALTER DATASET sales.orders.nothing COMPACT', 404, 'DATASET_NOT_FOUND', 'sales.orders.nothing');
    await refused(alice, 'ALTER DATASET sales.orders COMPACT', 400, 'SYNTAX_ERROR', 'COMPACT');
    const error = await refused(alice, 'ALTER DATASET sales.orders.guarded SHRINK', 400, 'SYNTAX_ERROR', 'SHRINK');
    expect(error.message).toMatch(/COMPACT/);
    await refused(alice, 'ALTER DATASET sales.orders.guarded', 400, 'SYNTAX_ERROR', 'guarded');
    await refused(alice, 'ALTER DATASET sales.orders.guarded COMPACT now', 400, 'SYNTAX_ERROR', 'now');
    // Nothing was compacted by any of them.
    const dataset = await t.app.lakeport.catalog.getDataset(ref('guarded'));
    expect((await t.app.lakeport.catalog.snapshotFiles(dataset.current_snapshot_id!)).length).toBe(2);
  });
});

/** An ingestor whose rewrite runs `during` (once) before the real rewrite: a commit racing the compaction. */
function racingIngestor(during: () => Promise<void>): Ingestor {
  let done = false;
  const real = t.deps.ingestor;
  return {
    rewrite: async (input: Parameters<Ingestor['rewrite']>[0]) => {
      if (!done) {
        done = true;
        await during();
      }
      return real.rewrite(input);
    },
  } as unknown as Ingestor;
}

const compactorWith = (ingestor: Ingestor, catalog = t.app.lakeport.catalog) => new Compactor({ catalog, ingestor, blobs: t.deps.blobs, log: silentLogger, settings });

describe('Compactor', () => {
  it('folds in an append that lands during the compaction: no row lost, order kept', async () => {
    await appendOneRowCommits('racing', [0, 1, 2, 3, 4]);
    const compactor = compactorWith(racingIngestor(() => appendOneRowCommits('racing', [5, 6])));
    const dataset = await t.app.lakeport.catalog.getDataset(ref('racing'));
    const result = await compactor.compact(dataset.dataset_id, 'alice');
    expect(result).toMatchObject({ status: 'compacted', filesBefore: 7, filesAfter: 3, filesRewritten: 7, filesWritten: 3, rows: 7, foldedCommits: 1 });
    expect((await odata(rita, 'sales/orders/racing')).value.map((r) => r.id)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const snapshot = await t.app.lakeport.catalog.getSnapshot(result.snapshotId!);
    expect(snapshot).toMatchObject({ operation: 'maintenance', total_records: 7 });
    expect((await t.app.lakeport.catalog.resolveSnapshot(dataset.dataset_id, { kind: 'previous' })).total_records).toBe(6);
  });

  it('gives up, committing nothing, when the dataset is overwritten during the compaction', async () => {
    await appendOneRowCommits('overwritten', [0, 1, 2]);
    const compactor = compactorWith(racingIngestor(async () => void (await seedSnapshot(t, ref('overwritten'), columns, "SELECT 9::BIGINT AS id, 'new' AS name", { overwrite: true }))));
    const dataset = await t.app.lakeport.catalog.getDataset(ref('overwritten'));
    await expect(compactor.compact(dataset.dataset_id, 'alice')).rejects.toMatchObject({ code: 'COMMIT_CONFLICT' });
    expect((await odata(rita, 'sales/orders/overwritten')).value).toMatchObject([{ id: 9, name: 'new' }]);
    const snapshots = await t.app.lakeport.catalog.listSnapshots(dataset.dataset_id);
    expect(snapshots.map((s) => s.operation)).not.toContain('maintenance');
  });

  it('runs one compaction of a dataset at a time across compactors on one database', async () => {
    await appendOneRowCommits('contended', [0, 1, 2, 3]);
    const dataset = await t.app.lakeport.catalog.getDataset(ref('contended'));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    // Two processes: two catalogs and two compactors over the same database.
    const first = compactorWith(racingIngestor(async () => {
      entered();
      await gate;
    }), new Catalog(t.db));
    const second = compactorWith(t.deps.ingestor, new Catalog(t.db));
    const running = first.compact(dataset.dataset_id, 'alice');
    await inside;
    await expect(second.compact(dataset.dataset_id, 'alice')).rejects.toMatchObject({ code: 'COMPACTION_IN_PROGRESS', status: 409 });
    // …and so does another compaction by the same compactor (the same process).
    await expect(first.compact(dataset.dataset_id, 'alice')).rejects.toMatchObject({ code: 'COMPACTION_IN_PROGRESS' });
    // …and through the statement.
    const res = await submit(alice, 'ALTER DATASET sales.orders.contended COMPACT');
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().code).toBe('COMPACTION_IN_PROGRESS');
    release();
    expect((await running).status).toBe('compacted');
    expect((await second.compact(dataset.dataset_id, 'alice')).status).toBe('nothing_to_compact');
  });

  it('lets exactly one of two racing compactors take a lease, and another take it once it expired', async () => {
    await appendOneRowCommits('leased', [0]);
    const dataset = await t.app.lakeport.catalog.getDataset(ref('leased'));
    const [a, b] = [new Catalog(t.db), new Catalog(t.db)];
    const taken = await Promise.all([a.takeMaintenanceLease(dataset.dataset_id, 'a', 60_000), b.takeMaintenanceLease(dataset.dataset_id, 'b', 60_000)]);
    expect(taken.filter(Boolean)).toHaveLength(1);
    const [holder, other] = taken[0] ? ['a', 'b'] : ['b', 'a'];
    expect(await a.takeMaintenanceLease(dataset.dataset_id, holder, 60_000)).toBe(true); // the holder again
    expect(await a.renewMaintenanceLease(dataset.dataset_id, other, 60_000)).toBe(false);
    await a.releaseMaintenanceLease(dataset.dataset_id, holder);
    expect(await b.takeMaintenanceLease(dataset.dataset_id, other, 1)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await a.takeMaintenanceLease(dataset.dataset_id, holder, 60_000)).toBe(true); // expired
    expect(await b.renewMaintenanceLease(dataset.dataset_id, other, 60_000)).toBe(false);
    await a.releaseMaintenanceLease(dataset.dataset_id, holder);
  });

  it('compacts automatically after commits once the threshold is met, and in the periodic scan', async () => {
    const auto = new Compactor({ catalog: t.app.lakeport.catalog, ingestor: t.deps.ingestor, blobs: t.deps.blobs, log: silentLogger, settings: { ...settings, automatic: true } });
    const { catalog } = t.app.lakeport;
    await appendOneRowCommits('auto', [0, 1, 2]);
    const dataset = await catalog.getDataset(ref('auto'));
    const plan = await auto.planOf(dataset.dataset_id);
    expect(auto.due(plan)).toBe(false); // 3 small files < 4
    auto.afterCommit(dataset.dataset_id);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await catalog.getDataset(ref('auto'))).current_snapshot_id).toBe(dataset.current_snapshot_id);

    await appendOneRowCommits('auto', [3]);
    auto.afterCommit(dataset.dataset_id);
    const deadline = Date.now() + 10_000;
    while ((await catalog.getSnapshot((await catalog.getDataset(ref('auto'))).current_snapshot_id!)).operation !== 'maintenance' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const current = await catalog.getSnapshot((await catalog.getDataset(ref('auto'))).current_snapshot_id!);
    expect(current).toMatchObject({ operation: 'maintenance', author: 'lakeport:compaction', total_records: 4 });

    await appendOneRowCommits('scanned', [0, 1, 2, 3, 4]);
    expect(await auto.scan()).toBeGreaterThanOrEqual(1);
    const scanned = await catalog.getDataset(ref('scanned'));
    expect((await catalog.getSnapshot(scanned.current_snapshot_id!)).operation).toBe('maintenance');
    expect((await odata(rita, 'sales/orders/scanned')).value.map((r) => r.id)).toEqual([0, 1, 2, 3, 4]);
    await auto.stop();
    // Turned off, nothing happens.
    const off = compactorWith(t.deps.ingestor);
    expect(await off.scan()).toBe(0);
  });
});

describe('Catalog.readFiles', () => {
  it('reads a run as its compacted file only when the snapshot holds all of its inputs, one after another', async () => {
    const { catalog } = t.app.lakeport;
    const d = await catalog.createDataset({ workspace: 'sales', collection: 'orders', dataset: 'bookkeeping' }, { columns }, 'alice');
    const add = async (path: string, operation: 'create' | 'append' = 'append') =>
      catalog.commitSnapshot({ dataset: d.dataset_id, operation, author: 'alice', addFiles: [{ path: `lake/x/${path}`, row_count: 1, size_bytes: 10 }] });
    const s1 = await add('a', 'create');
    const s2 = await add('b');
    const s3 = await add('c');
    const ids = async (snapshotId: number) => (await catalog.snapshotFiles(snapshotId)).map((f) => f.file_id);
    const [a, b, c] = await ids(s3.snapshot_id);
    // A maintenance commit may only say that files it removes were replaced, by files it adds.
    await expect(
      catalog.commitSnapshot({ dataset: d.dataset_id, operation: 'maintenance', author: 'alice', addFiles: [{ path: 'lake/x/ab', row_count: 2, size_bytes: 20 }], removeFileIds: [a, b], replaces: { 'lake/x/ab': [a, c] } }),
    ).rejects.toMatchObject({ code: 'INVALID_COMMIT' });
    const m = await catalog.commitSnapshot({ dataset: d.dataset_id, operation: 'maintenance', author: 'alice', addFiles: [{ path: 'lake/x/bc', row_count: 2, size_bytes: 20 }], removeFileIds: [b, c], replaces: { 'lake/x/bc': [b, c] } });
    const paths = async (snapshotId: number) => (await catalog.readFiles(snapshotId)).map((f) => f.path);
    expect(await paths(m.snapshot_id)).toEqual(['lake/x/a', 'lake/x/bc']);
    expect(await paths(s3.snapshot_id)).toEqual(['lake/x/a', 'lake/x/bc']); // holds b and c
    expect(await paths(s2.snapshot_id)).toEqual(['lake/x/a', 'lake/x/b']); // lacks c: its own files
    expect(await paths(s1.snapshot_id)).toEqual(['lake/x/a']);
    // Compacted again (a + bc → abc): the oldest snapshots that hold a, b and c follow the chain.
    const [, bc] = await ids(m.snapshot_id);
    await catalog.commitSnapshot({ dataset: d.dataset_id, operation: 'maintenance', author: 'alice', addFiles: [{ path: 'lake/x/abc', row_count: 3, size_bytes: 30 }], removeFileIds: [a, bc], replaces: { 'lake/x/abc': [a, bc] } });
    expect(await paths(s3.snapshot_id)).toEqual(['lake/x/abc']);
    expect(await paths(s2.snapshot_id)).toEqual(['lake/x/a', 'lake/x/b']);
  });
});

describe('compaction and snapshot expiry', () => {
  it('an expiry that removes a compacted file leaves an older tagged snapshot reading its own files', async () => {
    await appendOneRowCommits('kept', [1, 2, 3, 4, 5, 6]);
    await statement(wendy, 'CREATE TAG before ON sales.orders.kept');
    expect(await statement(wendy, 'ALTER DATASET sales.orders.kept COMPACT')).toMatch(/^Compacted/);
    const { catalog } = t.app.lakeport;
    const tagged = await catalog.resolveSnapshot(ref('kept'), { kind: 'tag', name: 'before' });
    // Before the expiry the tagged version reads through the compacted file.
    const through = await catalog.readFiles(tagged.snapshot_id);
    expect(through.length).toBeLessThan(6);
    expect(through.every((f) => f.path.includes('compacted-'))).toBe(true);
    // An overwrite, then an expiry of everything but the current and the tagged snapshot: the compacted file goes.
    await seedSnapshot(t, ref('kept'), columns, "SELECT 99::BIGINT AS id, 'new' AS name", { overwrite: true });
    expect(await statement(alice, 'ALTER DATASET sales.orders.kept EXPIRE SNAPSHOTS OLDER THAN 0 SECONDS')).toMatch(/^Expired/);
    await t.app.lakeport.catalogSweeper.run();
    const files = await catalog.readFiles(tagged.snapshot_id);
    expect(files).toHaveLength(6);
    expect(files.some((f) => f.path.includes('compacted-'))).toBe(false);
    expect((await odata(rita, 'sales/orders/kept@before')).value.map((r) => r.id)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await queryRows(rita, "SELECT count(*), sum(id) FROM sales.orders.kept AT (VERSION => 'before')")).toEqual([[6, 21]]);
  });
});
