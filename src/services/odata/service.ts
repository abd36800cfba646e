import { LRUCache } from 'lru-cache';
import { collectionsReached, roleAtLeast, type Authorizer, type Principal } from '../../core/authz/index.ts';
import { NAME_REGEX, normalizeRef, parseSelector, refOf, type Catalog, type DataFile, type Dataset, type DatasetRef, type Snapshot, type SnapshotSelector, type Tag } from '../../core/catalog/index.ts';
import type { RowReader } from '../../core/engine/row-reader.ts';
import { newId } from '../../core/crypto/index.ts';
import type { TableWrites } from '../../core/db/writes.ts';
import { KEPT_READ_TTL_MS, KeptReads } from '../../core/kept.ts';
import { AppError } from '../../core/errors/index.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { odataError } from './errors.ts';
import { entitySetName, findEntitySet, isExternalStub, isLogicalView, lakeportType, propertyNames } from './metadata/index.ts';
import type { DatasetAccessLookup } from './lookup.ts';
import type { DatasetVersion, ODataColumn } from './model.ts';

export interface ODataServiceDeps {
  catalog: Catalog;
  authz: Authorizer;
  blobs: BlobStore;
  reader: RowReader;
  /** The caller's grants, the workspace's state and the dataset, in one lookup (every page needs them). */
  access: Pick<DatasetAccessLookup, 'find'>;
  /** This process's writes to the metadata database (Db.writes): what the readable listings are kept until; none kept without it. */
  writes?: TableWrites;
}

/** The catalog tables the readable listings are read from (grants and workspace states are part of their keys). */
const LISTING_TABLES = ['catalog_namespaces', 'catalog_collections', 'catalog_datasets', 'catalog_snapshots', 'catalog_data_files', 'catalog_tags'];

type Readable = { dataset: Dataset; role: DatasetVersion['role']; policies: string[] }[];
type Scopes = Awaited<ReturnType<ODataService['readableScopes']>>;

/** A dataset path segment: `name` or `name@label`. */
export interface DatasetAddress {
  ref: DatasetRef;
  selector: SnapshotSelector;
  /** The `@label` as written, when there was one. */
  label?: string;
}

/** Parses `{ws}/{coll}/{ds}[@label]`; 400 INVALID_SELECTOR for a malformed label, 404 for a name that cannot exist. */
export function parseAddress(workspace: string, collection: string, datasetSegment: string): DatasetAddress {
  const at = datasetSegment.indexOf('@');
  const name = at < 0 ? datasetSegment : datasetSegment.slice(0, at);
  const label = at < 0 ? undefined : datasetSegment.slice(at + 1);
  const selector = label === undefined ? ({ kind: 'current' } as const) : parseSelector(label);
  try {
    return { ref: normalizeRef({ workspace, collection, dataset: name }), selector, label };
  } catch {
    throw odataError('DATASET_NOT_FOUND', `Dataset ${workspace}/${collection}/${name} does not exist`);
  }
}

/**
 * The dataset's entity properties: its columns under their EDM property names (names that are not
 * SimpleIdentifiers are rewritten, see metadata/names.ts), then the synthetic key, the row's number
 * in the version. Queries, JSON keys and $metadata all use these names.
 */
export function entityOf(dataset: Dataset): { properties: ODataColumn[]; columns: { name: string; type: string; as: string }[]; rowId: string } {
  const names = propertyNames(dataset.columns);
  const columns = dataset.columns.map((c, i) => ({ name: c.name, type: lakeportType(c), as: names.columns[i] }));
  const properties = columns.map((c, i) => ({ name: c.as, type: c.type, nullable: dataset.columns[i].nullable }));
  properties.push({ name: names.rowId, type: 'BIGINT', nullable: false });
  return { properties, columns, rowId: names.rowId };
}

/** An OData paged read holds its snapshot this long after its latest page (docs/lifecycle.md). */
export const PIN_TTL_MS = 30 * 60_000;
const PIN_RENEW_MS = 5 * 60_000;

/**
 * What OData reads: the datasets a caller may read, at a selected version, with what their
 * metadata describes. Authorization is decided here, through core/authz, for every dataset.
 */
export class ODataService {
  /**
   * Snapshots and their file lists never change; paging needs them for every page and the
   * service-wide $metadata every current one, so they are kept (up to about 30 000 file rows).
   */
  private readonly snapshotFiles = new LRUCache<number, { files: DataFile[]; current: number | null }>({ maxSize: 30_000, sizeCalculation: (kept) => kept.files.length + 1 });
  private readonly snapshots = new LRUCache<number, Snapshot>({ max: 30_000 });

