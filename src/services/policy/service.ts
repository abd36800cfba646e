import { stringify } from 'csv-stringify/sync';
import type { Selectable } from 'kysely';
import {
  formatPattern,
  parsePattern,
  patternMatches,
  PATTERN_HINT,
  roleAtLeast,
  type Authorizer,
  type Pattern,
  type Principal,
  type Resource,
  type Role,
} from '../../core/authz/index.ts';
import { newId } from '../../core/crypto/index.ts';
import type { Db, PoliciesTable } from '../../core/db/index.ts';
import { AppError, RequestValidationError } from '../../core/errors/index.ts';

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
  constructor(
    private readonly db: Db,
    private readonly authz: Authorizer,
    private readonly directory: PolicyDirectory,
  ) {}

  private async requireWorkspace(workspace: string) {
    const record = await this.directory.workspace(workspace);
    if (!record) throw AppError.notFound(`Workspace '${workspace}' does not exist`, 'WORKSPACE_NOT_FOUND');
    return record;
  }

  /** Whether the identity holds any grant in the workspace (its own policies), narrowing aside. */
  private async hasAnyGrant(identity: string, workspace: string): Promise<boolean> {
    const row = await this.db.kysely.selectFrom('policies').select('policy_id').where('workspace', '=', workspace).where('principal', '=', identity).limit(1).executeTakeFirst();
    return row !== undefined;
  }

  private async requireAnyGrant(caller: Principal, workspace: string) {
    if (!(await this.hasAnyGrant(caller.identity, workspace))) {
      throw AppError.forbidden(`'${caller.identity}' has no access to workspace '${workspace}'`, 'PERMISSION_DENIED');
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
    if (!row) throw AppError.notFound(`No policy ${policyId} in workspace '${workspace}'`, 'POLICY_NOT_FOUND');
    return row;
  }

  /**
   * Managing a grant on a pattern needs admin there, and at least the role being granted (or
   * changed, or removed): nobody grants above their own role, and only owners grant owner.
   */
  private async requireGrantAuthority(caller: Principal, pattern: Pattern, role: Role) {
    const held = await this.authz.require(caller, 'admin', resourceOf(pattern));
    if (!roleAtLeast(held, role)) {
      throw AppError.forbidden(`An ${held} cannot grant or change the ${role} role`, 'ROLE_ABOVE_OWN');
    }
  }

  /** A workspace always keeps an owner on its whole pattern, or nobody could manage it again. */
  private async assertOwnerRemains(trxDb: Db['kysely'], workspace: string, losingPolicyId: string) {
    const others = await trxDb
      .selectFrom('policies')
      .select('policy_id')
      .where('workspace', '=', workspace)
      .where('role', '=', 'owner')
      .where('pattern', '=', `${workspace}.*`)
      .where('policy_id', '!=', losingPolicyId)
      .execute();
    if (others.length === 0) {
      throw AppError.conflict(`This is the last owner policy of '${workspace}.*'; grant another owner first`, 'LAST_OWNER');
    }
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

  async create(caller: Principal, workspace: string, input: { principal: { identity: string; type: string }; role: Role; pattern: string }) {
    const pattern = this.parseWorkspacePattern(input.pattern, workspace);
    await this.requireGrantAuthority(caller, pattern, input.role);
    await this.requireWorkspace(workspace);
    const normalized = formatPattern(pattern);
    const existing = await this.db.kysely
      .selectFrom('policies')
      .select('policy_id')
      .where('workspace', '=', workspace)
      .where('principal', '=', input.principal.identity)
      .where('pattern', '=', normalized)
      .executeTakeFirst();
    if (existing) {
      throw AppError.conflict(
        `'${input.principal.identity}' already has policy ${existing.policy_id} on ${normalized}; update its role instead`,
        'POLICY_EXISTS',
      );
    }
    const row = await this.db.kysely
      .insertInto('policies')
      .values({
        policy_id: newId('pol'),
        workspace,
        principal: input.principal.identity,
        principal_type: input.principal.type,
        role: input.role,
        pattern: normalized,
        created_by: caller.identity,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return policyDetail(row);
  }

  async update(caller: Principal, workspace: string, policyId: string, input: { role: Role; pattern: string }) {
    const pattern = this.parseWorkspacePattern(input.pattern, workspace);
    await this.requireAnyGrant(caller, workspace);
    await this.requireWorkspace(workspace);
    const current = await this.findPolicy(workspace, policyId);
    await this.requireGrantAuthority(caller, parsePattern(current.pattern)!, current.role);
    await this.requireGrantAuthority(caller, pattern, input.role);
    const normalized = formatPattern(pattern);
    return this.db.kysely.transaction().execute(async (trx) => {
      if (current.role === 'owner' && current.pattern === `${workspace}.*` && (input.role !== 'owner' || normalized !== current.pattern)) {
        await this.assertOwnerRemains(trx, workspace, policyId);
      }
      const row = await trx
        .updateTable('policies')
        .set({ role: input.role, pattern: normalized, updated_at: new Date() })
        .where('policy_id', '=', policyId)
        .returningAll()
        .executeTakeFirstOrThrow();
      return policyDetail(row);
    });
  }

  async remove(caller: Principal, workspace: string, policyId: string) {
    await this.requireAnyGrant(caller, workspace);
    await this.requireWorkspace(workspace);
    const current = await this.findPolicy(workspace, policyId);
    await this.requireGrantAuthority(caller, parsePattern(current.pattern)!, current.role);
    await this.db.kysely.transaction().execute(async (trx) => {
      if (current.role === 'owner' && current.pattern === `${workspace}.*`) await this.assertOwnerRemains(trx, workspace, policyId);
      await trx.deleteFrom('policies').where('policy_id', '=', policyId).execute();
    });
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
      throw AppError.forbidden(
        `Genesis is a trusted bootstrap: only the admin token or a billing_admin of the workspace's billing account may call it`,
        'GENESIS_NOT_ALLOWED',
      );
    }
    if (!record) throw AppError.notFound(`Workspace '${workspace}' does not exist`, 'WORKSPACE_NOT_FOUND');
    if (!grants.some((g) => g.role === 'owner')) {
      throw RequestValidationError.at(['body', 'grants'], 'at least one grant must have the owner role');
    }
    const createdBy = caller.kind === 'admin' ? 'admin' : caller.identity;
    const rows = await this.db.kysely.transaction().execute(async (trx) => {
      // Serialise concurrent genesis calls for one workspace on its record.
      await trx.selectFrom('workspaces').select('name').where('name', '=', workspace).forUpdate().execute();
      const any = await trx.selectFrom('policies').select('policy_id').where('workspace', '=', workspace).limit(1).executeTakeFirst();
      if (any) throw AppError.conflict(`Workspace '${workspace}' already has policies; genesis runs once`, 'GENESIS_ALREADY_DONE');
      const unique = new Map(grants.map((g) => [g.identity, g.role]));
      return trx
        .insertInto('policies')
        .values(
          [...unique].map(([identity, role]) => ({
            policy_id: newId('pol'),
            workspace,
            principal: identity,
            principal_type: 'user',
            role,
            pattern: `${workspace}.*`,
            created_by: createdBy,
          })),
        )
        .returningAll()
        .execute();
    });
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
