import type { Principal } from '../../../core/authz/index.ts';
import type { Dataset } from '../../../core/catalog/index.ts';
import { AppError, appError, CORE_ERRORS, type ErrorCode } from '../../../core/errors/index.ts';
import { normalizeType, Sandbox, SandboxQueryError, tokenizeSql } from '../../../core/engine/index.ts';
import { JOBS_ERRORS } from '../errors.ts';
import { StatementError, statementError, type Span } from './errors.ts';
import type { Authorizer } from '../../../core/authz/index.ts';
import type { Catalog } from '../../../core/catalog/index.ts';
import type { MaterializedViews } from '../mviews/service.ts';
import type { QueryPlanner } from '../planner.ts';
import { at, type DatasetAccess } from './access.ts';
import type { StatementOutcome } from './outcome.ts';
import type { CreateMaterializedView, DropMaterializedView, RefreshMaterializedView, RefreshPolicy } from './parser.ts';

/** A refresh policy as CREATE MATERIALIZED VIEW writes it (and $metadata shows it). */
export function describeRefresh(policy: RefreshPolicy): string {
  if (policy.mode === 'manual') return 'MANUAL';
  if (policy.mode === 'on_commit') return 'ON COMMIT';
  const units: [number, string][] = [[604_800_000, 'week'], [86_400_000, 'day'], [3_600_000, 'hour'], [60_000, 'minute'], [1_000, 'second']];
  const [size, unit] = units.find(([ms]) => policy.everyMs % ms === 0) ?? [1_000, 'second'];
  const n = Math.round(policy.everyMs / size);
  return `EVERY ${n} ${unit}${n === 1 ? '' : 's'}`;
}

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

export interface MaterializedViewStatementDeps {
  authz: Authorizer;
  catalog: Catalog;
  /** The select is planned as the caller's query job would be. */
  planner: QueryPlanner;
  /** Where refreshes are queued. */
  materializedViews: MaterializedViews;
}

/**
 * CREATE [OR REPLACE] / REFRESH / DROP MATERIALIZED VIEW (docs/materialized-views.md): writer on the
 * view's name; the select is planned for the caller as a job would be; refreshes are jobs.
 */
export class MaterializedViewStatements {
  constructor(
    private readonly deps: MaterializedViewStatementDeps,
    private readonly access: DatasetAccess,
  ) {}

  /** A materialized view the caller may read (else 404, as if missing), of the right kind, that the caller may write. */
  private writableView(caller: Principal, name: CreateMaterializedView['name'], ifExists = false): Promise<Dataset | undefined> {
    const check = (dataset: Dataset) => {
      if (dataset.kind !== 'materialized_view') throw statementError('WRONG_OBJECT_KIND', `${label(name.value)} is a ${dataset.kind}, not a materialized view`, name);
    };
    return this.access.writable(caller, name, { what: 'Materialized view', ifExists, check });
  }

  async create(caller: Principal, s: CreateMaterializedView, dryRun: boolean): Promise<StatementOutcome> {
    const ref = s.name.value;
    const name = label(ref);
    if (!(await at(s.name, () => this.deps.authz.can(caller, 'writer', ref)))) {
      throw statementError('PERMISSION_DENIED', `You may not create ${name}: CREATE MATERIALIZED VIEW needs the writer role on it`, s.name);
    }
    if (!(await this.deps.catalog.findNamespace(ref.workspace))) throw statementError('WORKSPACE_NOT_FOUND', `Workspace '${ref.workspace}' does not exist`, s.name);
    const existing = await this.deps.catalog.findDataset(ref);
    if (existing && existing.kind !== 'materialized_view') {
      throw statementError('WRONG_OBJECT_KIND', `${name} exists and is a ${existing.kind}; CREATE OR REPLACE MATERIALIZED VIEW replaces only materialized views`, s.name);
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
      ? await at(s.name, () => this.deps.catalog.alterDataset(existing.dataset_id, { columns, description: s.comment?.value ?? null, properties }, caller.identity))
      : await at(s.name, () => this.deps.catalog.createDataset(ref, { kind: 'materialized_view', columns, description: s.comment?.value ?? null, properties }, caller.identity));
    await this.deps.materializedViews.repo.put({
      dataset_id: dataset.dataset_id,
      definition: s.select.value,
      refresh_mode: policy.mode,
      refresh_every_ms: policy.mode === 'every' ? policy.everyMs : null,
      source_ids: query.datasets.map((d) => d.dataset_id),
      sources,
      owner: caller.identity,
      owner_permissions: caller.permissions,
    });
    const { job } = await this.deps.materializedViews.enqueue(dataset.dataset_id, name, 'create', caller);
    return { message: `Materialized view ${name} ${existing ? 'replaced' : 'created'} (refreshed ${describeRefresh(policy)}); its first refresh is job ${job.execution_id}` };
  }

  async refresh(caller: Principal, s: RefreshMaterializedView, dryRun: boolean): Promise<StatementOutcome> {
    const dataset = (await this.writableView(caller, s.name))!;
    const name = label(dataset);
    if (dryRun) {
      const running = await this.deps.materializedViews.repo.inProgress(dataset.dataset_id);
      return { message: running ? `A refresh of ${name} is already ${running.status} (job ${running.execution_id})` : `Would queue a refresh of ${name}` };
    }
    const { job } = await this.deps.materializedViews.enqueue(dataset.dataset_id, name, 'manual', caller);
    return { message: `Refresh of ${name}: job ${job.execution_id}`, job };
  }

  async drop(caller: Principal, s: DropMaterializedView, dryRun: boolean): Promise<StatementOutcome> {
    const dataset = await this.writableView(caller, s.name, s.ifExists);
    if (!dataset) return { message: `Materialized view ${label(s.name.value)} does not exist; nothing dropped` };
    const name = label(dataset);
    if (dryRun) {
      const namespace = await this.deps.catalog.findNamespace(dataset.workspace);
      if (namespace?.guards.drop_protection) {
        throw statementError('GUARDED', `Workspace '${dataset.workspace}' refuses dropping datasets and views (drop_protection): cannot drop ${name}`, s.span);
      }
      return { message: `Would drop materialized view ${name} with its snapshots (restorable with UNDROP DATASET ${name})` };
    }
    // Its refresh in progress is cancelled first: a refresh checks that before it commits. The drop is
    // soft (docs/lifecycle.md): UNDROP DATASET brings the view back with its definition and schedule.
    await this.deps.materializedViews.repo.cancelRefreshes(dataset.dataset_id);
    await at(s.span, () => this.deps.catalog.dropDataset(dataset.dataset_id, caller.identity));
    return { message: `Materialized view ${name} dropped; UNDROP DATASET ${name} restores it within the undrop window` };
  }
}
