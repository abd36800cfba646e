import type { PermissionPair } from '../db/schema.ts';
import { appError } from '../errors/index.ts';
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

/** Where an identity's grants come from: the access policies of a workspace (the policy module's store, wired in app.ts). */
export interface GrantSource {
  grantsOf(identity: string, workspace: string): Promise<Grant[]>;
  /** The workspaces where the identity holds any policy. */
  workspacesOf(identity: string): Promise<string[]>;
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

  /** Workspaces where the caller holds some grant (what it may browse); empty for a credential narrowed out of all of them. */
  async workspacesOf(principal: Principal): Promise<string[]> {
    const workspaces = await this.grants.workspacesOf(principal.identity);
    if (principal.permissions.length === 0) return workspaces;
    return workspaces.filter((w) => principal.permissions.some(([pattern]) => parsePattern(pattern)?.workspace === w));
  }

  /**
   * The caller's role on each of several resources of one workspace (one grants lookup), with the
   * caller's policy patterns that reach each.
   */
  async accessIn(principal: Principal, workspace: string, resources: readonly Resource[]): Promise<{ role: Role | null; patterns: string[] }[]> {
    return this.accessFrom(principal, await this.grants.grantsOf(principal.identity, workspace), resources);
  }

  /** As `accessIn`, given the caller's grants in the resources' workspace (looked up alongside something else). */
  accessFrom(principal: Principal, grants: readonly Grant[], resources: readonly Resource[]): { role: Role | null; patterns: string[] }[] {
    return resources.map((resource) => ({
      role: effectiveRole(grants, principal.permissions, resource),
      patterns: grants.filter((g) => {
        const pattern = parsePattern(g.pattern);
        return pattern !== null && patternMatches(pattern, resource);
      }).map((g) => g.pattern),
    }));
  }

  async can(principal: Principal, need: Role, resource: Resource): Promise<boolean> {
    const role = await this.roleOn(principal, resource);
    return role !== null && roleAtLeast(role, need);
  }

  /** Throws 403 `PERMISSION_DENIED` unless the caller holds at least `need` on the resource. */
  async require(principal: Principal, need: Role, resource: Resource): Promise<Role> {
    return this.requireFrom(principal, await this.grants.grantsOf(principal.identity, resource.workspace), need, resource);
  }

  /**
   * As `require`, given the caller's grants in the resource's workspace (looked up by the caller,
   * for instance inside the transaction that is about to act on them).
   */
  requireFrom(principal: Principal, grants: readonly Grant[], need: Role, resource: Resource): Role {
    const role = effectiveRole(grants, principal.permissions, resource);
    if (role === null || !roleAtLeast(role, need)) {
      throw appError(
        'PERMISSION_DENIED',
        `'${principal.identity}' needs the ${need} role on ${describe(resource)}${role ? ` (holds ${role})` : ''}`,
      );
    }
    return role;
  }
}
