import { formatPattern, type Authorizer, type Principal } from '../../../core/authz/index.ts';
import type { Catalog, Dataset, SnapshotSelector } from '../../../core/catalog/index.ts';
import type { WorkspaceDirectory } from '../../accounts/index.ts';
import type { PolicyChange, PolicyPlanner, PolicyRow } from '../../policy/index.ts';
import type { ParamValue } from '../types.ts';
import { isAppError, type ErrorCode } from '../../../core/errors/index.ts';
import { StatementError, statementError, type Span } from './errors.ts';
import type { AlterDatasetCompact, AlterDatasetSort, AlterWorkspace, CommentOn, CreateSecret, CreateTag, CreateView, DropTag, DropView, GrantStatement, LakeportStatement, WorkspaceProperty } from './parser.ts';
import type { ViewDescriber } from '../views.ts';
import type { StatementOutcome } from './outcome.ts';
import type { ColumnDef } from '../../../core/db/index.ts';
import { at, DatasetAccess, labelOf } from './access.ts';
import { LifecycleStatements } from './lifecycle.ts';
import { MaterializedViewStatements } from './materialized-views.ts';

export type { StatementOutcome } from './outcome.ts';
import type { QueryPlanner } from '../planner.ts';
import type { MaterializedViews } from '../mviews/service.ts';
import type { Compactor } from '../../upload/index.ts';
import type { SecretStore } from './secret-store.ts';
import type { HostResolver } from '../../../core/net/index.ts';
import { checkSecretShape, checkSecretValues } from './secret-types.ts';

export interface ExecutorDeps {
  authz: Authorizer;
  catalog: Catalog;
  policies: PolicyPlanner;
  workspaces: WorkspaceDirectory;
  secrets: SecretStore;
  resolveHost: HostResolver;
  /** Plans a CREATE VIEW's SELECT as the caller's query job would be planned. */
  views: ViewDescriber;
  /** Materialized views: their select is planned as a job would be; refreshes are queued through `materializedViews`. */
  planner: QueryPlanner;
  materializedViews: MaterializedViews;
  /** ALTER DATASET … COMPACT runs through the upload module's compactor (absent: the statement is not available). */
  compactor?: Compactor;
}

/** Planner refusals a CREATE VIEW answers with their own code; the others are INVALID_VIEW_DEFINITION. */
const VIEW_PLAN_CODES = new Set<ErrorCode>(['DATASET_NOT_FOUND', 'VIEW_SOURCE_NOT_READABLE', 'VIEW_CYCLE', 'UNSUPPORTED_PARAMETER', 'TABLE_FUNCTION_NOT_ALLOWED', 'MULTIPLE_STATEMENTS', 'SYNTAX_ERROR']);

const KIND_WORDS: Record<string, string> = { table: 'a table', view: 'a view', materialized_view: 'a materialized view', external: 'an external dataset' };


/**
 * Runs Lakeport statements for a caller: every permission through core/authz, every effect through
 * the module that owns it (the policy planner for GRANT/REVOKE, the catalog for tags and the
 * workspace lock, the secret store for CREATE SECRET). With `dryRun` (the check endpoint) it runs
 * every check and changes nothing.
 *
 * Errors are StatementErrors with the place in the text they are about; an error of another service
 * (a 404, 409 or 423) keeps its status and code and gains the place.
 */
export class StatementExecutor {
  private readonly lifecycle: LifecycleStatements;
  private readonly access: DatasetAccess;
  private readonly materializedViews: MaterializedViewStatements;

  constructor(private readonly deps: ExecutorDeps) {
    this.access = new DatasetAccess(deps);
    this.lifecycle = new LifecycleStatements(deps, this.access);
    this.materializedViews = new MaterializedViewStatements(deps, this.access);
  }

