import { appError } from '../errors/index.ts';
import { resolveGuards } from './guards.ts';
import { formatRef, normalizeRef } from './names.ts';
import type { Collection, Dataset, DatasetKey, Executor, Namespace, Snapshot } from './types.ts';

/** Lookups shared by the catalog's operations; each takes the executor (Kysely or a transaction) to run on. */

export function datasetLabel(dataset: Dataset): string {
  return `${dataset.workspace}.${dataset.collection}.${dataset.name}`;
}

export function describeKey(key: DatasetKey): string {
  return typeof key === 'string' ? `Dataset ${key}` : `Dataset ${formatRef(key)}`;
}

/** A namespace row with its guards resolved. */
export function withGuards(row: Omit<Namespace, 'guards'>): Namespace {
  return { ...row, guards: resolveGuards(row.properties) };
}

export async function findNamespace(q: Executor, workspace: string, lock?: 'update' | 'share'): Promise<Namespace | undefined> {
  let query = q.selectFrom('catalog_namespaces').selectAll().where('workspace', '=', workspace);
  if (lock === 'update') query = query.forUpdate();
  if (lock === 'share') query = query.forShare();
  const row = await query.executeTakeFirst();
  return row && withGuards(row);
}

export async function requireNamespace(q: Executor, workspace: string, lock?: 'update' | 'share'): Promise<Namespace> {
  const namespace = await findNamespace(q, workspace, lock);
  if (!namespace) throw appError('NAMESPACE_NOT_FOUND', `Workspace '${workspace}' does not exist`);
  return namespace;
}

export async function requireCollection(q: Executor, workspace: string, name: string, lock?: 'update'): Promise<Collection> {
  let query = q.selectFrom('catalog_collections').selectAll().where('workspace', '=', workspace).where('name', '=', name);
  if (lock === 'update') query = query.forUpdate();
  const row = await query.executeTakeFirst();
  if (!row) throw appError('COLLECTION_NOT_FOUND', `Collection '${workspace}.${name}' does not exist`);
  return row;
}

/** A live dataset: dropped ones (kept for UNDROP until purged) are never found here. */
export async function findDataset(q: Executor, key: DatasetKey, lock?: 'update'): Promise<Dataset | undefined> {
  let query = q.selectFrom('catalog_datasets').selectAll().where('dropped_at', 'is', null);
  if (typeof key === 'string') {
    query = query.where('dataset_id', '=', key);
  } else {
    const ref = normalizeRef(key);
    query = query.where('workspace', '=', ref.workspace).where('collection', '=', ref.collection).where('name', '=', ref.dataset);
  }
  if (lock === 'update') query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function requireDataset(q: Executor, key: DatasetKey, lock?: 'update'): Promise<Dataset> {
  const dataset = await findDataset(q, key, lock);
  if (!dataset) throw appError('DATASET_NOT_FOUND', `${describeKey(key)} does not exist`);
  return dataset;
}

/** A dataset whose snapshots the catalog keeps: external stubs have none (400 VERSIONING_NOT_SUPPORTED). */
export async function requireVersionedDataset(q: Executor, key: DatasetKey, lock?: 'update'): Promise<Dataset> {
  const dataset = await requireDataset(q, key, lock);
  if (dataset.kind === 'external') {
    throw appError(
      'VERSIONING_NOT_SUPPORTED',
      `${datasetLabel(dataset)} is listed from an external catalog and has no snapshots`,
    );
  }
  return dataset;
}

export async function requireSnapshot(q: Executor, snapshotId: number, datasetId?: string): Promise<Snapshot> {
  let query = q.selectFrom('catalog_snapshots').selectAll().where('snapshot_id', '=', snapshotId);
  if (datasetId !== undefined) query = query.where('dataset_id', '=', datasetId);
  const row = Number.isSafeInteger(snapshotId) ? await query.executeTakeFirst() : undefined;
  if (!row) throw appError('SNAPSHOT_NOT_FOUND', `Snapshot ${snapshotId} does not exist${datasetId ? ' in this dataset' : ''}`);
  return row;
}

/** 410 SNAPSHOT_EXPIRED for a snapshot EXPIRE SNAPSHOTS expired (it stays in the history, unreadable). */
export function refuseExpired(snapshot: Snapshot): Snapshot {
  if (snapshot.expired_at !== null) {
    throw appError('SNAPSHOT_EXPIRED', `Snapshot ${snapshot.snapshot_id} has expired (EXPIRE SNAPSHOTS): its files are gone; it remains only in the history`);
  }
  return snapshot;
}

/** A snapshot that can be read: 404 when missing, 410 when expired. */
export async function requireLiveSnapshot(q: Executor, snapshotId: number, datasetId?: string): Promise<Snapshot> {
  return refuseExpired(await requireSnapshot(q, snapshotId, datasetId));
}

/**
 * Locks the datasets in scope (waiting for commits in flight) and returns the storage paths of every
 * data file they name, removed ones included: what the caller must delete after dropping them.
 */
export async function lockDatasetsAndListPaths(
  q: Executor,
  scope: { workspace: string; collection?: string; datasetId?: string },
): Promise<string[]> {
  let datasets = q.selectFrom('catalog_datasets').select('dataset_id').where('workspace', '=', scope.workspace);
  if (scope.collection !== undefined) datasets = datasets.where('collection', '=', scope.collection);
  if (scope.datasetId !== undefined) datasets = datasets.where('dataset_id', '=', scope.datasetId);
  const ids = (await datasets.forUpdate().execute()).map((row) => row.dataset_id);
  if (ids.length === 0) return [];
  // Dropped datasets in scope included; a rollback names a path again, so each path once.
  const files = await q.selectFrom('catalog_data_files').select('path').distinct().where('dataset_id', 'in', ids).orderBy('path').execute();
  return files.map((file) => file.path);
}
