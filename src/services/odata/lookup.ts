import { sql } from 'kysely';
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
 * every page, and on embedded PostgreSQL each statement costs about a millisecond of the server's
 * main thread. The decision stays with core/authz (`Authorizer.accessFrom`).
 */
export class DatasetAccessLookup {
  constructor(private readonly db: Db) {}

  async find(identity: string, ref: DatasetRef): Promise<DatasetAccess> {
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
