import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, TEST_DATABASE_URL, type TestDb } from '../../../test/harness.ts';
import { Catalog, type DataFileInput, type DatasetRef } from './index.ts';

// On PostgreSQL these calls really race, each on its own pooled connection; on PGlite they interleave
// between statements of one serialised session, which still exercises the same code paths.

function file(rows: number): DataFileInput {
  return { path: `lake/ws/coll/ds/${crypto.randomUUID()}.parquet`, row_count: rows, size_bytes: rows * 8 };
}

function statusesOf(results: PromiseSettledResult<unknown>[]) {
  return results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as { code?: string }).code ?? String(r.reason))).sort();
}

describe(`catalog under concurrency (${TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestDb;
  let catalog: Catalog;
  let counter = 0;

  beforeAll(async () => {
    t = await createTestDb();
    catalog = new Catalog(t.db);
  });
  afterAll(async () => t.dispose());

  async function newDataset(): Promise<DatasetRef> {
    counter += 1;
    const ref = { workspace: `race_${counter}`, collection: 'c', dataset: 'd' };
    await catalog.claimNamespace(ref.workspace, 'acct');
    await catalog.createDataset(ref, { columns: [{ name: 'id', type: 'BIGINT', nullable: false }] }, 'alice');
    return ref;
  }

  it('chains 20 concurrent rebased appends without losing one', async () => {
    const ref = await newDataset();
    const base = await catalog.commitSnapshot({ dataset: ref, expectedParent: null, operation: 'create', author: 'a', addFiles: [file(1)] });
    const files = Array.from({ length: 20 }, (_, i) => file(i + 1));
    const commits = await Promise.all(
      files.map((f, i) =>
        catalog.commitSnapshot({
          dataset: ref,
          expectedParent: base.snapshot_id,
          operation: 'append',
          author: `writer_${i}`,
          addFiles: [f],
          rebaseAppends: true,
        }),
      ),
    );
    expect(new Set(commits.map((c) => c.snapshot_id)).size).toBe(20);

    const chain = await catalog.listSnapshots(ref);
    expect(chain.map((s) => s.sequence)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    for (let i = 1; i < chain.length; i++) expect(chain[i].parent_snapshot_id).toBe(chain[i - 1].snapshot_id);
    for (let i = 1; i < chain.length; i++) expect(chain[i].total_records).toBe(chain[i - 1].total_records + chain[i].rows_added);

    const expectedRows = 1 + files.reduce((sum, f) => sum + f.row_count, 0);
    const current = await catalog.resolveSnapshot(ref, { kind: 'current' });
    expect(current).toMatchObject({ snapshot_id: chain[20].snapshot_id, total_records: expectedRows, total_size: expectedRows * 8 });
    const paths = (await catalog.snapshotFiles(current.snapshot_id)).map((f) => f.path).sort();
    expect(paths).toHaveLength(21);
    expect(paths).toEqual(expect.arrayContaining(files.map((f) => f.path)));
  });

  it('lets exactly one of two commits on the same parent win', async () => {
    for (let round = 0; round < 5; round++) {
      const ref = await newDataset();
      const base = await catalog.commitSnapshot({ dataset: ref, expectedParent: null, operation: 'create', author: 'a', addFiles: [file(1)] });
      const commit = (operation: 'append' | 'overwrite') =>
        catalog.commitSnapshot({
          dataset: ref,
          expectedParent: base.snapshot_id,
          operation,
          author: 'b',
          addFiles: [file(2)],
          removeAllFiles: operation === 'overwrite',
        });
      const results = await Promise.allSettled([commit('append'), commit('overwrite')]);
      expect(statusesOf(results)).toEqual(['COMMIT_CONFLICT', 'ok']);
      const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(rejected.reason).toMatchObject({ status: 409 });
      const snapshots = await catalog.listSnapshots(ref);
      expect(snapshots).toHaveLength(2);
      expect(snapshots[1].parent_snapshot_id).toBe(base.snapshot_id);
    }
  });

  it('gives a contested workspace name to exactly one billing account', async () => {
    for (let round = 0; round < 5; round++) {
      const name = `contested_${round}`;
      const results = await Promise.allSettled([catalog.claimNamespace(name, 'acct_a'), catalog.claimNamespace(name, 'acct_b')]);
      expect(statusesOf(results)).toEqual(['NAMESPACE_CLAIMED', 'ok']);
      const winner = (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ namespace: { billing_account: string } }>).value;
      expect((await catalog.getNamespace(name)).billing_account).toBe(winner.namespace.billing_account);
    }
  });

  it('creates a namespace once when one account claims it twice at once', async () => {
    const results = await Promise.all([catalog.claimNamespace('twice', 'acct_a'), catalog.claimNamespace('twice', 'acct_a')]);
    expect(results.map((r) => r.created).sort()).toEqual([false, true]);
  });

  it('creates a contested dataset and tag once', async () => {
    const ref = await newDataset();
    const columns = [{ name: 'x', type: 'INTEGER', nullable: true }];
    const datasets = await Promise.allSettled([
      catalog.createDataset({ ...ref, collection: 'new_coll', dataset: 'same' }, { columns }, 'a'),
      catalog.createDataset({ ...ref, collection: 'new_coll', dataset: 'same' }, { columns }, 'b'),
    ]);
    expect(statusesOf(datasets)).toEqual(['ALREADY_EXISTS', 'ok']);

    const s1 = await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [file(1)] });
    const tags = await Promise.allSettled([catalog.createTag(ref, 'v1', s1.snapshot_id, 'a'), catalog.createTag(ref, 'v1', s1.snapshot_id, 'b')]);
    expect(statusesOf(tags)).toEqual(['TAG_EXISTS', 'ok']);
  });

  it('never loses a committed file when a dataset is dropped mid-commit', async () => {
    const ref = await newDataset();
    await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [] });
    const files = Array.from({ length: 8 }, () => file(1));
    const appends = files.map((f) => catalog.commitSnapshot({ dataset: ref, operation: 'append', author: 'a', addFiles: [f], rebaseAppends: true }));
    const [dropped, ...results] = await Promise.allSettled([catalog.dropDataset(ref), ...appends]);
    expect(dropped.status).toBe('fulfilled');
    // The drop is soft: the dropped dataset's last snapshot still names every file committed before it.
    const gone = (dropped as PromiseFulfilledResult<{ current_snapshot_id: number }>).value;
    const returned = new Set((await catalog.snapshotFiles(gone.current_snapshot_id)).map((f) => f.path));
    results.forEach((result, i) => {
      // Every append either landed before the drop (and the dropped dataset keeps its file) or found no dataset.
      if (result.status === 'fulfilled') expect(returned.has(files[i].path)).toBe(true);
      else expect(result.reason).toMatchObject({ status: 404, code: 'DATASET_NOT_FOUND' });
    });
  });

  it('a lease racing an expiry: either the lease holds the snapshot or it is refused with 410, never both lost', async () => {
    for (let round = 0; round < 10; round++) {
      const ref = await newDataset();
      const old = await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [file(1)] });
      await catalog.commitSnapshot({ dataset: ref, operation: 'overwrite', removeAllFiles: true, author: 'a', addFiles: [file(2)] });
      const [lease, expiry] = await Promise.allSettled([
        catalog.leaseSnapshots([old.snapshot_id], `reader_${round}`, 60_000),
        catalog.expireSnapshots(ref, { olderThanMs: 0 }),
      ]);
      expect(expiry.status).toBe('fulfilled');
      const expired = (expiry as PromiseFulfilledResult<{ expired: number[] }>).value.expired.includes(old.snapshot_id);
      if (lease.status === 'fulfilled') expect(expired).toBe(false);
      else expect([expired, (lease.reason as { code: string }).code]).toEqual([true, 'SNAPSHOT_EXPIRED']);
      // A leased snapshot still lists its files; an expired one answers 410.
      if (expired) await expect(catalog.snapshotFiles(old.snapshot_id)).rejects.toMatchObject({ status: 410 });
      else expect(await catalog.snapshotFiles(old.snapshot_id)).toHaveLength(1);
    }
  });

  it('two UNDROPs of one name at once restore it once', async () => {
    const ref = await newDataset();
    await catalog.dropDataset(ref, 'a');
    await catalog.createDataset(ref, { columns: [{ name: 'id', type: 'BIGINT', nullable: false }] }, 'b');
    await catalog.dropDataset(ref, 'b');
    const results = await Promise.allSettled([catalog.undropDataset(ref), catalog.undropDataset(ref)]);
    expect(statusesOf(results)).toEqual(['ALREADY_EXISTS', 'ok']);
    expect((await catalog.getDataset(ref)).created_by).toBe('b');
  });

  it('stamps every snapshot with the definition in force when it committed', async () => {
    const ref = await newDataset();
    await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [] });
    const work = Array.from({ length: 10 }, (_, i) =>
      i % 2 === 0
        ? catalog.alterDataset(ref, { description: `rev ${i}` }, 'a')
        : catalog.commitSnapshot({ dataset: ref, operation: 'append', author: 'a', addFiles: [file(1)] }),
    );
    await Promise.all(work);
    const dataset = await catalog.getDataset(ref);
    expect(dataset.definition_version).toBe(6);
    const versions = (await catalog.listSnapshots(ref)).map((s) => s.definition_version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(Math.max(...versions)).toBeLessThanOrEqual(6);
  });
});
