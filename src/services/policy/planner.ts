import { formatPattern, parsePattern, roleAtLeast, type Authorizer, type Pattern, type Principal, type Role } from '../../core/authz/index.ts';
import type { AppError } from '../../core/errors/index.ts';
import { policyError } from './errors.ts';
import type { NewPolicy, PolicyExecutor, PolicyRow, PolicyStore } from './store.ts';

/** The policy a revoke is about: by id (HTTP DELETE), or the principal's on a pattern, which must hold `role` (SQL REVOKE). */
export type PolicyTarget = { policyId: string } | { principal: string; pattern: Pattern; role: Role };

/** A requested change to a workspace's policies, as the policy API and SQL GRANT/REVOKE express it. */
export type PolicyChange =
  | { kind: 'grant'; principal: { identity: string; type: string }; role: Role; pattern: Pattern }
  | { kind: 'update'; policyId: string; role: Role; pattern: Pattern }
  | { kind: 'revoke'; target: PolicyTarget };

/** What a change does to the table. */
export type PolicyEffect =
  | { kind: 'create'; policy: NewPolicy }
  /** The principal holds that very grant already: nothing to do. */
  | { kind: 'keep'; policy: PolicyRow }
  | { kind: 'update'; policy: PolicyRow; role: Role; pattern: string }
  | { kind: 'delete'; policy: PolicyRow };

/** A change checked against every rule, and what it would do. */
export interface PolicyPlan {
  caller: Principal;
  workspace: string;
  change: PolicyChange;
  effect: PolicyEffect;
}

/** What `apply` did, and the policy as it now is (deleted: as it was). */
export interface AppliedPolicyChange {
  kind: PolicyEffect['kind'];
  policy: PolicyRow;
}

export function policyNotFound(workspace: string, policyId: string): AppError {
  return policyError('POLICY_NOT_FOUND', `No policy ${policyId} in workspace '${workspace}'`);
}

export function policyExists(existing: PolicyRow): AppError {
  const { principal, role, pattern, policy_id: id } = existing;
  return policyError(
    'POLICY_EXISTS',
    `${principal} already holds ${role} on ${pattern} (policy ${id}): change that policy's role instead, or REVOKE ${role} ON ${pattern} FROM ${principal} first`,
  );
}

/**
 * The one place of the rules of a policy change; the policy API and SQL GRANT/REVOKE both plan and
 * apply through it:
 *
 * - nobody grants, changes or removes a role above their own: admin where the pattern points, and at
 *   least the role concerned (403 `PERMISSION_DENIED` / `ROLE_ABOVE_OWN`);
 * - the workspace is live (409 `WORKSPACE_DELETED`, decided by core/authz with the authority);
 * - one policy per workspace, principal and pattern (409 `POLICY_EXISTS`; the unique index
 *   `policies_identity` holds it in the table too); a grant of exactly what is held changes nothing;
 * - a revoke names the role held (409 `ROLE_MISMATCH`);
 * - a workspace keeps an owner on `<ws>.*` (409 `LAST_OWNER`).
 *
 * Authority is asked first, so a caller without it learns nothing of the workspace. `plan` changes
 * nothing (the dry run). `execute` (and `apply`, for a plan made earlier) judges the change in one
 * transaction under the workspace's policy lock, on what the write before it left, then writes: two
 * owners removing each other cannot both succeed, and identical grants racing make one policy.
 */
export class PolicyPlanner {
  constructor(
    private readonly store: PolicyStore,
    private readonly authz: Authorizer,
  ) {}

  async plan(caller: Principal, workspace: string, change: PolicyChange): Promise<PolicyPlan> {
    await this.admit(caller, workspace, change);
    // Under the lock as well: every rule is judged on one state of the policies, a concurrent write wholly before or after.
    const effect = await this.store.locked(workspace, (trx) => this.judge(caller, workspace, change, trx));
    return { caller, workspace, change, effect };
  }

  /** The change for real: the same admission as `plan`, then judged once, under the lock, as it is written. */
  async execute(caller: Principal, workspace: string, change: PolicyChange): Promise<AppliedPolicyChange> {
    await this.admit(caller, workspace, change);
    return this.write(caller, workspace, change);
  }

  /** A plan made earlier, judged again on what the writes since have left. */
  apply(plan: PolicyPlan): Promise<AppliedPolicyChange> {
    return this.write(plan.caller, plan.workspace, plan.change);
  }

  private write(caller: Principal, workspace: string, change: PolicyChange): Promise<AppliedPolicyChange> {
    return this.store.locked(workspace, async (trx) => {
      const effect = await this.judge(caller, workspace, change, trx);
      switch (effect.kind) {
        case 'create':
          return { kind: effect.kind, policy: await this.store.insert(effect.policy, trx) };
        case 'keep':
          return { kind: effect.kind, policy: effect.policy };
        case 'update':
          return { kind: effect.kind, policy: await this.store.update(effect.policy.policy_id, { role: effect.role, pattern: effect.pattern }, trx) };
        case 'delete':
          await this.store.delete(effect.policy.policy_id, trx);
          return { kind: effect.kind, policy: effect.policy };
      }
    });
  }