  async execute(caller: Principal, statement: LakeportStatement, parameters: Record<string, ParamValue>, options: { dryRun: boolean }): Promise<StatementOutcome> {
    switch (statement.kind) {
      case 'create_secret':
        return this.createSecret(caller, statement, parameters, options.dryRun);
      case 'grant':
        return this.grant(caller, statement, options.dryRun);
      case 'revoke':
        return this.revoke(caller, statement, options.dryRun);
      case 'create_tag':
        return this.createTag(caller, statement, options.dryRun);
      case 'drop_tag':
        return this.dropTag(caller, statement, options.dryRun);
      case 'alter_workspace':
        return this.alterWorkspace(caller, statement, options.dryRun);
      case 'create_view':
        return this.createView(caller, statement, options.dryRun);
      case 'drop_view':
        return this.dropView(caller, statement, options.dryRun);
      case 'comment':
        return this.commentOn(caller, statement, options.dryRun);
      case 'alter_dataset_sort':
        return this.alterDatasetSort(caller, statement, options.dryRun);
      case 'drop_dataset':
        return this.lifecycle.dropDataset(caller, statement, options.dryRun);
      case 'undrop_dataset':
        return this.lifecycle.undropDataset(caller, statement, options.dryRun);
      case 'alter_dataset_rollback':
        return this.lifecycle.rollback(caller, statement, options.dryRun);
      case 'alter_dataset_expire':
        return this.lifecycle.expire(caller, statement, options.dryRun);
      case 'create_materialized_view':
        return this.materializedViews.create(caller, statement, options.dryRun);
      case 'refresh_materialized_view':
        return this.materializedViews.refresh(caller, statement, options.dryRun);
      case 'drop_materialized_view':
        return this.materializedViews.drop(caller, statement, options.dryRun);
      case 'alter_dataset_compact':
        return this.alterDatasetCompact(caller, statement, options.dryRun);
    }
  }

  // ── shared ──

  private async requireNamespace(workspace: string, span: Span) {
    const namespace = await this.deps.catalog.findNamespace(workspace);
    if (!namespace) throw statementError('WORKSPACE_NOT_FOUND', `Workspace '${workspace}' does not exist`, span);
    return namespace;
  }

  // ── CREATE SECRET ──

  private async createSecret(caller: Principal, s: CreateSecret, parameters: Record<string, ParamValue>, dryRun: boolean): Promise<StatementOutcome> {
    const spec = checkSecretShape(s);
    const values = resolveValues(s, parameters);
    const workspace = s.workspace.value;
    const label = `${workspace}.${s.name.value}`;

    // Owner on the whole workspace (ws.*) is what "ALTER on the workspace" means here; core/authz
    // answers 409 WORKSPACE_DELETED for a soft-deleted one (here and below, placed by `at`).
    if (!(await at(s.workspace, () => this.deps.authz.can(caller, 'owner', { workspace })))) {
      throw statementError(
        'PERMISSION_DENIED',
        `You lack permission to manage secrets in workspace '${workspace}': CREATE SECRET needs the owner role on ${workspace}.*`,
        s.workspace,
      );
    }
    await this.requireNamespace(workspace, s.workspace);
    const record = await this.deps.workspaces.find(workspace);
    if (!record) {
      throw statementError(
        'NO_BILLING_ACCOUNT',
        `Workspace '${workspace}' has no billing account, and so no key to encrypt secrets under`,
        s.workspace,
      );
    }
    const spans = Object.fromEntries(s.options.map((o) => [o.key.value, o.value]));
    await checkSecretValues(spec.type, values, spans, this.deps.resolveHost);

    const exists = () =>
      statementError(
        'SECRET_EXISTS',
        `Secret ${label} already exists: use CREATE OR REPLACE SECRET to replace its value, or IF NOT EXISTS to leave it as it is`,
        s.name,
      );
    const mismatch = (type: string) =>
      statementError(
        'SECRET_TYPE_MISMATCH',
        `Secret ${label} is of TYPE '${type}'; a secret's type is fixed when it is created (there is no ALTER SECRET): keep TYPE '${type}' or use another name`,
        s.type,
      );

    if (dryRun) {
      const existing = await this.deps.secrets.find(workspace, s.name.value);
      if (existing && !s.orReplace && !s.ifNotExists) throw exists();
      if (existing && s.orReplace && existing.type !== spec.type) throw mismatch(existing.type);
      return { message: `Secret ${label} would be ${existing ? (s.orReplace ? 'replaced' : 'left untouched') : 'created'}` };
    }

    const mode = s.orReplace ? 'replace' : s.ifNotExists ? 'if_not_exists' : 'create';
    const stored = await this.deps.secrets.put(mode, { workspace, name: s.name.value, type: spec.type, billingAccount: record.billingAccount, values, by: caller.identity });
    switch (stored.outcome) {
      case 'created':
        return { message: `Secret ${label} created` };
      case 'replaced':
        return { message: `Secret ${label} replaced` };
      case 'unchanged':
        return { message: `Secret ${label} already exists; left untouched` };
      case 'exists':
        throw exists();
      case 'type_mismatch':
        throw mismatch(stored.secret.type);
    }
  }

