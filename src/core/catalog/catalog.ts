import { sql } from 'kysely';
import { newId } from '../crypto/random.ts';
import { selectAsJson, type Db, type DatasetProperties } from '../db/index.ts';
import { appError } from '../errors/index.ts';
import { KEPT_READ_TTL_MS, KeptReads } from '../kept.ts';
import { commitSnapshotIn } from './commit.ts';
import { replaceExternalIn, type ExternalDatasetEntry, type ExternalSyncResult } from './external.ts';
import { checkDescription, checkKind, checkProperties, mergeDatasetProperties, normalizeColumns, sameJson } from './definition.ts';
import { guarded, mergeProperties, type NamespaceGuards, type NamespacePropertiesPatch } from './guards.ts';
import { datasetsWithSmallFiles, releaseLease, renewLease, takeLease } from './maintenance.ts';
import { formatRef, normalizeName, normalizeRef, normalizeTagName, type DatasetRef } from './names.ts';
import {
  datasetLabel,
  describeKey,
  findDataset,
  findNamespace,
  lockDatasetsAndListPaths,
  requireCollection,
  requireDataset,
  requireNamespace,
  requireLiveSnapshot,
  requireSnapshot,
  requireVersionedDataset,
  withGuards,
} from './queries.ts';
import {
  dropDatasetIn,
  dueDeletions,
  expireSnapshotsIn,
  filesOfSnapshot,
  filesOfSnapshots,
  findRestorable,
  leaseSnapshotsIn,
  purgeDroppedIn,
  rollbackIn,
  undropDatasetIn,
  type ExpiryOptions,
  type ExpiryResult,
} from './lifecycle.ts';
import { resolveSnapshotIn } from './resolve.ts';
import type { SnapshotSelector } from './selectors.ts';
import type {
  Collection,
  CommitInput,
  DataFile,
  Dataset,
  DatasetDefinition,
  DatasetKey,
  DatasetPatch,
  Executor,
  Namespace,
  Snapshot,
  Tag,
} from './types.ts';

export interface LifecycleSettings {
  /** How long a dropped dataset stays restorable by UNDROP (LAKEPORT_UNDROP_RETENTION_HOURS, default 7 days). */
  undropRetentionMs: number;
  /** How long a file no snapshot needs waits before its blob is deleted (at least the job timeout). */
  fileGraceMs: number;
}

/** A workspace's datasets, or those of some of its collections. */
export interface DatasetScope {
  workspace: string;
  collections?: readonly string[];
}

export const DEFAULT_LIFECYCLE: LifecycleSettings = { undropRetentionMs: 7 * 24 * 3_600_000, fileGraceMs: 3_600_000 };

/**
 * The table format: namespaces (one per workspace), collections, datasets, their snapshots and data
 * files, and tags. Every write that touches more than one row runs in one transaction.
 */
export class Catalog {
  private readonly lifecycle: LifecycleSettings;
  /** Each workspace's live datasets, for listings asked on every request (`listDatasets(…, { kept: true })`). */
  private readonly keptListings: KeptReads<string, Dataset[]>;

  constructor(
    private readonly db: Db,
    lifecycle: Partial<LifecycleSettings> = {},
  ) {
    this.lifecycle = { ...DEFAULT_LIFECYCLE, ...lifecycle };
    this.keptListings = new KeptReads({
      ttlMs: KEPT_READ_TTL_MS,
      max: 1_000,
      tables: { writes: db.writes, names: ['catalog_namespaces', 'catalog_collections', 'catalog_datasets'] },
    });
  }

  /** How long dropped datasets stay restorable and expired files wait before deletion. */
  get settings(): LifecycleSettings {
    return this.lifecycle;
  }

  private transaction<T>(fn: (trx: Executor) => Promise<T>): Promise<T> {
    return this.db.kysely.transaction().execute(fn);
  }

  // ── namespaces ──────────────────────────────────────────────────────────────

