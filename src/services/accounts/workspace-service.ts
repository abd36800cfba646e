import { requireManage, type Authorizer, type Principal } from '../../core/authz/index.ts';
import type { WorkspaceMemberGrant } from '../../core/db/index.ts';
import { AppError } from '../../core/errors/index.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import { accountsError } from './errors.ts';
import type { AccountService } from './account-service.ts';
import { events } from './notification-events.ts';
import type { Notifier } from './notification-service.ts';
import type { CatalogBindingInput } from './catalog-binding-schemas.ts';
import type { AlsoWrite, WorkspaceRepo, WorkspaceRow } from './workspace-repo.ts';

export interface Guards {
  deletion_protection: boolean;
  drop_protection: boolean;
  history_protection: boolean;
}

/** The catalog side of a workspace: its namespace, stamped with the billing account (step a). */
export interface NamespacePort {
  /** Creates the namespace or adopts this account's own; another account's claim is a 409. */
  claim(workspace: string, billingAccount: string): Promise<void>;
  /** The resolved guards, or undefined when the namespace does not exist. */
  guards(workspace: string): Promise<Guards | undefined>;
  /** Removes the namespace and everything in it; returns the storage keys of its data files. */
  drop(workspace: string): Promise<string[]>;
}

/** The first access grants of a workspace (step c): the policy service's genesis. */
export type GenesisPort = (workspace: string, grants: WorkspaceMemberGrant[], caller: Principal) => Promise<void>;

/** Removes every policy of a workspace being purged (the policy service's). */
export type PolicyPurgePort = (workspace: string) => Promise<void>;

/** The identities holding owner on some part of a workspace (the policy service's grants). */
export type WorkspaceOwnersPort = (workspace: string) => Promise<string[]>;

/** Workspace create's `catalog` on /control (the catalog binding service's): checked first, stored last (step d). */
export interface CreateBindingPort {
  check(input: CatalogBindingInput | null | undefined): void;
  bind(workspace: string, input: CatalogBindingInput | null | undefined, actor: string): Promise<void>;
}

/** Where a purged workspace's data files go. */
export interface LakeFiles {
  /** Deletes the given data files and anything else stored under the workspace's prefix. */
  removeWorkspace(workspace: string, files: string[]): Promise<void>;
}

export interface WorkspaceServiceDeps {
  accounts: AccountService;
  records: WorkspaceRepo;
  namespaces: NamespacePort;
  genesis: GenesisPort;
  purgePolicies: PolicyPurgePort;
  authz: Authorizer;
  files: LakeFiles;
  graceMs?: number;
  log?: Logger;
  /** Deletion, restore and purge notify the workspace's members and owners (docs/notifications.md). */
  notifier?: Notifier;
  owners?: WorkspaceOwnersPort;
  /** Stores a create's `catalog` binding (/control). */
  bindings?: CreateBindingPort;
}

export const GRACE_MS = 24 * 60 * 60 * 1000;

function sameMembers(a: WorkspaceMemberGrant[], b: WorkspaceMemberGrant[]): boolean {
  const key = (m: WorkspaceMemberGrant[]) =>
    m
      .map((g) => `${g.identity}\u0000${g.role}`)
      .sort()
      .join('\u0001');
  return key(a) === key(b);
}

export function workspaceView(row: WorkspaceRow, guards: Guards | undefined) {
  return {
    name: row.name,
    billing_account: row.billing_account,
    members: row.members,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    state: row.deleted_at ? ('deleted' as const) : ('active' as const),
    deleted_at: row.deleted_at?.toISOString() ?? null,
    purge_after: row.purge_after?.toISOString() ?? null,
    deletion_protection: guards?.deletion_protection ?? false,
    drop_protection: guards?.drop_protection ?? false,
    history_protection: guards?.history_protection ?? false,
  };
}

export class WorkspaceService {
  private readonly graceMs: number;
  private readonly log: Logger;

  constructor(private readonly deps: WorkspaceServiceDeps) {
    this.graceMs = deps.graceMs ?? GRACE_MS;
    this.log = deps.log ?? silentLogger;
  }

