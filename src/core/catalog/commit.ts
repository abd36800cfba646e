import { sql } from 'kysely';
import { newId } from '../crypto/random.ts';
import type { SnapshotOperation } from '../db/index.ts';
import { AppError, appError } from '../errors/index.ts';
import { requireSnapshot, requireVersionedDataset } from './queries.ts';
import type { CommitInput, DataFileInput, Dataset, Executor, Snapshot } from './types.ts';

export const SNAPSHOT_OPERATIONS: readonly SnapshotOperation[] = ['create', 'append', 'overwrite', 'delete', 'maintenance'];

/** Files per INSERT, well under PostgreSQL's 65535 bound parameters. */
const INSERT_BATCH = 1000;

interface FileAmounts {
  rows: number;
  bytes: number;
}

function invalidCommit(detail: string): AppError {
  return appError('INVALID_COMMIT', detail);
}

function conflict(detail: string): AppError {
  return appError('COMMIT_CONFLICT', detail);
}

function checkInput(input: CommitInput): void {
  if (!SNAPSHOT_OPERATIONS.includes(input.operation)) throw invalidCommit(`Operation must be one of ${SNAPSHOT_OPERATIONS.join(', ')}`);
  if (typeof input.author !== 'string' || !input.author) throw invalidCommit('A commit needs an author');
  if (!Array.isArray(input.addFiles)) throw invalidCommit('addFiles must be an array');
  const removes = input.removeAllFiles || (input.removeFileIds?.length ?? 0) > 0;
  if (input.operation === 'append' && removes) throw invalidCommit('An append cannot remove files');
  const paths = new Set<string>();
  for (const file of input.addFiles) checkFile(file, paths);
}

function checkFile(file: DataFileInput, seen: Set<string>): void {
  if (typeof file?.path !== 'string' || !file.path) throw invalidCommit('Every added file needs a path');
  if (seen.has(file.path)) throw invalidCommit(`File ${file.path} is added twice`);
  seen.add(file.path);
  for (const field of ['row_count', 'size_bytes'] as const) {
    if (!Number.isSafeInteger(file[field]) || file[field] < 0) throw invalidCommit(`File ${file.path}: ${field} must be a whole number ≥ 0`);
  }
}

/** Whether the parent moved on since the writer started; appends may be rebased instead of failing. */
function checkParent(dataset: Dataset, input: CommitInput): void {
  if (input.expectedParent === undefined || input.expectedParent === dataset.current_snapshot_id) return;
  if (input.operation === 'append' && input.rebaseAppends) return;
  throw conflict(
    `Dataset ${dataset.workspace}.${dataset.collection}.${dataset.name} moved on: the commit expected parent snapshot ` +
      `${input.expectedParent ?? 'none'} but the current snapshot is ${dataset.current_snapshot_id ?? 'none'}`,
  );
}

function checkDefinitionVersion(dataset: Dataset, input: CommitInput): void {
  if (input.expectedDefinitionVersion === undefined || input.expectedDefinitionVersion === dataset.definition_version) return;
  throw appError(
    'DEFINITION_CONFLICT',
    `The definition of ${dataset.workspace}.${dataset.collection}.${dataset.name} changed: expected version ` +
      `${input.expectedDefinitionVersion}, it is now ${dataset.definition_version}`,
  );
}

/** New writes always use new paths: one the catalog names, or has queued for deletion, is refused. */
async function refuseKnownPaths(trx: Executor, files: DataFileInput[]): Promise<void> {
  for (let i = 0; i < files.length; i += INSERT_BATCH) {
    const paths = files.slice(i, i + INSERT_BATCH).map((file) => file.path);
    const known = await trx
      .selectFrom('catalog_data_files')
      .select('path')
      .where('path', 'in', paths)
      .unionAll(trx.selectFrom('catalog_file_deletions').select('path').where('path', 'in', paths))
      .limit(1)
      .executeTakeFirst();
    if (known) throw invalidCommit(`File ${known.path} is already part of the catalog`);
  }
}

/** The files of the current snapshot that leave the new one, and their amounts. */
async function filesLeaving(trx: Executor, datasetId: string, input: CommitInput): Promise<{ ids: string[] } & FileAmounts> {
  const wanted = input.removeAllFiles ? undefined : [...new Set(input.removeFileIds ?? [])];
  if (wanted?.length === 0) return { ids: [], rows: 0, bytes: 0 };
  let query = trx
    .selectFrom('catalog_data_files')
    .select(['file_id', 'row_count', 'size_bytes'])
    .where('dataset_id', '=', datasetId)
    .where('removed_in_snapshot', 'is', null);
  if (wanted) query = query.where('file_id', 'in', wanted);
  const live = await query.execute();
  if (wanted && live.length !== wanted.length) {
    const missing = wanted.filter((id) => !live.some((file) => file.file_id === id));
    throw conflict(`Files ${missing.join(', ')} are not part of the current snapshot (a concurrent commit may have removed them)`);
  }
  return { ids: live.map((file) => file.file_id), ...sumAmounts(live) };
}

function sumAmounts(files: { row_count: number; size_bytes: number }[]): FileAmounts {
  let rows = 0;
  let bytes = 0;
  for (const file of files) {
    rows += Number(file.row_count);
    bytes += Number(file.size_bytes);
  }
  return { rows, bytes };
}

