import { AppError, appError } from '../errors/index.ts';
import { normalizeTagName } from './names.ts';
import { datasetLabel as label, refuseExpired, requireLiveSnapshot, requireSnapshot } from './queries.ts';
import type { SnapshotSelector } from './selectors.ts';
import type { Dataset, Executor, Snapshot } from './types.ts';

function notFound(detail: string, code: 'SNAPSHOT_NOT_FOUND' | 'TAG_NOT_FOUND' = 'SNAPSHOT_NOT_FOUND'): AppError {
  return appError(code, detail);
}

async function currentSnapshot(q: Executor, dataset: Dataset): Promise<Snapshot> {
  if (dataset.current_snapshot_id === null) throw notFound(`${label(dataset)} has no snapshot yet`);
  return requireSnapshot(q, dataset.current_snapshot_id, dataset.dataset_id);
}

/** The latest snapshot at or before `sequence` that changed rows. */
function latestChange(q: Executor, datasetId: string, sequence: number): Promise<Snapshot | undefined> {
  return q
    .selectFrom('catalog_snapshots')
    .selectAll()
    .where('dataset_id', '=', datasetId)
    .where('sequence', '<=', sequence)
    .where('changed_rows', '=', true)
    .orderBy('sequence', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/**
 * The most recent earlier version of the data: the current rows were made by the latest
 * row-changing snapshot, and the previous version is the row-changing snapshot before that one.
 * Maintenance snapshots (no rows changed) are never versions of their own.
 */
async function previousSnapshot(q: Executor, dataset: Dataset): Promise<Snapshot> {
  const current = await currentSnapshot(q, dataset);
  const madeCurrentRows = current.changed_rows ? current : await latestChange(q, dataset.dataset_id, current.sequence);
  const previous = madeCurrentRows && (await latestChange(q, dataset.dataset_id, madeCurrentRows.sequence - 1));
  if (!previous) throw notFound(`${label(dataset)} has no previous version`);
  return refuseExpired(previous);
}

async function taggedSnapshot(q: Executor, dataset: Dataset, tagName: string): Promise<Snapshot> {
  const name = normalizeTagName(tagName);
  const tag = await q
    .selectFrom('catalog_tags')
    .select('snapshot_id')
    .where('dataset_id', '=', dataset.dataset_id)
    .where('name', '=', name)
    .executeTakeFirst();
  if (!tag) throw notFound(`${label(dataset)} has no tag '${name}'`, 'TAG_NOT_FOUND');
  return requireLiveSnapshot(q, tag.snapshot_id, dataset.dataset_id);
}

export function resolveSnapshotIn(q: Executor, dataset: Dataset, selector: SnapshotSelector): Promise<Snapshot> {
  switch (selector.kind) {
    case 'current':
      return currentSnapshot(q, dataset);
    case 'previous':
      return previousSnapshot(q, dataset);
    case 'tag':
      return taggedSnapshot(q, dataset, selector.name);
    case 'id':
      return requireLiveSnapshot(q, selector.snapshotId, dataset.dataset_id);
  }
}
