import type { PermissionPair } from '../db/schema.ts';

/** The authenticated caller of a request, from a verified access token. */
export interface Principal {
  /** The identity string (`alice`, `svc-loader`): the token's `sub`, the credential's client_id. */
  identity: string;
  scopes: string[];
  /** Narrowing grants of the credential; empty means the identity's own grants apply unnarrowed. */
  permissions: PermissionPair[];
  credentialId: string;
  tokenId: string;
  expiresAt: Date;
}

/** One scope per service family; a token without a service's scope is refused there (403). */
export const SCOPES = ['accounts', 'policy', 'upload', 'jobs', 'odata'] as const;
export type Scope = (typeof SCOPES)[number];
export const DEFAULT_SCOPES: string[] = [...SCOPES];
