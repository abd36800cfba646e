import { LRUCache } from 'lru-cache';
import type { Grant, GrantSource } from '../../core/authz/index.ts';
import type { Catalog, Dataset, DatasetRef } from '../../core/catalog/index.ts';
import type { WorkspaceDirectory } from '../accounts/index.ts';

/** What every rows page needs before it reads: the caller's grants in the workspace, whether the workspace is active, and the dataset. */
export interface DatasetAccess {
  grants: Grant[];
  workspaceActive: boolean;
  dataset?: Dataset;
}

export interface DatasetAccessSources {
  /** The policy module's grants. */
  grants: Pick<GrantSource, 'grantsOf'>;
  catalog: Pick<Catalog, 'findDataset'>;
  workspaces: WorkspaceDirectory;
  /** The database's change count where only this process writes it (Db.changes; PGlite), else undefined. */
  changes?: () => number;
}

/**
 * Looks up a DatasetAccess, asking each owner at once: a client paging through a dataset asks for it
 * with every page. Where only this process writes the database (PGlite), an answer is kept until any
 * statement that may write is sent, so a client paging through an unchanged catalog costs none; a
 * revoked grant, a deleted workspace or a new commit is seen by the next page all the same. The
 * decision stays with core/authz (`Authorizer.accessFrom`).
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
    const { grants, catalog, workspaces } = this.sources;
    const [granted, workspace, dataset] = await Promise.all([grants.grantsOf(identity, ref.workspace), workspaces.find(ref.workspace), catalog.findDataset(ref)]);
    return { grants: granted, workspaceActive: workspace?.live === true, dataset };
  }
}
