// Owner: src/core/startup (see test/table-ownership.test.ts).
import type { ColumnType } from 'kysely';
import type { DefaultTimestamp } from './types.ts';

/** The one row every process sharing the database checks at start (migration 0026). */
export interface ClusterIdentityTable {
  singleton: ColumnType<boolean, boolean | undefined, never>;
  cluster_id: string;
  key_check: string;
  storage_location: string;
  created_at: DefaultTimestamp;
}

export interface ClusterTables {
  cluster_identity: ClusterIdentityTable;
}
