import type { Authorizer, Principal, Role } from '../../../core/authz/index.ts';
import type { Catalog, Dataset, SnapshotSelector } from '../../../core/catalog/index.ts';
import type { ErrorCode } from '../../../core/errors/index.ts';
import type { WorkspaceDirectory } from '../../accounts/index.ts';
import { at, labelOf, resourceOf, type DatasetAccess } from './access.ts';
import { statementError, type Span } from './errors.ts';
import type { AlterDatasetExpire, AlterDatasetRollback, DatasetName, DropDataset, Located, UndropDataset } from './parser.ts';

export interface LifecycleStatementDeps {
  authz: Authorizer;
  catalog: Catalog;
  /** A rollback is a commit: REFRESH ON COMMIT materialized views over the dataset are queued. */
  materializedViews?: { committedInBackground(datasetId: string): void };
}

/**
 * DROP DATASET, UNDROP DATASET, ALTER DATASET … ROLLBACK TO and … EXPIRE SNAPSHOTS (docs/lifecycle.md).
 * Roles: owner on the dataset to drop, undrop or expire (they end or restore data and history);
 * writer to roll back (a new snapshot like any overwrite; history kept). A dataset the caller cannot
 * read looks missing (404); a readable one without the role is 403.
 */
export class LifecycleStatements {
  constructor(
    private readonly deps: LifecycleStatementDeps,
    private readonly access: DatasetAccess,
  ) {}

  async dropDataset(caller: Principal, s: DropDataset, dryRun: boolean) {
    const label = labelOf(s.dataset.value);
    const dataset = await this.access.readable(caller, s.dataset);
    if (!dataset) {
      if (s.ifExists) return { message: `Dataset ${label} does not exist; nothing dropped` };
      throw notFound(label, s.dataset);
    }
    await this.require(caller, s.dataset, 'owner', 'DROP DATASET');
    if (dataset.kind === 'view' || (dataset.kind as string) === 'materialized_view') {
      const what = dataset.kind === 'view' ? 'VIEW' : 'MATERIALIZED VIEW';
      throw statementError('WRONG_OBJECT_KIND', `${label} is a ${what.toLowerCase()}: use DROP ${what} ${label}`, s.dataset);
    }
    const until = new Date(Date.now() + this.deps.catalog.settings.undropRetentionMs).toISOString();
    if (dryRun) {
      const namespace = await this.deps.catalog.getNamespace(dataset.workspace);
      if (namespace.guards.drop_protection) throw statementError('GUARDED', `Workspace '${dataset.workspace}' refuses dropping datasets (drop_protection)`, s.span);
      return { message: `Would drop dataset ${label} (restorable with UNDROP DATASET ${label} for ${hours(this.deps.catalog.settings.undropRetentionMs)})` };
    }
    await at(s.span, () => this.deps.catalog.dropDataset(dataset.dataset_id, caller.identity));
    return { message: `Dataset ${label} dropped; UNDROP DATASET ${label} restores it until ${until}` };
  }

  async undropDataset(caller: Principal, s: UndropDataset, dryRun: boolean) {
    const label = labelOf(s.dataset.value);
    const resource = resourceOf(s.dataset.value);
    const dropped = await this.deps.catalog.findRestorableDataset(s.dataset.value);
    const window = hours(this.deps.catalog.settings.undropRetentionMs);
    const nothing = () => statementError('DATASET_NOT_FOUND', `No dropped dataset ${label} can be restored (none you may read was dropped within the last ${window})`, s.dataset);
    if (!dropped || !(await at(s.dataset, () => this.deps.authz.can(caller, 'reader', resource)))) throw nothing();
    await this.require(caller, s.dataset, 'owner', 'UNDROP DATASET');
    if (dryRun) {
      if (await this.deps.catalog.findDataset(s.dataset.value)) {
        throw statementError('ALREADY_EXISTS', `Dataset ${label} exists again (created after the drop): drop or rename it before UNDROP`, s.dataset);
      }
      return { message: `Would restore dataset ${label} (dropped at ${dropped.dropped_at?.toISOString()} by ${dropped.dropped_by})` };
    }
    const restored = await at(s.dataset, () => this.deps.catalog.undropDataset(s.dataset.value));
    return { message: `Dataset ${label} restored (dropped at ${dropped.dropped_at?.toISOString()} by ${dropped.dropped_by}); its snapshots and tags are back` };
  }

