// Owner: src/services/accounts (accounts, members, workspaces, purged_workspaces, service_accounts; see test/table-ownership.test.ts).
import type { DefaultTimestamp, Json, NullableJson, Timestamp } from './types.ts';

export type AccountRole = 'billing_admin' | 'member';
export type MemberState = 'pending' | 'active';

export interface AccountsTable {
  account_id: string;
  name: string;
  tax_id: string | null;
  address: NullableJson<Record<string, unknown>>;
  member_min_age_ms: number | null;
  status: 'active' | 'deactivated';
  created_by: string;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
  deactivated_at: Timestamp | null;
  /** The plan that sets the service-account quota; null: the configured default plan. */
  plan: string | null;
}

export interface MembersTable {
  account_id: string;
  identity: string;
  email: string | null;
  role: AccountRole;
  state: MemberState;
  invited_by: string | null;
  invited_at: Timestamp | null;
  invite_expires_at: Timestamp | null;
  added_at: Timestamp | null;
  min_age_ms: number | null;
  eligible_at: Timestamp | null;
}

export interface WorkspaceMemberGrant {
  identity: string;
  role: 'owner' | 'admin' | 'writer' | 'reader';
}

export interface WorkspacesTable {
  name: string;
  billing_account: string;
  members: Json<WorkspaceMemberGrant[]>;
  created_by: string;
  created_at: DefaultTimestamp;
  deleted_at: Timestamp | null;
  deleted_by: string | null;
  purge_after: Timestamp | null;
}

export interface PurgedWorkspacesTable {
  name: string;
  purged_at: DefaultTimestamp;
}

/** A machine identity that belongs to one account (its primary key keeps it to one). */
export interface ServiceAccountsTable {
  identity: string;
  account_id: string;
  added_by: string;
  added_at: DefaultTimestamp;
}

export interface AccountTables {
  accounts: AccountsTable;
  members: MembersTable;
  workspaces: WorkspacesTable;
  purged_workspaces: PurgedWorkspacesTable;
  service_accounts: ServiceAccountsTable;
}
