import { stringify } from 'csv-stringify/sync';
import type { Selectable } from 'kysely';
import {
  parsePattern,
  patternMatches,
  PATTERN_HINT,
  type Authorizer,
  type Pattern,
  type Principal,
  type Resource,
  type Role,
} from '../../core/authz/index.ts';
import type { Db, PoliciesTable } from '../../core/db/index.ts';
import { RequestValidationError } from '../../core/errors/index.ts';
import { policyError } from './errors.ts';
import { policyExists, PolicyStore } from './store.ts';

type PolicyRow = Selectable<PoliciesTable>;

/** Who calls genesis: the operator's admin token, or an identity with a verified token. */
export type GenesisCaller = { kind: 'admin' } | { kind: 'identity'; identity: string };

/** What the policy service needs to know of workspaces and accounts (wired in app.ts). */
export interface PolicyDirectory {
  /** The live (not soft-deleted) workspace record, if any. */
  workspace(name: string): Promise<{ billingAccount: string } | undefined>;
  isActiveBillingAdmin(identity: string, accountId: string): Promise<boolean>;
  /** The workspace's datasets and views, for the effective-permissions export. */
  datasets(workspace: string): Promise<{ collection: string; name: string; kind: string }[]>;
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

/** A 422 in FastAPI's shape, for a pattern that is malformed or outside the path's workspace. */
function invalidPattern(pattern: string, workspace: string) {
  return RequestValidationError.at(['body', 'pattern'], `'${pattern}' is not a pattern inside workspace '${workspace}': ${PATTERN_HINT}`);
}

function resourceOf(pattern: Pattern): Resource {
  return { workspace: pattern.workspace, collection: pattern.collection, dataset: pattern.dataset };
}

export class PolicyService {
  /** Every write of a policy, with its rules (also what SQL GRANT/REVOKE call). */
  readonly store: PolicyStore;

  constructor(
    private readonly db: Db,
    private readonly authz: Authorizer,
    private readonly directory: PolicyDirectory,
  ) {
    this.store = new PolicyStore(db, authz);
  }

  private async requireWorkspace(workspace: string) {
    const record = await this.directory.workspace(workspace);
    if (!record) throw policyError('WORKSPACE_NOT_FOUND', `Workspace '${workspace}' does not exist`);
    return record;
  }

  /** Whether the identity holds any grant in the workspace (its own policies), narrowing aside. */
  private async hasAnyGrant(identity: string, workspace: string): Promise<boolean> {
    const row = await this.db.kysely.selectFrom('policies').select('policy_id').where('workspace', '=', workspace).where('principal', '=', identity).limit(1).executeTakeFirst();
    return row !== undefined;
  }

  private async requireAnyGrant(caller: Principal, workspace: string) {
    if (!(await this.hasAnyGrant(caller.identity, workspace))) {
      throw policyError('PERMISSION_DENIED', `'${caller.identity}' has no access to workspace '${workspace}'`);
    }
  }

  private parseWorkspacePattern(text: string, workspace: string): Pattern {
    const pattern = parsePattern(text);
    if (!pattern || pattern.workspace !== workspace) throw invalidPattern(text, workspace);
    return pattern;
  }

  private async findPolicy(workspace: string, policyId: string): Promise<PolicyRow> {
    const row = await this.db.kysely
      .selectFrom('policies')
      .selectAll()
      .where('workspace', '=', workspace)
      .where('policy_id', '=', policyId)
      .executeTakeFirst();
    if (!row) throw policyError('POLICY_NOT_FOUND', `No policy ${policyId} in workspace '${workspace}'`);
    return row;
  }

  // Authorization comes before existence checks, so a caller without grants cannot probe names.
  async list(caller: Principal, workspace: string) {
    await this.authz.require(caller, 'admin', { workspace });
    await this.requireWorkspace(workspace);
    const rows = await this.db.kysely
      .selectFrom('policies')
      .selectAll()
      .where('workspace', '=', workspace)
      .orderBy('created_at')
      .orderBy('policy_id')
      .execute();
    return { workspace, policies: rows.map(policyDetail) };
  }