  async rollback(caller: Principal, s: AlterDatasetRollback, dryRun: boolean) {
    const label = labelOf(s.dataset.value);
    const dataset = await this.versioned(caller, s.dataset, 'writer', 'ROLLBACK');
    const target: SnapshotSelector = s.target.value.kind === 'id' ? { kind: 'id', snapshotId: s.target.value.snapshotId } : { kind: 'tag', name: s.target.value.name };
    const span = (code: ErrorCode): Span => (['SNAPSHOT_NOT_FOUND', 'TAG_NOT_FOUND', 'SNAPSHOT_EXPIRED'].includes(code) ? s.target : s.span);
    const result = await at(span, () =>
      this.deps.catalog.rollbackDataset(dataset.dataset_id, target, caller.identity, { expectedParent: dataset.current_snapshot_id, dryRun }),
    );
    const rows = Number(result.target.total_records);
    if (result.unchanged) return { message: `Dataset ${label} is at snapshot ${result.target.snapshot_id} already; nothing changed` };
    if (dryRun) return { message: `Would roll back dataset ${label} to snapshot ${result.target.snapshot_id} (${rows} rows) as a new snapshot` };
    this.deps.materializedViews?.committedInBackground(dataset.dataset_id);
    return { message: `Dataset ${label} rolled back to snapshot ${result.target.snapshot_id}: new snapshot ${result.snapshot!.snapshot_id} (${rows} rows)` };
  }

  async expire(caller: Principal, s: AlterDatasetExpire, dryRun: boolean) {
    const label = labelOf(s.dataset.value);
    const dataset = await this.versioned(caller, s.dataset, 'owner', 'EXPIRE SNAPSHOTS');
    const result = await at(s.span, () =>
      this.deps.catalog.expireSnapshots(dataset.dataset_id, { olderThanMs: s.olderThan.value, retainLast: s.retainLast?.value ?? 0, dryRun }),
    );
    const { tagged, leased, retained } = result.kept;
    const kept = `kept ${tagged} tagged, ${leased} in use by running readers, ${retained} current or retained`;
    const files = `${result.filesQueued} file(s), ${result.bytesQueued} bytes, ${dryRun ? 'would be' : ''} queued for deletion after ${minutes(this.deps.catalog.settings.fileGraceMs)}`.replace('  ', ' ');
    const n = result.expired.length;
    return { message: `${dryRun ? 'Would expire' : 'Expired'} ${n} snapshot${n === 1 ? '' : 's'} of ${label} (${kept}); ${files}` };
  }

  // ── shared ──

  private async require(caller: Principal, name: Located<DatasetName>, role: Role, what: string): Promise<void> {
    if (!(await at(name, () => this.deps.authz.can(caller, role, resourceOf(name.value))))) {
      throw statementError('PERMISSION_DENIED', `${what} needs the ${role} role on ${labelOf(name.value)}`, name);
    }
  }

  /** A dataset with snapshots (a table or a materialized view) the caller holds `role` on. */
  private async versioned(caller: Principal, name: Located<DatasetName>, role: Role, what: string): Promise<Dataset> {
    const label = labelOf(name.value);
    const dataset = await this.access.readable(caller, name);
    if (!dataset) throw notFound(label, name);
    await this.require(caller, name, role, what);
    if (dataset.kind === 'external') throw statementError('VERSIONING_NOT_SUPPORTED', `Dataset ${label} is listed from an external catalog; it has no snapshots`, name);
    if (dataset.kind === 'view') throw statementError('WRONG_OBJECT_KIND', `${label} is a view: it has no snapshots to ${what === 'ROLLBACK' ? 'roll back' : 'expire'}`, name);
    return dataset;
  }
}

const notFound = (label: string, span: Span) => statementError('DATASET_NOT_FOUND', `Dataset ${label} does not exist, or you may not read it`, span);
const hours = (ms: number) => (ms % 86_400_000 === 0 ? `${ms / 86_400_000} day(s)` : `${Math.round((ms / 3_600_000) * 100) / 100} hour(s)`);
const minutes = (ms: number) => (ms >= 60_000 ? `${Math.round(ms / 60_000)} minute(s)` : `${Math.round(ms / 1000)} second(s)`);
