// Owner: src/services/jobs (jobs, variables; see test/table-ownership.test.ts).
import type { ColumnType } from 'kysely';
import type { DefaultTimestamp, Json, NullableJson, PermissionPair, Timestamp } from './types.ts';

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export interface JobError {
  code: string;
  message: string;
  /** 0-based offset into sql_text, with its 1-based line and column, when the error has a place. */
  position?: number;
  line?: number;
  column?: number;
}

export interface JobsTable {
  execution_id: string;
  owner: string;
  sql_text: string;
  parameters: Json<Record<string, string | number | boolean | null>>;
  client_info: NullableJson<Record<string, unknown>>;
  permissions: Json<PermissionPair[]>;
  status: JobStatus;
  error: NullableJson<JobError>;
  result_key: string | null;
  /** Bytes of the result file, while it is kept. */
  result_bytes: ColumnType<number | null, number | null | undefined, number | null>;
  /** When the result was removed after its retention time (result_key is then null). */
  results_expired_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  row_count: number | null;
  columns: NullableJson<{ name: string; type: string }[]>;
  attempts: ColumnType<number, number | undefined, number>;
  worker_id: string | null;
  heartbeat_at: Timestamp | null;
  cancel_requested: ColumnType<boolean, boolean | undefined, boolean>;
  timeout_ms: number;
  created_at: DefaultTimestamp;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
  /** The materialized view (its dataset id) this job refreshes; null for other jobs. */
  refresh_of: ColumnType<string | null, string | null | undefined, string | null>;
}

export type RefreshMode = 'every' | 'on_commit' | 'manual';

export interface MaterializedViewsTable {
  dataset_id: string;
  definition: string;
  refresh_mode: RefreshMode;
  refresh_every_ms: number | null;
  source_ids: Json<string[]>;
  sources: Json<string[]>;
  owner: string;
  owner_permissions: Json<PermissionPair[]>;
  next_refresh_at: Timestamp | null;
  last_refresh_at: Timestamp | null;
  last_refresh_job: string | null;
  last_refresh_status: string | null;
  last_refresh_error: string | null;
  /** The source snapshots the last refresh attempt read, by dataset id (migration 0031); null until one did. */
  refreshed_from: ColumnType<Record<string, number | null> | null, string | null | undefined, string | null>;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
}

export interface VariablesTable {
  owner: string;
  name: string;
  type: 'string' | 'number' | 'boolean';
  value: Json<string | number | boolean>;
  updated_at: DefaultTimestamp;
}

export interface JobTables {
  jobs: JobsTable;
  variables: VariablesTable;
  materialized_views: MaterializedViewsTable;
}
