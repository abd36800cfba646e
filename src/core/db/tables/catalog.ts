import type { ColumnType, Generated } from 'kysely';
import type { DefaultTimestamp, Json } from './types.ts';

/** The catalog's tables (core/catalog owns them, see test/table-ownership.test.ts; migration 0003 and docs/catalog.md). */

export type DatasetKind = 'table' | 'view' | 'external' | 'materialized_view';
export type SnapshotOperation = 'create' | 'append' | 'overwrite' | 'delete' | 'maintenance';

/** One column of a dataset's definition. */
export interface ColumnDef {
  name: string;
  /** A DuckDB SQL type: BIGINT, DOUBLE, DECIMAL(18,2), VARCHAR, DATE, TIMESTAMP WITH TIME ZONE, BOOLEAN… */
  type: string;
  nullable: boolean;
  /** A meaning carried on top of the SQL type, e.g. `ipv4`. */
  logical_type?: string;
  /** The column's type in the file it was loaded from (OData's SourceType). */
  source_type?: string;
  /** OData's OriginalType. */
  original_type?: string;
  description?: string;
}

/** Workspace-wide guards; see resolveGuards in core/catalog for the defaults. */
export interface NamespaceProperties {
  deletion_protection?: boolean;
  drop_protection?: boolean;
  history_protection?: boolean;
}

/** Free-form dataset settings (sort order, whether an LLM wrote the descriptions…). */
export type DatasetProperties = Record<string, unknown>;

export type ColumnStatValue = string | number | boolean;

/** Statistics of one column in one data file; values are JSON scalars (strings for dates, decimals…). */
export interface ColumnStats {
  min: ColumnStatValue | null;
  max: ColumnStatValue | null;
  null_count: number;
  distinct_count?: number;
}

export interface CatalogNamespacesTable {
  workspace: string;
  billing_account: string;
  properties: Json<NamespaceProperties>;
  created_at: DefaultTimestamp;
}

export interface CatalogCollectionsTable {
  workspace: string;
  name: string;
  created_by: string;
  created_at: DefaultTimestamp;
}

export interface CatalogDatasetsTable {
  dataset_id: string;
  workspace: string;
  collection: string;
  name: string;
  kind: DatasetKind;
  columns: Json<ColumnDef[]>;
  description: string | null;
  properties: Json<DatasetProperties>;
  definition_version: ColumnType<number, number | undefined, number>;
  current_snapshot_id: number | null;
  created_by: string;
  created_at: DefaultTimestamp;
  updated_by: string;
  updated_at: DefaultTimestamp;
  /** Set by DROP DATASET: the row is kept (UNDROP restores it) until the purge (migration 0020). */
  dropped_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  dropped_by: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface CatalogSnapshotsTable {
  snapshot_id: Generated<number>;
  dataset_id: string;
  parent_snapshot_id: number | null;
  sequence: number;
  committed_at: DefaultTimestamp;
  author: string;
  message: string | null;
  operation: SnapshotOperation;
  rows_added: number;
  rows_removed: number;
  total_records: number;
  total_size: number;
  changed_rows: boolean;
  definition_version: number;
  /** Set by EXPIRE SNAPSHOTS: a history row that can no longer be read. */
  expired_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface CatalogDataFilesTable {
  file_id: string;
  dataset_id: string;
  path: string;
  format: ColumnType<string, string | undefined, string>;
  row_count: number;
  size_bytes: number;
  column_stats: Json<Record<string, ColumnStats>>;
  added_in_snapshot: number;
  removed_in_snapshot: number | null;
  /** The compaction output holding this file's rows now (migration 0021). */
  replaced_by: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface CatalogTagsTable {
  dataset_id: string;
  name: string;
  snapshot_id: number;
  created_by: string;
  created_at: DefaultTimestamp;
}

/** Storage paths to delete once `delete_after` has passed (no catalog row names them any more). */
export interface CatalogFileDeletionsTable {
  path: string;
  size_bytes: ColumnType<number, number | undefined, number>;
  queued_at: DefaultTimestamp;
  delete_after: ColumnType<Date, Date | string, Date | string>;
}

/** A reader's hold on a snapshot: expiry skips it until `expires_at`. */
export interface CatalogSnapshotLeasesTable {
  snapshot_id: number;
  holder: string;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}

/** A compaction under way: at most one holder per dataset (migration 0021). */
export interface CatalogMaintenanceLeasesTable {
  dataset_id: string;
  holder: string;
  acquired_at: DefaultTimestamp;
  expires_at: Date;
}

export interface CatalogTables {
  catalog_namespaces: CatalogNamespacesTable;
  catalog_collections: CatalogCollectionsTable;
  catalog_datasets: CatalogDatasetsTable;
  catalog_snapshots: CatalogSnapshotsTable;
  catalog_data_files: CatalogDataFilesTable;
  catalog_tags: CatalogTagsTable;
  catalog_file_deletions: CatalogFileDeletionsTable;
  catalog_snapshot_leases: CatalogSnapshotLeasesTable;
  catalog_maintenance_leases: CatalogMaintenanceLeasesTable;
}
