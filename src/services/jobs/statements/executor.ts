import { formatPattern, type Authorizer, type Principal, type Resource } from '../../../core/authz/index.ts';
import type { Catalog, Dataset, SnapshotSelector } from '../../../core/catalog/index.ts';
import { assertLive, requireLiveWorkspace, type WorkspaceDirectory } from '../../accounts/index.ts';
import type { PolicyChange, PolicyPlanner, PolicyRow } from '../../policy/index.ts';
import type { ParamValue } from '../types.ts';
import { AppError, isAppError, type ErrorCode } from '../../../core/errors/index.ts';
import { StatementError, statementError, type Span } from './errors.ts';
import type { AlterWorkspace, CreateMaterializedView, CreateSecret, CreateTag, DropMaterializedView, DropTag, GrantStatement, LakeportStatement, RefreshMaterializedView, RefreshPolicy } from './parser.ts';
import { appError, CORE_ERRORS } from '../../../core/errors/index.ts';
import { JOBS_ERRORS } from '../errors.ts';
import { normalizeType, Sandbox, SandboxQueryError, tokenizeSql } from '../../../core/engine/index.ts';
import type { BlobStore } from '../../../core/storage/index.ts';
import type { QueryPlanner } from '../planner.ts';
import type { JobRow } from '../repo.ts';
import type { MaterializedViews } from '../mviews/service.ts';
import type { SecretStore } from './secret-store.ts';
import { checkSecretShape, checkSecretValues, type HostResolver } from './secret-types.ts';

export interface ExecutorDeps {
  authz: Authorizer;
  catalog: Catalog;
  policies: PolicyPlanner;
  workspaces: WorkspaceDirectory;
  secrets: SecretStore;
  resolveHost: HostResolver;
  /** Materialized views: their select is planned as a job would be; refreshes are queued through `views`. */
  planner: QueryPlanner;
  views: MaterializedViews;
  blobs: BlobStore;
}

/** What a statement did (or, checked without running, would do): the one-row result of its job. */
export interface StatementOutcome {
  message: string;
  /** A job the statement answers with instead of a finished one of its own (REFRESH: the refresh job). */
  job?: JobRow;
}

