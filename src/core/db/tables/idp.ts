// Owner: src/services/accounts (idp_policies, idp_denials, idp_last_sign_ins; see test/table-ownership.test.ts).
import type { ColumnType } from 'kysely';
import type { DefaultTimestamp, Json, NullableJson, Timestamp } from './types.ts';

export interface IdpPoliciesTable {
  account_id: string;
  /** The stored IdpPolicyRequest (docs/idp-policy.md); null after DELETE. */
  document: NullableJson<Record<string, unknown>>;
  version: number;
  updated_by: string;
  updated_at: DefaultTimestamp;
}

export interface IdpDenialsTable {
  denial_id: string;
  /** Generated; orders denials of the same instant. */
  seq: ColumnType<string, never, never>;
  account_id: string;
  identity: string;
  provider: string;
  email: string | null;
  code: string;
  reason: string;
  at: DefaultTimestamp;
}

export interface IdpLastSignInsTable {
  identity: string;
  account_id: string | null;
  provider: string;
  issuer: string;
  subject: string;
  email: string | null;
  email_verified: boolean;
  amr: Json<string[]>;
  groups: Json<string[]>;
  auth_time: Timestamp;
  signed_in_at: DefaultTimestamp;
}

export interface IdpTables {
  idp_policies: IdpPoliciesTable;
  idp_denials: IdpDenialsTable;
  idp_last_sign_ins: IdpLastSignInsTable;
}
