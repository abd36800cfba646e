import crypto from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { roleAtLeast, type Authorizer, type Principal, type Resource, type Role, type Standing } from '../../core/authz/index.ts';
import { appError, isAppError } from '../../core/errors/index.ts';
import { normalizeName, normalizeRef, parseSelector, refOf, type Catalog, type Dataset, type DatasetRef, type Snapshot } from '../../core/catalog/index.ts';
import type { PublicUrl } from '../../core/http/index.ts';
import type { Logger } from '../../core/logger.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { icebergError } from './errors.ts';
import { manifestListName, manifestTag, snapshotManifests, tableMetadata, type BuiltMetadata, type TableLayout } from './metadata.ts';
import { icebergSchema } from './schema.ts';

/**
 * The Iceberg REST catalog's view of Lakeport (docs/iceberg.md): a workspace is a namespace, each of
 * its collections a namespace below it, tables and materialized views its tables. Every answer goes
 * through core/authz: a caller sees only the namespaces and tables it may read (the reader role).
 * Metadata files are built from the catalog on load, stored once and kept (see metadata.ts).
 */

export interface IcebergServiceDeps {
  catalog: Catalog;
  authz: Authorizer;
  blobs: BlobStore;
  publicUrl: PublicUrl;
  /** `http`: file locations are Lakeport URLs (the authorized file route); `storage`: the store's own URIs (s3://…). */
  locations: 'http' | 'storage';
  /** Db.changes: lets the file route keep a lookup while nothing was written (as OData's pages do). */
  changes?: () => number;
  log: Logger;
}

/** Where the /iceberg file route is, below the public URL. */
export const FILES_PATH = '/iceberg/v1/files';

/** Datasets an Iceberg reader can read: tables and materialized views (logical views and external stubs are not tables). */
export const isIcebergTable = (dataset: Pick<Dataset, 'kind'>) => dataset.kind === 'table' || dataset.kind === 'materialized_view';

/** A file the file route serves: its blob, size and media type. */
export interface ServedFile {
  key: string;
  size: number;
  contentType: string;
}

/** A value computed while Db.changes was `changes`. */
interface Kept<T> {
  changes: number;
  value: T;
}

/** The namespaces and tables a caller may see in one workspace. */
interface WorkspaceView {
  standing: Standing;
  /** The caller's role on the workspace itself, and on each collection. */
  role: Role | null;
  collections: Map<string, { role: Role | null; tables: Dataset[] }>;
}

const METADATA_FILE = /^\d+-[0-9a-f]{16}\.metadata\.json$/;
const MANIFEST_LIST = /^snap-(\d{1,16})-([0-9a-f]{12})\.avro$/;
const MANIFEST = /^(\d{1,16})-([0-9a-f]{12})-m0\.avro$/;
const DATA_FILE = /^(file_[A-Za-z0-9_-]{1,64})\.parquet$/;
export const DATASET_ID = /^ds_[A-Za-z0-9_-]{1,64}$/;

const readable = (role: Role | null) => role !== null && roleAtLeast(role, 'reader');

/** Names as Iceberg clients send them; a name Lakeport cannot hold is one that does not exist. */
function names(parts: string[], kind: 'namespace' | 'table'): string[] {
  try {
    return parts.map((p, i) => normalizeName(i === 0 ? 'workspace' : i === 1 ? 'collection' : 'dataset', p));
  } catch {
    throw kind === 'namespace' ? appError('NAMESPACE_NOT_FOUND', `Namespace ${JSON.stringify(parts)} does not exist`) : appError('DATASET_NOT_FOUND', `Table ${parts.join('.')} does not exist`);
  }
}

export class IcebergCatalog {
  /** Built metadata by the catalog state it was built from (see metadataOf). */
  private readonly built = new LRUCache<string, BuiltMetadata>({ max: 500 });
  /** Blob keys known to exist: metadata files are immutable, so a key once seen is never checked again. */
  private readonly stored = new LRUCache<string, number>({ max: 50_000 });
  /**
   * The file route's answers by access token and path, kept while nothing was written (Db.changes;
   * PGlite only): a reader fetches one file in many ranges, each an authorized request. A revoked
   * grant, a deleted workspace or an expiry is a write, so the next request decides again.
   */
  private readonly served = new LRUCache<string, Kept<ServedFile>>({ max: 10_000 });
  /**
   * Table loads by access token and path, kept the same way: a reader loads a table before each scan,
   * and without a write in between the answer is the same (its authorization, state and metadata file).
   */
  private readonly loads = new LRUCache<string, Kept<{ location: string; built: BuiltMetadata }>>({ max: 500 });

  constructor(private readonly deps: IcebergServiceDeps) {}

  // ── layout ─────────────────────────────────────────────────────────────────