  // ── GRANT / REVOKE ──
  // The rules are the policy planner's, the same the policy API plans with; here the plan is only put
  // in SQL's words, and a refusal at the place in the statement it is about.

  /** Where in a GRANT/REVOKE a refusal of the planner points. */
  private static grantSpan(s: GrantStatement) {
    return (code: ErrorCode): Span => {
      switch (code) {
        case 'PERMISSION_DENIED':
        case 'WORKSPACE_NOT_FOUND':
        case 'WORKSPACE_DELETED':
          return s.pattern;
        case 'ROLE_ABOVE_OWN':
        case 'ROLE_MISMATCH':
          return s.role;
        case 'POLICY_EXISTS':
        case 'POLICY_NOT_FOUND':
          return s.principal;
        default:
          return s.span;
      }
    };
  }

  private plan(caller: Principal, s: GrantStatement, change: PolicyChange) {
    return at(StatementExecutor.grantSpan(s), () => this.deps.policies.plan(caller, s.pattern.value.workspace, change));
  }

  private applyChange(caller: Principal, s: GrantStatement, change: PolicyChange) {
    return at(StatementExecutor.grantSpan(s), () => this.deps.policies.execute(caller, s.pattern.value.workspace, change));
  }

  private async grant(caller: Principal, s: GrantStatement, dryRun: boolean): Promise<StatementOutcome> {
    const pattern = formatPattern(s.pattern.value);
    const { identity } = s.principal.value;
    const held = (policy: PolicyRow) => ({ message: `${identity} already holds ${policy.role} on ${pattern} (policy ${policy.policy_id}); nothing changed` });
    const change: PolicyChange = { kind: 'grant', principal: s.principal.value, role: s.role.value, pattern: s.pattern.value };
    if (dryRun) {
      const { effect } = await this.plan(caller, s, change);
      return effect.kind === 'keep' ? held(effect.policy) : { message: `Would grant ${s.role.value} on ${pattern} to ${identity}` };
    }
    const { kind, policy } = await this.applyChange(caller, s, change);
    if (kind === 'keep') return held(policy);
    return { message: `Granted ${policy.role} on ${policy.pattern} to ${identity} (policy ${policy.policy_id})` };
  }

  private async revoke(caller: Principal, s: GrantStatement, dryRun: boolean): Promise<StatementOutcome> {
    const pattern = formatPattern(s.pattern.value);
    const { identity } = s.principal.value;
    const change: PolicyChange = { kind: 'revoke', target: { principal: identity, pattern: s.pattern.value, role: s.role.value } };
    if (dryRun) {
      const { effect } = await this.plan(caller, s, change);
      if (effect.kind !== 'delete') throw new Error(`a REVOKE plans a delete, not a ${effect.kind}`);
      return { message: `Would revoke ${effect.policy.role} on ${pattern} from ${identity} (policy ${effect.policy.policy_id})` };
    }
    const { policy } = await this.applyChange(caller, s, change);
    return { message: `Revoked ${policy.role} on ${pattern} from ${identity} (policy ${policy.policy_id} deleted)` };
  }

  // ── tags ──

  /** The dataset, for a caller who may write it: unreadable ones look missing, readable-only ones are 403. */
  private async writableDataset(caller: Principal, s: { dataset: CreateTag['dataset'] }): Promise<Dataset> {
    const label = labelOf(s.dataset.value);
    const dataset = (await this.access.writable(caller, s.dataset))!;
    if (dataset.kind === 'external') {
      throw statementError('VERSIONING_NOT_SUPPORTED', `Dataset ${label} is listed from an external catalog; it has no snapshots to tag`, s.dataset);
    }
    if (dataset.kind === 'view') {
      throw statementError('VERSIONING_NOT_SUPPORTED', `${label} is a logical view: it has no snapshots to tag (a materialized view has)`, s.dataset);
    }
    return dataset;
  }

