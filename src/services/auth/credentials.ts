import { DEFAULT_SCOPES, mayManage, requireManage, type Principal } from '../../core/authz/index.ts';
import { ALLOW_ALL_SIGN_INS, type SignInPolicy } from '../../core/authz/sign-in-policy.ts';
import { newId, sha256Hex } from '../../core/crypto/index.ts';
import type { PermissionPair } from '../../core/db/index.ts';
import { authError } from './errors.ts';
import type { AuthRepo, CredentialRow } from './repo.ts';
import { CREDENTIAL_SECRET_PREFIX, generateSecret, secretHint } from './secrets.ts';

/**
 * Who is managing credentials: the operator (admin token), an identity with its own token, or a
 * `delegate`: a caller another service has already authorized for the client_id (the account service:
 * a billing_admin managing its account's service accounts). A delegate mints at most its own scopes.
 */
export type CredentialCaller = { kind: 'admin' } | { kind: 'token'; principal: Principal } | { kind: 'delegate'; principal: Principal };

export interface CreateCredentialInput {
  type: string;
  expires_in_days: number | null;
  scopes: string[];
  permissions: PermissionPair[];
}

export interface CredentialMetadata {
  credential_id: string;
  client_id: string;
  type: string;
  scopes: string[];
  permissions: PermissionPair[];
  secret_hint: string;
  created_at: string;
  created_by: string;
  expires_at: string | null;
  expired: boolean;
  last_used_at: string | null;
}

const DAY_MS = 86_400_000;

export function credentialMetadata(row: CredentialRow, now = Date.now()): CredentialMetadata {
  return {
    credential_id: row.credential_id,
    client_id: row.client_id,
    type: row.type,
    scopes: row.scopes,
    permissions: row.permissions,
    secret_hint: row.secret_hint,
    created_at: row.created_at.toISOString(),
    created_by: row.created_by,
    expires_at: row.expires_at?.toISOString() ?? null,
    expired: row.expires_at !== null && row.expires_at.getTime() <= now,
    last_used_at: row.last_used_at?.toISOString() ?? null,
  };
}

export class CredentialService {
  constructor(
    private readonly repo: AuthRepo,
    /** Its machine_credentials rules apply to an identity minting its own credential with its token. */
    private readonly signInPolicy: Pick<SignInPolicy, 'checkCredentialMint'> = ALLOW_ALL_SIGN_INS,
  ) {}

  /** A bearer token may manage only its own identity's credentials. */
  private assertMayManage(caller: CredentialCaller, clientId: string) {
    if (caller.kind === 'token' && caller.principal.identity !== clientId) {
      throw authError('FORBIDDEN', `A token for '${caller.principal.identity}' cannot manage the credentials of '${clientId}'`);
    }
  }

  async create(caller: CredentialCaller, clientId: string, input: CreateCredentialInput) {
    this.assertMayManage(caller, clientId);
    // A token can only mint credentials at most as strong as itself.
    const callerScopes = caller.kind === 'admin' ? DEFAULT_SCOPES : caller.principal.scopes;
    const scopes = input.scopes.length > 0 ? [...new Set(input.scopes)] : callerScopes;
    const missing = scopes.filter((s) => !callerScopes.includes(s));
    if (missing.length > 0) {
      throw authError('SCOPE_NOT_HELD', `Cannot grant scope(s) your token does not hold: ${missing.join(', ')}`);
    }
    // A narrowed token: only credentials within its own permissions (core/authz decides).
    if (caller.kind === 'token') {
      requireManage(caller.principal, 'credential.create', { permissions: input.permissions });
      await this.signInPolicy.checkCredentialMint(clientId, input.expires_in_days);
    }
    const secret = generateSecret(CREDENTIAL_SECRET_PREFIX);
    const row = await this.repo.insertCredential({
      credential_id: newId('cred'),
      client_id: clientId,
      type: input.type,
      secret_hash: sha256Hex(secret),
      secret_hint: secretHint(secret),
      scopes,
      permissions: input.permissions,
      created_by: caller.kind === 'admin' ? 'admin' : caller.principal.identity,
      expires_at: input.expires_in_days === null ? null : new Date(Date.now() + input.expires_in_days * DAY_MS),
    });
    return { ...credentialMetadata(row), secret };
  }

  async list(caller: CredentialCaller, clientId: string): Promise<CredentialMetadata[]> {
    this.assertMayManage(caller, clientId);
    const now = Date.now();
    const rows = await this.repo.listUnrevoked(clientId);
    // A narrowed token sees only itself (core/authz decides).
    const visible = caller.kind !== 'token' ? rows : rows.filter((row) => mayManage(caller.principal, 'credential.read', { credentialId: row.credential_id }));
    return visible.map((row) => credentialMetadata(row, now));
  }

  async revoke(caller: CredentialCaller, clientId: string, credentialId: string) {
    this.assertMayManage(caller, clientId);
    // A narrowed token may revoke only itself (core/authz decides).
    if (caller.kind === 'token') requireManage(caller.principal, 'credential.revoke', { credentialId });
    const revokedAt = await this.repo.revokeCredential(clientId, credentialId);
    if (!revokedAt) {
      throw authError('CREDENTIAL_NOT_FOUND', `No active credential ${credentialId} for client '${clientId}'`);
    }
    return {
      message: `Credential ${credentialId} revoked`,
      credential_id: credentialId,
      client_id: clientId,
      revoked_at: revokedAt.toISOString(),
    };
  }

  /** Revokes every credential of the client_id (and their refresh tokens); returns their ids. */
  revokeAll(clientId: string): Promise<string[]> {
    return this.repo.revokeAllCredentials(clientId);
  }
}
