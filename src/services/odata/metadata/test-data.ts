import type { ColumnDef, DataFile, Dataset, Snapshot, Tag } from '../../../core/catalog/index.ts';
import type { DatasetVersion } from '../model.ts';

/** Test data: a dataset version with two files, built so every annotation applies. */

export function column(name: string, type: string, extra: Partial<ColumnDef> = {}): ColumnDef {
  return { name, type, nullable: true, ...extra };
}

export function dataset(overrides: Partial<Dataset> = {}): Dataset {
  return {
    dataset_id: 'ds_1',
    workspace: 'sales',
    collection: 'raw',
    name: 'orders',
    kind: 'table',
    columns: [column('id', 'BIGINT', { nullable: false }), column('amount', 'DECIMAL(18,2)')],
    description: null,
    properties: {},
    definition_version: 1,
    current_snapshot_id: 7,
    created_by: 'alice',
    created_at: new Date('2024-01-01T00:00:00Z'),
    updated_by: 'alice',
    updated_at: new Date('2024-01-01T00:00:00Z'),
    dropped_at: null,
    dropped_by: null,
    ...overrides,
  };
}

export function snapshot(overrides: Partial<Snapshot> = {}): Snapshot {
  return {
    snapshot_id: 7,
    dataset_id: 'ds_1',
    parent_snapshot_id: 6,
    sequence: 2,
    committed_at: new Date('2024-05-01T12:00:00Z'),
    author: 'svc-loader',
    message: 'nightly load',
    expired_at: null,
    operation: 'append',
    rows_added: 10,
    rows_removed: 0,
    total_records: 30,
    total_size: 4096,
    changed_rows: true,
    definition_version: 1,
    ...overrides,
  };
}

export function file(rows: number, stats: DataFile['column_stats'], overrides: Partial<DataFile> = {}): DataFile {
  return {
    file_id: `file_${rows}`,
    dataset_id: 'ds_1',
    path: `lake/sales/raw/orders/${rows}.parquet`,
    format: 'parquet',
    row_count: rows,
    size_bytes: 1024,
    column_stats: stats,
    added_in_snapshot: 1,
    removed_in_snapshot: null,
    replaced_by: null,
    ...overrides,
  };
}

export function tag(name: string, overrides: Partial<Tag> = {}): Tag {
  return { dataset_id: 'ds_1', name, snapshot_id: 7, created_by: 'alice', created_at: new Date('2024-05-02T00:00:00Z'), ...overrides };
}

export function version(overrides: Partial<DatasetVersion> = {}): DatasetVersion {
  const ds = overrides.dataset ?? dataset();
  return {
    ref: { workspace: ds.workspace, collection: ds.collection, dataset: ds.name },
    dataset: ds,
    snapshot: snapshot(),
    files: [],
    tags: [],
    role: 'reader',
    policies: ['sales.*'],
    ...overrides,
  };
}
