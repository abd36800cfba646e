// Owner: src/services/accounts (account_domains; see test/table-ownership.test.ts).
import type { DefaultTimestamp, NullableJson, Timestamp } from './types.ts';

export type DomainCheckOutcome = 'verified' | 'record_missing' | 'dns_unavailable';

export interface AccountDomainsTable {
  account_id: string;
  /** Lowercase ASCII (punycode) form, no trailing dot. */
  domain: string;
  token: string;
  claimed_by: string;
  claimed_at: DefaultTimestamp;
  verified_at: Timestamp | null;
  verified_by: string | null;
  last_checked_at: Timestamp | null;
  last_outcome: DomainCheckOutcome | null;
  last_error: string | null;
  last_found: NullableJson<string[]>;
}

export interface DomainTables {
  account_domains: AccountDomainsTable;
}
