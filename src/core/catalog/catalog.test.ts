import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, TEST_DATABASE_URL, type TestDb } from '../../../test/harness.ts';
import { Catalog, parseSelector, type ColumnDef, type DataFileInput, type DatasetRef } from './index.ts';

const COLUMNS: ColumnDef[] = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'amount', type: 'DECIMAL(18,2)', nullable: true, source_type: 'string', original_type: 'NUMBER(18,2)' },
];

/** An AppError with this status and code. */
function appError(status: number, code: string) {
  return expect.objectContaining({ status, code });
}

function file(rows: number, extra: Partial<DataFileInput> = {}): DataFileInput {
  return { path: `lake/ws/coll/ds/${crypto.randomUUID()}.parquet`, row_count: rows, size_bytes: rows * 10, ...extra };
}

describe(`catalog (${TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestDb;
  let catalog: Catalog;
  let counter = 0;

  beforeAll(async () => {
    t = await createTestDb();
    catalog = new Catalog(t.db);
  });
  afterAll(async () => t.dispose());

  /** A fresh workspace name per test, so tests never see each other's rows. */
  function workspaceName() {
    counter += 1;
    return `ws_${counter}`;
  }

  async function newDataset(kind: 'table' | 'view' | 'external' = 'table') {
    const workspace = workspaceName();
    await catalog.claimNamespace(workspace, 'acct_1');
    const ref: DatasetRef = { workspace, collection: 'sales', dataset: 'orders' };
    const dataset = await catalog.createDataset(ref, { columns: kind === 'table' ? COLUMNS : [], kind }, 'alice');
    return { ref, dataset, workspace };
  }

  describe('namespaces', () => {
    it('claims a workspace for a billing account, idempotently', async () => {
      const name = workspaceName();
      const first = await catalog.claimNamespace(name.toUpperCase(), 'acct_1');
      expect(first.created).toBe(true);
      expect(first.namespace).toMatchObject({ workspace: name, billing_account: 'acct_1', properties: {} });
      expect(first.namespace.guards).toEqual({ deletion_protection: false, drop_protection: false, history_protection: false });
      const again = await catalog.claimNamespace(name, 'acct_1');
      expect(again).toMatchObject({ created: false, namespace: { workspace: name, billing_account: 'acct_1' } });
    });

    it('refuses a claim by another billing account', async () => {
      const name = workspaceName();
      await catalog.claimNamespace(name, 'acct_1');
      await expect(catalog.claimNamespace(name, 'acct_2')).rejects.toThrow(appError(409, 'NAMESPACE_CLAIMED'));
    });

    it('validates names', async () => {
      await expect(catalog.claimNamespace('bad-name', 'acct_1')).rejects.toThrow(appError(400, 'INVALID_NAME'));
      await expect(catalog.getNamespace('x'.repeat(64))).rejects.toThrow(appError(400, 'INVALID_NAME'));
    });

    it('gets, finds and lists namespaces', async () => {
      const a = workspaceName();
      const b = workspaceName();
      await catalog.claimNamespace(a, 'acct_list');
      await catalog.claimNamespace(b, 'acct_list');
      expect((await catalog.getNamespace(a)).billing_account).toBe('acct_list');
      expect(await catalog.findNamespace('no_such_ws')).toBeUndefined();
      await expect(catalog.getNamespace('no_such_ws')).rejects.toThrow(appError(404, 'NAMESPACE_NOT_FOUND'));
      expect((await catalog.listNamespaces('acct_list')).map((n) => n.workspace)).toEqual([a, b].sort());
      expect((await catalog.listNamespaces()).length).toBeGreaterThanOrEqual(2);
    });

    it('merges properties and resolves the guards', async () => {
      const name = workspaceName();
      await catalog.claimNamespace(name, 'acct_1');
      const locked = await catalog.setNamespaceProperties(name, { deletion_protection: true });
      expect(locked.properties).toEqual({ deletion_protection: true });
      expect(locked.guards).toEqual({ deletion_protection: true, drop_protection: true, history_protection: false });
      const relaxed = await catalog.setNamespaceProperties(name, { drop_protection: false, history_protection: true });
      expect(relaxed.properties).toEqual({ deletion_protection: true, drop_protection: false, history_protection: true });
      expect(relaxed.guards).toEqual({ deletion_protection: true, drop_protection: false, history_protection: true });
      const reset = await catalog.setNamespaceProperties(name, { drop_protection: null });
      expect(reset.guards.drop_protection).toBe(true);
      expect((await catalog.getNamespace(name)).properties).toEqual({ deletion_protection: true, history_protection: true });
      await expect(catalog.setNamespaceProperties(name, { owner: 'x' } as never)).rejects.toThrow(appError(400, 'INVALID_PROPERTY'));
      await expect(catalog.setNamespaceProperties('no_such_ws', {})).rejects.toThrow(appError(404, 'NAMESPACE_NOT_FOUND'));
    });

    it('drops a namespace with everything in it and returns its data files', async () => {
      const { ref, workspace } = await newDataset();
      const files = [file(5), file(7)];
      const s1 = await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'alice', addFiles: [files[0]] });
      await catalog.commitSnapshot({ dataset: ref, operation: 'overwrite', author: 'alice', addFiles: [files[1]], removeAllFiles: true });
      await catalog.createTag(ref, 'first', s1.snapshot_id, 'alice');
      await catalog.createDataset({ ...ref, collection: 'other', dataset: 'empty' }, { columns: COLUMNS }, 'alice');

      const paths = await catalog.dropNamespace(workspace);
      expect(paths).toEqual(files.map((f) => f.path).sort());
      expect(await catalog.findNamespace(workspace)).toBeUndefined();
      await expect(catalog.getDataset(ref)).rejects.toThrow(appError(404, 'DATASET_NOT_FOUND'));
      await expect(catalog.getSnapshot(s1.snapshot_id)).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));
      // The name is free again, for any account.
      expect((await catalog.claimNamespace(workspace, 'acct_2')).created).toBe(true);
    });

    it('refuses dropping a locked namespace unless forced', async () => {
      const name = workspaceName();
      await catalog.claimNamespace(name, 'acct_1');
      await catalog.setNamespaceProperties(name, { deletion_protection: true });
      await expect(catalog.dropNamespace(name)).rejects.toThrow(appError(423, 'GUARDED'));
      expect(await catalog.dropNamespace(name, { force: true })).toEqual([]);
      await expect(catalog.dropNamespace(name)).rejects.toThrow(appError(404, 'NAMESPACE_NOT_FOUND'));
    });
  });

  describe('collections', () => {
    it('creates, ensures and lists collections', async () => {
      const ws = workspaceName();
      await catalog.claimNamespace(ws, 'acct_1');
      const created = await catalog.createCollection(ws, 'Raw', 'alice');
      expect(created).toMatchObject({ workspace: ws, name: 'raw', created_by: 'alice' });
      await expect(catalog.createCollection(ws, 'raw', 'bob')).rejects.toThrow(appError(409, 'ALREADY_EXISTS'));
      expect(await catalog.ensureCollection(ws, 'RAW', 'bob')).toMatchObject({ created: false, collection: { name: 'raw', created_by: 'alice' } });
      expect(await catalog.ensureCollection(ws, 'clean', 'bob')).toMatchObject({ created: true, collection: { name: 'clean' } });
      expect((await catalog.listCollections(ws)).map((c) => c.name)).toEqual(['clean', 'raw']);
    });

    it('needs a namespace and valid names', async () => {
      await expect(catalog.createCollection('no_such_ws', 'raw', 'alice')).rejects.toThrow(appError(404, 'NAMESPACE_NOT_FOUND'));
      await expect(catalog.listCollections('no_such_ws')).rejects.toThrow(appError(404, 'NAMESPACE_NOT_FOUND'));
      await expect(catalog.createCollection('ws', 'bad name', 'alice')).rejects.toThrow(appError(400, 'INVALID_NAME'));
    });

    it('drops a collection with its datasets, honouring drop_protection', async () => {
      const { ref, workspace } = await newDataset();
      const f = file(3);
      await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'alice', addFiles: [f] });
      await catalog.setNamespaceProperties(workspace, { drop_protection: true });
      await expect(catalog.dropCollection(workspace, 'sales')).rejects.toThrow(appError(423, 'GUARDED'));
      await catalog.setNamespaceProperties(workspace, { drop_protection: false });
      expect(await catalog.dropCollection(workspace, 'sales')).toEqual([f.path]);
      expect(await catalog.listCollections(workspace)).toEqual([]);
      await expect(catalog.dropCollection(workspace, 'sales')).rejects.toThrow(appError(404, 'COLLECTION_NOT_FOUND'));
    });
  });

  describe('datasets', () => {
    it('creates a dataset (and its collection) at definition version 1, with no snapshot', async () => {
      const ws = workspaceName();
      await catalog.claimNamespace(ws, 'acct_1');
      const dataset = await catalog.createDataset(
        { workspace: ws.toUpperCase(), collection: 'Sales', dataset: 'Orders' },
        { columns: COLUMNS, description: 'All orders', properties: { sort_order: ['id'] } },
        'alice',
      );
      expect(dataset.dataset_id).toMatch(/^ds_[0-9A-Za-z]{22}$/);
      expect(dataset).toMatchObject({
        workspace: ws,
        collection: 'sales',
        name: 'orders',
        kind: 'table',
        columns: COLUMNS,
        description: 'All orders',
        properties: { sort_order: ['id'] },
        definition_version: 1,
        current_snapshot_id: null,
        created_by: 'alice',
        updated_by: 'alice',
      });
      expect(dataset.created_at).toBeInstanceOf(Date);
      expect((await catalog.listCollections(ws)).map((c) => c.name)).toEqual(['sales']);
      expect(await catalog.getDataset({ workspace: ws, collection: 'SALES', dataset: 'orders' })).toEqual(dataset);
      expect(await catalog.getDatasetById(dataset.dataset_id)).toEqual(dataset);
      expect(await catalog.findDataset({ workspace: ws, collection: 'sales', dataset: 'nope' })).toBeUndefined();
    });

    it('refuses duplicates, bad definitions and unknown namespaces', async () => {
      const { ref } = await newDataset();
      await expect(catalog.createDataset({ ...ref, dataset: 'ORDERS' }, { columns: COLUMNS }, 'bob')).rejects.toThrow(appError(409, 'ALREADY_EXISTS'));
      await expect(catalog.createDataset({ ...ref, dataset: 'x' }, { columns: [] }, 'bob')).rejects.toThrow(appError(400, 'INVALID_DEFINITION'));
      await expect(
        catalog.createDataset({ ...ref, dataset: 'x' }, { columns: [COLUMNS[0], { ...COLUMNS[0], name: 'ID' }] }, 'bob'),
      ).rejects.toThrow(appError(400, 'INVALID_DEFINITION'));
      await expect(catalog.createDataset({ ...ref, dataset: 'x' }, { columns: COLUMNS, kind: 'lake' as never }, 'bob')).rejects.toThrow(
        appError(400, 'INVALID_DEFINITION'),
      );
      await expect(catalog.createDataset({ ...ref, dataset: 'x-y' }, { columns: COLUMNS }, 'bob')).rejects.toThrow(appError(400, 'INVALID_NAME'));
      await expect(catalog.createDataset({ ...ref, workspace: 'no_such_ws' }, { columns: COLUMNS }, 'bob')).rejects.toThrow(
        appError(404, 'NAMESPACE_NOT_FOUND'),
      );
      await expect(catalog.getDataset({ ...ref, dataset: 'missing' })).rejects.toThrow(appError(404, 'DATASET_NOT_FOUND'));
      await expect(catalog.getDatasetById('ds_missing')).rejects.toThrow(appError(404, 'DATASET_NOT_FOUND'));
    });

    it('lists datasets by collection and name', async () => {
      const { ref, workspace } = await newDataset();
      await catalog.createDataset({ ...ref, collection: 'archive', dataset: 'b' }, { columns: COLUMNS }, 'alice');
      await catalog.createDataset({ ...ref, collection: 'archive', dataset: 'a' }, { columns: COLUMNS }, 'alice');
      const names = (list: { collection: string; name: string }[]) => list.map((d) => `${d.collection}.${d.name}`);
      expect(names(await catalog.listDatasets(workspace))).toEqual(['archive.a', 'archive.b', 'sales.orders']);
      expect(names(await catalog.listDatasets(workspace, { collection: 'Archive' }))).toEqual(['archive.a', 'archive.b']);
      await expect(catalog.listDatasets(workspace, { collection: 'nope' })).rejects.toThrow(appError(404, 'COLLECTION_NOT_FOUND'));
      await expect(catalog.listDatasets('no_such_ws')).rejects.toThrow(appError(404, 'NAMESPACE_NOT_FOUND'));
    });

    it('bumps definition_version on every real change of the definition', async () => {
      const { ref, dataset } = await newDataset();
      const v2 = await catalog.alterDataset(ref, { description: 'Orders' }, 'bob');
      expect(v2).toMatchObject({ definition_version: 2, description: 'Orders', updated_by: 'bob', created_by: 'alice' });
      const columns = [...COLUMNS, { name: 'note', type: 'VARCHAR', nullable: true }];
      const v3 = await catalog.alterDataset(dataset.dataset_id, { columns }, 'bob');
      expect(v3).toMatchObject({ definition_version: 3, columns });
      const v4 = await catalog.alterDataset(ref, { properties: { llm_described: true, sort_order: ['id'] } }, 'bob');
      expect(v4).toMatchObject({ definition_version: 4, properties: { llm_described: true, sort_order: ['id'] } });
      const v5 = await catalog.alterDataset(ref, { properties: { sort_order: null } }, 'bob');
      expect(v5).toMatchObject({ definition_version: 5, properties: { llm_described: true } });
      const v6 = await catalog.alterDataset(ref, { description: null }, 'bob');
      expect(v6).toMatchObject({ definition_version: 6, description: null });
      // Nothing changed: same version.
      const same = await catalog.alterDataset(ref, { columns, description: null, properties: { llm_described: true } }, 'carol');
      expect(same).toMatchObject({ definition_version: 6, updated_by: 'bob' });
      await expect(catalog.alterDataset(ref, { columns: [] }, 'bob')).rejects.toThrow(appError(400, 'INVALID_DEFINITION'));
    });

    it('checks the expected definition version', async () => {
      const { ref } = await newDataset();
      await catalog.alterDataset(ref, { description: 'a' }, 'bob', { expectedDefinitionVersion: 1 });
      await expect(catalog.alterDataset(ref, { description: 'b' }, 'carol', { expectedDefinitionVersion: 1 })).rejects.toThrow(
        appError(409, 'DEFINITION_CONFLICT'),
      );
      expect((await catalog.getDataset(ref)).description).toBe('a');
    });

    it('stamps each snapshot with the definition version it was committed under', async () => {
      const { ref } = await newDataset();
      const s1 = await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [file(1)] });
      await catalog.alterDataset(ref, { description: 'x' }, 'a');
      const s2 = await catalog.commitSnapshot({ dataset: ref, operation: 'append', author: 'a', addFiles: [file(1)] });
      expect([s1.definition_version, s2.definition_version]).toEqual([1, 2]);
      await expect(
        catalog.commitSnapshot({ dataset: ref, operation: 'append', author: 'a', addFiles: [file(1)], expectedDefinitionVersion: 1 }),
      ).rejects.toThrow(appError(409, 'DEFINITION_CONFLICT'));
    });

    it('drops a dataset, honouring drop_protection and the workspace lock', async () => {
      const { ref, workspace } = await newDataset();
      const f = file(2);
      await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [f] });
      await catalog.setNamespaceProperties(workspace, { deletion_protection: true });
      await expect(catalog.dropDataset(ref)).rejects.toThrow(appError(423, 'GUARDED'));
      await catalog.setNamespaceProperties(workspace, { drop_protection: false });
      expect(await catalog.dropDataset(ref, 'alice')).toMatchObject({ dropped_by: 'alice', dropped_at: expect.any(Date) });
      await expect(catalog.getDataset(ref)).rejects.toThrow(appError(404, 'DATASET_NOT_FOUND'));
      await expect(catalog.dropDataset(ref)).rejects.toThrow(appError(404, 'DATASET_NOT_FOUND'));
      expect((await catalog.listCollections(workspace)).map((c) => c.name)).toEqual(['sales']);
    });
  });

  describe('snapshots', () => {
    it('commits a first snapshot with its files and statistics', async () => {
      const { ref, dataset } = await newDataset();
      const stats = { id: { min: 1, max: 5, null_count: 0, distinct_count: 5 }, amount: { min: '0.50', max: '99.00', null_count: 1 } };
      const f = file(5, { column_stats: stats });
      const snapshot = await catalog.commitSnapshot({
        dataset: ref,
        expectedParent: null,
        operation: 'create',
        author: 'alice',
        message: 'first load',
        addFiles: [f],
      });
      expect(snapshot).toMatchObject({
        dataset_id: dataset.dataset_id,
        parent_snapshot_id: null,
        sequence: 1,
        author: 'alice',
        message: 'first load',
        operation: 'create',
        rows_added: 5,
        rows_removed: 0,
        total_records: 5,
        total_size: 50,
        changed_rows: true,
        definition_version: 1,
      });
      expect(typeof snapshot.snapshot_id).toBe('number');
      expect(snapshot.committed_at).toBeInstanceOf(Date);
      expect((await catalog.getDataset(ref)).current_snapshot_id).toBe(snapshot.snapshot_id);
      const files = await catalog.snapshotFiles(snapshot.snapshot_id);
      expect(files).toHaveLength(1);
      expect(files[0]).toMatchObject({
        path: f.path,
        format: 'parquet',
        row_count: 5,
        size_bytes: 50,
        column_stats: stats,
        added_in_snapshot: snapshot.snapshot_id,
        removed_in_snapshot: null,
      });
      expect(files[0].file_id).toMatch(/^file_/);
    });

    it('keeps each snapshot’s file set across appends, overwrites and deletes', async () => {
      const { ref } = await newDataset();
      const [a, b, c, d] = [file(10), file(20), file(5), file(1)];
      const s1 = await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [a] });
      const s2 = await catalog.commitSnapshot({ dataset: ref, expectedParent: s1.snapshot_id, operation: 'append', author: 'a', addFiles: [b] });
      const s3 = await catalog.commitSnapshot({ dataset: ref, operation: 'overwrite', author: 'a', addFiles: [c], removeAllFiles: true });
      const s4 = await catalog.commitSnapshot({ dataset: ref, operation: 'append', author: 'a', addFiles: [d] });
      const s5 = await catalog.commitSnapshot({ dataset: ref, operation: 'delete', author: 'a', addFiles: [], removeAllFiles: true });

      const pathsOf = async (id: number) => (await catalog.snapshotFiles(id)).map((f) => f.path);
      expect(await pathsOf(s1.snapshot_id)).toEqual([a.path]);
      expect(await pathsOf(s2.snapshot_id)).toEqual([a.path, b.path]);
      expect(await pathsOf(s3.snapshot_id)).toEqual([c.path]);
      expect(await pathsOf(s4.snapshot_id)).toEqual([c.path, d.path]);
      expect(await pathsOf(s5.snapshot_id)).toEqual([]);

      const summary = (await catalog.listSnapshots(ref)).map((s) => [
        s.sequence,
        s.parent_snapshot_id,
        s.operation,
        s.rows_added,
        s.rows_removed,
        s.total_records,
        s.total_size,
        s.changed_rows,
      ]);
      expect(summary).toEqual([
        [1, null, 'create', 10, 0, 10, 100, true],
        [2, s1.snapshot_id, 'append', 20, 0, 30, 300, true],
        [3, s2.snapshot_id, 'overwrite', 5, 30, 5, 50, true],
        [4, s3.snapshot_id, 'append', 1, 0, 6, 60, true],
        [5, s4.snapshot_id, 'delete', 0, 6, 0, 0, true],
      ]);
    });

    it('rewrites files in a maintenance commit without changing rows', async () => {
      const { ref } = await newDataset();
      await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [file(3), file(4)] });
      const s2 = await catalog.commitSnapshot({ dataset: ref, operation: 'append', author: 'a', addFiles: [file(5)] });
      const small = await catalog.snapshotFiles(s2.snapshot_id);
      const compacted = file(12, { size_bytes: 60 });
      const s3 = await catalog.commitSnapshot({
        dataset: ref,
        operation: 'maintenance',
        author: 'system',
        addFiles: [compacted],
        removeFileIds: small.map((f) => f.file_id),
      });
      expect(s3).toMatchObject({ rows_added: 0, rows_removed: 0, total_records: 12, total_size: 60, changed_rows: false });
      expect((await catalog.snapshotFiles(s3.snapshot_id)).map((f) => f.path)).toEqual([compacted.path]);
      expect(await catalog.snapshotFiles(s2.snapshot_id)).toHaveLength(3);
      await expect(
        catalog.commitSnapshot({ dataset: ref, operation: 'maintenance', author: 'system', addFiles: [file(1)], removeAllFiles: true }),
      ).rejects.toThrow(appError(400, 'INVALID_COMMIT'));
      // Files already removed cannot be removed again: someone else rewrote them first.
      await expect(
        catalog.commitSnapshot({ dataset: ref, operation: 'maintenance', author: 'system', addFiles: [], removeFileIds: [small[0].file_id] }),
      ).rejects.toThrow(appError(409, 'COMMIT_CONFLICT'));
    });

    it('refuses malformed commits', async () => {
      const { ref } = await newDataset();
      const commit = (extra: object) => catalog.commitSnapshot({ dataset: ref, operation: 'append', author: 'a', addFiles: [], ...extra });
      await expect(commit({ removeAllFiles: true })).rejects.toThrow(appError(400, 'INVALID_COMMIT'));
      await expect(commit({ operation: 'upsert' })).rejects.toThrow(appError(400, 'INVALID_COMMIT'));
      await expect(commit({ author: '' })).rejects.toThrow(appError(400, 'INVALID_COMMIT'));
      await expect(commit({ addFiles: [file(-1)] })).rejects.toThrow(appError(400, 'INVALID_COMMIT'));
      await expect(commit({ addFiles: [file(1, { path: '' })] })).rejects.toThrow(appError(400, 'INVALID_COMMIT'));
      const twice = file(1);
      await expect(commit({ addFiles: [twice, twice] })).rejects.toThrow(appError(400, 'INVALID_COMMIT'));
      await commit({ addFiles: [twice] });
      await expect(commit({ addFiles: [twice] })).rejects.toThrow(appError(400, 'INVALID_COMMIT'));
      await expect(commit({ dataset: { ...ref, dataset: 'missing' } })).rejects.toThrow(appError(404, 'DATASET_NOT_FOUND'));
      expect(await catalog.listSnapshots(ref)).toHaveLength(1);
    });

    it('fails a commit whose parent moved on, naming both snapshots', async () => {
      const { ref } = await newDataset();
      const s1 = await catalog.commitSnapshot({ dataset: ref, expectedParent: null, operation: 'create', author: 'a', addFiles: [file(1)] });
      await expect(
        catalog.commitSnapshot({ dataset: ref, expectedParent: null, operation: 'overwrite', author: 'b', addFiles: [file(2)], removeAllFiles: true }),
      ).rejects.toThrow(appError(409, 'COMMIT_CONFLICT'));
      const s2 = await catalog.commitSnapshot({ dataset: ref, expectedParent: s1.snapshot_id, operation: 'append', author: 'a', addFiles: [file(1)] });
      const stale = catalog.commitSnapshot({ dataset: ref, expectedParent: s1.snapshot_id, operation: 'append', author: 'b', addFiles: [file(1)] });
      await expect(stale).rejects.toThrow(appError(409, 'COMMIT_CONFLICT'));
      await expect(stale).rejects.toThrow(new RegExp(`${s1.snapshot_id}.*${s2.snapshot_id}`));
      // Appends commute: with rebaseAppends the same commit lands on top of the latest snapshot.
      const rebased = await catalog.commitSnapshot({
        dataset: ref,
        expectedParent: s1.snapshot_id,
        operation: 'append',
        author: 'b',
        addFiles: [file(4)],
        rebaseAppends: true,
      });
      expect(rebased).toMatchObject({ parent_snapshot_id: s2.snapshot_id, sequence: 3, total_records: 6 });
      // …but an overwrite never rebases.
      await expect(
        catalog.commitSnapshot({
          dataset: ref,
          expectedParent: s1.snapshot_id,
          operation: 'overwrite',
          author: 'b',
          addFiles: [],
          removeAllFiles: true,
          rebaseAppends: true,
        }),
      ).rejects.toThrow(appError(409, 'COMMIT_CONFLICT'));
    });

    it('gives snapshot ids that are unique across datasets', async () => {
      const one = await newDataset();
      const two = await newDataset();
      const a = await catalog.commitSnapshot({ dataset: one.ref, operation: 'create', author: 'a', addFiles: [] });
      const b = await catalog.commitSnapshot({ dataset: two.dataset.dataset_id, operation: 'create', author: 'a', addFiles: [] });
      expect(a.snapshot_id).not.toBe(b.snapshot_id);
      expect([a.sequence, b.sequence]).toEqual([1, 1]);
      expect(a).toMatchObject({ changed_rows: true, total_records: 0 });
    });

    it('has no snapshot operations on external datasets', async () => {
      const { ref } = await newDataset('external');
      const unsupported = appError(400, 'VERSIONING_NOT_SUPPORTED');
      await expect(catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [file(1)] })).rejects.toThrow(unsupported);
      await expect(catalog.resolveSnapshot(ref, { kind: 'current' })).rejects.toThrow(unsupported);
      await expect(catalog.listSnapshots(ref)).rejects.toThrow(unsupported);
      await expect(catalog.listTags(ref)).rejects.toThrow(unsupported);
      await expect(catalog.createTag(ref, 'v1', 1, 'a')).rejects.toThrow(unsupported);
    });

    it('answers 404 for unknown snapshots', async () => {
      await expect(catalog.getSnapshot(987654321)).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));
      await expect(catalog.snapshotFiles(987654321)).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));
    });
  });

  describe('selectors', () => {
    it('resolves current, tags and ids; 404 for none', async () => {
      const { ref } = await newDataset();
      await expect(catalog.resolveSnapshot(ref, { kind: 'current' })).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));
      await expect(catalog.resolveSnapshot(ref, { kind: 'previous' })).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));
      const s1 = await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [file(1)] });
      const s2 = await catalog.commitSnapshot({ dataset: ref, operation: 'append', author: 'a', addFiles: [file(1)] });
      await catalog.createTag(ref, 'Gold', s1.snapshot_id, 'alice');

      const resolve = async (label: string) => (await catalog.resolveSnapshot(ref, parseSelector(label))).snapshot_id;
      expect(await resolve('current')).toBe(s2.snapshot_id);
      expect(await resolve('previous')).toBe(s1.snapshot_id);
      expect(await resolve('gold')).toBe(s1.snapshot_id);
      expect(await resolve(String(s2.snapshot_id))).toBe(s2.snapshot_id);
      await expect(resolve('silver')).rejects.toThrow(appError(404, 'TAG_NOT_FOUND'));
      await expect(resolve('987654321')).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));

      // A snapshot of another dataset is not found through this one.
      const other = await newDataset();
      const foreign = await catalog.commitSnapshot({ dataset: other.ref, operation: 'create', author: 'a', addFiles: [] });
      await expect(resolve(String(foreign.snapshot_id))).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));
      await expect(catalog.resolveSnapshot({ ...ref, dataset: 'missing' }, { kind: 'current' })).rejects.toThrow(appError(404, 'DATASET_NOT_FOUND'));
    });

    it('takes previous as the earlier version of the data, skipping maintenance snapshots', async () => {
      const { ref } = await newDataset();
      const commit = (operation: 'create' | 'append' | 'maintenance', rows: number) =>
        catalog.commitSnapshot({ dataset: ref, operation, author: 'a', addFiles: rows ? [file(rows)] : [] });
      const s1 = await commit('create', 1);
      expect(await catalog.resolveSnapshot(ref, { kind: 'current' })).toMatchObject({ snapshot_id: s1.snapshot_id });
      await expect(catalog.resolveSnapshot(ref, { kind: 'previous' })).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));
      await commit('maintenance', 0);
      // The current rows are still those of s1, so there is no earlier version yet.
      await expect(catalog.resolveSnapshot(ref, { kind: 'previous' })).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));
      const s3 = await commit('append', 2);
      expect((await catalog.resolveSnapshot(ref, { kind: 'previous' })).snapshot_id).toBe(s1.snapshot_id);
      const s4 = await commit('maintenance', 0);
      expect((await catalog.resolveSnapshot(ref, { kind: 'current' })).snapshot_id).toBe(s4.snapshot_id);
      expect((await catalog.resolveSnapshot(ref, { kind: 'previous' })).snapshot_id).toBe(s1.snapshot_id);
      // An append that adds no rows changes nothing either.
      await commit('append', 0);
      expect((await catalog.resolveSnapshot(ref, { kind: 'previous' })).snapshot_id).toBe(s1.snapshot_id);
      await commit('append', 1);
      expect((await catalog.resolveSnapshot(ref, { kind: 'previous' })).snapshot_id).toBe(s3.snapshot_id);
    });
  });

  describe('tags', () => {
    async function withTwoSnapshots() {
      const setup = await newDataset();
      const s1 = await catalog.commitSnapshot({ dataset: setup.ref, operation: 'create', author: 'a', addFiles: [file(1)] });
      const s2 = await catalog.commitSnapshot({ dataset: setup.ref, operation: 'append', author: 'a', addFiles: [file(1)] });
      return { ...setup, s1, s2 };
    }

    it('creates, lists, moves and deletes tags', async () => {
      const { ref, dataset, s1, s2 } = await withTwoSnapshots();
      const tag = await catalog.createTag(ref, 'Release-1', s1.snapshot_id, 'alice');
      expect(tag).toMatchObject({ dataset_id: dataset.dataset_id, name: 'release-1', snapshot_id: s1.snapshot_id, created_by: 'alice' });
      await catalog.createTag(dataset.dataset_id, 'audit', s2.snapshot_id, 'bob');
      expect((await catalog.listTags(ref)).map((t) => [t.name, t.snapshot_id, t.created_by])).toEqual([
        ['audit', s2.snapshot_id, 'bob'],
        ['release-1', s1.snapshot_id, 'alice'],
      ]);
      await expect(catalog.createTag(ref, 'release-1', s2.snapshot_id, 'bob')).rejects.toThrow(appError(409, 'TAG_EXISTS'));
      const moved = await catalog.createTag(ref, 'release-1', s2.snapshot_id, 'bob', { move: true });
      expect(moved).toMatchObject({ snapshot_id: s2.snapshot_id, created_by: 'bob' });
      expect(await catalog.deleteTag(ref, 'RELEASE-1')).toMatchObject({ name: 'release-1' });
      await expect(catalog.deleteTag(ref, 'release-1')).rejects.toThrow(appError(404, 'TAG_NOT_FOUND'));
      expect((await catalog.listTags(ref)).map((t) => t.name)).toEqual(['audit']);
    });

    it('refuses bad names and snapshots of other datasets', async () => {
      const { ref, s1 } = await withTwoSnapshots();
      await expect(catalog.createTag(ref, 'current', s1.snapshot_id, 'a')).rejects.toThrow(appError(400, 'INVALID_NAME'));
      await expect(catalog.createTag(ref, '123', s1.snapshot_id, 'a')).rejects.toThrow(appError(400, 'INVALID_NAME'));
      await expect(catalog.createTag(ref, 'v1', 987654321, 'a')).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));
      const other = await withTwoSnapshots();
      await expect(catalog.createTag(ref, 'v1', other.s1.snapshot_id, 'a')).rejects.toThrow(appError(404, 'SNAPSHOT_NOT_FOUND'));
      await expect(catalog.createTag({ ...ref, dataset: 'missing' }, 'v1', s1.snapshot_id, 'a')).rejects.toThrow(appError(404, 'DATASET_NOT_FOUND'));
    });

    it('keeps tags in place under history_protection, while new tags may still be added', async () => {
      const { ref, workspace, s1, s2 } = await withTwoSnapshots();
      await catalog.createTag(ref, 'v1', s1.snapshot_id, 'alice');
      await catalog.setNamespaceProperties(workspace, { history_protection: true });
      await expect(catalog.createTag(ref, 'v1', s2.snapshot_id, 'bob', { move: true })).rejects.toThrow(appError(423, 'GUARDED'));
      await expect(catalog.deleteTag(ref, 'v1')).rejects.toThrow(appError(423, 'GUARDED'));
      await expect(catalog.deleteTag(ref, 'v9')).rejects.toThrow(appError(404, 'TAG_NOT_FOUND'));
      expect(await catalog.createTag(ref, 'v2', s2.snapshot_id, 'bob')).toMatchObject({ name: 'v2' });
      // Moving a tag onto the snapshot it already names changes nothing, so it is allowed.
      expect(await catalog.createTag(ref, 'v1', s1.snapshot_id, 'bob', { move: true })).toMatchObject({ created_by: 'alice' });
      expect((await catalog.resolveSnapshot(ref, { kind: 'tag', name: 'v1' })).snapshot_id).toBe(s1.snapshot_id);
    });
  });
});
