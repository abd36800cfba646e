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
  /** Interactive sessions only (from the access token's `auth_time`, `amr`, `idp`): when and how the person signed in at the provider. */
  authTime?: Date;
  amr?: string[];
  provider?: string;
}

/** One scope per service family; a token without a service's scope is refused there (403). */
export const SCOPES = ['accounts', 'policy', 'upload', 'jobs', 'odata'] as const;
export type Scope = (typeof SCOPES)[number];
export const DEFAULT_SCOPES: string[] = [...SCOPES];
