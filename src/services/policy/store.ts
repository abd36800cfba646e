import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { Grant, GrantSource, Role } from '../../core/authz/index.ts';
import { newId } from '../../core/crypto/index.ts';
import type { Database, Db, PoliciesTable } from '../../core/db/index.ts';
import { KEPT_READ_TTL_MS, KeptReads } from '../../core/kept.ts';
import { policyError } from './errors.ts';

export type PolicyRow = Selectable<PoliciesTable>;
/** A policy about to be made (its id and times are the store's). */
export type NewPolicy = Omit<Insertable<PoliciesTable>, 'policy_id' | 'created_at' | 'updated_at'>;
/** The database, or the transaction a write runs in. */
export type PolicyExecutor = Kysely<Database>;

/** Arbitrary constant: the first key of every workspace's policy lock (the second is the hashed name). */
const POLICY_LOCK_SPACE = 7_242_002;

/**
 * The `policies` table: the only code that reads or writes it. Other modules see it as a GrantSource
 * (core/authz's Authorizer) or through the policy service; the rules of a change are the planner's
 * (planner.ts), which reads and writes through these methods inside `locked`.
 *
 * Outside a transaction, a workspace's policies and an identity's workspaces are kept (every
 * authorization asks): dropped when this process writes the table, and after KEPT_READ_TTL_MS,
 * within which another server's change is seen. Reads inside a transaction always go to it.
 */
export class PolicyStore implements GrantSource {
  private readonly workspacePolicies: KeptReads<string, { rows: PolicyRow[]; grants: Map<string, Grant[]> }>;
  private readonly identityWorkspaces: KeptReads<string, string[]>;
  private readonly identityGrants: KeptReads<string, Map<string, Grant[]>>;

  constructor(private readonly db: Db) {
    const kept = { ttlMs: KEPT_READ_TTL_MS, tables: { writes: db.writes, names: ['policies'] } };
    this.workspacePolicies = new KeptReads({ ...kept, max: 1_000 });
    this.identityWorkspaces = new KeptReads({ ...kept, max: 10_000 });
    this.identityGrants = new KeptReads({ ...kept, max: 10_000 });
  }

  /** The workspace's policies (kept), with each principal's grants. */
  private kept(workspace: string) {
    return this.workspacePolicies.get(workspace, async () => {
      const rows = await this.db.kysely.selectFrom('policies').selectAll().where('workspace', '=', workspace).orderBy('created_at').orderBy('policy_id').execute();
      const grants = new Map<string, Grant[]>();
      for (const row of rows) {
        const held = grants.get(row.principal) ?? [];
        held.push({ pattern: row.pattern, role: row.role });
        grants.set(row.principal, held);
      }
      return { rows, grants };
    });
  }

  /**
   * Runs `fn` in one transaction that first takes the workspace's policy lock (a transaction-scoped
   * advisory lock), so writes to one workspace's policies happen one at a time.
   */
  locked<T>(workspace: string, fn: (trx: PolicyExecutor) => Promise<T>): Promise<T> {
    return this.db.kysely.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(${POLICY_LOCK_SPACE}, hashtext(${workspace}))`.execute(trx);
      return fn(trx);
    });
  }

  async grantsOf(identity: string, workspace: string, q?: PolicyExecutor): Promise<Grant[]> {
    if (q) return q.selectFrom('policies').select(['pattern', 'role']).where('principal', '=', identity).where('workspace', '=', workspace).execute();
    return [...((await this.kept(workspace)).grants.get(identity) ?? [])];
  }

  workspacesOf(identity: string): Promise<string[]> {
    return this.identityWorkspaces.get(identity, async () => {
      const rows = await this.db.kysely.selectFrom('policies').select('workspace').distinct().where('principal', '=', identity).orderBy('workspace').execute();
      return rows.map((r) => r.workspace);
    });
  }

  /** The identity's grants in every workspace, by workspace, each oldest first as grantsOf lists them (kept; one query). */
  grantsByWorkspace(identity: string): Promise<Map<string, Grant[]>> {
    return this.identityGrants.get(identity, async () => {
      const rows = await this.db.kysely
        .selectFrom('policies')
        .select(['workspace', 'pattern', 'role'])
        .where('principal', '=', identity)
        .orderBy('workspace')
        .orderBy('created_at')
        .orderBy('policy_id')
        .execute();
      const grants = new Map<string, Grant[]>();
      for (const { workspace, pattern, role } of rows) grants.set(workspace, [...(grants.get(workspace) ?? []), { pattern, role }]);
      return grants;
    });
  }

  /** The workspace's policies, oldest first. */
  async list(workspace: string): Promise<PolicyRow[]> {
    return [...(await this.kept(workspace)).rows];
  }

  /** A policy of the workspace by id, or the principal's on a pattern (`q`: in that transaction). */
  async find(workspace: string, target: { policyId: string } | { principal: string; pattern: string }, q?: PolicyExecutor): Promise<PolicyRow | undefined> {
    if (!q) {
      const { rows } = await this.kept(workspace);
      return 'policyId' in target ? rows.find((r) => r.policy_id === target.policyId) : rows.find((r) => r.principal === target.principal && r.pattern === target.pattern);
    }
    let query = q.selectFrom('policies').selectAll().where('workspace', '=', workspace);
    query = 'policyId' in target ? query.where('policy_id', '=', target.policyId) : query.where('principal', '=', target.principal).where('pattern', '=', target.pattern);
    return query.executeTakeFirst();
  }

  /** Whether the workspace has an owner on `pattern` other than the policy `except`. */
  async hasOtherOwner(workspace: string, pattern: string, except: string, q: PolicyExecutor = this.db.kysely): Promise<boolean> {
    const other = await q
      .selectFrom('policies')
      .select('policy_id')
      .where('workspace', '=', workspace)
      .where('role', '=', 'owner')
      .where('pattern', '=', pattern)
      .where('policy_id', '!=', except)
      .limit(1)
      .executeTakeFirst();
    return other !== undefined;
  }

  insert(policy: NewPolicy, q: PolicyExecutor): Promise<PolicyRow> {
    return q.insertInto('policies').values({ ...policy, policy_id: newId('pol') }).returningAll().executeTakeFirstOrThrow();
  }

  update(policyId: string, set: { role: Role; pattern: string }, q: PolicyExecutor): Promise<PolicyRow> {
    return q.updateTable('policies').set({ ...set, updated_at: new Date() }).where('policy_id', '=', policyId).returningAll().executeTakeFirstOrThrow();
  }

  async delete(policyId: string, q: PolicyExecutor): Promise<void> {
    await q.deleteFrom('policies').where('policy_id', '=', policyId).execute();
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

  /** Removes every policy of a workspace being purged. */
  async removeWorkspace(workspace: string): Promise<void> {
    await this.locked(workspace, (trx) => trx.deleteFrom('policies').where('workspace', '=', workspace).execute());
  }
}
