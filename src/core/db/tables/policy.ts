// Owner: src/services/policy, its store (policies; see test/table-ownership.test.ts).
import type { DefaultTimestamp } from './types.ts';

export interface PoliciesTable {
  policy_id: string;
  workspace: string;
  principal: string;
  principal_type: string;
  role: 'owner' | 'admin' | 'writer' | 'reader';
  pattern: string;
  created_by: string;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
}

export interface PolicyTables {
  policies: PoliciesTable;
}
