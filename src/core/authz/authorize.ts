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

/** The collections of a workspace that grants reach: undefined when one reaches the whole workspace. */
export function collectionsReached(grants: readonly Grant[]): string[] | undefined {
  const collections = new Set<string>();
  for (const grant of grants) {
    const pattern = parsePattern(grant.pattern);
    if (pattern === null) continue;
    if (pattern.collection === undefined) return undefined;
    collections.add(pattern.collection);
  }
  return [...collections];
}

/** Where an identity's grants come from: the access policies of a workspace (the policy module's store, wired in app.ts). */
export interface GrantSource {
  grantsOf(identity: string, workspace: string): Promise<Grant[]>;
  /** The workspaces where the identity holds any policy. */
  workspacesOf(identity: string): Promise<string[]>;
  /** The identity's grants in every workspace where it holds any, by workspace (one lookup). */
  grantsByWorkspace(identity: string): Promise<ReadonlyMap<string, readonly Grant[]>>;
}

/**
 * Which workspaces are soft-deleted (in the grace window before their purge): the account service's
 * workspace records (wired in app.ts), which keep each answer at most a second and drop it at once
 * when this process changes the workspace's state.
 */
export interface WorkspaceStates {
  deletedAmong(workspaces: readonly string[]): Promise<ReadonlySet<string>>;
}

/** A caller's grants in one workspace and whether that workspace is soft-deleted, looked up together. */
export interface Standing {
  workspace: string;
  grants: readonly Grant[];
  deleted: boolean;
}

export interface AuthorizeOptions {
  /**
   * Decide as though the workspace were live. Only for what must still work on a soft-deleted
   * workspace: reading or listing its record, restoring and purging it (the account service).
   */
  evenIfDeleted?: boolean;
}

function describe(resource: Resource): string {
  return [resource.workspace, resource.collection, resource.dataset].filter(Boolean).join('.');
}

function workspaceDeleted(workspace: string) {
  return appError('WORKSPACE_DELETED', `Workspace '${workspace}' is deleted; restore it first`);
}

/**
 * The one place every service asks "may P do R on X", and the one place a soft-deleted workspace is
 * refused: any authorization that would allow something in it throws 409 `WORKSPACE_DELETED` instead
 * (after the permission check, so a caller without a grant still learns nothing), unless
 * `evenIfDeleted` says the action is one of the few that work on a deleted workspace. Listings
 * (`workspacesOf`) leave deleted workspaces out.
 */
export class Authorizer {
  constructor(
    private readonly grants: GrantSource,
    private readonly states: WorkspaceStates,
  ) {}

  /** The identity's grants in the workspace and the workspace's state, in parallel (two indexed reads). */
  async standingIn(identity: string, workspace: string): Promise<Standing> {
    const [grants, deleted] = await Promise.all([this.grants.grantsOf(identity, workspace), this.states.deletedAmong([workspace])]);
    return { workspace, grants, deleted: deleted.has(workspace) };
  }

  /** The identity's grants in a workspace ([] for none), whatever its credential's narrowing; 409 `WORKSPACE_DELETED` when it holds some in a deleted one. */
  async grantsIn(principal: Principal, workspace: string): Promise<readonly Grant[]> {
    const standing = await this.standingIn(principal.identity, workspace);
    if (standing.grants.length > 0) this.requireLive(standing);
    return standing.grants;
  }

  /** The caller's role on the resource; throws 409 `WORKSPACE_DELETED` when it holds one in a deleted workspace. */
  async roleOn(principal: Principal, resource: Resource, options: AuthorizeOptions = {}): Promise<Role | null> {
    const standing = await this.standingIn(principal.identity, resource.workspace);
    const role = effectiveRole(standing.grants, principal.permissions, resource);
    if (role !== null) this.requireLive(standing, options);
    return role;
  }

  /** Workspaces where the caller holds some grant (what it may browse), live ones only; empty for a credential narrowed out of all of them. */
  async workspacesOf(principal: Principal, options: AuthorizeOptions = {}): Promise<string[]> {
    let workspaces = await this.grants.workspacesOf(principal.identity);
    if (principal.permissions.length > 0) workspaces = workspaces.filter((w) => principal.permissions.some(([pattern]) => parsePattern(pattern)?.workspace === w));
    if (options.evenIfDeleted || workspaces.length === 0) return workspaces;
    const deleted = await this.states.deletedAmong(workspaces);
    return workspaces.filter((w) => !deleted.has(w));
  }

