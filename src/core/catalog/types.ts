import type { Kysely, Selectable } from 'kysely';
import type {
  CatalogCollectionsTable,
  CatalogDataFilesTable,
  CatalogDatasetsTable,
  CatalogNamespacesTable,
  CatalogSnapshotsTable,
  CatalogTagsTable,
  ColumnDef,
  ColumnStats,
  Database,
  DatasetKind,
  DatasetProperties,
  SnapshotOperation,
} from '../db/index.ts';
import type { NamespaceGuards } from './guards.ts';
import type { DatasetRef } from './names.ts';

/** Kysely or a transaction of it: the catalog's queries run on either. */
export type Executor = Kysely<Database>;

export type Namespace = Selectable<CatalogNamespacesTable> & { guards: NamespaceGuards };
export type Collection = Selectable<CatalogCollectionsTable>;
export type Dataset = Selectable<CatalogDatasetsTable>;
export type Snapshot = Selectable<CatalogSnapshotsTable>;
export type DataFile = Selectable<CatalogDataFilesTable>;
export type Tag = Selectable<CatalogTagsTable>;

/** A dataset by its three-part name, or by its `ds_…` id. */
export type DatasetKey = DatasetRef | string;

export interface DatasetDefinition {
  columns: ColumnDef[];
  kind?: DatasetKind;
  description?: string | null;
  properties?: DatasetProperties;
}

/** A change of definition: columns replace, description `null` clears, properties merge (`null` removes a key). */
export interface DatasetPatch {
  columns?: ColumnDef[];
  description?: string | null;
  properties?: DatasetProperties;
}

/** A Parquet file already written to storage, to be named by a commit. */
export interface DataFileInput {
  path: string;
  row_count: number;
  size_bytes: number;
  column_stats?: Record<string, ColumnStats>;
  format?: string;
}

export interface CommitInput {
  dataset: DatasetKey;
  /** An id taken with Catalog.reserveSnapshotId (the snapshot is then named before it exists); absent: the next one. */
  snapshotId?: number;
  /** The snapshot the writer started from: a number, `null` for "no snapshot yet", `undefined` to skip the check. */
  expectedParent?: number | null;
  /** When given, the commit fails with 409 DEFINITION_CONFLICT if the definition changed since. */
  expectedDefinitionVersion?: number;
  operation: SnapshotOperation;
  author: string;
  message?: string | null;
  addFiles: DataFileInput[];
  /** Overwrite and delete: every file of the current snapshot leaves the new one. */
  removeAllFiles?: boolean;
  /** Rewrites (delete, maintenance): these files of the current snapshot leave the new one. */
  removeFileIds?: string[];
  /** An append whose parent moved on is committed on top of the latest snapshot instead of failing. */
  rebaseAppends?: boolean;
  /**
   * Maintenance: which removed files each added file rewrote (added path → file ids, rows in that
   * order). Reads of older snapshots holding all of them may read the added file instead (Catalog.readFiles).
   */
  replaces?: Record<string, string[]>;
}
