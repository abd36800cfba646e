import { sql, type Kysely, type Selectable } from 'kysely';
import { formatPattern, grantsQuery, parsePattern, roleAtLeast, type Authorizer, type Pattern, type Principal, type Role } from '../../core/authz/index.ts';
import { newId } from '../../core/crypto/index.ts';
import type { Database, Db, PoliciesTable } from '../../core/db/index.ts';
import type { AppError } from '../../core/errors/index.ts';
import { policyError } from './errors.ts';

export type PolicyRow = Selectable<PoliciesTable>;
type Executor = Kysely<Database>;

/** Arbitrary constant: the first key of every workspace's policy lock (the second is the hashed name). */
const POLICY_LOCK_SPACE = 7_242_002;

/** What a grant did: made the policy, found the principal's policy on that pattern, or (dry run) would make it. */
export type GrantResult = { kind: 'created'; policy: PolicyRow } | { kind: 'exists'; policy: PolicyRow } | { kind: 'would_create' };

/** The policy a change is about: by id, or (SQL REVOKE) the principal's on a pattern, which must hold `role`. */
export type PolicyTarget = { policyId: string } | { principal: string; pattern: string; role: Role };

/**
 * The one writer of the `policies` table (a purged workspace's rows aside), and the one place of the
 * rules that keep it whole; the policy service and SQL GRANT/REVOKE both call it:
 *
 * - nobody grants, changes or removes a role above their own: admin where the pattern points, and at
 *   least the role concerned (403 `PERMISSION_DENIED` / `ROLE_ABOVE_OWN`);
 * - one policy per workspace, principal and pattern (the unique index `policies_identity`);
 * - a workspace keeps an owner on `<ws>.*` (409 `LAST_OWNER`).
 *
 * Every write runs in one transaction that first takes the workspace's policy lock (a transaction-scoped
 * advisory lock), then reads what it checks — the caller's grants included — and writes. So writes to
 * one workspace's policies happen one at a time, each judged on what the one before it left: two owners
 * removing each other cannot both succeed, and identical grants racing make one policy.
 */
export class PolicyStore {
  constructor(
    private readonly db: Db,
    private readonly authz: Authorizer,
  ) {}