  /**
   * Claims a workspace name for a billing account. A repeat claim by the same account returns the
   * namespace (`created: false`); another account's claim is 409 NAMESPACE_CLAIMED.
   */
  async claimNamespace(workspace: string, billingAccount: string): Promise<{ namespace: Namespace; created: boolean }> {
    const name = normalizeName('workspace', workspace);
    if (typeof billingAccount !== 'string' || !billingAccount) throw appError('BAD_REQUEST', 'A billing account is required');
    // A namespace dropped between the insert and the read is claimed again on the next pass.
    for (;;) {
      const inserted = await this.db.kysely
        .insertInto('catalog_namespaces')
        .values({ workspace: name, billing_account: billingAccount, properties: '{}' })
        .onConflict((oc) => oc.column('workspace').doNothing())
        .returningAll()
        .executeTakeFirst();
      if (inserted) return { namespace: withGuards(inserted), created: true };
      const existing = await findNamespace(this.db.kysely, name);
      if (!existing) continue;
      if (existing.billing_account !== billingAccount) {
        throw appError('NAMESPACE_CLAIMED', `Workspace name '${name}' is already claimed by another billing account`);
      }
      return { namespace: existing, created: false };
    }
  }

  /** 404 NAMESPACE_NOT_FOUND when the workspace has no namespace. */
  async getNamespace(workspace: string): Promise<Namespace> {
    return requireNamespace(this.db.kysely, normalizeName('workspace', workspace));
  }

  async findNamespace(workspace: string): Promise<Namespace | undefined> {
    return findNamespace(this.db.kysely, normalizeName('workspace', workspace));
  }

  async listNamespaces(billingAccount?: string): Promise<Namespace[]> {
    let query = this.db.kysely.selectFrom('catalog_namespaces').selectAll().orderBy('workspace');
    if (billingAccount !== undefined) query = query.where('billing_account', '=', billingAccount);
    const rows = await query.execute();
    return rows.map(withGuards);
  }

  /** Merges `patch` into the properties (`null` returns one to its default); the result carries the resolved guards. */
  async setNamespaceProperties(workspace: string, patch: NamespacePropertiesPatch): Promise<Namespace> {
    const name = normalizeName('workspace', workspace);
    return this.transaction(async (trx) => {
      const namespace = await requireNamespace(trx, name, 'update');
      const properties = mergeProperties(namespace.properties, patch);
      const row = await trx
        .updateTable('catalog_namespaces')
        .set({ properties: JSON.stringify(properties) })
        .where('workspace', '=', name)
        .returningAll()
        .executeTakeFirstOrThrow();
      return withGuards(row);
    });
  }

  /**
   * Deletes the namespace and everything in it, returning the storage paths of all its data files
   * for the caller to delete. 423 GUARDED under deletion_protection, unless `force` (a purge of a
   * workspace whose deletion was already allowed).
   */
  async dropNamespace(workspace: string, options: { force?: boolean } = {}): Promise<string[]> {
    const name = normalizeName('workspace', workspace);
    return this.transaction(async (trx) => {
      const namespace = await requireNamespace(trx, name, 'update');
      if (namespace.guards.deletion_protection && !options.force) throw guarded(`Workspace '${name}' is locked (deletion_protection)`);
      const paths = await lockDatasetsAndListPaths(trx, { workspace: name });
      await trx.deleteFrom('catalog_namespaces').where('workspace', '=', name).execute();
      return paths;
    });
  }

  // ── collections ─────────────────────────────────────────────────────────────

  /** 409 ALREADY_EXISTS when the collection exists. */
  async createCollection(workspace: string, name: string, author: string): Promise<Collection> {
    const { collection, created } = await this.ensureCollection(workspace, name, author);
    if (!created) throw appError('ALREADY_EXISTS', `Collection '${collection.workspace}.${collection.name}' already exists`);
    return collection;
  }

  /** Creates the collection unless it exists; either way returns it. */
  async ensureCollection(workspace: string, name: string, author: string): Promise<{ collection: Collection; created: boolean }> {
    const ws = normalizeName('workspace', workspace);
    const coll = normalizeName('collection', name);
    return this.transaction((trx) => ensureCollectionIn(trx, ws, coll, author));
  }

  async listCollections(workspace: string): Promise<Collection[]> {
    const ws = normalizeName('workspace', workspace);
    await requireNamespace(this.db.kysely, ws);
    return this.db.kysely.selectFrom('catalog_collections').selectAll().where('workspace', '=', ws).orderBy('name').execute();
  }

