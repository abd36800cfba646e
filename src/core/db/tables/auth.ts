// Owner: src/services/auth (credentials, refresh_tokens, revoked_access_tokens, signing_keys, refresh_token_key,
// auth_failures, oidc_pending_logins, identity_links, interactive_sessions); schema_migrations is core/db's migrator's. See test/table-ownership.test.ts.
import type { Generated } from 'kysely';
import type { DefaultTimestamp, Json, PermissionPair, Timestamp } from './types.ts';

export interface CredentialsTable {
  credential_id: string;
  client_id: string;
  type: string;
  secret_hash: string;
  secret_hint: string;
  scopes: Json<string[]>;
  permissions: Json<PermissionPair[]>;
  created_by: string;
  created_at: DefaultTimestamp;
  expires_at: Timestamp | null;
  revoked_at: Timestamp | null;
  last_used_at: Timestamp | null;
}

export interface RefreshTokensTable {
  token_hash: string;
  credential_id: string;
  client_id: string;
  scopes: Json<string[]>;
  created_at: DefaultTimestamp;
  expires_at: Timestamp;
  revoked_at: Timestamp | null;
  last_used_at: Timestamp | null;
}

export interface RevokedAccessTokensTable {
  jti: string;
  expires_at: Timestamp;
}

export interface SigningKeysTable {
  kid: string;
  alg: string;
  public_jwk: Json<Record<string, unknown>>;
  private_jwk: string;
  created_at: DefaultTimestamp;
  retired_at: Timestamp | null;
}

/** The one MAC key of client_credentials refresh tokens (migration 0030), sealed with the master key. */
export interface RefreshTokenKeyTable {
  singleton: Generated<boolean>;
  sealed_key: string;
  created_at: DefaultTimestamp;
}

/** Failed-attempt counters (migration 0009; see src/services/auth/throttle.ts). */
export interface AuthFailuresTable {
  kind: 'client' | 'admin';
  subject: string;
  source: string;
  window_start: Timestamp;
  failures: Generated<number>;
  last_success_at: Timestamp | null;
}

/** Logins under way (migration 0019): consumed once by the callback. */
export interface OidcPendingLoginsTable {
  state: string;
  provider: string;
  nonce: string;
  code_verifier: string;
  return_to: string;
  created_at: DefaultTimestamp;
  expires_at: Timestamp;
}

/** A provider's person (issuer, subject) → a Lakeport identity. */
export interface IdentityLinksTable {
  issuer: string;
  subject: string;
  identity: string;
  email: string | null;
  created_at: DefaultTimestamp;
  last_sign_in_at: Timestamp | null;
}

/** How the person behind an `interactive` credential signed in. */
export interface InteractiveSessionsTable {
  credential_id: string;
  provider: string;
  issuer: string;
  subject: string;
  email: string | null;
  email_verified: boolean;
  amr: Json<string[]>;
  groups: Json<string[]>;
  auth_time: Timestamp;
  started_at: DefaultTimestamp;
  policy_version: number;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  applied_at: Generated<Date>;
}

export interface AuthTables {
  credentials: CredentialsTable;
  refresh_tokens: RefreshTokensTable;
  revoked_access_tokens: RevokedAccessTokensTable;
  signing_keys: SigningKeysTable;
  refresh_token_key: RefreshTokenKeyTable;
  auth_failures: AuthFailuresTable;
  oidc_pending_logins: OidcPendingLoginsTable;
  identity_links: IdentityLinksTable;
  interactive_sessions: InteractiveSessionsTable;
  schema_migrations: SchemaMigrationsTable;
}
