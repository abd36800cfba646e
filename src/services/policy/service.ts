import { stringify } from 'csv-stringify/sync';
import { parsePattern, patternMatches, PATTERN_HINT, type Authorizer, type Pattern, type Principal, type Resource, type Role } from '../../core/authz/index.ts';
import { RequestValidationError } from '../../core/errors/index.ts';
import { policyError } from './errors.ts';
import type { WorkspaceDirectory } from '../accounts/index.ts';
import { policyExists, policyNotFound, type AppliedPolicyChange, type PolicyChange, type PolicyPlan, type PolicyPlanner } from './planner.ts';
import type { PolicyRow, PolicyStore } from './store.ts';

/** Who calls genesis: the operator's admin token, or an identity with a verified token. */
export type GenesisCaller = { kind: 'admin' } | { kind: 'identity'; identity: string };

/** What the policy service needs to know of accounts and datasets (wired in app.ts). */
export interface PolicyDirectory {
  isActiveBillingAdmin(identity: string, accountId: string): Promise<boolean>;
  /** The workspace's datasets and views, for the effective-permissions export. */
  datasets(workspace: string): Promise<{ collection: string; name: string; kind: string }[]>;
}

export interface PolicyServiceDeps {
  store: PolicyStore;
  planner: PolicyPlanner;
  authz: Authorizer;
  workspaces: WorkspaceDirectory;
  directory: PolicyDirectory;
}