  /** When this process last leased each snapshot (see pin). */
  private readonly pinned = new LRUCache<number, number>({ max: 10_000 });
  /** The holder of this process's OData leases. */
  private readonly leaseHolder = `odata:${newId('proc')}`;

  /**
   * What the service document and the service-wide $metadata read, per caller standing (grants in
   * live workspaces, credential narrowing): dropped when this process writes the catalog, and after
   * KEPT_READ_TTL_MS (another server's commit), so a BI tool refreshing both costs one read.
   */
  private readonly keptRefs: KeptReads<string, DatasetRef[]>;
  private readonly keptVersions: KeptReads<string, DatasetVersion[]>;

  constructor(private readonly deps: ODataServiceDeps) {
    const kept = { ttlMs: deps.writes ? KEPT_READ_TTL_MS : 0, tables: deps.writes && { writes: deps.writes, names: LISTING_TABLES } };
    this.keptRefs = new KeptReads({ ...kept, max: 1_000 });
    // A few large answers (every readable dataset with its files' statistics).
    this.keptVersions = new KeptReads({ ...kept, max: 16 });
  }

  /**
   * Leases the version's snapshot while its pages are read: a client following nextLink keeps the
   * snapshot from EXPIRE SNAPSHOTS for PIN_TTL_MS after its last page. Renewed at most every
   * PIN_RENEW_MS per snapshot, so most pages cost no write. 410 SNAPSHOT_EXPIRED when it expired.
   */
  async pin(version: DatasetVersion): Promise<void> {
    const id = version.snapshot?.snapshot_id;
    if (id === undefined) return;
    const now = Date.now();
    const last = this.pinned.get(id);
    if (last !== undefined && now - last < PIN_RENEW_MS) return;
    await this.deps.catalog.leaseSnapshots([id], this.leaseHolder, PIN_TTL_MS);
    this.pinned.set(id, now);
  }

  /**
   * Every dataset the caller may read (external stubs too), by workspace, collection and name
   * (soft-deleted workspaces are left out by core/authz). A fixed number of queries however many
   * workspaces: the caller's standings, then the datasets of the collections its grants reach.
   */
  private async readableDatasets(caller: Principal, { standings, scopes }: Scopes): Promise<Readable> {
    const readable: Readable = [];
    for (const dataset of await this.deps.catalog.listDatasetsIn(scopes)) {
      const access = this.readAccess(caller, standings, refOf(dataset));
      if (access) readable.push({ dataset, role: access.role, policies: access.patterns });
    }
    return readable;
  }

  /** The caller's role on `ref` and the patterns granting it, when it may read it (its standing in the workspace is given). */
  private readAccess(caller: Principal, standings: Scopes['standings'], ref: DatasetRef) {
    const [{ role, patterns }] = this.deps.authz.accessFrom(caller, standings.get(ref.workspace)!, [ref]);
    return role !== null && roleAtLeast(role, 'reader') ? { role, patterns } : undefined;
  }

  /** The names of every dataset the caller may read, as readableDatasets lists them (the service document and entity set names need no more). */
  async readableRefs(caller: Principal): Promise<DatasetRef[]> {
    const readable = await this.readableScopes(caller);
    return this.keptRefs.get(readable.key, async () =>
      (await this.deps.catalog.listDatasetRefsIn(readable.scopes)).filter((ref) => this.readAccess(caller, readable.standings, ref)),
    );
  }

  /**
   * The caller's standing in each workspace it may browse, the collections there its grants reach,
   * and a key for what they let it read (the answers kept for it depend on nothing else of the caller).
   */
  private async readableScopes(caller: Principal) {
    const standings = new Map((await this.deps.authz.standingsOf(caller)).map((s) => [s.workspace, s]));
    const scopes = [...standings.values()].map((s) => ({ workspace: s.workspace, collections: collectionsReached(s.grants) }));
    const key = JSON.stringify([caller.identity, caller.permissions, [...standings.values()]]);
    return { standings, scopes, key };
  }