  /**
   * The idempotent create (PUT), in the spec's order: (a) claim the catalog namespace for the
   * billing account, (b) write the workspace record, (c) genesis grants; then, on /control, (d) the
   * `catalog` binding unless the workspace has one. Safe to retry at any step.
   */
  async create(caller: Principal, name: string, input: { billing_account: string; members: WorkspaceMemberGrant[]; catalog?: CatalogBindingInput | null }) {
    const { accounts, records, namespaces, genesis, bindings } = this.deps;
    requireManage(caller, 'workspace.create');
    await accounts.requireBillingAdmin(caller.identity, input.billing_account);
    bindings?.check(input.catalog);

    const existing = await records.get(name);
    if (existing) this.assertRetryOf(existing, input);

    // (a) Nothing is written before this succeeds, so a failure leaves the name free.
    try {
      await namespaces.claim(name, input.billing_account);
    } catch (error) {
      if (error instanceof AppError && error.status === 409) {
        throw accountsError('WORKSPACE_NAME_CLAIMED', `Workspace name '${name}' is claimed by another billing account`);
      }
      throw accountsError('CATALOG_UNAVAILABLE', `The catalog namespace for '${name}' could not be written; nothing was created, the name is still free: retry`);
    }

    // (b) A retry after a failure here adopts the claimed namespace.
    let record: WorkspaceRow;
    try {
      record = await records.insertIfAbsent({ name, billing_account: input.billing_account, members: input.members, created_by: caller.identity });
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw accountsError('WORKSPACE_RECORD_FAILED', `The namespace '${name}' is claimed for ${input.billing_account} but its record could not be written: retry the same request`, {
        headers: { 'retry-after': '1' },
      });
    }
    this.assertRetryOf(record, input);
    await records.clearTombstone(name);

    // (c) Irreversible grants; a 409 means an earlier attempt's grants landed, which is success.
    try {
      await genesis(name, input.members, caller);
    } catch (error) {
      if (!(error instanceof AppError && error.status === 409)) {
        throw accountsError('GENESIS_FAILED', `Workspace '${name}' exists but its first access grants could not be written: retry the same request (or delete it)`, {
          headers: { 'retry-after': '1' },
        });
      }
    }
    // (d) A retry after a failure here stores it; an existing binding is kept (PUT …/catalog changes it).
    await bindings?.bind(name, input.catalog, caller.identity);
    return workspaceView(record, await namespaces.guards(name));
  }

  /** An existing record is a retry only with the same billing account and members. */
  private assertRetryOf(record: WorkspaceRow, input: { billing_account: string; members: WorkspaceMemberGrant[] }) {
    if (record.deleted_at) {
      throw accountsError('WORKSPACE_DELETED', `Workspace '${record.name}' is deleted (restore it before ${record.purge_after?.toISOString()})`);
    }
    if (record.billing_account !== input.billing_account || !sameMembers(record.members, input.members)) {
      throw accountsError('WORKSPACE_EXISTS', `Workspace '${record.name}' already exists with a different billing account or members`);
    }
  }

  private async requireRecord(name: string): Promise<WorkspaceRow> {
    const record = await this.deps.records.get(name);
    if (!record) {
      if (await this.deps.records.wasPurged(name)) throw accountsError('WORKSPACE_PURGED', `Workspace '${name}' was purged after its grace window`);
      throw accountsError('WORKSPACE_NOT_FOUND', `Workspace '${name}' does not exist`);
    }
    return record;
  }

  /**
   * Soft delete: billing_admin of its account, with a credential unnarrowed or narrowed to owner on
   * `<ws>.*`; refused (423) while the workspace is locked. To anyone outside that account an existing
   * workspace looks the same as a missing one (404).
   */
  async delete(caller: Principal, name: string) {
    const record = await this.requireRecord(name);
    const role = await this.deps.accounts.memberRole(caller.identity, record.billing_account);
    if (role === null) throw accountsError('WORKSPACE_NOT_FOUND', `Workspace '${name}' does not exist`);
    await this.deps.accounts.requireBillingAdmin(caller.identity, record.billing_account);
    requireManage(caller, 'workspace.delete', { workspace: name });
    if (record.deleted_at) return workspaceView(record, await this.deps.namespaces.guards(name));
    const guards = await this.deps.namespaces.guards(name);
    if (guards?.deletion_protection) {
      throw accountsError('WORKSPACE_LOCKED', `Workspace '${name}' has deletion_protection on; its owner must run ALTER WORKSPACE ${name} SET deletion_protection TO OFF first`);
    }
    const purgeAfter = new Date(Date.now() + this.graceMs);
    const notify = await this.notifying(record, events.workspaceSoftDeleted({ workspace: name, accountId: record.billing_account, actor: caller.identity, purgeAfter }));
    const deleted = await this.deps.records.softDelete(name, caller.identity, purgeAfter, notify);
    return workspaceView(deleted, guards);
  }

