import { sql } from 'kysely';
import { newId } from '../crypto/random.ts';
import type { DatasetProperties } from '../db/index.ts';
import { checkProperties, sameJson } from './definition.ts';
import { normalizeName, type DatasetRef } from './names.ts';
import { requireNamespace } from './queries.ts';
import type { Executor } from './types.ts';

/** A dataset listed from an external catalog: a stub of kind `external` (no columns, no snapshots). */
export interface ExternalDatasetEntry {
  collection: string;
  name: string;
  description: string | null;
  /** Where it comes from in the external catalog (docs/catalog-bindings.md: `properties.external`). */
  properties: DatasetProperties;
}

export interface ExternalSyncResult {
  added: DatasetRef[];
  removed: DatasetRef[];
  /** Stubs that stay (their dataset ids too); `updated` of them had their description or properties changed. */
  kept: number;
  updated: number;
  /** Entries whose name a dataset of another kind holds: left alone, not listed. */
  conflicts: DatasetRef[];
}

const keyOf = (collection: string, name: string) => `${collection}.${name}`;

/**
 * Makes the workspace's `external` stubs exactly `entries`, under a lock on its namespace (so two
 * syncs, or a sync and a revert, take turns): adds the new ones (creating their collections), keeps
 * those still listed (same dataset ids), removes the rest, and then removes the collections that
 * removal left without any dataset row at all. Datasets of other kinds are never touched; an entry
 * naming one is a conflict.
 */
export async function replaceExternalIn(trx: Executor, workspace: string, entries: readonly ExternalDatasetEntry[], author: string): Promise<ExternalSyncResult> {
  const ws = normalizeName('workspace', workspace);
  await requireNamespace(trx, ws, 'update');
  const live = await trx
    .selectFrom('catalog_datasets')
    .select(['dataset_id', 'collection', 'name', 'kind', 'description', 'properties'])
    .where('workspace', '=', ws)
    .where('dropped_at', 'is', null)
    .execute();
  const existing = new Map(live.map((d) => [keyOf(d.collection, d.name), d]));
  const result: ExternalSyncResult = { added: [], removed: [], kept: 0, updated: 0, conflicts: [] };
  const wanted = new Set<string>();

  for (const entry of entries) {
    const collection = normalizeName('collection', entry.collection);
    const name = normalizeName('dataset', entry.name);
    const key = keyOf(collection, name);
    if (wanted.has(key)) continue;
    wanted.add(key);
    const ref = { workspace: ws, collection, dataset: name };
    const properties = checkProperties(entry.properties);
    const found = existing.get(key);
    if (found && found.kind !== 'external') {
      result.conflicts.push(ref);
    } else if (found) {
      result.kept++;
      if (found.description === entry.description && sameJson(found.properties, properties)) continue;
      result.updated++;
      await trx
        .updateTable('catalog_datasets')
        .set((eb) => ({
          description: entry.description,
          properties: JSON.stringify(properties),
          definition_version: eb('definition_version', '+', 1),
          updated_by: author,
          updated_at: sql<Date>`clock_timestamp()`,
        }))
        .where('dataset_id', '=', found.dataset_id)
        .execute();
    } else {
      await trx.insertInto('catalog_collections').values({ workspace: ws, name: collection, created_by: author }).onConflict((oc) => oc.columns(['workspace', 'name']).doNothing()).execute();
      await trx
        .insertInto('catalog_datasets')
        .values({
          dataset_id: newId('ds'),
          workspace: ws,
          collection,
          name,
          kind: 'external',
          columns: '[]',
          description: entry.description,
          properties: JSON.stringify(properties),
          created_by: author,
          updated_by: author,
        })
        .execute();
      result.added.push(ref);
    }
  }

  const gone = live.filter((d) => d.kind === 'external' && !wanted.has(keyOf(d.collection, d.name)));
  if (gone.length > 0) {
    await trx.deleteFrom('catalog_datasets').where('dataset_id', 'in', gone.map((d) => d.dataset_id)).execute();
    const emptied = [...new Set(gone.map((d) => d.collection))];
    await trx
      .deleteFrom('catalog_collections')
      .where('workspace', '=', ws)
      .where('name', 'in', emptied)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('catalog_datasets as d').select('d.dataset_id').where('d.workspace', '=', ws).whereRef('d.collection', '=', 'catalog_collections.name'))),
      )
      .execute();
    result.removed = gone.map((d) => ({ workspace: ws, collection: d.collection, dataset: d.name }));
  }
  return result;
}
