// Owner: src/services/accounts (workspace_catalog_bindings; see test/table-ownership.test.ts).
import type { ColumnType } from 'kysely';
import type { DefaultTimestamp, Json, NullableJson } from './types.ts';

/** What the last sync of a binding found and did (docs/catalog-bindings.md). */
export interface CatalogSyncSummary {
  at: string;
  by: string;
  namespaces: number;
  tables: number;
  added: number;
  removed: number;
  kept: number;
  skipped: number;
}

/** A workspace bound to an external catalog (migration 0023); no row: the native catalog. */
export interface WorkspaceCatalogBindingsTable {
  workspace: string;
  billing_account: string;
  kind: string;
  config: Json<Record<string, string>>;
  /** The CatalogAuthRequest, sealed with the billing account's data key; null: no credential. */
  sealed_auth: string | null;
  /** The CatalogAuthRequest with its secret fields replaced, for reads. */
  auth_redacted: NullableJson<Record<string, string>>;
  preserve_sql_case: boolean;
  version: ColumnType<number, number | undefined, number>;
  updated_by: string;
  updated_at: DefaultTimestamp;
  last_sync: NullableJson<CatalogSyncSummary>;
}

export interface CatalogBindingTables {
  workspace_catalog_bindings: WorkspaceCatalogBindingsTable;
}