  /**
   * The dataset an entity set name (`ws__coll__ds[@label]`) stands for: directly when the name
   * splits into three names that give it back, else among the datasets the caller may read (as the
   * service-wide $metadata names them); 404 when none.
   */
  async addressOfEntitySet(caller: Principal, segment: string): Promise<DatasetAddress> {
    const at = segment.indexOf('@');
    const name = at < 0 ? segment : segment.slice(0, at);
    const rest = at < 0 ? '' : segment.slice(at);
    const parts = name.split('__');
    if (parts.length === 3 && parts.every((p) => NAME_REGEX.test(p))) {
      const address = parseAddress(parts[0], parts[1], parts[2] + rest);
      if (entitySetName(address.ref) === name) return address;
    }
    const readable = await this.readableRefs(caller);
    const ref = findEntitySet(name, readable);
    if (!ref) throw odataError('DATASET_NOT_FOUND', `No entity set named ${JSON.stringify(name)} among the datasets you may read`);
    return parseAddress(ref.workspace, ref.collection, ref.dataset + rest);
  }

  /**
   * The current version of every readable dataset (for the service-wide $metadata), in a fixed number
   * of queries: snapshots, files and tags of all of them at once; 504 when they cannot be enumerated.
   */
  async currentVersions(caller: Principal): Promise<DatasetVersion[]> {
    try {
      const scopes = await this.readableScopes(caller);
      return await this.keptVersions.get(scopes.key, () => this.readCurrentVersions(caller, scopes));
    } catch (error) {
      if (error instanceof AppError && error.status < 500) throw error;
      throw odataError('CATALOG_UNAVAILABLE', 'The datasets could not be enumerated; try again shortly');
    }
  }

  /**
   * The current version of every dataset the caller may read: the snapshots and files not kept from
   * earlier reads, and the tags (which move), of all of them at once.
   */
  private async readCurrentVersions(caller: Principal, scopes: Scopes): Promise<DatasetVersion[]> {
    const readable = await this.readableDatasets(caller, scopes);
    const ids = readable.map(({ dataset }) => dataset.current_snapshot_id).filter((id): id is number => id !== null);
    const snapshotById = new Map<number, Snapshot>();
    const files = new Map<number, DataFile[]>();
    const missing: number[] = [];
    for (const id of ids) {
      const snapshot = this.snapshots.get(id);
      const kept = this.snapshotFiles.get(id);
      if (snapshot && kept?.current === id) {
        snapshotById.set(id, snapshot);
        files.set(id, kept.files);
      } else missing.push(id);
    }
    const [snapshots, read, tags] = await Promise.all([this.deps.catalog.snapshotsById(missing), this.deps.catalog.filesOfSnapshots(missing), this.deps.catalog.tagsOfSnapshots(ids)]);
    for (const snapshot of snapshots) {
      const id = Number(snapshot.snapshot_id);
      const own = read.get(id) ?? [];
      snapshotById.set(id, snapshot);
      files.set(id, own);
      this.snapshots.set(id, snapshot);
      // As filesOf keeps them: without files a compaction stands in for, these are the files to read.
      if (!own.some((f) => f.replaced_by !== null)) this.snapshotFiles.set(id, { files: own, current: id });
    }
    const tagsOf = new Map<number, Tag[]>();
    for (const tag of tags) {
      const id = Number(tag.snapshot_id);
      const list = tagsOf.get(id);
      if (list) list.push(tag);
      else tagsOf.set(id, [tag]);
    }
    return await Promise.all(
      readable.map(async ({ dataset, role, policies }) => {
        const snapshot = dataset.current_snapshot_id === null ? undefined : snapshotById.get(Number(dataset.current_snapshot_id));
        // A snapshot gone meanwhile, or files a compaction stands in for (Catalog.readFiles): one dataset at a time.
        const own = snapshot && files.get(Number(snapshot.snapshot_id));
        if (!snapshot || !own || own.some((f) => f.replaced_by !== null)) return this.versionOf(dataset, { kind: 'current' }, role, policies, { tags: true });
        return { ref: refOf(dataset), dataset, snapshot, files: own, tags: tagsOf.get(Number(snapshot.snapshot_id)) ?? [], role, policies };
      }),
    );
  }