  private async createTag(caller: Principal, s: CreateTag, dryRun: boolean): Promise<StatementOutcome> {
    const dataset = await this.writableDataset(caller, s);
    const label = `${dataset.workspace}.${dataset.collection}.${dataset.name}`;
    const selector: SnapshotSelector = s.version
      ? s.version.value.kind === 'id'
        ? { kind: 'id', snapshotId: s.version.value.snapshotId }
        : { kind: 'tag', name: s.version.value.name }
      : { kind: 'current' };
    const snapshot = await at(s.version ?? s.dataset, () => this.deps.catalog.resolveSnapshot(dataset.dataset_id, selector));
    if (dryRun) {
      const tags = await this.deps.catalog.listTags(dataset.dataset_id);
      const existing = tags.find((t) => t.name === s.name.value);
      if (existing) throw statementError('TAG_EXISTS', `Tag '${existing.name}' already exists (snapshot ${existing.snapshot_id})`, s.name);
      return { message: `Would create tag ${s.name.value} on ${label} at snapshot ${snapshot.snapshot_id}` };
    }
    const tag = await at(s.name, () => this.deps.catalog.createTag(dataset.dataset_id, s.name.value, snapshot.snapshot_id, caller.identity));
    return { message: `Tag ${tag.name} created on ${label} at snapshot ${tag.snapshot_id}` };
  }

  private async dropTag(caller: Principal, s: DropTag, dryRun: boolean): Promise<StatementOutcome> {
    const dataset = await this.writableDataset(caller, s);
    const label = `${dataset.workspace}.${dataset.collection}.${dataset.name}`;
    const missing = { message: `Tag ${s.name.value} does not exist on ${label}; nothing dropped` };
    if (dryRun) {
      const tag = (await this.deps.catalog.listTags(dataset.dataset_id)).find((t) => t.name === s.name.value);
      if (!tag) {
        if (s.ifExists) return missing;
        throw statementError('TAG_NOT_FOUND', `${label} has no tag '${s.name.value}'`, s.name);
      }
      const namespace = await this.requireNamespace(dataset.workspace, s.dataset);
      if (namespace.guards.history_protection) {
        throw statementError('GUARDED', `Workspace '${dataset.workspace}' keeps its history (history_protection): cannot delete tag '${tag.name}'`, s.span);
      }
      return { message: `Would drop tag ${tag.name} from ${label} (it names snapshot ${tag.snapshot_id})` };
    }
    try {
      const tag = await at(s.name, () => this.deps.catalog.deleteTag(dataset.dataset_id, s.name.value));
      return { message: `Tag ${tag.name} dropped from ${label} (it named snapshot ${tag.snapshot_id})` };
    } catch (error) {
      if (s.ifExists && error instanceof StatementError && isAppError(error.http, 'TAG_NOT_FOUND')) return missing;
      throw error;
    }
  }

  // ── ALTER WORKSPACE ──

  private async alterWorkspace(caller: Principal, s: AlterWorkspace, dryRun: boolean): Promise<StatementOutcome> {
    const workspace = s.workspace.value;
    const property = s.property.value;
    if (!(await at(s.workspace, () => this.deps.authz.can(caller, 'owner', { workspace })))) {
      throw statementError('PERMISSION_DENIED', `Only an owner of the whole workspace (${workspace}.*) may change its ${property}`, s.workspace);
    }
    await this.requireNamespace(workspace, s.workspace);
    const state = s.value.value ? 'ON' : 'OFF';
    const effect = PROPERTY_EFFECTS[property][s.value.value ? 1 : 0];
    if (dryRun) return { message: `Would set ${property} of workspace ${workspace} ${state}` };
    await at(s.span, () => this.deps.catalog.setNamespaceProperties(workspace, { [property]: s.value.value }));
    return { message: `Workspace ${workspace}: ${property} is ${state} (${effect})` };
  }
  // ── views (docs/views.md) ──