/** A refresh policy as CREATE MATERIALIZED VIEW writes it (and $metadata shows it). */
export function describeRefresh(policy: RefreshPolicy): string {
  if (policy.mode === 'manual') return 'MANUAL';
  if (policy.mode === 'on_commit') return 'ON COMMIT';
  const units: [number, string][] = [[604_800_000, 'week'], [86_400_000, 'day'], [3_600_000, 'hour'], [60_000, 'minute'], [1_000, 'second']];
  const [size, unit] = units.find(([ms]) => policy.everyMs % ms === 0) ?? [1_000, 'second'];
  const n = Math.round(policy.everyMs / size);
  return `EVERY ${n} ${unit}${n === 1 ? '' : 's'}`;
}

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
  private readonly views: MaterializedViewStatements;

  constructor(private readonly deps: ExecutorDeps) {
    this.views = new MaterializedViewStatements(deps, (span, fn) => this.at(span, fn));
  }

  private createMaterializedView(caller: Principal, s: CreateMaterializedView, dryRun: boolean) {
    return this.views.create(caller, s, dryRun);
  }

  private refreshMaterializedView(caller: Principal, s: RefreshMaterializedView, dryRun: boolean) {
    return this.views.refresh(caller, s, dryRun);
  }

  private dropMaterializedView(caller: Principal, s: DropMaterializedView, dryRun: boolean) {
    return this.views.drop(caller, s, dryRun);
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
      case 'create_materialized_view':
        return this.createMaterializedView(caller, statement, options.dryRun);
      case 'refresh_materialized_view':
        return this.refreshMaterializedView(caller, statement, options.dryRun);
      case 'drop_materialized_view':
        return this.dropMaterializedView(caller, statement, options.dryRun);
    }
  }

  // ── shared ──

  /** Runs `fn`; an error of another service below 500 gains a span (`span`, or the one it names for the error's code). */
  private async at<T>(span: Span | ((code: ErrorCode) => Span), fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof AppError && error.status < 500) {
        throw new StatementError(error, typeof span === 'function' ? span(error.code) : span);
      }
      throw error;
    }
  }

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

    // Owner on the whole workspace (ws.*) is what "ALTER on the workspace" means here.
    if (!(await this.deps.authz.can(caller, 'owner', { workspace }))) {
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
    await this.at(s.workspace, async () => assertLive(record));
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
    return this.at(StatementExecutor.grantSpan(s), () => this.deps.policies.plan(caller, s.pattern.value.workspace, change));
  }

  private applyChange(caller: Principal, s: GrantStatement, change: PolicyChange) {
    return this.at(StatementExecutor.grantSpan(s), () => this.deps.policies.execute(caller, s.pattern.value.workspace, change));
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
  private async writableDataset(caller: Principal, s: CreateTag | DropTag): Promise<Dataset> {
    const ref = s.dataset.value;
    const label = `${ref.workspace}.${ref.collection}.${ref.dataset}`;
    const resource: Resource = { workspace: ref.workspace, collection: ref.collection, dataset: ref.dataset };
    const dataset = await this.deps.catalog.findDataset(ref);
    if (!dataset || !(await this.deps.authz.can(caller, 'reader', resource))) {
      throw statementError('DATASET_NOT_FOUND', `Dataset ${label} does not exist, or you may not read it`, s.dataset);
    }
    await this.at(s.dataset, () => this.deps.authz.require(caller, 'writer', resource));
    if (dataset.kind === 'external') {
      throw statementError('VERSIONING_NOT_SUPPORTED', `Dataset ${label} is listed from an external catalog; it has no snapshots to tag`, s.dataset);
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
    const snapshot = await this.at(s.version ?? s.dataset, () => this.deps.catalog.resolveSnapshot(dataset.dataset_id, selector));
    if (dryRun) {
      const tags = await this.deps.catalog.listTags(dataset.dataset_id);
      const existing = tags.find((t) => t.name === s.name.value);
      if (existing) throw statementError('TAG_EXISTS', `Tag '${existing.name}' already exists (snapshot ${existing.snapshot_id})`, s.name);
      return { message: `Would create tag ${s.name.value} on ${label} at snapshot ${snapshot.snapshot_id}` };
    }
    const tag = await this.at(s.name, () => this.deps.catalog.createTag(dataset.dataset_id, s.name.value, snapshot.snapshot_id, caller.identity));
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
      const tag = await this.at(s.name, () => this.deps.catalog.deleteTag(dataset.dataset_id, s.name.value));
      return { message: `Tag ${tag.name} dropped from ${label} (it named snapshot ${tag.snapshot_id})` };
    } catch (error) {
      if (s.ifExists && error instanceof StatementError && isAppError(error.http, 'TAG_NOT_FOUND')) return missing;
      throw error;
    }
  }

  // ── ALTER WORKSPACE ──

  private async alterWorkspace(caller: Principal, s: AlterWorkspace, dryRun: boolean): Promise<StatementOutcome> {
    const workspace = s.workspace.value;
    if (!(await this.deps.authz.can(caller, 'owner', { workspace }))) {
      throw statementError('PERMISSION_DENIED', `Only an owner of the whole workspace (${workspace}.*) may change its deletion_protection`, s.workspace);
    }
    await this.at(s.workspace, () => requireLiveWorkspace(this.deps.workspaces, workspace));
    await this.requireNamespace(workspace, s.workspace);
    const state = s.value.value ? 'ON' : 'OFF';
    const effect = s.value.value ? 'it cannot be deleted until its owner sets it OFF' : 'it can be deleted';
    if (dryRun) return { message: `Would set deletion_protection of workspace ${workspace} ${state}` };
    await this.at(s.span, () => this.deps.catalog.setNamespaceProperties(workspace, { deletion_protection: s.value.value }));
    return { message: `Workspace ${workspace}: deletion_protection is ${state} (${effect})` };
  }
}

// ── materialized views ──

/** The span of the word at `position` of the select, in the statement's text. */
function selectSpan(s: CreateMaterializedView, position: number | undefined): Span {
  if (position === undefined) return s.select;
  const match = /^[^\s,;()]+/.exec(s.select.value.slice(position));
  return { start: s.select.start + position, end: s.select.start + position + (match ? match[0].length : 1) };
}

