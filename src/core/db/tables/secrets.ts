// Owners: secrets belong to src/services/jobs (its secret store), secret_data_keys to src/core/crypto
// (see test/table-ownership.test.ts).
import type { ColumnType } from 'kysely';
import type { DefaultTimestamp, Timestamp } from './types.ts';

/** Lakeport's names for the secret types (the spec's storage_a / storage_b words are accepted as aliases). */
export type SecretType = 'gcs_service_account' | 's3_access_key' | 'http_endpoint';

/** One data key per billing account, kept only sealed with the master key (migration 0006). */
export interface SecretDataKeysTable {
  billing_account: string;
  wrapped_key: string;
  created_at: DefaultTimestamp;
}

/** A CREATE SECRET credential: its values exist here only as `ciphertext` (see docs/secrets.md). */
export interface SecretsTable {
  workspace: string;
  name: string;
  type: SecretType;
  billing_account: string;
  ciphertext: string;
  created_by: string;
  created_at: DefaultTimestamp;
  replaced_by: string | null;
  replaced_at: Timestamp | null;
  last_used_at: Timestamp | null;
  use_count: ColumnType<number, number | undefined, number>;
}

export interface SecretTables {
  secret_data_keys: SecretDataKeysTable;
  secrets: SecretsTable;
}