  private async createView(caller: Principal, s: CreateView, dryRun: boolean): Promise<StatementOutcome> {
    const ref = s.name.value;
    const label = labelOf(ref);
    if (!(await at(s.name, () => this.deps.authz.can(caller, 'writer', { workspace: ref.workspace, collection: ref.collection, dataset: ref.dataset })))) {
      throw statementError('PERMISSION_DENIED', `You may not create ${label}: CREATE VIEW needs the writer role on ${label}`, s.name);
    }
    await this.requireNamespace(ref.workspace, s.name);
    const existing = await this.deps.catalog.findDataset(ref);
    if (existing && existing.kind !== 'view') {
      throw statementError('WRONG_OBJECT_KIND', `${label} is ${KIND_WORDS[existing.kind] ?? existing.kind}, not a view: CREATE OR REPLACE VIEW replaces only views (drop it with DROP DATASET first)`, s.name);
    }
    if (existing && !s.orReplace) throw statementError('ALREADY_EXISTS', `View ${label} already exists: use CREATE OR REPLACE VIEW to replace it`, s.name);

    const plan = await this.deps.views.describe(caller, s.query.value, label);
    if (!plan.ok) {
      const { code, message, position } = plan.error;
      let span: Span = s.query;
      if (position !== undefined) {
        const start = s.query.start + position;
        const word = /^[^\s,;()]+/.exec(s.query.value.slice(position));
        span = { start, end: start + (word ? word[0].length : 1) };
      }
      throw statementError(VIEW_PLAN_CODES.has(code as ErrorCode) ? (code as Parameters<typeof statementError>[0]) : 'INVALID_VIEW_DEFINITION', message, span);
    }
    // Column descriptions written with COMMENT ON COLUMN survive a replace, by column name.
    const described = new Map((existing?.columns ?? []).filter((c) => c.description !== undefined).map((c) => [c.name.toLowerCase(), c.description!]));
    const columns: ColumnDef[] = plan.columns.map((c) => {
      const description = described.get(c.name.toLowerCase());
      return { name: c.name, type: c.type, nullable: true, ...(description !== undefined ? { description } : {}) };
    });
    const names = new Set<string>();
    for (const c of columns) {
      if (names.has(c.name.toLowerCase())) throw statementError('INVALID_VIEW_DEFINITION', `The view's SELECT returns two columns named '${c.name}': give them distinct names with AS`, s.query);
      names.add(c.name.toLowerCase());
    }
    const view = { definition: s.query.value, sources: plan.sources };
    const reads = plan.sources.length > 0 ? `reads ${plan.sources.join(', ')}` : 'reads no dataset';
    if (dryRun) return { message: `Would ${existing ? 'replace' : 'create'} view ${label} (${columns.length} column${columns.length === 1 ? '' : 's'}; ${reads})` };
    const description = s.comment?.value ?? null;
    const llm = s.comment ? false : null;
    if (existing) {
      await at(s.name, () =>
        this.deps.catalog.alterDataset(existing.dataset_id, { columns, description, properties: { view, llm_described: llm } }, caller.identity, { expectedDefinitionVersion: existing.definition_version }),
      );
      return { message: `View ${label} replaced (${columns.length} column${columns.length === 1 ? '' : 's'}; ${reads})` };
    }
    await at(s.name, () =>
      this.deps.catalog.createDataset(ref, { kind: 'view', columns, description, properties: { view, ...(s.comment ? { llm_described: false } : {}) } }, caller.identity),
    );
    return { message: `View ${label} created (${columns.length} column${columns.length === 1 ? '' : 's'}; ${reads})` };
  }