/** A planning refusal (a job's failure code) as a statement's error: its HTTP status where the code has one, else 400. */
function planError(code: string, message: string, span: Span): StatementError {
  const statuses: Record<string, number> = { ...CORE_ERRORS, ...JOBS_ERRORS };
  return new StatementError(new AppError(statuses[code] ?? 400, code as ErrorCode, message), span);
}

const label = (d: { workspace: string; collection: string; dataset?: string; name?: string }) => `${d.workspace}.${d.collection}.${d.dataset ?? d.name}`;

export class MaterializedViewStatements {
  constructor(
    private readonly deps: ExecutorDeps,
    private readonly at: <T>(span: Span, fn: () => Promise<T>) => Promise<T>,
  ) {}

  /** A materialized view the caller may read (else 404, as if missing), of the right kind, that the caller may write. */
  private async writableView(caller: Principal, name: CreateMaterializedView['name'], ifExists = false): Promise<Dataset | undefined> {
    const ref = name.value;
    const dataset = await this.deps.catalog.findDataset(ref);
    if (!dataset || !(await this.deps.authz.can(caller, 'reader', ref))) {
      if (ifExists) return undefined;
      throw statementError('DATASET_NOT_FOUND', `Materialized view ${label(ref)} does not exist, or you may not read it`, name);
    }
    if (dataset.kind !== 'materialized_view') throw statementError('NOT_A_MATERIALIZED_VIEW', `${label(ref)} is a ${dataset.kind}, not a materialized view`, name);
    await this.at(name, () => this.deps.authz.require(caller, 'writer', ref));
    await this.at(name, () => requireLiveWorkspace(this.deps.workspaces, ref.workspace));
    return dataset;
  }

  async create(caller: Principal, s: CreateMaterializedView, dryRun: boolean): Promise<StatementOutcome> {
    const ref = s.name.value;
    const name = label(ref);
    if (!(await this.deps.authz.can(caller, 'writer', ref))) {
      throw statementError('PERMISSION_DENIED', `You may not create ${name}: CREATE MATERIALIZED VIEW needs the writer role on it`, s.name);
    }
    await this.at(s.name, () => requireLiveWorkspace(this.deps.workspaces, ref.workspace));
    if (!(await this.deps.catalog.findNamespace(ref.workspace))) throw statementError('WORKSPACE_NOT_FOUND', `Workspace '${ref.workspace}' does not exist`, s.name);
    const existing = await this.deps.catalog.findDataset(ref);
    if (existing && existing.kind !== 'materialized_view') {
      throw statementError('NOT_A_MATERIALIZED_VIEW', `${name} exists and is a ${existing.kind}; CREATE OR REPLACE MATERIALIZED VIEW replaces only materialized views`, s.name);
    }
    if (existing && !s.orReplace) throw new StatementError(appError('ALREADY_EXISTS', `Materialized view ${name} already exists: use CREATE OR REPLACE MATERIALIZED VIEW to change it`), s.name);

    // The select, planned for the caller as a job would be (positions are in the statement's text).
    const placeholder = tokenizeSql(s.select.value).find((t) => t.kind === 'placeholder' || t.kind === 'parameter');
    if (placeholder) {
      throw statementError('INVALID_MATERIALIZED_VIEW', "A materialized view's definition takes no parameters: it is run again by every refresh", selectSpan(s, placeholder.start));
    }
    const prepared = await this.deps.planner.prepare(caller, s.select.value, {}, { withFiles: false });
    if (!prepared.ok) throw planError(prepared.error.code, prepared.error.message, selectSpan(s, prepared.error.position));
    const { query } = prepared;
    if (query.external.length > 0) {
      throw statementError('INVALID_MATERIALIZED_VIEW', 'A materialized view reads datasets only, not private storage (READ_* with credentials)', selectSpan(s, query.external[0].position));
    }
    if (query.datasets.length === 0) throw statementError('INVALID_MATERIALIZED_VIEW', 'A materialized view reads at least one dataset', s.select);
    if (existing && query.datasets.some((d) => d.dataset_id === existing.dataset_id)) {
      throw statementError('INVALID_MATERIALIZED_VIEW', `A materialized view cannot read itself (${name})`, s.select);
    }
    const sandbox = await Sandbox.open(query.views, { threads: 1, memoryLimit: '256MB' });
    let described: { name: string; type: string }[];
    try {
      described = await sandbox.describe(query.sql, query.params);
    } catch (error) {
      if (!(error instanceof SandboxQueryError)) throw error;
      const position = error.position === undefined ? undefined : query.toOriginal(error.position);
      throw planError('QUERY_ERROR', error.message, selectSpan(s, position));
    } finally {
      sandbox.close();
    }
    // As a Parquet file stores them: what the refreshes write (HUGEINT as DOUBLE, TIMESTAMP_S/_MS as TIMESTAMP).
    const stored = (type: string) => (/^U?HUGEINT$/.test(type) ? 'DOUBLE' : /^TIMESTAMP_(S|MS)$/.test(type) ? 'TIMESTAMP' : type);
    const columns = described.map((c) => ({ name: c.name, type: normalizeType(stored(c.type)) ?? stored(c.type), nullable: true }));
    const policy = s.refresh?.value ?? { mode: 'manual' as const };
    const sources = query.datasets.map((d) => d.label);
    const properties = { materialized_view: { definition: s.select.value, refresh: describeRefresh(policy), sources } };
    if (dryRun) {
      return { message: `Would ${existing ? 'replace' : 'create'} materialized view ${name} (${columns.map((c) => c.name).join(', ')}) over ${sources.join(', ')}, refreshed ${describeRefresh(policy)}` };
    }
    const dataset = existing
      ? await this.at(s.name, () => this.deps.catalog.alterDataset(existing.dataset_id, { columns, description: s.comment?.value ?? null, properties }, caller.identity))
      : await this.at(s.name, () => this.deps.catalog.createDataset(ref, { kind: 'materialized_view', columns, description: s.comment?.value ?? null, properties }, caller.identity));
    await this.deps.views.repo.put({
      dataset_id: dataset.dataset_id,
      definition: s.select.value,
      refresh_mode: policy.mode,
      refresh_every_ms: policy.mode === 'every' ? policy.everyMs : null,
      source_ids: query.datasets.map((d) => d.dataset_id),
      sources,
      owner: caller.identity,
      owner_permissions: caller.permissions,
    });
    const { job } = await this.deps.views.enqueue(dataset.dataset_id, name, 'create', caller);
    return { message: `Materialized view ${name} ${existing ? 'replaced' : 'created'} (refreshed ${describeRefresh(policy)}); its first refresh is job ${job.execution_id}` };
  }

