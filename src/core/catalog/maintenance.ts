import { sql } from 'kysely';
import type { Executor } from './types.ts';

/**
 * Maintenance bookkeeping (docs/compaction.md): leases that let one process at a time compact a
 * dataset, and the datasets whose current snapshot has many small files.
 */

/** The database's own clock plus `ms`: every process compares leases against the same clock. */
const inMs = (ms: number) => sql<Date>`clock_timestamp() + make_interval(secs => ${ms / 1000})`;

/**
 * Takes the dataset's lease for `holder` when nobody holds it, its lease expired, or `holder`
 * already holds it — one atomic statement, so of two processes racing exactly one gets it.
 */
export async function takeLease(q: Executor, datasetId: string, holder: string, ttlMs: number): Promise<boolean> {
  const row = await q
    .insertInto('catalog_maintenance_leases')
    .values({ dataset_id: datasetId, holder, expires_at: inMs(ttlMs) })
    .onConflict((oc) =>
      oc
        .column('dataset_id')
        .doUpdateSet({ holder, acquired_at: sql<Date>`clock_timestamp()`, expires_at: inMs(ttlMs) })
        .where((eb) => eb.or([eb('catalog_maintenance_leases.expires_at', '<', sql<Date>`clock_timestamp()`), eb('catalog_maintenance_leases.holder', '=', holder)])),
    )
    .returning('holder')
    .executeTakeFirst();
  return row?.holder === holder;
}

/** Extends a lease `holder` still holds; false when it was lost (expired and taken by another). */
export async function renewLease(q: Executor, datasetId: string, holder: string, ttlMs: number): Promise<boolean> {
  const result = await q
    .updateTable('catalog_maintenance_leases')
    .set({ expires_at: inMs(ttlMs) })
    .where('dataset_id', '=', datasetId)
    .where('holder', '=', holder)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function releaseLease(q: Executor, datasetId: string, holder: string): Promise<void> {
  await q.deleteFrom('catalog_maintenance_leases').where('dataset_id', '=', datasetId).where('holder', '=', holder).execute();
}

/** Datasets whose live files include at least `minFiles` smaller than `smallBytes`, most such files first. */
export async function datasetsWithSmallFiles(q: Executor, options: { smallBytes: number; minFiles: number; limit: number }): Promise<{ dataset_id: string; small_files: number }[]> {
  const rows = await q
    .selectFrom('catalog_data_files')
    .select(['dataset_id', (eb) => eb.fn.countAll<string>().as('small_files')])
    .where('removed_in_snapshot', 'is', null)
    .where('size_bytes', '<', options.smallBytes)
    .groupBy('dataset_id')
    .having((eb) => eb.fn.countAll(), '>=', options.minFiles)
    .orderBy('small_files', 'desc')
    .limit(options.limit)
    .execute();
  return rows.map((r) => ({ dataset_id: r.dataset_id, small_files: Number(r.small_files) }));
}
