import { sql } from 'kysely';
import { selectAsJson } from '../db/index.ts';
import { appError } from '../errors/index.ts';
import { commitSnapshotIn } from './commit.ts';
import { guarded } from './guards.ts';
import { formatRef, normalizeRef, type DatasetRef } from './names.ts';
import { datasetLabel, findDataset, requireDataset, requireNamespace, requireVersionedDataset } from './queries.ts';
import { resolveSnapshotIn } from './resolve.ts';
import type { SnapshotSelector } from './selectors.ts';
import type { DataFile, Dataset, DatasetKey, Executor, Snapshot } from './types.ts';

/**
 * The lifecycle of datasets and their history (docs/lifecycle.md): soft drop and undrop, the purge
 * of dropped datasets, rollback, snapshot expiry, leases and the queue of files to delete. Each
 * function runs on the caller's transaction (or Kysely); the Catalog class wraps them.
 */

/** `n ms` as a PostgreSQL interval expression, the number bound. */
const millis = (ms: number) => sql<string>`(${Math.max(0, Math.round(ms))}::bigint * interval '1 millisecond')`;

/** What EXPIRE SNAPSHOTS did (or, checked, would do). */
export interface ExpiryResult {
  expired: number[];
  /** Snapshots old enough that were kept: tagged, leased by a reader, the current one or among the newest `retainLast`. */
  kept: { tagged: number; leased: number; retained: number };
  filesQueued: number;
  bytesQueued: number;
}

export interface ExpiryOptions {
  olderThanMs: number;
  retainLast?: number;
  /** Compute the result without changing anything (the check endpoint). */
  dryRun?: boolean;
}

// ── drop / undrop / purge ─────────────────────────────────────────────────────