  /**
   * The caller's standing in every live workspace where it holds some grant (what `workspacesOf`
   * lists), in a fixed number of lookups however many workspaces: its grants, then their states.
   */
  async standingsOf(principal: Principal): Promise<Standing[]> {
    const grants = await this.grants.grantsByWorkspace(principal.identity);
    let workspaces = [...grants.keys()].sort();
    if (principal.permissions.length > 0) workspaces = workspaces.filter((w) => principal.permissions.some(([pattern]) => parsePattern(pattern)?.workspace === w));
    if (workspaces.length === 0) return [];
    const deleted = await this.states.deletedAmong(workspaces);
    return workspaces.filter((w) => !deleted.has(w)).map((workspace) => ({ workspace, grants: grants.get(workspace)!, deleted: false }));
  }

  /**
   * The caller's role on each of several resources of one workspace (one lookup), with the
   * caller's policy patterns that reach each; 409 `WORKSPACE_DELETED` as `accessFrom`.
   */
  async accessIn(principal: Principal, workspace: string, resources: readonly Resource[]): Promise<{ role: Role | null; patterns: string[] }[]> {
    return this.accessFrom(principal, await this.standingIn(principal.identity, workspace), resources);
  }

  /**
   * As `accessIn`, given the caller's standing in the resources' workspace (looked up alongside
   * something else). Throws 409 `WORKSPACE_DELETED` when the workspace is deleted and the caller holds
   * a role on any of the resources.
   */
  accessFrom(principal: Principal, standing: Standing, resources: readonly Resource[]): { role: Role | null; patterns: string[] }[] {
    const access = resources.map((resource) => ({
      role: effectiveRole(standing.grants, principal.permissions, resource),
      patterns: standing.grants.filter((g) => {
        const pattern = parsePattern(g.pattern);
        return pattern !== null && patternMatches(pattern, resource);
      }).map((g) => g.pattern),
    }));
    if (access.some((a) => a.role !== null)) this.requireLive(standing);
    return access;
  }

  /** Whether the caller holds at least `need`; when it does in a deleted workspace, throws 409 `WORKSPACE_DELETED` instead. */
  async can(principal: Principal, need: Role, resource: Resource, options: AuthorizeOptions = {}): Promise<boolean> {
    const standing = await this.standingIn(principal.identity, resource.workspace);
    const role = effectiveRole(standing.grants, principal.permissions, resource);
    if (role === null || !roleAtLeast(role, need)) return false;
    this.requireLive(standing, options);
    return true;
  }

  /** Throws 403 `PERMISSION_DENIED` unless the caller holds at least `need` on the resource, then 409 `WORKSPACE_DELETED` if its workspace is deleted. */
  async require(principal: Principal, need: Role, resource: Resource, options: AuthorizeOptions = {}): Promise<Role> {
    return this.requireFrom(principal, await this.standingIn(principal.identity, resource.workspace), need, resource, options);
  }

  /**
   * As `require`, given the caller's standing in the resource's workspace (looked up by the caller
   * through `standingIn`, or with the grants read again inside the transaction about to act on them).
   */
  requireFrom(principal: Principal, standing: Standing, need: Role, resource: Resource, options: AuthorizeOptions = {}): Role {
    const role = effectiveRole(standing.grants, principal.permissions, resource);
    if (role === null || !roleAtLeast(role, need)) {
      throw appError(
        'PERMISSION_DENIED',
        `'${principal.identity}' needs the ${need} role on ${describe(resource)}${role ? ` (holds ${role})` : ''}`,
      );
    }
    this.requireLive(standing, options);
    return role;
  }

  /**
   * Throws 409 `WORKSPACE_DELETED` when any of the workspaces is soft-deleted (one query): for what
   * was read from them earlier under an authorization, such as a job's kept result.
   */
  async requireLiveWorkspaces(workspaces: readonly string[]): Promise<void> {
    if (workspaces.length === 0) return;
    const [deleted] = await this.states.deletedAmong(workspaces);
    if (deleted !== undefined) throw workspaceDeleted(deleted);
  }

  private requireLive(standing: Standing, options: AuthorizeOptions = {}): void {
    if (standing.deleted && !options.evenIfDeleted) throw workspaceDeleted(standing.workspace);
  }
}