/** Row and size bookkeeping; maintenance rewrites files without changing rows, so it reports no rows added or removed. */
function snapshotAmounts(operation: SnapshotOperation, parent: Snapshot | undefined, added: FileAmounts, removed: FileAmounts) {
  const total_records = (parent?.total_records ?? 0) + added.rows - removed.rows;
  const total_size = (parent?.total_size ?? 0) + added.bytes - removed.bytes;
  if (operation === 'maintenance') {
    if (added.rows !== removed.rows) throw invalidCommit('A maintenance commit must keep the number of rows');
    return { rows_added: 0, rows_removed: 0, total_records, total_size, changed_rows: false };
  }
  const changed_rows = operation === 'create' || added.rows > 0 || removed.rows > 0;
  return { rows_added: added.rows, rows_removed: removed.rows, total_records, total_size, changed_rows };
}

async function insertFiles(trx: Executor, datasetId: string, snapshotId: number, files: DataFileInput[]): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (let i = 0; i < files.length; i += INSERT_BATCH) {
    const rows = files.slice(i, i + INSERT_BATCH).map((file) => ({
      file_id: newId('file'),
      dataset_id: datasetId,
      path: file.path,
      format: file.format ?? 'parquet',
      row_count: file.row_count,
      size_bytes: file.size_bytes,
      column_stats: JSON.stringify(file.column_stats ?? {}),
      added_in_snapshot: snapshotId,
    }));
    for (const row of rows) ids.set(row.path, row.file_id);
    await trx.insertInto('catalog_data_files').values(rows).execute();
  }
  return ids;
}

/** Checks a maintenance commit's `replaces`: each added file replaces files the commit removes, each removed file once. */
function checkReplaces(input: CommitInput, leaving: string[]): void {
  if (!input.replaces) return;
  if (input.operation !== 'maintenance') throw invalidCommit('Only a maintenance commit replaces files');
  const removed = new Set(leaving);
  const seen = new Set<string>();
  const added = new Set(input.addFiles.map((f) => f.path));
  for (const [path, replaced] of Object.entries(input.replaces)) {
    if (!added.has(path)) throw invalidCommit(`File ${path} replaces files but is not added by the commit`);
    for (const id of replaced) {
      if (!removed.has(id) || seen.has(id)) throw invalidCommit(`File ${path} replaces files the commit does not remove (or another added file replaces them)`);
      seen.add(id);
    }
  }
}

/** The removed files, each marked removed in the snapshot and, when a rewrite replaced it, with the file holding its rows now. */
async function markRemovedAndReplaced(trx: Executor, snapshotId: number, input: CommitInput, leaving: string[], added: Map<string, string>): Promise<void> {
  const replaced = new Set<string>();
  for (const [path, ids] of Object.entries(input.replaces ?? {})) {
    for (let i = 0; i < ids.length; i += INSERT_BATCH) {
      await trx
        .updateTable('catalog_data_files')
        .set({ removed_in_snapshot: snapshotId, replaced_by: added.get(path)! })
        .where('file_id', 'in', ids.slice(i, i + INSERT_BATCH))
        .execute();
    }
    for (const id of ids) replaced.add(id);
  }
  await markRemoved(trx, snapshotId, replaced.size === 0 ? leaving : leaving.filter((id) => !replaced.has(id)));
}

async function markRemoved(trx: Executor, snapshotId: number, fileIds: string[]): Promise<void> {
  for (let i = 0; i < fileIds.length; i += INSERT_BATCH) {
    await trx
      .updateTable('catalog_data_files')
      .set({ removed_in_snapshot: snapshotId })
      .where('file_id', 'in', fileIds.slice(i, i + INSERT_BATCH))
      .execute();
  }
}

/** Only the catalog's rollback sets these: its files are an older snapshot's (their paths named again), and it always makes a version. */
export interface RollbackCommit {
  reusePaths?: boolean;
}

/**
 * Commits a snapshot inside the caller's transaction. The dataset row lock serialises commits to one
 * dataset, so each new snapshot's parent is the one current when the lock was taken.
 */
export async function commitSnapshotIn(trx: Executor, input: CommitInput, internal: RollbackCommit = {}): Promise<Snapshot> {
  checkInput(input);
  const dataset = await requireVersionedDataset(trx, input.dataset, 'update');
  checkParent(dataset, input);
  checkDefinitionVersion(dataset, input);
  const parent = dataset.current_snapshot_id === null ? undefined : await requireSnapshot(trx, dataset.current_snapshot_id);
  if (!internal.reusePaths) await refuseKnownPaths(trx, input.addFiles);
  const leaving = await filesLeaving(trx, dataset.dataset_id, input);
  checkReplaces(input, leaving.ids);
  const snapshot = await trx
    .insertInto('catalog_snapshots')
    .values({
      ...(input.snapshotId === undefined ? {} : { snapshot_id: input.snapshotId }),
      dataset_id: dataset.dataset_id,
      parent_snapshot_id: parent?.snapshot_id ?? null,
      sequence: (parent?.sequence ?? 0) + 1,
      // The time of the commit itself, not of its transaction's start (which may have waited for the lock).
      committed_at: sql<Date>`clock_timestamp()`,
      author: input.author,
      message: input.message ?? null,
      operation: input.operation,
      definition_version: dataset.definition_version,
      ...snapshotAmounts(input.operation, parent, sumAmounts(input.addFiles), leaving),
      ...(internal.reusePaths ? { changed_rows: true } : {}),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const added = await insertFiles(trx, dataset.dataset_id, snapshot.snapshot_id, input.addFiles);
  await markRemovedAndReplaced(trx, snapshot.snapshot_id, input, leaving.ids, added);
  await trx.updateTable('catalog_datasets').set({ current_snapshot_id: snapshot.snapshot_id }).where('dataset_id', '=', dataset.dataset_id).execute();
  return snapshot;
}