  /** Drops the collection and its datasets, returning their data files' paths. 423 GUARDED under drop_protection. */
  async dropCollection(workspace: string, name: string): Promise<string[]> {
    const ws = normalizeName('workspace', workspace);
    const coll = normalizeName('collection', name);
    return this.transaction(async (trx) => {
      const namespace = await requireNamespace(trx, ws, 'share');
      await requireCollection(trx, ws, coll, 'update');
      if (namespace.guards.drop_protection) throw guarded(`Workspace '${ws}' refuses dropping collections (drop_protection)`);
      const paths = await lockDatasetsAndListPaths(trx, { workspace: ws, collection: coll });
      await trx.deleteFrom('catalog_collections').where('workspace', '=', ws).where('name', '=', coll).execute();
      return paths;
    });
  }

  // ── datasets ────────────────────────────────────────────────────────────────

  /** Creates the dataset (and its collection if missing) at definition_version 1, with no snapshot. 409 ALREADY_EXISTS. */
  async createDataset(ref: DatasetRef, definition: DatasetDefinition, author: string): Promise<Dataset> {
    return this.transaction((trx) => insertDatasetIn(trx, ref, definition, author));
  }

  /** 404 DATASET_NOT_FOUND. */
  async getDataset(ref: DatasetRef): Promise<Dataset> {
    return requireDataset(this.db.kysely, ref);
  }

  async getDatasetById(datasetId: string): Promise<Dataset> {
    return requireDataset(this.db.kysely, datasetId);
  }

  async findDataset(key: DatasetKey): Promise<Dataset | undefined> {
    return findDataset(this.db.kysely, key);
  }

  /** The current snapshot of each of these datasets that exists and is not dropped (null: none yet), by id. */
  async currentSnapshotsOf(datasetIds: readonly string[]): Promise<Map<string, number | null>> {
    if (datasetIds.length === 0) return new Map();
    const rows = await this.db.kysely
      .selectFrom('catalog_datasets')
      .select(['dataset_id', 'current_snapshot_id'])
      .where('dataset_id', 'in', datasetIds)
      .where('dropped_at', 'is', null)
      .execute();
    return new Map(rows.map((r) => [r.dataset_id, r.current_snapshot_id === null ? null : Number(r.current_snapshot_id)]));
  }

  /**
   * The workspace's datasets ordered by collection and name; 404 for a missing namespace or collection.
   * `kept`: the whole workspace's, as read up to KEPT_READ_TTL_MS ago (this process's own changes are
   * always seen, another server's within that time): for listings, not for reading a dataset's data.
   */
  async listDatasets(workspace: string, options: { collection?: string; kept?: boolean } = {}): Promise<Dataset[]> {
    if (options.kept && options.collection === undefined) return [...(await this.keptListings.get(workspace, () => this.listDatasets(workspace)))];
    const ws = normalizeName('workspace', workspace);
    await requireNamespace(this.db.kysely, ws);
    let query = this.db.kysely.selectFrom('catalog_datasets').selectAll().where('workspace', '=', ws).where('dropped_at', 'is', null);
    if (options.collection !== undefined) {
      const coll = normalizeName('collection', options.collection);
      await requireCollection(this.db.kysely, ws, coll);
      query = query.where('collection', '=', coll);
    }
    return query.orderBy('collection').orderBy('name').execute();
  }

  /**
   * The live datasets of several workspaces, or of some collections in them, ordered by workspace,
   * collection and name, in one query (a workspace the catalog does not know has none): for listings
   * across every workspace a caller may read.
   */
  async listDatasetsIn(scopes: readonly DatasetScope[]): Promise<Dataset[]> {
    return scopes.length === 0 ? [] : selectAsJson(this.db.kysely, this.datasetsIn(scopes).selectAll(), ['created_at', 'updated_at', 'dropped_at']);
  }

  /** As listDatasetsIn, only the names (what a listing of names needs, without the definitions). */
  async listDatasetRefsIn(scopes: readonly DatasetScope[]): Promise<DatasetRef[]> {
    if (scopes.length === 0) return [];
    const rows = await selectAsJson(this.db.kysely, this.datasetsIn(scopes).select(['workspace', 'collection', 'name']));
    return rows.map((r) => ({ workspace: r.workspace, collection: r.collection, dataset: r.name }));
  }