  async refresh(caller: Principal, s: RefreshMaterializedView, dryRun: boolean): Promise<StatementOutcome> {
    const dataset = (await this.writableView(caller, s.name))!;
    const name = label(dataset);
    if (dryRun) {
      const running = await this.deps.views.repo.inProgress(dataset.dataset_id);
      return { message: running ? `A refresh of ${name} is already ${running.status} (job ${running.execution_id})` : `Would queue a refresh of ${name}` };
    }
    const { job } = await this.deps.views.enqueue(dataset.dataset_id, name, 'manual', caller);
    return { message: `Refresh of ${name}: job ${job.execution_id}`, job };
  }

  async drop(caller: Principal, s: DropMaterializedView, dryRun: boolean): Promise<StatementOutcome> {
    const dataset = await this.writableView(caller, s.name, s.ifExists);
    if (!dataset) return { message: `Materialized view ${label(s.name.value)} does not exist; nothing dropped` };
    const name = label(dataset);
    const namespace = await this.deps.catalog.findNamespace(dataset.workspace);
    if (namespace?.guards.drop_protection) {
      throw statementError('GUARDED', `Workspace '${dataset.workspace}' refuses dropping datasets and views (drop_protection): cannot drop ${name}`, s.span);
    }
    if (dryRun) return { message: `Would drop materialized view ${name} with its snapshots` };
    // Its refresh in progress is cancelled first: a refresh checks that before it commits.
    await this.deps.views.repo.cancelRefreshes(dataset.dataset_id);
    const paths = await this.at(s.span, () => this.deps.catalog.dropDataset(dataset.dataset_id));
    await this.deps.views.repo.delete(dataset.dataset_id);
    for (const key of paths) await this.deps.blobs.delete(key).catch(() => undefined);
    return { message: `Materialized view ${name} dropped` };
  }
}

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