  /** Where a dataset's metadata files are kept: beside its workspace's data, so they go with the workspace. */
  private metadataKey(dataset: Pick<Dataset, 'workspace' | 'dataset_id'>, name: string): string {
    return `lake/${dataset.workspace}/iceberg-metadata/${dataset.dataset_id}/metadata/${name}`;
  }

  /** The table location and data file addresses: Lakeport's file route, or the store's own URIs. */
  layout(dataset: Pick<Dataset, 'workspace' | 'dataset_id'>): TableLayout {
    if (this.deps.locations === 'storage') {
      const base = this.deps.blobs.location;
      return { location: `${base}/lake/${dataset.workspace}/iceberg-metadata/${dataset.dataset_id}`, dataFile: (file) => `${base}/${file.path}` };
    }
    const location = `${this.deps.publicUrl.value}${FILES_PATH}/${dataset.dataset_id}`;
    return { location, dataFile: (file) => `${location}/data/${file.file_id}.parquet` };
  }

  // ── namespaces ─────────────────────────────────────────────────────────────

  /** What the caller may see in a workspace: undefined when it holds no grant there. */
  private async view(caller: Principal, workspace: string): Promise<WorkspaceView | undefined> {
    const standing = await this.deps.authz.standingIn(caller.identity, workspace);
    if (standing.grants.length === 0) return undefined;
    let datasets: Dataset[] = [];
    let collections: string[] = [];
    try {
      [datasets, collections] = await Promise.all([
        this.deps.catalog.listDatasets(workspace),
        this.deps.catalog.listCollections(workspace).then((list) => list.map((c) => c.name)),
      ]);
    } catch (error) {
      if (!isAppError(error, 'NAMESPACE_NOT_FOUND')) throw error;
    }
    const tables = datasets.filter(isIcebergTable);
    const resources: Resource[] = [{ workspace }, ...collections.map((collection) => ({ workspace, collection })), ...tables.map(refOf)];
    const access = this.deps.authz.accessFrom(caller, standing, resources);
    const view: WorkspaceView = { standing, role: access[0].role, collections: new Map() };
    collections.forEach((collection, i) => view.collections.set(collection, { role: access[1 + i].role, tables: [] }));
    tables.forEach((table, i) => {
      if (readable(access[1 + collections.length + i].role)) view.collections.get(table.collection)?.tables.push(table);
    });
    return view;
  }

  private static visibleCollections(view: WorkspaceView): string[] {
    return [...view.collections].filter(([, c]) => readable(c.role) || c.tables.length > 0).map(([name]) => name);
  }

  /**
   * The namespace, checked: permission before existence, as everywhere (403 when the caller may read
   * nothing there, 404 when it may but the namespace does not exist). Returns its view.
   */
  private async requireNamespace(caller: Principal, namespace: string[]): Promise<{ view: WorkspaceView; parts: string[] }> {
    if (namespace.length < 1 || namespace.length > 2) throw appError('NAMESPACE_NOT_FOUND', `Namespace ${JSON.stringify(namespace)} does not exist: namespaces are a workspace or a workspace and a collection`);
    const parts = names(namespace, 'namespace');
    const denied = () => appError('PERMISSION_DENIED', `'${caller.identity}' may not read namespace ${parts.join('.')}`);
    const missing = () => appError('NAMESPACE_NOT_FOUND', `Namespace ${parts.join('.')} does not exist`);
    const view = await this.view(caller, parts[0]);
    if (!view) throw denied();
    const visible = IcebergCatalog.visibleCollections(view);
    if (parts.length === 1) {
      if (visible.length > 0) return { view, parts };
      throw readable(view.role) ? missing() : denied();
    }
    if (visible.includes(parts[1])) return { view, parts };
    const [{ role }] = this.deps.authz.accessFrom(caller, view.standing, [{ workspace: parts[0], collection: parts[1] }]);
    throw readable(role) ? missing() : denied();
  }

  /** Top-level namespaces (the workspaces where the caller may read something), or those below `parent`. */
  async listNamespaces(caller: Principal, parent: string[] | undefined): Promise<string[][]> {
    if (parent === undefined || parent.length === 0) {
      const workspaces = await this.deps.authz.workspacesOf(caller);
      const views = await Promise.all(workspaces.map(async (w) => ({ w, view: await this.view(caller, w) })));
      return views.filter(({ view }) => view && (readable(view.role) || IcebergCatalog.visibleCollections(view).length > 0)).map(({ w }) => [w]);
    }
    const { view, parts } = await this.requireNamespace(caller, parent);
    return parts.length === 1 ? IcebergCatalog.visibleCollections(view).map((c) => [parts[0], c]) : [];
  }

  /** A namespace the caller may see: its properties (none: Lakeport keeps no namespace properties for Iceberg). */
  async loadNamespace(caller: Principal, namespace: string[]): Promise<{ namespace: string[]; properties: Record<string, string> }> {
    const { parts } = await this.requireNamespace(caller, namespace);
    return { namespace: parts, properties: {} };
  }