  private datasetsIn(scopes: readonly DatasetScope[]) {
    const whole = scopes.filter((s) => s.collections === undefined).map((s) => s.workspace);
    const partial = scopes.filter((s) => s.collections !== undefined);
    return this.db.kysely
      .selectFrom('catalog_datasets')
      .where('dropped_at', 'is', null)
      .where((eb) =>
        eb.or([
          ...(whole.length > 0 ? [eb('workspace', 'in', whole)] : []),
          ...partial.filter((s) => s.collections!.length > 0).map((s) => eb.and([eb('workspace', '=', s.workspace), eb('collection', 'in', s.collections!)])),
        ]),
      )
      .orderBy('workspace')
      .orderBy('collection')
      .orderBy('name');
  }

  /**
   * Changes the definition; definition_version goes up by one when anything actually changed.
   * With `expectedDefinitionVersion`, 409 DEFINITION_CONFLICT if someone else changed it first.
   */
  async alterDataset(key: DatasetKey, patch: DatasetPatch, author: string, options: { expectedDefinitionVersion?: number } = {}): Promise<Dataset> {
    return this.transaction(async (trx) => {
      const dataset = await requireDataset(trx, key, 'update');
      const expected = options.expectedDefinitionVersion;
      if (expected !== undefined && expected !== dataset.definition_version) {
        throw appError(
          'DEFINITION_CONFLICT',
          `The definition of ${describeKey(key)} is at version ${dataset.definition_version}, not ${expected}`,
        );
      }
      const next = nextDefinition(dataset, patch);
      if (!next) return dataset;
      return trx
        .updateTable('catalog_datasets')
        .set({
          columns: JSON.stringify(next.columns),
          description: next.description,
          properties: JSON.stringify(next.properties),
          definition_version: dataset.definition_version + 1,
          updated_by: author,
          updated_at: sql<Date>`clock_timestamp()`,
        })
        .where('dataset_id', '=', dataset.dataset_id)
        .returningAll()
        .executeTakeFirstOrThrow();
    });
  }

  /**
   * Drops the dataset softly: it is gone for every reader and its name is free, but its rows stay, so
   * UNDROP DATASET restores it until the purge (docs/lifecycle.md). 423 GUARDED under drop_protection.
   */
  async dropDataset(key: DatasetKey, author = 'system'): Promise<Dataset> {
    return this.transaction((trx) => dropDatasetIn(trx, key, author));
  }

  /** UNDROP: the latest dropped dataset of that name within the window. 404 DATASET_NOT_FOUND, 409 ALREADY_EXISTS (the name is taken). */
  async undropDataset(ref: DatasetRef): Promise<Dataset> {
    return this.transaction((trx) => undropDatasetIn(trx, ref, this.lifecycle.undropRetentionMs));
  }

  /** The dropped dataset UNDROP would restore, if any (the undrop and purge paths alone see dropped rows). */
  async findRestorableDataset(ref: DatasetRef): Promise<Dataset | undefined> {
    return findRestorable(this.db.kysely, ref, this.lifecycle.undropRetentionMs);
  }

  /** Hard-deletes datasets dropped before the window and queues their files; one batch. */
  async purgeDroppedDatasets(): Promise<{ datasets: number; files: number }> {
    return this.transaction((trx) => purgeDroppedIn(trx, this.lifecycle.undropRetentionMs, this.lifecycle.fileGraceMs));
  }

  /**
   * ROLLBACK: a new 'overwrite' snapshot whose files are exactly those of `target` (zero copy). With
   * `expectedParent`, 409 COMMIT_CONFLICT when the dataset moved on; 410 SNAPSHOT_EXPIRED for an expired target.
   */
  async rollbackDataset(key: DatasetKey, target: SnapshotSelector, author: string, options: { expectedParent?: number | null; dryRun?: boolean } = {}) {
    return this.transaction((trx) => rollbackIn(trx, key, target, author, options));
  }

  /** EXPIRE SNAPSHOTS (see lifecycle.ts); 423 GUARDED under history_protection. */
  async expireSnapshots(key: DatasetKey, options: ExpiryOptions): Promise<ExpiryResult> {
    return this.transaction((trx) => expireSnapshotsIn(trx, key, options, this.lifecycle.fileGraceMs));
  }

  // ── external stubs ──────────────────────────────────────────────────────────