  private locked<T>(workspace: string, fn: (trx: Executor) => Promise<T>): Promise<T> {
    return this.db.kysely.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(${POLICY_LOCK_SPACE}, hashtext(${workspace}))`.execute(trx);
      return fn(trx);
    });
  }

  /**
   * Throws unless the caller may manage a grant of `role` on `pattern`: admin on the resource the
   * pattern names, and at least `role` there. Called early by the services (so a caller without
   * authority learns nothing more), and again under the lock by every write.
   */
  async requireAuthority(caller: Principal, pattern: Pattern, role: Role, q: Executor = this.db.kysely): Promise<void> {
    const grants = await grantsQuery(q, caller.identity, pattern.workspace).execute();
    const held = this.authz.requireFrom(caller, grants, 'admin', { workspace: pattern.workspace, collection: pattern.collection, dataset: pattern.dataset });
    if (!roleAtLeast(held, role)) {
      throw policyError('ROLE_ABOVE_OWN', `An ${held} cannot grant, change or revoke the ${role} role: nobody grants above their own role, and only owners grant owner`);
    }
  }

  /** Grants `role` on `pattern` (in its workspace) to a principal, unless it already holds a policy there. */
  async grant(caller: Principal, input: { principal: string; principalType: string; role: Role; pattern: Pattern }, options: { dryRun?: boolean } = {}): Promise<GrantResult> {
    const workspace = input.pattern.workspace;
    const pattern = formatPattern(input.pattern);
    return this.locked(workspace, async (trx) => {
      await this.requireAuthority(caller, input.pattern, input.role, trx);
      const existing = await lookup(trx, workspace, { principal: input.principal, pattern });
      if (existing) return { kind: 'exists', policy: existing };
      if (options.dryRun) return { kind: 'would_create' };
      const policy = await trx
        .insertInto('policies')
        .values({ policy_id: newId('pol'), workspace, principal: input.principal, principal_type: input.principalType, role: input.role, pattern, created_by: caller.identity })
        .returningAll()
        .executeTakeFirstOrThrow();
      return { kind: 'created', policy };
    });
  }

  /** Changes a policy's role and pattern; the caller needs authority over both the old and the new. */
  async update(caller: Principal, workspace: string, policyId: string, input: { role: Role; pattern: Pattern }): Promise<PolicyRow> {
    const pattern = formatPattern(input.pattern);
    return this.locked(workspace, async (trx) => {
      const current = await find(trx, workspace, { policyId });
      await this.requireAuthority(caller, parsePattern(current.pattern)!, current.role, trx);
      await this.requireAuthority(caller, input.pattern, input.role, trx);
      if (input.role !== 'owner' || pattern !== current.pattern) await assertOwnerRemains(trx, current);
      if (pattern !== current.pattern) {
        const other = await lookup(trx, workspace, { principal: current.principal, pattern });
        if (other) throw policyExists(other);
      }
      return trx.updateTable('policies').set({ role: input.role, pattern, updated_at: new Date() }).where('policy_id', '=', policyId).returningAll().executeTakeFirstOrThrow();
    });
  }

  /** Deletes a policy (or, dry run, checks that it may); answers the policy. */
  async remove(caller: Principal, workspace: string, target: PolicyTarget, options: { dryRun?: boolean } = {}): Promise<PolicyRow> {
    return this.locked(workspace, async (trx) => {
      const current = await find(trx, workspace, target);
      if ('role' in target && current.role !== target.role) {
        throw policyError('ROLE_MISMATCH', `${current.principal} holds ${current.role} on ${current.pattern}, not ${target.role}: revoke ${current.role} instead`);
      }
      await this.requireAuthority(caller, parsePattern(current.pattern)!, current.role, trx);
      await assertOwnerRemains(trx, current);
      if (!options.dryRun) await trx.deleteFrom('policies').where('policy_id', '=', current.policy_id).execute();
      return current;
    });
  }

  /** A workspace's first policies, one `<ws>.*` grant per identity; 409 once it has any policy. */
  async genesis(workspace: string, grants: { identity: string; role: Role }[], createdBy: string): Promise<PolicyRow[]> {
    return this.locked(workspace, async (trx) => {
      const any = await trx.selectFrom('policies').select('policy_id').where('workspace', '=', workspace).limit(1).executeTakeFirst();
      if (any) throw policyError('GENESIS_ALREADY_DONE', `Workspace '${workspace}' already has policies; genesis runs once`);
      const unique = new Map(grants.map((g) => [g.identity, g.role]));
      return trx
        .insertInto('policies')
        .values(
          [...unique].map(([identity, role]) => ({ policy_id: newId('pol'), workspace, principal: identity, principal_type: 'user', role, pattern: `${workspace}.*`, created_by: createdBy })),
        )
        .returningAll()
        .execute();
    });
  }
}

function lookup(q: Executor, workspace: string, target: PolicyTarget | { principal: string; pattern: string }): Promise<PolicyRow | undefined> {
  let query = q.selectFrom('policies').selectAll().where('workspace', '=', workspace);
  query = 'policyId' in target ? query.where('policy_id', '=', target.policyId) : query.where('principal', '=', target.principal).where('pattern', '=', target.pattern);
  return query.executeTakeFirst();
}

async function find(q: Executor, workspace: string, target: PolicyTarget): Promise<PolicyRow> {
  const row = await lookup(q, workspace, target);
  if (row) return row;
  if ('policyId' in target) throw policyError('POLICY_NOT_FOUND', `No policy ${target.policyId} in workspace '${workspace}'`);
  throw policyError('POLICY_NOT_FOUND', `${target.principal} holds no grant on ${target.pattern}; nothing to revoke`);
}

export function policyExists(existing: PolicyRow): AppError {
  return policyError('POLICY_EXISTS', `'${existing.principal}' already has policy ${existing.policy_id} on ${existing.pattern}; update its role instead`);
}

/** A workspace always keeps an owner on its whole pattern, or nobody could manage it again. */
async function assertOwnerRemains(q: Executor, losing: PolicyRow): Promise<void> {
  const whole = `${losing.workspace}.*`;
  if (losing.role !== 'owner' || losing.pattern !== whole) return;
  const other = await q
    .selectFrom('policies')
    .select('policy_id')
    .where('workspace', '=', losing.workspace)
    .where('role', '=', 'owner')
    .where('pattern', '=', whole)
    .where('policy_id', '!=', losing.policy_id)
    .limit(1)
    .executeTakeFirst();
  if (!other) throw policyError('LAST_OWNER', `This is the last owner policy of '${whole}'; grant another owner first`);
}