  /** The tables of a collection namespace the caller may read (a workspace namespace holds none). */
  async listTables(caller: Principal, namespace: string[]): Promise<{ namespace: string[]; name: string }[]> {
    const { view, parts } = await this.requireNamespace(caller, namespace);
    if (parts.length === 1) return [];
    return (view.collections.get(parts[1])?.tables ?? []).map((t) => ({ namespace: parts, name: t.name }));
  }

  // ── tables ─────────────────────────────────────────────────────────────────

  /**
   * A table `name` or `name@label` (`@previous`, a tag, a snapshot id, as OData and jobs write them):
   * the dataset and the snapshot of that state. 403 without the reader role, 404 for a namespace
   * that is not a collection, a dataset that does not exist or is not a table, or a label naming nothing.
   */
  async table(caller: Principal, namespace: string[], segment: string): Promise<{ dataset: Dataset; at: Snapshot | null }> {
    const at = segment.indexOf('@');
    const name = at < 0 ? segment : segment.slice(0, at);
    if (namespace.length !== 2) throw appError('DATASET_NOT_FOUND', `Table ${[...namespace, name].join('.')} does not exist: tables are in a workspace.collection namespace`);
    const [workspace, collection, dataset] = names([...namespace, name], 'table');
    const ref: DatasetRef = normalizeRef({ workspace, collection, dataset });
    const selector = at < 0 ? ({ kind: 'current' } as const) : parseSelector(segment.slice(at + 1));
    // Looked up together; the answer still depends on the permission first.
    const [standing, found] = await Promise.all([this.deps.authz.standingIn(caller.identity, workspace), this.deps.catalog.findDataset(ref)]);
    const [access] = this.deps.authz.accessFrom(caller, standing, [ref]);
    if (!readable(access.role)) throw appError('PERMISSION_DENIED', `'${caller.identity}' may not read ${workspace}.${collection}.${dataset}`);
    if (!found || !isIcebergTable(found)) throw appError('DATASET_NOT_FOUND', `Table ${workspace}.${collection}.${dataset} does not exist${found ? ` (it is a ${found.kind}, not a table)` : ''}`);
    if (selector.kind === 'current' && found.current_snapshot_id === null) return { dataset: found, at: null };
    return { dataset: found, at: await this.deps.catalog.resolveSnapshotOf(found, selector) };
  }

  /**
   * `compute`, kept under `key` while nothing was written (Db.changes, PGlite only; without it,
   * computed every time). The count is read first, so a write during `compute` is seen next time.
   */
  private async whileUnchanged<T>(cache: LRUCache<string, Kept<T>>, key: string, compute: () => Promise<T>): Promise<T> {
    const changes = this.deps.changes?.();
    if (changes === undefined) return compute();
    const kept = cache.get(key);
    if (kept && kept.changes === changes) return kept.value;
    const value = await compute();
    cache.set(key, { changes, value });
    return value;
  }

  /** Load table: the state `segment` names (table()) and its stored metadata (metadataOf()), kept per token while nothing was written. */
  loadTable(caller: Principal, namespace: string[], segment: string): Promise<{ location: string; built: BuiltMetadata }> {
    return this.whileUnchanged(this.loads, JSON.stringify([caller.tokenId, namespace, segment]), async () => {
      const { dataset, at } = await this.table(caller, namespace, segment);
      return this.metadataOf(dataset, at);
    });
  }

  /**
   * The table metadata of a state, stored: built from the catalog unless built before from the same
   * state (kept by a fingerprint of everything it depends on), its file written unless it exists.
   * With storage locations every snapshot's manifests are written too, since readers go to storage directly.
   */
  async metadataOf(dataset: Dataset, at: Snapshot | null): Promise<{ location: string; built: BuiltMetadata }> {
    const { catalog } = this.deps;
    const [snapshots, tags] = await Promise.all([catalog.listSnapshots(dataset.dataset_id), catalog.listTags(dataset.dataset_id)]);
    const layout = this.layout(dataset);
    const fingerprint = JSON.stringify([
      layout.location,
      dataset.dataset_id,
      dataset.definition_version,
      new Date(dataset.updated_at).getTime(),
      at?.snapshot_id ?? null,
      snapshots.map((s) => [s.snapshot_id, s.expired_at === null]),
      tags.map((t) => [t.name, t.snapshot_id, new Date(t.created_at).getTime()]),
    ]);
    const key = crypto.createHash('sha256').update(fingerprint).digest('hex');
    let built = this.built.get(key);
    if (!built) {
      const files = await catalog.fileHistory(dataset.dataset_id);
      built = tableMetadata({ dataset, snapshots, tags, files, at }, layout);
      await this.store(this.metadataKey(dataset, built.name), () => Buffer.from(built!.text));
      if (this.deps.locations === 'storage') {
        for (const s of snapshots.filter((x) => built!.json.snapshots.some((j) => j['snapshot-id'] === Number(x.snapshot_id)))) {
          await this.writeManifests(dataset, s, snapshots, built);
        }
      }
      this.built.set(key, built);
    }
    return { location: `${layout.location}/metadata/${built.name}`, built };
  }