  /**
   * Makes the workspace's `external` stubs exactly `entries`, in one transaction (external.ts): new
   * ones added, listed ones kept, the rest removed; other kinds are never touched (an entry naming
   * one is a conflict). `within` runs last in the same transaction (a throw undoes everything): the
   * caller's own record of the change.
   */
  async replaceExternalDatasets(
    workspace: string,
    entries: readonly ExternalDatasetEntry[],
    author: string,
    within?: (trx: Executor, result: ExternalSyncResult) => Promise<void>,
  ): Promise<ExternalSyncResult> {
    return this.transaction(async (trx) => {
      const result = await replaceExternalIn(trx, workspace, entries, author);
      await within?.(trx, result);
      return result;
    });
  }

  // ── leases and file deletion ───────────────────────────────────────────────

  /** Holds snapshots for a reader until now + ttlMs: expiry skips them. 410 SNAPSHOT_EXPIRED, 404 SNAPSHOT_NOT_FOUND. */
  async leaseSnapshots(ids: number[], holder: string, ttlMs: number): Promise<void> {
    if (ids.length === 0) return;
    await this.transaction((trx) => leaseSnapshotsIn(trx, ids, holder, ttlMs));
  }

  async releaseLeases(holder: string): Promise<void> {
    await this.db.kysely.deleteFrom('catalog_snapshot_leases').where('holder', '=', holder).execute();
  }

  /** Leases held now (tests, diagnostics). */
  async activeLeases(holder?: string) {
    let query = this.db.kysely.selectFrom('catalog_snapshot_leases').selectAll().where('expires_at', '>', sql<Date>`now()`);
    if (holder !== undefined) query = query.where('holder', '=', holder);
    return query.orderBy('snapshot_id').execute();
  }