  /**
   * One dataset at the selected version. Permission is checked before existence, so a caller
   * without a grant learns nothing about what exists (403 either way); 404 when it may read there
   * but the dataset, tag or snapshot does not exist; 409 `WORKSPACE_DELETED` (core/authz) when it may
   * read there but the workspace is soft-deleted; 400 for a dataset kind without versions.
   * A logical view has only @current, and only its description (`rows`: 400 VIEW_ROWS_NOT_SUPPORTED).
   */
  async version(caller: Principal, address: DatasetAddress, options: { tags?: boolean; rows?: boolean } = {}): Promise<DatasetVersion> {
    const { ref, selector } = address;
    // Looked up together; the answer still depends on the permission first.
    const { standing, dataset } = await this.deps.access.find(caller.identity, ref);
    const [access] = this.deps.authz.accessFrom(caller, standing, [ref]);
    if (access.role === null || !roleAtLeast(access.role, 'reader')) {
      throw odataError('PERMISSION_DENIED', `'${caller.identity}' may not read ${ref.workspace}/${ref.collection}/${ref.dataset}`);
    }
    if (!dataset) throw odataError('DATASET_NOT_FOUND', `Dataset ${ref.workspace}/${ref.collection}/${ref.dataset} does not exist`);
    if (isExternalStub(dataset)) {
      throw odataError(
        'DATASET_NOT_VERSIONED',
        `${ref.workspace}/${ref.collection}/${ref.dataset} is listed from the workspace's external catalog: it has no snapshot versions here, so OData serves neither its rows nor its own $metadata; read it through its catalog`,
      );
    }
    if (isLogicalView(dataset)) {
      const name = `${ref.workspace}/${ref.collection}/${ref.dataset}`;
      if (address.selector.kind !== 'current') {
        throw odataError('DATASET_NOT_VERSIONED', `${name} is a logical view: it has no snapshot versions, so @${address.label ?? ''} does not apply (it always reads its sources' current data)`);
      }
      if (options.rows) {
        throw odataError(
          'VIEW_ROWS_NOT_SUPPORTED',
          `${name} is a logical view: OData describes it ($metadata) but does not serve its rows; query it with a job (SELECT * FROM ${ref.workspace}.${ref.collection}.${ref.dataset}) or make it a materialized view`,
        );
      }
    }
    return this.versionOf(dataset, selector, access.role, access.patterns, options);
  }

  private async versionOf(
    dataset: Dataset,
    selector: SnapshotSelector,
    role: DatasetVersion['role'],
    policies: string[],
    options: { tags?: boolean } = {},
  ): Promise<DatasetVersion> {
    const ref = refOf(dataset);
    // A dataset created but never committed reads as empty at @current; every other selector needs a snapshot.
    const snapshot = selector.kind === 'current' && dataset.current_snapshot_id === null ? null : await this.snapshotOf(dataset, selector);
    const [files, tags] = snapshot ? await Promise.all([this.filesOf(snapshot, dataset), options.tags ? this.deps.catalog.tagsOfSnapshots([snapshot.snapshot_id]) : []]) : [[], []];
    return { ref, dataset, snapshot, files, tags, role, policies };
  }

  /** The selected snapshot; @current is the dataset row's (just read), so its snapshot may come from memory. */
  private async snapshotOf(dataset: Dataset, selector: SnapshotSelector): Promise<Snapshot> {
    const known = selector.kind === 'current' ? this.snapshots.get(dataset.current_snapshot_id ?? -1) : undefined;
    if (known?.dataset_id === dataset.dataset_id) return known;
    const snapshot = await this.deps.catalog.resolveSnapshotOf(dataset, selector);
    this.snapshots.set(snapshot.snapshot_id, snapshot);
    return snapshot;
  }

  /**
   * The files to read for a snapshot, kept per snapshot while the dataset's current snapshot stays the
   * same: a later compaction may let an older snapshot read fewer files (Catalog.readFiles), and it
   * moves the current snapshot, so the list is made again once.
   */
  private async filesOf(snapshot: Snapshot, dataset: Dataset): Promise<DataFile[]> {
    let cached = this.snapshotFiles.get(snapshot.snapshot_id);
    if (!cached || cached.current !== dataset.current_snapshot_id) {
      // Compacted runs read as their compacted file: the same rows in the same order (Catalog.readFiles).
      cached = { files: await this.deps.catalog.readFiles(snapshot.snapshot_id), current: dataset.current_snapshot_id };
      this.snapshotFiles.set(snapshot.snapshot_id, cached);
    }
    return cached.files;
  }

  /** A read session over the version's files (the caller closes it). */
  async open(version: DatasetVersion) {
    const paths = await Promise.all(version.files.map((f) => this.deps.blobs.localPath(f.path)));
    const { columns, rowId } = entityOf(version.dataset);
    return this.deps.reader.open({ files: version.files.map((f, i) => ({ path: paths[i], rows: f.row_count })), columns, rowId });
  }
}
