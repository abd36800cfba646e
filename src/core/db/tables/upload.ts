import type { DefaultTimestamp, Json, NullableJson, Timestamp } from './types.ts';

export type ContractState = 'proposed' | 'accepted' | 'stale' | 'committed';
export type ContractMode = 'declared' | 'infer' | 'dataset';

export interface UploadContractsTable {
  contract_id: string;
  owner: string;
  workspace: string;
  collection: string;
  dataset: string;
  dataset_id: string | null;
  definition_version: number | null;
  requested_mode: string;
  mode: ContractMode;
  state: ContractState;
  format: Json<Record<string, unknown>>;
  files: Json<unknown[]>;
  declared: NullableJson<unknown[]>;
  overrides: Json<Record<string, { type?: string; ignore?: boolean }>>;
  plan: Json<unknown[]>;
  issues: Json<unknown[]>;
  sample_values: Json<Record<string, unknown>>;
  target: Json<unknown[]>;
  schema_fingerprint: string;
  snapshot_id: number | null;
  rows_written: number | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
  expires_at: Timestamp;
}

export interface UploadWritesTable {
  write_id: string;
  contract_id: string;
  file_name: string;
  format: string;
  path: string;
  rows: number;
  bytes: number;
  source_bytes: number;
  column_stats: Json<Record<string, unknown>>;
  created_at: DefaultTimestamp;
}

export interface UploadCommitsTable {
  owner: string;
  idempotency_key: string;
  contract_id: string;
  state: 'running' | 'done';
  response: NullableJson<Record<string, unknown>>;
  started_at: DefaultTimestamp;
}

export interface UploadTables {
  upload_contracts: UploadContractsTable;
  upload_writes: UploadWritesTable;
  upload_commits: UploadCommitsTable;
}