  private async dropView(caller: Principal, s: DropView, dryRun: boolean): Promise<StatementOutcome> {
    const label = labelOf(s.name.value);
    const dataset = await this.access.writable(caller, s.name, { what: 'View', ifExists: s.ifExists });
    if (!dataset) return { message: `View ${label} does not exist; nothing dropped` };
    if (dataset.kind !== 'view') {
      const use = (dataset.kind as string) === 'materialized_view' ? 'DROP MATERIALIZED VIEW' : 'DROP DATASET';
      throw statementError('WRONG_OBJECT_KIND', `${label} is ${KIND_WORDS[dataset.kind] ?? dataset.kind}, not a view: use ${use}`, s.name);
    }
    if (dryRun) {
      const namespace = await this.requireNamespace(dataset.workspace, s.name);
      if (namespace.guards.drop_protection) throw statementError('GUARDED', `Workspace '${dataset.workspace}' refuses dropping datasets and views (drop_protection)`, s.span);
      return { message: `Would drop view ${label}` };
    }
    await at(s.span, () => this.deps.catalog.dropDataset(dataset.dataset_id));
    return { message: `View ${label} dropped` };
  }

  // ── COMMENT ON ──

  private async commentOn(caller: Principal, s: CommentOn, dryRun: boolean): Promise<StatementOutcome> {
    const target = s.target.value;
    const dataset = (await this.access.writable(caller, s.dataset, { what: target === 'view' ? 'View' : target === 'materialized_view' ? 'Materialized view' : 'Dataset' }))!;
    const label = labelOf(s.dataset.value);
    if ((target === 'view' || target === 'materialized_view') && dataset.kind !== target) {
      throw statementError('WRONG_OBJECT_KIND', `${label} is ${KIND_WORDS[dataset.kind] ?? dataset.kind}: write COMMENT ON DATASET (or the kind it is)`, s.target);
    }
    const text = s.text.value;
    const flag = { llm_described: s.byModel };
    const by = s.byModel ? ' (written by a model)' : '';
    let patch;
    let what: string;
    if (s.column) {
      const wanted = s.column.value.toLowerCase();
      const index = dataset.columns.findIndex((c) => c.name.toLowerCase() === wanted);
      if (index < 0) {
        throw statementError('COLUMN_NOT_FOUND', `${label} has no column '${s.column.value.slice(0, 80)}' (its columns: ${dataset.columns.map((c) => c.name).join(', ').slice(0, 500)})`, s.column);
      }
      const columns = dataset.columns.map((c, i) => {
        if (i !== index) return c;
        const { description: _old, ...rest } = c;
        return text === null ? rest : { ...rest, description: text };
      });
      patch = { columns, properties: flag };
      what = `column ${dataset.columns[index].name} of ${label}`;
    } else {
      patch = { description: text, properties: flag };
      what = label;
    }
    const done = text === null ? 'removed' : 'set';
    if (dryRun) return { message: `Would ${text === null ? 'remove' : 'set'} the description of ${what}${by}` };
    await at(s.span, () => this.deps.catalog.alterDataset(dataset.dataset_id, patch, caller.identity, { expectedDefinitionVersion: dataset.definition_version }));
    return { message: `Description of ${what} ${done}${by}` };
  }

  // ── ALTER DATASET ── (ROLLBACK, EXPIRE SNAPSHOTS and COMPACT are other actions of the same statement)

  private async alterDatasetSort(caller: Principal, s: AlterDatasetSort, dryRun: boolean): Promise<StatementOutcome> {
    const dataset = (await this.access.writable(caller, s.dataset))!;
    const label = labelOf(s.dataset.value);
    if (dataset.kind === 'view' || dataset.kind === 'external') {
      throw statementError('WRONG_OBJECT_KIND', `${label} is ${KIND_WORDS[dataset.kind]}: it keeps no rows of its own, so it has no sort order (sort a view's rows with ORDER BY)`, s.dataset);
    }
    let sortOrder: { column: string; direction: 'asc' | 'desc' }[] | null = null;
    if (s.keys) {
      sortOrder = s.keys.map((key) => {
        const column = dataset.columns.find((c) => c.name.toLowerCase() === key.value.column.toLowerCase());
        if (!column) throw statementError('COLUMN_NOT_FOUND', `${label} has no column '${key.value.column.slice(0, 80)}' (its columns: ${dataset.columns.map((c) => c.name).join(', ').slice(0, 500)})`, key);
        return { column: column.name, direction: key.value.direction };
      });
    }
    const described = sortOrder ? sortOrder.map((k) => `${k.column} ${k.direction.toUpperCase()}`).join(', ') : '';
    if (dryRun) return { message: sortOrder ? `Would declare ${label} sorted by ${described}` : `Would remove the sort order of ${label}` };
    await at(s.span, () => this.deps.catalog.alterDataset(dataset.dataset_id, { properties: { sort_order: sortOrder } }, caller.identity, { expectedDefinitionVersion: dataset.definition_version }));
    return { message: sortOrder ? `${label} is declared sorted by ${described}` : `${label} has no declared sort order` };
  }

