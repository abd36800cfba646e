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
  /** Interactive sessions only: when the person authenticated at the provider (claim `auth_time`). */
  authTime?: Date;
  /** Interactive sessions only: the ID token's amr values (claim `amr`). */
  amr?: string[];
  /** Interactive sessions only: the provider signed in with, 'idp_a' | 'idp_b' (claim `idp`). */
  provider?: string;
}

/** One scope per service family; a token without a service's scope is refused there (403). */
export const SCOPES = ['accounts', 'policy', 'upload', 'jobs', 'odata'] as const;
export type Scope = (typeof SCOPES)[number];
export const DEFAULT_SCOPES: string[] = [...SCOPES];