export function policyDetail(row: PolicyRow) {
  return {
    policy_id: row.policy_id,
    workspace: row.workspace,
    principal: { identity: row.principal, type: row.principal_type },
    role: row.role,
    pattern: row.pattern,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** A dry run's answer: what the change would do, and the policy before and after it. */
export function planDetail(plan: PolicyPlan) {
  const { effect } = plan;
  const { principal, principal_type: type, role, pattern } = effect.policy;
  const after = effect.kind === 'delete' ? null : effect.kind === 'update' ? { role: effect.role, pattern: effect.pattern } : { role, pattern };
  return {
    dry_run: true as const,
    workspace: plan.workspace,
    effect: effect.kind,
    before: effect.kind === 'create' ? null : policyDetail(effect.policy),
    after: after && { principal: { identity: principal, type }, ...after },
  };
}

/** A 422 in FastAPI's shape, for a pattern that is malformed or outside the path's workspace. */
function invalidPattern(pattern: string, workspace: string) {
  return RequestValidationError.at(['body', 'pattern'], `'${pattern}' is not a pattern inside workspace '${workspace}': ${PATTERN_HINT}`);
}

function resourceOf(pattern: Pattern): Resource {
  return { workspace: pattern.workspace, collection: pattern.collection, dataset: pattern.dataset };
}

export class PolicyService {
  constructor(private readonly deps: PolicyServiceDeps) {}

  /** The planner behind every change, HTTP's and SQL GRANT/REVOKE's. */
  get planner(): PolicyPlanner {
    return this.deps.planner;
  }

  private parseWorkspacePattern(text: string, workspace: string): Pattern {
    const pattern = parsePattern(text);
    if (!pattern || pattern.workspace !== workspace) throw invalidPattern(text, workspace);
    return pattern;
  }

  // Authorization comes before existence checks, so a caller without grants cannot probe names; core/authz
  // refuses a soft-deleted workspace (409 WORKSPACE_DELETED) for every call below but genesis.
  async list(caller: Principal, workspace: string) {
    await this.deps.authz.require(caller, 'admin', { workspace });
    return { workspace, policies: (await this.deps.store.list(workspace)).map(policyDetail) };
  }

  async get(caller: Principal, workspace: string, policyId: string) {
    await this.deps.planner.requireAnyGrant(caller, workspace);
    const row = await this.deps.store.find(workspace, { policyId });
    if (!row) throw policyNotFound(workspace, policyId);
    // A principal may read its own grants; anyone else needs admin where the grant applies.
    if (row.principal !== caller.identity) await this.deps.authz.require(caller, 'admin', resourceOf(parsePattern(row.pattern)!));
    return policyDetail(row);
  }

  // Every change is the planner's: the rules are checked there, once; with `dryRun` it answers the plan.
  // POST makes a policy: one held already is a conflict here, where SQL GRANT changes nothing.
  private async change<T>(caller: Principal, workspace: string, change: PolicyChange, dryRun: boolean, answer: (applied: AppliedPolicyChange) => T) {
    const { planner } = this.deps;
    if (dryRun) {
      const plan = await planner.plan(caller, workspace, change);
      if (plan.effect.kind === 'keep') throw policyExists(plan.effect.policy);
      return planDetail(plan);
    }
    const applied = await planner.execute(caller, workspace, change);
    if (applied.kind === 'keep') throw policyExists(applied.policy);
    return answer(applied);
  }

  async create(caller: Principal, workspace: string, input: { principal: { identity: string; type: string }; role: Role; pattern: string }, options: { dryRun?: boolean } = {}) {
    const pattern = this.parseWorkspacePattern(input.pattern, workspace);
    return this.change(caller, workspace, { kind: 'grant', principal: input.principal, role: input.role, pattern }, options.dryRun ?? false, (applied) => policyDetail(applied.policy));
  }

  async update(caller: Principal, workspace: string, policyId: string, input: { role: Role; pattern: string }, options: { dryRun?: boolean } = {}) {
    const pattern = this.parseWorkspacePattern(input.pattern, workspace);
    return this.change(caller, workspace, { kind: 'update', policyId, role: input.role, pattern }, options.dryRun ?? false, (applied) => policyDetail(applied.policy));
  }

  async remove(caller: Principal, workspace: string, policyId: string, options: { dryRun?: boolean } = {}) {
    return this.change(caller, workspace, { kind: 'revoke', target: { policyId } }, options.dryRun ?? false, () => ({ message: `Policy ${policyId} deleted`, policy_id: policyId, workspace }));
  }

  /**
   * The trusted bootstrap: the first policies of a workspace, one `<ws>.*` grant per pair. Only the
   * admin token or an active billing_admin of the workspace's billing account may call it, and only
   * while the workspace has no policy at all (409 afterwards).
   */
  async genesis(caller: GenesisCaller, workspace: string, grants: { identity: string; role: Role }[]) {
    const found = await this.deps.workspaces.find(workspace);
    const record = found?.live ? found : undefined;
    if (caller.kind === 'identity' && !(record && (await this.deps.directory.isActiveBillingAdmin(caller.identity, record.billingAccount)))) {
      throw policyError(
        'GENESIS_NOT_ALLOWED',
        `Genesis is a trusted bootstrap: only the admin token or a billing_admin of the workspace's billing account may call it`,
      );
    }
    if (!record) throw policyError('WORKSPACE_NOT_FOUND', `Workspace '${workspace}' does not exist`);
    if (!grants.some((g) => g.role === 'owner')) {
      throw RequestValidationError.at(['body', 'grants'], 'at least one grant must have the owner role');
    }
    const rows = await this.deps.store.genesis(workspace, grants, caller.kind === 'admin' ? 'admin' : caller.identity);
    return { workspace, policies: rows.map(policyDetail) };
  }

  /** CSV: every policy resolved against the workspace's actual datasets, one row per dataset it covers. */
  async effectivePermissionsCsv(caller: Principal, workspace: string): Promise<string> {
    await this.deps.authz.require(caller, 'owner', { workspace });
    const [policies, datasets] = await Promise.all([this.deps.store.list(workspace), this.deps.directory.datasets(workspace)]);
    const rows: string[][] = [];
    for (const policy of policies) {
      const pattern = parsePattern(policy.pattern)!;
      const covered = datasets.filter((d) => patternMatches(pattern, { workspace, collection: d.collection, dataset: d.name }));
      const base = [policy.policy_id, policy.principal, policy.principal_type, policy.role, policy.pattern];
      if (covered.length === 0) rows.push([...base, '', '', '']);
      for (const d of covered) rows.push([...base, `${workspace}.${d.collection}.${d.name}`, d.collection, d.kind]);
    }
    return stringify(rows, {
      header: true,
      columns: ['policy_id', 'principal', 'principal_type', 'role', 'pattern', 'dataset', 'collection', 'kind'],
    });
  }
}
