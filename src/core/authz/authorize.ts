import type { Db } from '../db/index.ts';
import type { PermissionPair } from '../db/schema.ts';
import { AppError } from '../errors/index.ts';
import { parsePattern, patternMatches, type Resource } from './patterns.ts';
import type { Principal } from './principal.ts';
import { roleAtLeast, ROLES, type Role } from './roles.ts';

export interface Grant {
  pattern: string;
  role: Role;
}

function highestMatching(grants: readonly Grant[], resource: Resource): Role | null {
  let best: Role | null = null;
  for (const grant of grants) {
    const pattern = parsePattern(grant.pattern);
    if (pattern && patternMatches(pattern, resource) && (best === null || roleAtLeast(grant.role, best))) best = grant.role;
  }
  return best;
}

/**
 * The role a caller holds on a resource: the highest role its identity's policies grant there,
 * capped by the highest role its credential's permissions allow there (when the credential is
 * narrowed). Permissions only ever narrow; with no matching policy there is no role at all.
 */
export function effectiveRole(grants: readonly Grant[], permissions: readonly PermissionPair[], resource: Resource): Role | null {
  const granted = highestMatching(grants, resource);
  if (granted === null || permissions.length === 0) return granted;
  const allowed = highestMatching(
    permissions.map(([pattern, role]) => ({ pattern, role })),
    resource,
  );
  if (allowed === null) return null;
  return ROLES.indexOf(granted) <= ROLES.indexOf(allowed) ? granted : allowed;
}

/** Where an identity's grants come from: the access policies of a workspace. */
export interface GrantSource {
  grantsOf(identity: string, workspace: string): Promise<Grant[]>;
}

export class PolicyGrantSource implements GrantSource {
  constructor(private readonly db: Db) {}

  async grantsOf(identity: string, workspace: string): Promise<Grant[]> {
    return this.db.kysely
      .selectFrom('policies')
      .select(['pattern', 'role'])
      .where('principal', '=', identity)
      .where('workspace', '=', workspace)
      .execute();
  }
}

function describe(resource: Resource): string {
  return [resource.workspace, resource.collection, resource.dataset].filter(Boolean).join('.');
}

/** The one place every service asks "may P do R on X". */
export class Authorizer {
  constructor(private readonly grants: GrantSource) {}

  async roleOn(principal: Principal, resource: Resource): Promise<Role | null> {
    return effectiveRole(await this.grants.grantsOf(principal.identity, resource.workspace), principal.permissions, resource);
  }

  async can(principal: Principal, need: Role, resource: Resource): Promise<boolean> {
    const role = await this.roleOn(principal, resource);
    return role !== null && roleAtLeast(role, need);
  }

  /** Throws 403 `PERMISSION_DENIED` unless the caller holds at least `need` on the resource. */
  async require(principal: Principal, need: Role, resource: Resource): Promise<Role> {
    const role = await this.roleOn(principal, resource);
    if (role === null || !roleAtLeast(role, need)) {
      throw AppError.forbidden(
        `'${principal.identity}' needs the ${need} role on ${describe(resource)}${role ? ` (holds ${role})` : ''}`,
        'PERMISSION_DENIED',
      );
    }
    return role;
  }
}