  /** Before anything is looked up: authority over what the change names, or (by id) any grant in the workspace. */
  private async admit(caller: Principal, workspace: string, change: PolicyChange): Promise<void> {
    if (change.kind === 'grant') return this.requireAuthority(caller, change.pattern, change.role);
    if (change.kind === 'revoke' && 'role' in change.target) return this.requireAuthority(caller, change.target.pattern, change.target.role);
    return this.requireAnyGrant(caller, workspace);
  }

  /** Throws 403 unless the caller holds some policy in the workspace (whether or not the workspace exists), then 409 if it is deleted. */
  async requireAnyGrant(caller: Principal, workspace: string): Promise<void> {
    if ((await this.authz.grantsIn(caller, workspace)).length === 0) {
      throw policyError('PERMISSION_DENIED', `'${caller.identity}' has no access to workspace '${workspace}'`);
    }
  }

  /** Throws unless the caller may manage a grant of `role` on `pattern`: admin on what it names, and at least `role` there. */
  private async requireAuthority(caller: Principal, pattern: Pattern, role: Role, q?: PolicyExecutor): Promise<void> {
    // Outside a transaction core/authz reads the grants and the workspace's state (409 when deleted).
    // Under the policy lock the grants are read again in the transaction, on a workspace admission found
    // live (reading its state outside the transaction there would wait on it, with one connection).
    const standing = q
      ? { workspace: pattern.workspace, grants: await this.store.grantsOf(caller.identity, pattern.workspace, q), deleted: false }
      : await this.authz.standingIn(caller.identity, pattern.workspace);
    const held = this.authz.requireFrom(caller, standing, 'admin', { workspace: pattern.workspace, collection: pattern.collection, dataset: pattern.dataset });
    if (!roleAtLeast(held, role)) {
      throw policyError('ROLE_ABOVE_OWN', `An ${held} cannot grant, change or revoke the ${role} role: nobody grants above their own role, and only owners grant owner`);
    }
  }

  private async judge(caller: Principal, workspace: string, change: PolicyChange, q?: PolicyExecutor): Promise<PolicyEffect> {
    switch (change.kind) {
      case 'grant': {
        await this.requireAuthority(caller, change.pattern, change.role, q);
        const pattern = formatPattern(change.pattern);
        const existing = await this.store.find(workspace, { principal: change.principal.identity, pattern }, q);
        if (existing?.role === change.role) return { kind: 'keep', policy: existing };
        if (existing) throw policyExists(existing);
        const { identity, type } = change.principal;
        return { kind: 'create', policy: { workspace, principal: identity, principal_type: type, role: change.role, pattern, created_by: caller.identity } };
      }
      case 'update': {
        const current = await this.current(workspace, { policyId: change.policyId }, q);
        await this.requireAuthority(caller, parsePattern(current.pattern)!, current.role, q);
        await this.requireAuthority(caller, change.pattern, change.role, q);
        const pattern = formatPattern(change.pattern);
        if (change.role !== 'owner' || pattern !== current.pattern) await this.requireOwnerRemains(current, q);
        if (pattern !== current.pattern) {
          const other = await this.store.find(workspace, { principal: current.principal, pattern }, q);
          if (other) throw policyExists(other);
        }
        return { kind: 'update', policy: current, role: change.role, pattern };
      }
      case 'revoke': {
        const { target } = change;
        const current = await this.current(workspace, target, q);
        if ('role' in target && current.role !== target.role) {
          throw policyError('ROLE_MISMATCH', `${current.principal} holds ${current.role} on ${current.pattern}, not ${target.role}: revoke ${current.role} instead`);
        }
        await this.requireAuthority(caller, parsePattern(current.pattern)!, current.role, q);
        await this.requireOwnerRemains(current, q);
        return { kind: 'delete', policy: current };
      }
    }
  }

  private async current(workspace: string, target: PolicyTarget, q?: PolicyExecutor): Promise<PolicyRow> {
    if ('policyId' in target) {
      const row = await this.store.find(workspace, target, q);
      if (!row) throw policyNotFound(workspace, target.policyId);
      return row;
    }
    const pattern = formatPattern(target.pattern);
    const row = await this.store.find(workspace, { principal: target.principal, pattern }, q);
    if (!row) throw policyError('POLICY_NOT_FOUND', `${target.principal} holds no grant on ${pattern}; nothing to revoke`);
    return row;
  }

  /** A workspace always keeps an owner on its whole pattern, or nobody could manage it again. */
  private async requireOwnerRemains(losing: PolicyRow, q?: PolicyExecutor): Promise<void> {
    const whole = `${losing.workspace}.*`;
    if (losing.role !== 'owner' || losing.pattern !== whole) return;
    if (!(await this.store.hasOtherOwner(losing.workspace, whole, losing.policy_id, q))) {
      throw policyError('LAST_OWNER', `This is the last owner policy of '${whole}'; grant another owner first`);
    }
  }
}