  /** Writes a blob unless it is known to exist; metadata files are immutable, so existing is enough. */
  private async store(key: string, bytes: () => Buffer | Promise<Buffer>): Promise<number> {
    const known = this.stored.get(key);
    if (known !== undefined) return known;
    const size = (await this.deps.blobs.head(key))?.size ?? (await this.deps.blobs.put(key, await bytes())).size;
    this.stored.set(key, size);
    return size;
  }

  /** A snapshot's manifest and manifest list, written unless they exist. */
  private async writeManifests(dataset: Dataset, snapshot: Snapshot, snapshots: Snapshot[], built: Pick<BuiltMetadata, 'schema' | 'tag'>): Promise<void> {
    const listKey = this.metadataKey(dataset, manifestListName(Number(snapshot.snapshot_id), built.tag));
    if (this.stored.has(listKey) || (await this.deps.blobs.head(listKey))) return;
    const files = await this.deps.catalog.snapshotFiles(Number(snapshot.snapshot_id));
    const { list, manifest } = await snapshotManifests({ snapshot, files, snapshots, schema: built.schema, tag: built.tag, layout: this.layout(dataset) });
    // The manifest before the list that names it, so a reader never finds the list without it.
    if (manifest) await this.store(this.metadataKey(dataset, manifest.name), () => manifest.bytes);
    await this.store(listKey, () => list.bytes);
  }

  // ── files ──────────────────────────────────────────────────────────────────

  /**
   * A file under a table location, for the file route: a data file the catalog names for the dataset
   * (looked up by its id, never by a path from the request), or a metadata file. A manifest (list)
   * of the current schema and location is written on first read. 403 without the reader role on the
   * dataset; 404 for anything else.
   */
  file(caller: Principal, datasetId: string, area: 'data' | 'metadata', name: string): Promise<ServedFile> {
    return this.whileUnchanged(this.served, JSON.stringify([caller.tokenId, datasetId, area, name]), () => this.lookUpFile(caller, datasetId, area, name));
  }

  private async lookUpFile(caller: Principal, datasetId: string, area: 'data' | 'metadata', name: string): Promise<ServedFile> {
    const notFound = () => icebergError('FILE_NOT_FOUND', `No file ${area}/${name} in the table of ${datasetId}`);
    const dataset = DATASET_ID.test(datasetId) ? await this.deps.catalog.findDataset(datasetId) : undefined;
    if (!dataset || !isIcebergTable(dataset)) throw notFound();
    if (!readable(await this.deps.authz.roleOn(caller, refOf(dataset)))) {
      throw appError('PERMISSION_DENIED', `'${caller.identity}' may not read ${dataset.workspace}.${dataset.collection}.${dataset.name}`);
    }
    if (area === 'data') {
      const id = DATA_FILE.exec(name)?.[1];
      const file = id ? await this.deps.catalog.findDataFile(dataset.dataset_id, id) : undefined;
      if (!file) throw notFound();
      return { key: file.path, size: Number(file.size_bytes), contentType: 'application/vnd.apache.parquet' };
    }
    const manifest = MANIFEST_LIST.exec(name) ?? MANIFEST.exec(name);
    if (!manifest && !METADATA_FILE.test(name)) throw notFound();
    const key = this.metadataKey(dataset, name);
    const contentType = name.endsWith('.json') ? 'application/json' : 'application/avro';
    let size = this.stored.get(key) ?? (await this.deps.blobs.head(key))?.size;
    if (size === undefined && manifest) {
      await this.buildManifests(dataset, Number(manifest[1]), manifest[2]);
      size = (await this.deps.blobs.head(key))?.size;
    }
    if (size === undefined) throw notFound();
    this.stored.set(key, size);
    return { key, size, contentType };
  }

  /** Writes a snapshot's manifests when `tag` is the current one (the current schema and location) and the snapshot is live. */
  private async buildManifests(dataset: Dataset, snapshotId: number, tag: string): Promise<void> {
    const schema = icebergSchema(dataset.columns, dataset.definition_version);
    if (manifestTag(this.layout(dataset).location, schema) !== tag) return;
    const snapshots = await this.deps.catalog.listSnapshots(dataset.dataset_id);
    const snapshot = snapshots.find((s) => Number(s.snapshot_id) === snapshotId && s.expired_at === null);
    if (snapshot) await this.writeManifests(dataset, snapshot, snapshots, { schema, tag });
  }
}