  /** Removes leases past their time (a process that died never released them). */
  async sweepLeases(): Promise<number> {
    const result = await this.db.kysely.deleteFrom('catalog_snapshot_leases').where('expires_at', '<=', sql<Date>`now()`).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Queued paths whose grace has passed. */
  async dueFileDeletions(limit = 500): Promise<string[]> {
    return dueDeletions(this.db.kysely, limit);
  }

  /** Every queued path (tests, diagnostics). */
  async queuedFileDeletions() {
    return this.db.kysely.selectFrom('catalog_file_deletions').selectAll().orderBy('path').execute();
  }

  /** Whether a queued path may go: false (and the entry dropped) when a catalog row names it again. */
  async mayDeleteFile(path: string): Promise<boolean> {
    const named = await this.db.kysely.selectFrom('catalog_data_files').select('path').where('path', '=', path).executeTakeFirst();
    if (named) await this.forgetFileDeletion(path);
    return !named;
  }

  async forgetFileDeletion(path: string): Promise<void> {
    await this.db.kysely.deleteFrom('catalog_file_deletions').where('path', '=', path).execute();
  }

  // ── snapshots ───────────────────────────────────────────────────────────────

  /**
   * Commits a new snapshot atomically: files added, files removed, totals, and the dataset's current
   * snapshot, all in one transaction. 409 COMMIT_CONFLICT when `expectedParent` is no longer current
   * (appends with `rebaseAppends` go on top of the latest instead).
   */
  async commitSnapshot(input: CommitInput): Promise<Snapshot> {
    return this.transaction((trx) => commitSnapshotIn(trx, input));
  }

  /**
   * A commit that may first create its dataset (`create`: 409 ALREADY_EXISTS when someone else created
   * it meanwhile) and that runs the caller's own writes (`within`) in the same transaction, so a
   * dataset, its first snapshot and the writer's bookkeeping appear together or not at all. `before`
   * runs first in that transaction: the writer locks and checks its own records there (throwing
   * commits nothing), and holds them until the commit is done.
   */
  async commitWith(
    input: Omit<CommitInput, 'dataset'> & { dataset?: DatasetKey },
    options: {
      create?: { ref: DatasetRef; definition: DatasetDefinition };
      before?: (trx: Executor) => Promise<void>;
      within?: (trx: Executor, snapshot: Snapshot) => Promise<void>;
    } = {},
  ): Promise<Snapshot> {
    return this.transaction(async (trx) => {
      await options.before?.(trx);
      const dataset = options.create ? (await insertDatasetIn(trx, options.create.ref, options.create.definition, input.author)).dataset_id : input.dataset;
      if (dataset === undefined) throw appError('INVALID_COMMIT', 'A commit needs a dataset');
      const snapshot = await commitSnapshotIn(trx, { ...input, dataset });
      await options.within?.(trx, snapshot);
      return snapshot;
    });
  }

  /** A snapshot id no other commit will take, for a commit that names its snapshot before it is made (CommitInput.snapshotId). */
  async reserveSnapshotId(): Promise<number> {
    const { rows } = await sql<{ id: string }>`SELECT nextval(pg_get_serial_sequence('catalog_snapshots', 'snapshot_id')) AS id`.execute(this.db.kysely);
    return Number(rows[0].id);
  }

  /** The snapshot a selector names; 404 SNAPSHOT_NOT_FOUND / TAG_NOT_FOUND when there is none. */
  async resolveSnapshot(key: DatasetKey, selector: SnapshotSelector): Promise<Snapshot> {
    const dataset = await requireVersionedDataset(this.db.kysely, key);
    return resolveSnapshotIn(this.db.kysely, dataset, selector);
  }

  /** As resolveSnapshot, for a dataset already read (one query fewer). */
  async resolveSnapshotOf(dataset: Dataset, selector: SnapshotSelector): Promise<Snapshot> {
    return resolveSnapshotIn(this.db.kysely, dataset, selector);
  }

  async getSnapshot(snapshotId: number): Promise<Snapshot> {
    return requireSnapshot(this.db.kysely, snapshotId);
  }

  /** Every snapshot of the dataset, oldest first. */
  async listSnapshots(key: DatasetKey): Promise<Snapshot[]> {
    const dataset = await requireVersionedDataset(this.db.kysely, key);
    return this.db.kysely.selectFrom('catalog_snapshots').selectAll().where('dataset_id', '=', dataset.dataset_id).orderBy('sequence').execute();
  }

  /** The data files that make up a snapshot: added at or before it and not removed at or before it. 410 when it expired. */
  async snapshotFiles(snapshotId: number): Promise<DataFile[]> {
    return filesOfSnapshot(this.db.kysely, await requireLiveSnapshot(this.db.kysely, snapshotId));
  }

  /**
   * The data files of each of several live snapshots, in one query (snapshots that expired or do
   * not exist are left out): for listings that describe many datasets at once.
   */
  async filesOfSnapshots(snapshotIds: readonly number[]): Promise<Map<number, DataFile[]>> {
    return filesOfSnapshots(this.db.kysely, snapshotIds);
  }

  /** The snapshots with these ids (those that exist), in one query. */
  async snapshotsById(snapshotIds: readonly number[]): Promise<Snapshot[]> {
    if (snapshotIds.length === 0) return [];
    return selectAsJson(this.db.kysely, this.db.kysely.selectFrom('catalog_snapshots').selectAll().where('snapshot_id', 'in', snapshotIds), ['committed_at', 'expired_at']);
  }

  /** One data file of a dataset by its id (any the catalog still names, current or not); undefined when there is none. */
  async findDataFile(datasetId: string, fileId: string): Promise<DataFile | undefined> {
    return this.db.kysely.selectFrom('catalog_data_files').selectAll().where('dataset_id', '=', datasetId).where('file_id', '=', fileId).executeTakeFirst();
  }

  /**
   * Every file row the catalog keeps for the dataset, without statistics: which snapshot added and
   * removed each, its rows and bytes. A snapshot that has not expired finds all of its files here
   * (expiry deletes only rows no such snapshot needs), so counts per snapshot can be made from it.
   */
  async fileHistory(datasetId: string): Promise<Pick<DataFile, 'file_id' | 'added_in_snapshot' | 'removed_in_snapshot' | 'row_count' | 'size_bytes'>[]> {
    return this.db.kysely
      .selectFrom('catalog_data_files')
      .select(['file_id', 'added_in_snapshot', 'removed_in_snapshot', 'row_count', 'size_bytes'])
      .where('dataset_id', '=', datasetId)
      .execute();
  }

  // ── maintenance (docs/compaction.md) ──────────────────────────────────────

  /** Takes the dataset's maintenance lease (one compaction at a time across processes); false when another holds it. */
  async takeMaintenanceLease(datasetId: string, holder: string, ttlMs: number): Promise<boolean> {
    return takeLease(this.db.kysely, datasetId, holder, ttlMs);
  }

  /** False when the lease was lost (it expired and another process took it). */
  async renewMaintenanceLease(datasetId: string, holder: string, ttlMs: number): Promise<boolean> {
    return renewLease(this.db.kysely, datasetId, holder, ttlMs);
  }

  async releaseMaintenanceLease(datasetId: string, holder: string): Promise<void> {
    await releaseLease(this.db.kysely, datasetId, holder);
  }

  /** Datasets whose current snapshot has at least `minFiles` files smaller than `smallBytes`. */
  async datasetsWithSmallFiles(options: { smallBytes: number; minFiles: number; limit: number }) {
    return datasetsWithSmallFiles(this.db.kysely, options);
  }

  /**
   * The files to read for a snapshot: its files (snapshotFiles), except that a run of them a later
   * compaction rewrote into one file — all of that file's inputs, contiguous in this snapshot's order —
   * is read as that file. The same rows in the same order (a compaction checks the row counts and keeps
   * the order), so row numbers and results are those of snapshotFiles; an older version of a
   * compacted dataset (`@previous`) reads a few large files instead of thousands of small ones.
   * snapshotFiles stays the record of what the snapshot named (expiry, Iceberg).
   */
  async readFiles(snapshotId: number): Promise<DataFile[]> {
    let files = await this.snapshotFiles(snapshotId);
    // A compacted file may itself have been compacted again: follow the chain a few steps.
    for (let round = 0; round < 8; round++) {
      const outputs = [...new Set(files.map((f) => f.replaced_by).filter((id): id is string => id !== null))];
      if (outputs.length === 0) break;
      const [outputRows, inputs] = await Promise.all([
        this.db.kysely.selectFrom('catalog_data_files').selectAll().where('file_id', 'in', outputs).execute(),
        this.db.kysely.selectFrom('catalog_data_files').select(['file_id', 'replaced_by']).where('replaced_by', 'in', outputs).execute(),
      ]);
      const position = new Map(files.map((f, i) => [f.file_id, i]));
      const replacements: { from: number; to: number; file: DataFile }[] = [];
      for (const output of outputRows) {
        const at = inputs.filter((f) => f.replaced_by === output.file_id).map((f) => position.get(f.file_id));
        if (at.some((i) => i === undefined)) continue;
        const from = Math.min(...(at as number[]));
        const to = Math.max(...(at as number[]));
        if (to - from + 1 === at.length) replacements.push({ from, to, file: output });
      }
      if (replacements.length === 0) break;
      replacements.sort((a, b) => b.from - a.from);
      files = [...files];
      for (const r of replacements) files.splice(r.from, r.to - r.from + 1, r.file);
    }
    return files;
  }

  // ── tags ────────────────────────────────────────────────────────────────────

  /**
   * Names a snapshot of the dataset. 409 TAG_EXISTS when the tag exists, unless `move` is set; moving
   * is 423 GUARDED under history_protection.
   */
  async createTag(key: DatasetKey, name: string, snapshotId: number, author: string, options: { move?: boolean } = {}): Promise<Tag> {
    const tagName = normalizeTagName(name);
    return this.transaction(async (trx) => {
      const dataset = await requireVersionedDataset(trx, key);
      const guards = await guardsOf(trx, dataset);
      await requireLiveSnapshot(trx, snapshotId, dataset.dataset_id);
      const created = await trx
        .insertInto('catalog_tags')
        .values({ dataset_id: dataset.dataset_id, name: tagName, snapshot_id: snapshotId, created_by: author })
        .onConflict((oc) => oc.columns(['dataset_id', 'name']).doNothing())
        .returningAll()
        .executeTakeFirst();
      if (created) return created;
      const existing = await requireTag(trx, dataset, tagName, 'update');
      if (!options.move) throw appError('TAG_EXISTS', `Tag '${tagName}' already exists (snapshot ${existing.snapshot_id})`);
      if (existing.snapshot_id === snapshotId) return existing;
      refuseUnderHistoryProtection(guards, dataset, `move tag '${tagName}'`);
      return trx
        .updateTable('catalog_tags')
        .set({ snapshot_id: snapshotId, created_by: author, created_at: sql<Date>`clock_timestamp()` })
        .where('dataset_id', '=', dataset.dataset_id)
        .where('name', '=', tagName)
        .returningAll()
        .executeTakeFirstOrThrow();
    });
  }

  /** The dataset's tags by name. */
  async listTags(key: DatasetKey): Promise<Tag[]> {
    const dataset = await requireVersionedDataset(this.db.kysely, key);
    return this.db.kysely.selectFrom('catalog_tags').selectAll().where('dataset_id', '=', dataset.dataset_id).orderBy('name').execute();
  }

  /** The tags naming each of these snapshots, by name, in one query (a dataset's other tags are not read). */
  async tagsOfSnapshots(snapshotIds: readonly number[]): Promise<Tag[]> {
    if (snapshotIds.length === 0) return [];
    return selectAsJson(this.db.kysely, this.db.kysely.selectFrom('catalog_tags').selectAll().where('snapshot_id', 'in', snapshotIds).orderBy('name'), ['created_at']);
  }

  /** 404 TAG_NOT_FOUND; 423 GUARDED under history_protection. */
  async deleteTag(key: DatasetKey, name: string): Promise<Tag> {
    const tagName = normalizeTagName(name);
    return this.transaction(async (trx) => {
      const dataset = await requireVersionedDataset(trx, key);
      const guards = await guardsOf(trx, dataset);
      const tag = await requireTag(trx, dataset, tagName, 'update');
      refuseUnderHistoryProtection(guards, dataset, `delete tag '${tagName}'`);
      await trx.deleteFrom('catalog_tags').where('dataset_id', '=', dataset.dataset_id).where('name', '=', tagName).execute();
      return tag;
    });
  }
}

async function ensureCollectionIn(trx: Executor, workspace: string, name: string, author: string) {
  await requireNamespace(trx, workspace, 'share');
  const inserted = await trx
    .insertInto('catalog_collections')
    .values({ workspace, name, created_by: author })
    .onConflict((oc) => oc.columns(['workspace', 'name']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) return { collection: inserted, created: true };
  return { collection: await requireCollection(trx, workspace, name), created: false };
}

/** The definition after `patch`, or undefined when the patch changes nothing. */
function nextDefinition(dataset: Dataset, patch: DatasetPatch) {
  const next = {
    columns: patch.columns === undefined ? dataset.columns : normalizeColumns(dataset.kind, patch.columns),
    description: patch.description === undefined ? dataset.description : checkDescription(patch.description),
    properties: patch.properties === undefined ? dataset.properties : mergeDatasetProperties(dataset.properties, patch.properties),
  };
  const unchanged =
    sameJson(next.columns, dataset.columns) && next.description === dataset.description && sameJson(next.properties, dataset.properties);
  return unchanged ? undefined : next;
}

async function requireTag(trx: Executor, dataset: Dataset, name: string, lock?: 'update'): Promise<Tag> {
  let query = trx.selectFrom('catalog_tags').selectAll().where('dataset_id', '=', dataset.dataset_id).where('name', '=', name);
  if (lock === 'update') query = query.forUpdate();
  const tag = await query.executeTakeFirst();
  if (!tag) throw appError('TAG_NOT_FOUND', `${datasetLabel(dataset)} has no tag '${name}'`);
  return tag;
}

/** Reads (and share-locks, so they cannot change mid-operation) the guards of the dataset's workspace. */
async function guardsOf(trx: Executor, dataset: Dataset): Promise<NamespaceGuards> {
  return (await requireNamespace(trx, dataset.workspace, 'share')).guards;
}

function refuseUnderHistoryProtection(guards: NamespaceGuards, dataset: Dataset, action: string): void {
  if (guards.history_protection) throw guarded(`Workspace '${dataset.workspace}' keeps its history (history_protection): cannot ${action}`);
}

async function insertDatasetIn(trx: Executor, ref: DatasetRef, definition: DatasetDefinition, author: string): Promise<Dataset> {
  const { workspace, collection, dataset } = normalizeRef(ref);
  const kind = checkKind(definition.kind ?? 'table');
  const row = {
    dataset_id: newId('ds'),
    workspace,
    collection,
    name: dataset,
    kind,
    columns: JSON.stringify(normalizeColumns(kind, definition.columns)),
    description: checkDescription(definition.description),
    properties: JSON.stringify(checkProperties(definition.properties ?? {})),
    created_by: author,
    updated_by: author,
  };
  await ensureCollectionIn(trx, workspace, collection, author);
  const created = await trx
    .insertInto('catalog_datasets')
    .values(row)
    .onConflict((oc) => oc.columns(['workspace', 'collection', 'name']).where('dropped_at', 'is', null).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!created) throw appError('ALREADY_EXISTS', `Dataset ${formatRef({ workspace, collection, dataset })} already exists`);
  return created;
}
