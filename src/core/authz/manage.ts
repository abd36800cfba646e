import type { PermissionPair } from '../db/schema.ts';
import { AppError, appError } from '../errors/index.ts';
import { permissionsWithin } from './narrowing.ts';
import type { Principal } from './principal.ts';

/**
 * What a credential narrowed by `permissions` may do beyond reading and writing data: account,
 * membership, workspace and credential management, and what the identity made earlier (jobs, upload
 * contracts). The decisions live here, and only here; services ask `requireManage` / `mayAccessOwned`.
 *
 * A credential is **narrowed** when it carries permissions (`[]` = the identity's full grants).
 * Scopes are not narrowing in this sense: a token without the `accounts` scope never reaches these
 * endpoints at all, and credential management needs no scope.
 */
export function isNarrowed(principal: Pick<Principal, 'permissions'>): boolean {
  return principal.permissions.length > 0;
}

/** Management actions that narrowing restricts. */
export type ManagementAction =
  // account level: an unnarrowed credential only
  | 'account.create'
  | 'account.update'
  | 'account.delete'
  | 'member.invite'
  | 'member.change_role'
  | 'member.remove'
  | 'member.accept'
  | 'workspace.create'
  | 'domain.claim'
  | 'domain.release'
  | 'domain.verify'
  | 'payment_method.attach'
  | 'payment_method.detach'
  | 'payment.create'
  | 'service_account.add'
  | 'service_account.remove'
  | 'service_account.credentials'
  | 'notification.update'
  | 'idp_policy.write'
  | 'catalog.test'
  // any credential of the identity
  | 'notification.read'
  // workspace level: pairs covering `<ws>.*` with owner (or unnarrowed)
  | 'workspace.delete'
  // credentials of the caller's own identity
  | 'credential.create'
  | 'credential.read'
  | 'credential.revoke';

export interface ManagementTarget {
  /** `workspace.delete`: the workspace. */
  workspace?: string;
  /** `credential.read` / `credential.revoke`: the credential acted on. */
  credentialId?: string;
  /** `credential.create`: the new credential's permissions. */
  permissions?: PermissionPair[];
}

const ACCOUNT_LEVEL: ReadonlySet<ManagementAction> = new Set([
  'account.create',
  'account.update',
  'account.delete',
  'member.invite',
  'member.change_role',
  'member.remove',
  'member.accept',
  'workspace.create',
  'domain.claim',
  'domain.release',
  'domain.verify',
  'payment_method.attach',
  'payment_method.detach',
  'payment.create',
  'service_account.add',
  'service_account.remove',
  'service_account.credentials',
  'notification.update',
  'idp_policy.write',
  'catalog.test',
]);

const DESCRIBE: Record<ManagementAction, string> = {
  'account.create': 'create an account',
  'account.update': 'change an account',
  'account.delete': 'delete an account',
  'member.invite': 'invite account members',
  'member.change_role': "change an account member's role",
  'member.remove': 'remove account members or leave an account',
  'member.accept': 'accept an account invite',
  'workspace.create': 'create workspaces',
  'domain.claim': "claim the account's domains",
  'domain.release': "release the account's domains",
  'domain.verify': "verify the account's domains",
  'payment_method.attach': "attach an account's payment method",
  'payment_method.detach': "detach an account's payment method",
  'payment.create': 'make payments',
  'service_account.add': 'add service accounts',
  'service_account.remove': 'remove service accounts',
  'service_account.credentials': "manage service accounts' credentials",
  'notification.update': 'mark notifications read or dismiss them',
  'idp_policy.write': "write or delete the account's sign-in (IdP) policy",
  'catalog.test': 'test connections to external catalogs',
  'notification.read': "read the identity's notifications",
  'workspace.delete': 'delete a workspace',
  'credential.create': 'create credentials',
  'credential.read': "see the identity's other credentials",
  'credential.revoke': "revoke the identity's other credentials",
};

/** Why the caller may not take the action (a 403 to throw), or undefined when it may. */
export function manageRefusal(principal: Pick<Principal, 'permissions' | 'credentialId'>, action: ManagementAction, target: ManagementTarget = {}): AppError | undefined {
  if (!isNarrowed(principal)) return undefined;
  const narrowed = (detail: string) => appError('CREDENTIAL_NARROWED', `This credential is narrowed by permissions; ${detail}`);
  if (ACCOUNT_LEVEL.has(action)) return narrowed(`only an unnarrowed credential may ${DESCRIBE[action]}`);
  switch (action) {
    case 'notification.read':
      return undefined;
    case 'workspace.delete': {
      const workspace = target.workspace ?? '';
      if (permissionsWithin([[`${workspace}.*`, 'owner']], principal.permissions)) return undefined;
      return narrowed(`to ${DESCRIBE[action]} its permissions must include ['${workspace}.*', 'owner']`);
    }
    case 'credential.create':
      // Narrower than itself: permissions within its own ([] would be the identity's full grants).
      if (permissionsWithin(target.permissions ?? [], principal.permissions)) return undefined;
      return appError('PERMISSION_NOT_HELD', 'Your token is narrowed by permissions; a credential it creates must carry permissions within them');
    case 'credential.read':
    case 'credential.revoke':
      // Itself only.
      if (target.credentialId !== undefined && target.credentialId === principal.credentialId) return undefined;
      return narrowed(`it may ${action === 'credential.read' ? 'see' : 'revoke'} only itself; only an unnarrowed credential may ${DESCRIBE[action]}`);
    default:
      return narrowed(`only an unnarrowed credential may ${DESCRIBE[action]}`);
  }
}

/** Whether the caller may take a management action (see `manageRefusal`). */
export function mayManage(principal: Pick<Principal, 'permissions' | 'credentialId'>, action: ManagementAction, target?: ManagementTarget): boolean {
  return manageRefusal(principal, action, target) === undefined;
}

/** Throws 403 (`CREDENTIAL_NARROWED`, or `PERMISSION_NOT_HELD` for a wider credential) unless the caller may take the action. */
export function requireManage(principal: Pick<Principal, 'permissions' | 'credentialId'>, action: ManagementAction, target?: ManagementTarget): void {
  const refusal = manageRefusal(principal, action, target);
  if (refusal) throw refusal;
}

/**
 * Whether the caller may see (and act on) something its identity made — a query job, its results
 * and downloads, an upload contract: it belongs to the caller's identity, and the permissions it was
 * made under are within the caller's. So an unnarrowed credential sees all of the identity's work,
 * and a narrowed one only what a credential at most as wide as itself made: what it could have made
 * itself. Everything else is to be answered like an unknown id.
 */
export function mayAccessOwned(principal: Pick<Principal, 'identity' | 'permissions'>, record: { owner: string; permissions: PermissionPair[] }): boolean {
  return record.owner === principal.identity && permissionsWithin(record.permissions, principal.permissions);
}

/**
 * Whether records made unnarrowed (`permissions: []`) can be skipped for this caller before
 * `mayAccessOwned` is asked: a narrowed caller never sees them. For list queries.
 */
export function seesOnlyNarrowedRecords(principal: Pick<Principal, 'permissions'>): boolean {
  return isNarrowed(principal);
}