  // ── ALTER DATASET … COMPACT ──

  /**
   * Rewrites the small files of the dataset's current snapshot as a maintenance snapshot (same rows,
   * same order). Needs writer on the dataset, like any commit to it; the dry run says what it would do.
   */
  private async alterDatasetCompact(caller: Principal, s: AlterDatasetCompact, dryRun: boolean): Promise<StatementOutcome> {
    const { compactor } = this.deps;
    if (!compactor) throw statementError('STATEMENT_NOT_SUPPORTED', 'ALTER DATASET … COMPACT is not available in this process', s.action);
    const dataset = await this.writableDataset(caller, s);
    const label = `${dataset.workspace}.${dataset.collection}.${dataset.name}`;
    if (dryRun) {
      const plan = await compactor.planOf(dataset);
      const run = plan.files.length - plan.from;
      if (!plan.groups.some((g) => g.length > 1)) return { message: `Nothing to compact in ${label}: ${plan.files.length} file(s), none to merge` };
      return { message: `Would compact ${label}: ${run} of its ${plan.files.length} files into ${plan.outputs}` };
    }
    const r = await at(s.action, () => compactor.compact(dataset.dataset_id, caller.identity));
    if (r.status === 'nothing_to_compact') return { message: `Nothing to compact in ${label}: ${r.filesBefore} file(s), none to merge` };
    const folded = r.foldedCommits > 0 ? `, with ${r.foldedCommits} commit(s) that landed meanwhile` : '';
    return {
      message: `Compacted ${label}: ${r.filesBefore} files before, ${r.filesAfter} after (${r.filesRewritten} rewritten into ${r.filesWritten}, ${r.rows} rows${folded}); maintenance snapshot ${r.snapshotId}`,
    };
  }
}

/** What each workspace property means when OFF and when ON, for the statement's message. */
const PROPERTY_EFFECTS: Record<WorkspaceProperty, [string, string]> = {
  deletion_protection: ['it can be deleted', 'it cannot be deleted until its owner sets it OFF'],
  drop_protection: ['its datasets and collections can be dropped', 'its datasets and collections cannot be dropped'],
  history_protection: ['its snapshots can be expired and its tags moved or dropped', 'its snapshots cannot be expired nor its tags moved or dropped'],
};

/**
 * The values of a CREATE SECRET's options: literals as written, parameters from the request's
 * `parameters` only. Saved variables are never used for a secret (they are stored in clear), and a
 * parameter must be a string. Names compare case-insensitively, as for queries.
 */
export function resolveValues(s: CreateSecret, parameters: Record<string, ParamValue>): Record<string, string> {
  const lower = new Map(Object.entries(parameters).map(([k, v]) => [k.toLowerCase(), v]));
  const missing = s.options.filter((o) => o.value.kind === 'parameter' && !lower.has(o.value.name.toLowerCase()));
  if (missing.length > 0) {
    const names = [...new Set(missing.map((o) => (o.value.kind === 'parameter' ? `:${o.value.name}` : '')))];
    throw statementError(
      'PARAMETER_NOT_DEFINED',
      `The statement references parameter(s) with no value: ${names.join(', ')} (pass them in the request's parameters; a secret's values are never taken from saved variables)`,
      missing[0].value,
    );
  }
  const values: Record<string, string> = {};
  for (const option of s.options) {
    if (option.value.kind === 'literal') {
      values[option.key.value] = option.value.text;
      continue;
    }
    const value = lower.get(option.value.name.toLowerCase());
    if (typeof value !== 'string') {
      throw statementError('INVALID_PARAMETER', `:${option.value.name} must be a string for ${option.key.value} (it is ${value === null ? 'null' : `a ${typeof value}`})`, option.value);
    }
    values[option.key.value] = value;
  }
  return values;
}
