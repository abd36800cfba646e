// Owner: src/services/upload (upload_contracts, upload_writes, upload_write_parts, upload_commits;
// see test/table-ownership.test.ts).
import type { ColumnType } from 'kysely';
import type { DefaultTimestamp, Json, NullableJson, PermissionPair, Timestamp } from './types.ts';

export type ContractState = 'proposed' | 'accepted' | 'stale' | 'committed';
export type ContractMode = 'declared' | 'infer' | 'dataset';
export type CommitMode = 'append' | 'replace';
export type OnErrorPolicy = 'fail' | 'null' | 'skip';

export interface UploadContractsTable {
  contract_id: string;
  owner: string;
  /** The negotiating credential's narrowing grants ([] = unnarrowed); who may see it follows from them. */
  permissions: Json<PermissionPair[]>;
  workspace: string;
  collection: string;
  dataset: string;
  dataset_id: string | null;
  definition_version: number | null;
  requested_mode: string;
  mode: ContractMode;
  state: ContractState;
  /** append (default) or replace: the commit's snapshot holds only this upload's files. */
  commit_mode: ColumnType<CommitMode, CommitMode | undefined, CommitMode>;
  /** fail (default), null or skip: what a write does with a value it cannot store. */
  on_error: ColumnType<OnErrorPolicy, OnErrorPolicy | undefined, OnErrorPolicy>;
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

/** One written file; its Parquet is in upload_write_parts. `rows` and `bytes` are the file's totals. */
export interface UploadWritesTable {
  write_id: string;
  contract_id: string;
  file_name: string;
  format: string;
  rows: number;
  bytes: number;
  source_bytes: number;
  /** How many parts the file became. */
  parts: ColumnType<number, number | undefined, number>;
  /** Records the contract's on_error policy left out, and values it stored as NULL. */
  rows_rejected: ColumnType<number, number | undefined, number>;
  values_nulled: ColumnType<number, number | undefined, number>;
  /** The staged CSV of the rejected values (blob key), when there were any. */
  rejects_path: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: DefaultTimestamp;
}

/** A Parquet part of a write, in the file's order (`part` 0, 1, …). */
export interface UploadWritePartsTable {
  write_id: string;
  part: number;
  /** The staged file's blob key. */
  path: string;
  rows: number;
  bytes: number;
  column_stats: Json<Record<string, unknown>>;
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
  upload_write_parts: UploadWritePartsTable;
  upload_commits: UploadCommitsTable;
}