export async function dropDatasetIn(trx: Executor, key: DatasetKey, author: string): Promise<Dataset> {
  const dataset = await requireDataset(trx, key, 'update');
  const namespace = await requireNamespace(trx, dataset.workspace, 'share');
  if (namespace.guards.drop_protection) throw guarded(`Workspace '${dataset.workspace}' refuses dropping datasets (drop_protection)`);
  return trx
    .updateTable('catalog_datasets')
    .set({ dropped_at: sql<Date>`clock_timestamp()`, dropped_by: author })
    .where('dataset_id', '=', dataset.dataset_id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The most recently dropped dataset of that name still within the window, locked; undefined when none. */
export async function findRestorable(trx: Executor, ref: DatasetRef, retentionMs: number, lock = false): Promise<Dataset | undefined> {
  const { workspace, collection, dataset } = normalizeRef(ref);
  let query = trx
    .selectFrom('catalog_datasets')
    .selectAll()
    .where('workspace', '=', workspace)
    .where('collection', '=', collection)
    .where('name', '=', dataset)
    .where('dropped_at', 'is not', null)
    .where('dropped_at', '>', sql<Date>`now() - ${millis(retentionMs)}`)
    .orderBy('dropped_at', 'desc')
    .limit(1);
  if (lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

/**
 * Restores the latest dropped dataset of that name dropped within `retentionMs`: 404 DATASET_NOT_FOUND
 * when there is none, 409 ALREADY_EXISTS when a live dataset took the name meanwhile.
 */
export async function undropDatasetIn(trx: Executor, ref: DatasetRef, retentionMs: number): Promise<Dataset> {
  const label = formatRef(normalizeRef(ref));
  const dropped = await findRestorable(trx, ref, retentionMs, true);
  const taken = () => appError('ALREADY_EXISTS', `Dataset ${label} exists again (created after the drop): drop or rename it before UNDROP`);
  // (A restore racing this one may have taken the row just now: then the name is taken, not missing.)
  if (!dropped && (await findDataset(trx, ref))) throw taken();
  if (!dropped) throw appError('DATASET_NOT_FOUND', `No dropped dataset ${label} can be restored (none was dropped within the last ${Math.round(retentionMs / 3_600_000)} hours)`);
  await requireNamespace(trx, dropped.workspace, 'share');
  const restored = await trx
    .updateTable('catalog_datasets')
    .set({ dropped_at: null, dropped_by: null })
    .where('dataset_id', '=', dropped.dataset_id)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('catalog_datasets as live')
            .select('live.dataset_id')
            .where('live.workspace', '=', dropped.workspace)
            .where('live.collection', '=', dropped.collection)
            .where('live.name', '=', dropped.name)
            .where('live.dropped_at', 'is', null),
        ),
      ),
    )
    .returningAll()
    .executeTakeFirst()
    .catch((error: unknown) => {
      // Two restores of one name racing on PostgreSQL: the partial unique index refuses the second.
      if ((error as { code?: string }).code === '23505') return undefined;
      throw error;
    });
  if (!restored) throw taken();
  return restored;
}

/**
 * Hard-deletes datasets dropped longer than `retentionMs` ago (their snapshots, files, tags and
 * leases with them) and queues their files for deletion after `graceMs`. Datasets another process
 * is purging are skipped. Returns how many datasets went and how many paths were queued.
 */
export async function purgeDroppedIn(trx: Executor, retentionMs: number, graceMs: number, limit = 100): Promise<{ datasets: number; files: number }> {
  const due = await trx
    .selectFrom('catalog_datasets')
    .select('dataset_id')
    .where('dropped_at', 'is not', null)
    .where('dropped_at', '<=', sql<Date>`now() - ${millis(retentionMs)}`)
    .orderBy('dropped_at')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
  if (due.length === 0) return { datasets: 0, files: 0 };
  const ids = due.map((d) => d.dataset_id);
  const files = await trx
    .selectFrom('catalog_data_files')
    .select(['path', sql<number>`max(size_bytes)`.as('size_bytes')])
    .where('dataset_id', 'in', ids)
    .groupBy('path')
    .execute();
  await queueDeletions(trx, files, graceMs);
  await trx.deleteFrom('catalog_datasets').where('dataset_id', 'in', ids).execute();
  return { datasets: ids.length, files: files.length };
}

async function queueDeletions(trx: Executor, files: { path: string; size_bytes: number }[], graceMs: number): Promise<void> {
  for (let i = 0; i < files.length; i += 1000) {
    const rows = files.slice(i, i + 1000).map((f) => ({ path: f.path, size_bytes: Number(f.size_bytes), delete_after: sql<Date>`now() + ${millis(graceMs)}` }));
    await trx
      .insertInto('catalog_file_deletions')
      .values(rows as never)
      .onConflict((oc) => oc.column('path').doNothing())
      .execute();
  }
}

// ── rollback ──────────────────────────────────────────────────────────────────

/**
 * A new snapshot (operation 'overwrite', a row-changing version) whose files are exactly the target
 * snapshot's: their rows name the same paths again, nothing is copied. The history is kept.
 * 409 COMMIT_CONFLICT when `expectedParent` is no longer current; 410 for an expired target.
 */
export async function rollbackIn(
  trx: Executor,
  key: DatasetKey,
  target: SnapshotSelector,
  author: string,
  options: { expectedParent?: number | null; dryRun?: boolean } = {},
): Promise<{ target: Snapshot; snapshot?: Snapshot; unchanged: boolean }> {
  const dataset = await requireVersionedDataset(trx, key, 'update');
  const snapshot = await resolveSnapshotIn(trx, dataset, target);
  if (options.expectedParent !== undefined && options.expectedParent !== dataset.current_snapshot_id) {
    throw appError('COMMIT_CONFLICT', `${datasetLabel(dataset)} moved on: expected snapshot ${options.expectedParent ?? 'none'}, it is now ${dataset.current_snapshot_id ?? 'none'}`);
  }
  if (snapshot.snapshot_id === dataset.current_snapshot_id) return { target: snapshot, unchanged: true };
  if (options.dryRun) return { target: snapshot, unchanged: false };
  const files = await filesOfSnapshot(trx, snapshot);
  const committed = await commitSnapshotIn(
    trx,
    {
      dataset: dataset.dataset_id,
      expectedParent: dataset.current_snapshot_id,
      operation: 'overwrite',
      author,
      message: `ROLLBACK TO SNAPSHOT ${snapshot.snapshot_id}`,
      removeAllFiles: true,
      addFiles: files.map((f) => ({ path: f.path, row_count: Number(f.row_count), size_bytes: Number(f.size_bytes), column_stats: f.column_stats, format: f.format })),
    },
    { reusePaths: true },
  );
  return { target: snapshot, snapshot: committed, unchanged: false };
}

/** The data files of a snapshot: added at or before it and not removed at or before it. */
export async function filesOfSnapshot(q: Executor, snapshot: Snapshot): Promise<DataFile[]> {
  return (await filesOfSnapshots(q, [snapshot.snapshot_id])).get(snapshot.snapshot_id) ?? [];
}

/**
 * The data files of each snapshot (ordered by the snapshot that added them, then path), in one
 * query that never scans a dataset's whole history: a snapshot's files are those live now that it
 * already had, and those removed by a later snapshot that it already had. Each part is found by
 * index (the live files of the dataset; the files of the snapshots after it), so the cost grows with
 * what the snapshot holds and the files removed since, not with the number of snapshots before it.
 */
export async function filesOfSnapshots(q: Executor, snapshotIds: readonly number[]): Promise<Map<number, DataFile[]>> {
  const out = new Map<number, DataFile[]>();
  if (snapshotIds.length === 0) return out;
  const live = q
    .selectFrom('catalog_snapshots as s')
    .innerJoin('catalog_data_files as f', (join) => join.onRef('f.dataset_id', '=', 's.dataset_id').on('f.removed_in_snapshot', 'is', null))
    .innerJoin('catalog_snapshots as added', 'added.snapshot_id', 'f.added_in_snapshot')
    .selectAll('f')
    .select(['s.snapshot_id as of_snapshot', 'added.sequence as added_sequence'])
    .where('s.snapshot_id', 'in', snapshotIds)
    .whereRef('added.sequence', '<=', 's.sequence');
  const removedLater = q
    .selectFrom('catalog_snapshots as s')
    .innerJoin('catalog_snapshots as later', (join) => join.onRef('later.dataset_id', '=', 's.dataset_id').onRef('later.sequence', '>', 's.sequence'))
    .innerJoin('catalog_data_files as f', 'f.removed_in_snapshot', 'later.snapshot_id')
    .innerJoin('catalog_snapshots as added', 'added.snapshot_id', 'f.added_in_snapshot')
    .selectAll('f')
    .select(['s.snapshot_id as of_snapshot', 'added.sequence as added_sequence'])
    .where('s.snapshot_id', 'in', snapshotIds)
    .whereRef('added.sequence', '<=', 's.sequence');
  const rows = await selectAsJson(q, live.unionAll(removedLater).orderBy('of_snapshot').orderBy('added_sequence').orderBy('path'));
  for (const { of_snapshot, added_sequence: _, ...file } of rows) {
    const id = Number(of_snapshot);
    const files = out.get(id) ?? [];
    files.push(file as DataFile);
    out.set(id, files);
  }
  return out;
}

// ── expiry ────────────────────────────────────────────────────────────────────

/**
 * Expires the dataset's snapshots committed more than `olderThanMs` ago, except the current one, a
 * tagged one, one a reader leases and the newest `retainLast`. File rows no unexpired snapshot needs
 * leave the catalog, and a path no row names any more is queued for deletion after `graceMs`.
 * 423 GUARDED under history_protection.
 *
 * Races: the candidates are locked FOR UPDATE first; a lease is taken under FOR SHARE on the same rows
 * (leaseSnapshotsIn), so leases are read after the lock, in a statement of their own, and every lease
 * committed before is seen, while none can be added until this transaction ends.
 */
export async function expireSnapshotsIn(trx: Executor, key: DatasetKey, options: ExpiryOptions, graceMs: number): Promise<ExpiryResult> {
  const dataset = await requireVersionedDataset(trx, key, 'update');
  const namespace = await requireNamespace(trx, dataset.workspace, 'share');
  if (namespace.guards.history_protection) {
    throw guarded(`Workspace '${dataset.workspace}' keeps its history (history_protection): cannot expire snapshots of ${datasetLabel(dataset)}`);
  }
  const old = await trx
    .selectFrom('catalog_snapshots')
    .select(['snapshot_id', 'sequence'])
    .where('dataset_id', '=', dataset.dataset_id)
    .where('expired_at', 'is', null)
    .where('committed_at', '<', sql<Date>`now() - ${millis(options.olderThanMs)}`)
    .orderBy('sequence')
    .forUpdate()
    .execute();
  const newest = await trx
    .selectFrom('catalog_snapshots')
    .select('snapshot_id')
    .where('dataset_id', '=', dataset.dataset_id)
    .orderBy('sequence', 'desc')
    .limit(Math.max(0, options.retainLast ?? 0))
    .execute();
  const retained = new Set(newest.map((s) => s.snapshot_id));
  if (dataset.current_snapshot_id !== null) retained.add(dataset.current_snapshot_id);
  const ids = old.map((s) => s.snapshot_id);
  const tagged = new Set(
    ids.length === 0 ? [] : (await trx.selectFrom('catalog_tags').select('snapshot_id').where('snapshot_id', 'in', ids).execute()).map((t) => t.snapshot_id),
  );
  const leased = new Set(
    ids.length === 0
      ? []
      : (await trx.selectFrom('catalog_snapshot_leases').select('snapshot_id').where('snapshot_id', 'in', ids).where('expires_at', '>', sql<Date>`now()`).execute()).map(
          (l) => l.snapshot_id,
        ),
  );
  const kept = { tagged: 0, leased: 0, retained: 0 };
  const expired: number[] = [];
  for (const id of ids) {
    if (retained.has(id)) kept.retained++;
    else if (tagged.has(id)) kept.tagged++;
    else if (leased.has(id)) kept.leased++;
    else expired.push(id);
  }
  if (options.dryRun) {
    const files = await unneededFiles(trx, dataset.dataset_id, expired);
    const paths = await unnamedPaths(trx, files, true);
    return { expired, kept, filesQueued: paths.length, bytesQueued: sumBytes(paths) };
  }
  if (expired.length > 0) {
    await trx.updateTable('catalog_snapshots').set({ expired_at: sql<Date>`clock_timestamp()` }).where('snapshot_id', 'in', expired).execute();
  }
  // Also catches files an earlier expiry left (nothing else ever removes file rows).
  const files = await unneededFiles(trx, dataset.dataset_id, []);
  for (let i = 0; i < files.length; i += 1000) {
    const ids = files.slice(i, i + 1000).map((f) => f.file_id);
    // A compacted file that goes stops standing in for the files it replaced (Catalog.readFiles, docs/compaction.md).
    await trx.updateTable('catalog_data_files').set({ replaced_by: null }).where('replaced_by', 'in', ids).execute();
    await trx.deleteFrom('catalog_data_files').where('file_id', 'in', ids).execute();
  }
  const paths = await unnamedPaths(trx, files, false);
  await queueDeletions(trx, paths, graceMs);
  return { expired, kept, filesQueued: paths.length, bytesQueued: sumBytes(paths) };
}

interface FileRow {
  file_id: string;
  path: string;
  size_bytes: number;
}

/** File rows of the dataset no unexpired snapshot needs (as if `alsoExpired` were expired too). */
async function unneededFiles(trx: Executor, datasetId: string, alsoExpired: number[]): Promise<FileRow[]> {
  const extra = alsoExpired.length === 0 ? sql`` : sql` AND s.snapshot_id NOT IN (${sql.join(alsoExpired)})`;
  const result = await sql<FileRow>`
    SELECT f.file_id, f.path, f.size_bytes
    FROM catalog_data_files f
    JOIN catalog_snapshots a ON a.snapshot_id = f.added_in_snapshot
    LEFT JOIN catalog_snapshots r ON r.snapshot_id = f.removed_in_snapshot
    WHERE f.dataset_id = ${datasetId}
      AND NOT EXISTS (
        SELECT 1 FROM catalog_snapshots s
        WHERE s.dataset_id = ${datasetId} AND s.expired_at IS NULL${extra}
          AND s.sequence >= a.sequence AND (r.sequence IS NULL OR s.sequence < r.sequence))`.execute(trx);
  return result.rows;
}

/**
 * The paths of `files` no other file row names (a rollback may name a path again), each once.
 * `leaving`: the rows are still there (a dry run), so only rows outside `files` count.
 */
async function unnamedPaths(trx: Executor, files: FileRow[], leaving: boolean): Promise<{ path: string; size_bytes: number }[]> {
  const byPath = new Map<string, number>();
  for (const f of files) byPath.set(f.path, Number(f.size_bytes));
  const paths = [...byPath.keys()];
  const named = new Set<string>();
  const leavingIds = files.map((f) => f.file_id);
  for (let i = 0; i < paths.length; i += 1000) {
    let query = trx.selectFrom('catalog_data_files').select('path').where('path', 'in', paths.slice(i, i + 1000));
    if (leaving && leavingIds.length > 0) query = query.where('file_id', 'not in', leavingIds);
    for (const row of await query.execute()) named.add(row.path);
  }
  return paths.filter((p) => !named.has(p)).map((path) => ({ path, size_bytes: byPath.get(path)! }));
}

const sumBytes = (paths: { size_bytes: number }[]) => paths.reduce((n, p) => n + Number(p.size_bytes), 0);

// ── leases ────────────────────────────────────────────────────────────────────

/**
 * Holds the snapshots for `holder` until now + `ttlMs` (a repeat extends, never shortens). The rows
 * are locked FOR SHARE while the lease is written, so an expiry (FOR UPDATE) either ran before — the
 * snapshot is expired: 410 SNAPSHOT_EXPIRED — or runs after and sees the lease.
 */
export async function leaseSnapshotsIn(trx: Executor, ids: number[], holder: string, ttlMs: number): Promise<void> {
  const wanted = [...new Set(ids)];
  if (wanted.length === 0) return;
  const rows = await trx.selectFrom('catalog_snapshots').select(['snapshot_id', 'expired_at']).where('snapshot_id', 'in', wanted).forShare().execute();
  for (const id of wanted) {
    const row = rows.find((r) => r.snapshot_id === id);
    if (!row) throw appError('SNAPSHOT_NOT_FOUND', `Snapshot ${id} does not exist`);
    if (row.expired_at !== null) throw appError('SNAPSHOT_EXPIRED', `Snapshot ${id} has expired (EXPIRE SNAPSHOTS): its files are gone; it remains only in the history`);
  }
  const until = sql<Date>`now() + ${millis(ttlMs)}`;
  await trx
    .insertInto('catalog_snapshot_leases')
    .values(wanted.map((snapshot_id) => ({ snapshot_id, holder, expires_at: until })) as never)
    .onConflict((oc) =>
      oc.columns(['snapshot_id', 'holder']).doUpdateSet({ expires_at: sql<Date>`greatest(catalog_snapshot_leases.expires_at, excluded.expires_at)` }),
    )
    .execute();
}

// ── file deletions ────────────────────────────────────────────────────────────

/** Paths whose grace has passed, oldest first; rows another process is taking are skipped. */
export async function dueDeletions(q: Executor, limit: number): Promise<string[]> {
  const rows = await q.selectFrom('catalog_file_deletions').select('path').where('delete_after', '<=', sql<Date>`now()`).orderBy('delete_after').limit(limit).execute();
  return rows.map((r) => r.path);
}