  async get(caller: Principal, workspace: string, policyId: string) {
    await this.requireAnyGrant(caller, workspace);
    await this.requireWorkspace(workspace);
    const row = await this.findPolicy(workspace, policyId);
    // A principal may read its own grants; anyone else needs admin where the grant applies.
    if (row.principal !== caller.identity) await this.authz.require(caller, 'admin', resourceOf(parsePattern(row.pattern)!));
    return policyDetail(row);
  }

  // The rules themselves (authority, one policy per principal and pattern, the last owner) are the
  // store's, checked under the workspace's policy lock; what comes before is the order of the answers.

  async create(caller: Principal, workspace: string, input: { principal: { identity: string; type: string }; role: Role; pattern: string }) {
    const pattern = this.parseWorkspacePattern(input.pattern, workspace);
    await this.store.requireAuthority(caller, pattern, input.role);
    await this.requireWorkspace(workspace);
    const result = await this.store.grant(caller, { principal: input.principal.identity, principalType: input.principal.type, role: input.role, pattern });
    if (result.kind === 'exists') throw policyExists(result.policy);
    if (result.kind !== 'created') throw new Error('a grant that is not a dry run creates or finds');
    return policyDetail(result.policy);
  }

  async update(caller: Principal, workspace: string, policyId: string, input: { role: Role; pattern: string }) {
    const pattern = this.parseWorkspacePattern(input.pattern, workspace);
    await this.requireAnyGrant(caller, workspace);
    await this.requireWorkspace(workspace);
    return policyDetail(await this.store.update(caller, workspace, policyId, { role: input.role, pattern }));
  }

  async remove(caller: Principal, workspace: string, policyId: string) {
    await this.requireAnyGrant(caller, workspace);
    await this.requireWorkspace(workspace);
    await this.store.remove(caller, workspace, { policyId });
    return { message: `Policy ${policyId} deleted`, policy_id: policyId, workspace };
  }

  /**
   * The trusted bootstrap: the first policies of a workspace, one `<ws>.*` grant per pair. Only the
   * admin token or an active billing_admin of the workspace's billing account may call it, and only
   * while the workspace has no policy at all (409 afterwards).
   */
  async genesis(caller: GenesisCaller, workspace: string, grants: { identity: string; role: Role }[]) {
    const record = await this.directory.workspace(workspace);
    if (caller.kind === 'identity' && !(record && (await this.directory.isActiveBillingAdmin(caller.identity, record.billingAccount)))) {
      throw policyError(
        'GENESIS_NOT_ALLOWED',
        `Genesis is a trusted bootstrap: only the admin token or a billing_admin of the workspace's billing account may call it`,
      );
    }
    if (!record) throw policyError('WORKSPACE_NOT_FOUND', `Workspace '${workspace}' does not exist`);
    if (!grants.some((g) => g.role === 'owner')) {
      throw RequestValidationError.at(['body', 'grants'], 'at least one grant must have the owner role');
    }
    const rows = await this.store.genesis(workspace, grants, caller.kind === 'admin' ? 'admin' : caller.identity);
    return { workspace, policies: rows.map(policyDetail) };
  }

  /** CSV: every policy resolved against the workspace's actual datasets, one row per dataset it covers. */
  async effectivePermissionsCsv(caller: Principal, workspace: string): Promise<string> {
    await this.authz.require(caller, 'owner', { workspace });
    await this.requireWorkspace(workspace);
    const [policies, datasets] = await Promise.all([
      this.db.kysely.selectFrom('policies').selectAll().where('workspace', '=', workspace).orderBy('created_at').orderBy('policy_id').execute(),
      this.directory.datasets(workspace),
    ]);
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
