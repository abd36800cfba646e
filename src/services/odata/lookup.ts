import { LRUCache } from 'lru-cache';
import type { Authorizer, Standing } from '../../core/authz/index.ts';
import type { Catalog, Dataset, DatasetRef } from '../../core/catalog/index.ts';

/** What every rows page needs before it reads: the caller's standing in the workspace (grants, whether deleted) and the dataset. */
export interface DatasetAccess {
  standing: Standing;
  dataset?: Dataset;
}

export interface DatasetAccessSources {
  /** core/authz: the caller's grants and the workspace's state. */
  authz: Pick<Authorizer, 'standingIn'>;
  catalog: Pick<Catalog, 'findDataset'>;
  /** The database's change count where only this process writes it (Db.changes; PGlite), else undefined. */
  changes?: () => number;
}

/**
 * Looks up a DatasetAccess, asking each owner at once: a client paging through a dataset asks for it
 * with every page. Where only this process writes the database (PGlite), an answer is kept until any
 * statement that may write is sent, so a client paging through an unchanged catalog costs none; a
 * revoked grant, a deleted workspace or a new commit is seen by the next page all the same. The
 * decision, a deleted workspace's 409 included, stays with core/authz (`Authorizer.accessFrom`).
 */
export class DatasetAccessLookup {
  private readonly kept = new LRUCache<string, { changes: number; access: DatasetAccess }>({ max: 1_000 });

  constructor(private readonly sources: DatasetAccessSources) {}

  async find(identity: string, ref: DatasetRef): Promise<DatasetAccess> {
    const changes = this.sources.changes?.();
    if (changes === undefined) return this.read(identity, ref);
    const key = JSON.stringify([identity, ref.workspace, ref.collection, ref.dataset]);
    const kept = this.kept.get(key);
    if (kept?.changes === changes) return kept.access;
    const access = await this.read(identity, ref);
    this.kept.set(key, { changes, access });
    return access;
  }

  private async read(identity: string, ref: DatasetRef): Promise<DatasetAccess> {
    const { authz, catalog } = this.sources;
    const [standing, dataset] = await Promise.all([authz.standingIn(identity, ref.workspace), catalog.findDataset(ref)]);
    return { standing, dataset };
  }
}
