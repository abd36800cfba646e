/** The catalog: the table format that upload, query jobs and OData build on. See docs/catalog.md. */
export { Catalog, DEFAULT_LIFECYCLE, type DatasetScope, type LifecycleSettings } from './catalog.ts';
export type { ExpiryOptions, ExpiryResult } from './lifecycle.ts';
export { CatalogSweeper } from './sweeper.ts';
export type { ExternalDatasetEntry, ExternalSyncResult } from './external.ts';
export { SNAPSHOT_OPERATIONS } from './commit.ts';
export { DATASET_KINDS } from './definition.ts';
export { resolveGuards, type NamespaceGuards, type NamespacePropertiesPatch } from './guards.ts';
export { NAME_REGEX, TAG_NAME_REGEX, formatRef, normalizeName, refOf, normalizeRef, normalizeTagName, type DatasetRef, type NameKind } from './names.ts';
export { sortOrder, type SortKey } from './sort-order.ts';
export { formatSelector, parseSelector, type SnapshotSelector } from './selectors.ts';
export type {
  Collection,
  CommitInput,
  DataFile,
  DataFileInput,
  Dataset,
  DatasetDefinition,
  Executor,
  DatasetKey,
  DatasetPatch,
  Namespace,
  Snapshot,
  Tag,
} from './types.ts';
export type {
  ColumnDef,
  ColumnStats,
  ColumnStatValue,
  DatasetKind,
  DatasetProperties,
  NamespaceProperties,
  SnapshotOperation,
} from '../db/index.ts';
