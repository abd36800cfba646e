import { sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import { grantsQuery, type Grant } from '../../core/authz/index.ts';
import type { Dataset, DatasetRef } from '../../core/catalog/index.ts';
import type { Db } from '../../core/db/index.ts';

/** What every rows page needs before it reads: the caller's grants in the workspace, whether the workspace is active, and the dataset. */
export interface DatasetAccess {
  grants: Grant[];
  workspaceActive: boolean;
  dataset?: Dataset;
}

/**
 * Looks up a DatasetAccess in one statement: a client paging through a dataset asks for it with
 * every page, and on embedded PostgreSQL each statement costs about a millisecond of its thread.
 * Where only this process writes the database (PGlite), an answer is kept until any statement that
 * may write is sent, so a client paging through an unchanged catalog costs none; a revoked grant, a
 * deleted workspace or a new commit is seen by the next page all the same. The decision stays with
 * core/authz (`Authorizer.accessFrom`).
 */
export class DatasetAccessLookup {
  private readonly kept = new LRUCache<string, { changes: number; access: DatasetAccess }>({ max: 1_000 });

  constructor(private readonly db: Db) {}

  async find(identity: string, ref: DatasetRef): Promise<DatasetAccess> {
    const changes = this.db.changes?.();
    if (changes === undefined) return this.read(identity, ref);
    const key = JSON.stringify([identity, ref.workspace, ref.collection, ref.dataset]);
    const kept = this.kept.get(key);
    if (kept?.changes === changes) return kept.access;
    const access = await this.read(identity, ref);
    this.kept.set(key, { changes, access });
    return access;
  }

  private async read(identity: string, ref: DatasetRef): Promise<DatasetAccess> {
    const row = await this.db.kysely
      .selectFrom(sql<{ one: number }>`(SELECT 1 AS one)`.as('one'))
      .leftJoin('catalog_datasets as d', (join) => join.on('d.workspace', '=', ref.workspace).on('d.collection', '=', ref.collection).on('d.name', '=', ref.dataset))
      .selectAll('d')
      .select((eb) => [
        jsonArrayFrom(grantsQuery(this.db.kysely, identity, ref.workspace)).as('grants'),
        eb.exists(eb.selectFrom('workspaces').select('name').where('name', '=', ref.workspace).where('deleted_at', 'is', null)).as('workspace_active'),
      ])
      .executeTakeFirstOrThrow();
    const { grants, workspace_active, ...dataset } = row;
    return { grants: grants as Grant[], workspaceActive: workspace_active === true, dataset: dataset.dataset_id === null ? undefined : (dataset as Dataset) };
  }
}