  /** Restore within the grace window: an owner of the workspace. */
  async restore(caller: Principal, name: string) {
    if (await this.deps.records.wasPurged(name)) throw accountsError('WORKSPACE_PURGED', `Workspace '${name}' was purged after its grace window`);
    // One of the few actions on a deleted workspace (core/authz refuses the rest with 409 WORKSPACE_DELETED).
    await this.deps.authz.require(caller, 'owner', { workspace: name }, { evenIfDeleted: true });
    const record = await this.requireRecord(name);
    if (!record.deleted_at) throw accountsError('WORKSPACE_NOT_DELETED', `Workspace '${name}' is not deleted`);
    const notify = await this.notifying(record, events.workspaceRestored({ workspace: name, accountId: record.billing_account, actor: caller.identity }));
    const restored = await this.deps.records.restore(name, new Date(), notify);
    if (!restored) throw accountsError('WORKSPACE_PURGED', `The grace window of '${name}' has ended`);
    return workspaceView(restored, await this.deps.namespaces.guards(name));
  }

  /**
   * The account's workspaces for an active member. Soft-deleted ones appear only to their owners;
   * with `requireNamespace` (the /control listing) a workspace without a catalog namespace is skipped.
   */
  async listForAccount(caller: Principal, accountId: string, options: { requireNamespace: boolean }) {
    await this.deps.accounts.requireActiveMember(caller.identity, accountId);
    const views = [];
    for (const record of await this.deps.records.listByAccount(accountId)) {
      if (record.deleted_at && !(await this.deps.authz.can(caller, 'owner', { workspace: record.name }, { evenIfDeleted: true }))) continue;
      const guards = await this.deps.namespaces.guards(record.name);
      if (options.requireNamespace && !guards) continue;
      views.push(workspaceView(record, guards));
    }
    return views;
  }

  /** The lock and the two guards as resolved booleans: owner or admin through access policies (409 on a deleted workspace, from core/authz). */
  async guardProperties(caller: Principal, name: string) {
    await this.deps.authz.require(caller, 'admin', { workspace: name });
    const record = await this.requireRecord(name);
    const guards = await this.deps.namespaces.guards(name);
    if (!guards) throw accountsError('WORKSPACE_NOT_FOUND', `Workspace '${name}' does not exist`);
    return { workspace: name, ...guards };
  }

  /** The write that notifies the workspace's members (its record) and owners (its grants) of `event`, for the change's transaction. */
  private async notifying(record: WorkspaceRow, event: Parameters<Notifier['notify']>[1]): Promise<AlsoWrite | undefined> {
    const { notifier, owners } = this.deps;
    if (!notifier) return undefined;
    const recipients = [...record.members.map((m) => m.identity), ...(owners ? await owners(record.name) : [])];
    return (trx) => notifier.notify(recipients, event, trx);
  }

  /**
   * Purges workspaces whose grace window has ended: the catalog (which names the data files), the
   * files, the policies, then the record. A crash midway is finished by the next sweep; at worst it
   * leaves unreferenced files behind, never a reference to a missing file, nor a grant surviving its
   * workspace's record (a workspace made again under the name starts with genesis).
   */
  async purgeExpired(now = new Date()): Promise<string[]> {
    const purged: string[] = [];
    for (const record of await this.deps.records.dueForPurge(now)) {
      try {
        // Recipients are read before the policies naming the owners go.
        const notify = await this.notifying(record, events.workspacePurged({ workspace: record.name, accountId: record.billing_account, deletedBy: record.deleted_by }));
        const files = await this.deps.namespaces.drop(record.name);
        await this.deps.files.removeWorkspace(record.name, files);
        await this.deps.purgePolicies(record.name);
        await this.deps.records.purge(record.name, notify);
        purged.push(record.name);
      } catch (error) {
        // One workspace that cannot be purged now does not hold back the others; the next sweep tries again.
        this.log.error({ err: error, workspace: record.name }, 'could not purge a workspace');
      }
    }
    return purged;
  }
}
