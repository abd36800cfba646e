/**
 * The catalog as the public API shows it: the Iceberg REST catalog lists workspaces, collections
 * and datasets (what the caller may read) and a table's snapshots; OData's per-dataset $metadata
 * gives column types, statistics, the selected snapshot's author and message, and tags.
 */
import { api, data, getText } from './api.ts';

/** Iceberg's multi-level namespace separator in a path (the unit separator, %1F). */
const SEP = '\u001f';

export const listWorkspaces = async () => (await data(api.GET('/iceberg/v1/namespaces', {}))).namespaces.map((n) => n[0]);

export const listCollections = async (workspace: string) =>
  (await data(api.GET('/iceberg/v1/namespaces', { params: { query: { parent: workspace } } }))).namespaces.map((n) => n[n.length - 1]);

export const listDatasets = async (workspace: string, collection: string) =>
  (await data(api.GET('/iceberg/v1/namespaces/{namespace}/tables', { params: { path: { namespace: `${workspace}${SEP}${collection}` } } }))).identifiers.map((t) => t.name);

export const loadTable = (workspace: string, collection: string, dataset: string) =>
  data(api.GET('/iceberg/v1/namespaces/{namespace}/tables/{table}', { params: { path: { namespace: `${workspace}${SEP}${collection}`, table: dataset } } }));

/** The dataset's OData path, `/odata/api/v4/ws/coll/ds[@label]`. */
export const odataPath = (workspace: string, collection: string, dataset: string, label?: string) =>
  `/odata/api/v4/${[workspace, collection, dataset].map(encodeURIComponent).join('/')}${label ? `@${encodeURIComponent(label)}` : ''}`;

export interface ColumnInfo {
  name: string;
  type: string;
  nullable: boolean;
  originalType?: string;
  description?: string;
  stats: { min?: string; max?: string; nullCount?: string; distinctCount?: string; cidr?: string };
}

export interface DatasetInfo {
  columns: ColumnInfo[];
  snapshot?: { id?: string; totalRecords?: string; totalDataSize?: string; message?: string; author?: string };
  tags: { name: string; snapshotId: string; createdBy?: string }[];
  role?: string;
  description?: string;
  /** The key column OData adds (not the dataset's own). */
  rowId?: string;
}

const attr = (el: Element, name: string) => el.getAttribute(name) ?? undefined;

/** The `<Record>` of an annotation as {Property: value}. */
function recordOf(record: Element | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!record) return out;
  for (const pv of Array.from(record.children).filter((c) => c.localName === 'PropertyValue')) {
    const name = attr(pv, 'Property');
    if (!name) continue;
    const value = attr(pv, 'String') ?? attr(pv, 'Int') ?? attr(pv, 'Bool') ?? pv.textContent?.trim();
    if (value !== undefined) out[name] = value;
  }
  return out;
}

const annotationsOf = (el: Element) => Array.from(el.children).filter((c) => c.localName === 'Annotation');
const term = (a: Element) => (attr(a, 'Term') ?? '').replace(/^Custom\./, '');
const stringOf = (a: Element) => attr(a, 'String') ?? a.getElementsByTagNameNS('*', 'String')[0]?.textContent ?? undefined;

/**
 * Parses a per-dataset $metadata document (docs/odata-metadata.md): the entity type's properties
 * (less the row-id key), and the `<Annotations Target=…>` of the entity set and of each property.
 */
export function parseDatasetMetadata(xml: string): DatasetInfo {
  const doc = new DOMParser().parseFromString(xml, 'application/xml');
  const entityType = Array.from(doc.getElementsByTagNameNS('*', 'EntityType')).find((e) => e.getElementsByTagNameNS('*', 'Key').length > 0);
  const key = entityType?.getElementsByTagNameNS('*', 'PropertyRef')[0]?.getAttribute('Name');
  const columns: ColumnInfo[] = [];
  const byName = new Map<string, ColumnInfo>();
  for (const prop of entityType ? Array.from(entityType.children).filter((c) => c.localName === 'Property') : []) {
    const name = attr(prop, 'Name') ?? '?';
    if (name === key) continue;
    const info: ColumnInfo = { name, type: (attr(prop, 'Type') ?? '').replace(/^Edm\./, ''), nullable: attr(prop, 'Nullable') !== 'false', stats: {} };
    columns.push(info);
    byName.set(name, info);
  }
  const result: DatasetInfo = { columns, tags: [] };
  for (const block of Array.from(doc.getElementsByTagNameNS('*', 'Annotations'))) {
    const target = attr(block, 'Target') ?? '';
    const column = target.includes('/') && !target.includes('.Container/') ? byName.get(target.slice(target.lastIndexOf('/') + 1)) : undefined;
    for (const a of annotationsOf(block)) {
      const t = term(a);
      if (column) {
        if (t === 'OriginalType') column.originalType = stringOf(a);
        else if (t === 'Description') column.description = stringOf(a);
        else if (t === 'Statistics') {
          const r = recordOf(a.getElementsByTagNameNS('*', 'Record')[0]);
          column.stats = { min: r.Min, max: r.Max, nullCount: r.NullCount, distinctCount: r.DistinctValueCount, cidr: r.CIDR };
        }
      } else if (target.includes('.Container/')) {
        if (t === 'Snapshot') {
          const r = recordOf(a.getElementsByTagNameNS('*', 'Record')[0]);
          result.snapshot = { id: r.Id, totalRecords: r.TotalRecords, totalDataSize: r.TotalDataSize, message: r.CommitMessage, author: r.Author };
        } else if (t === 'Tags') {
          result.tags = Array.from(a.getElementsByTagNameNS('*', 'Record')).map((rec) => {
            const r = recordOf(rec);
            return { name: r.Name ?? '?', snapshotId: r.SnapshotId ?? '?', createdBy: r.CreatedBy };
          });
        } else if (t === 'Role') result.role = stringOf(a);
        else if (t === 'Description') result.description = stringOf(a);
      }
    }
  }
  return { ...result, rowId: key ?? undefined };
}

export const datasetMetadata = async (workspace: string, collection: string, dataset: string, label?: string) =>
  parseDatasetMetadata(await getText(`${odataPath(workspace, collection, dataset, label)}/$metadata`, 'application/xml'));

/** The first rows, as OData answers them (`value`, without the `@odata.*` fields). */
export async function previewRows(workspace: string, collection: string, dataset: string, top = 20): Promise<Record<string, unknown>[]> {
  const text = await getText(`${odataPath(workspace, collection, dataset)}?$top=${top}`, 'application/json');
  const body = JSON.parse(text) as { value?: Record<string, unknown>[] };
  return (body.value ?? []).map((row) => Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('@') && k !== '_lakeport_row_id')));
}

export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return '–';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

/** The dataset's columns with their SQL types, as the jobs service's check sees them. */
export async function sqlColumns(workspace: string, collection: string, dataset: string): Promise<Map<string, string>> {
  const checked = await data(api.POST('/jobs/api/v1/check', { body: { sql_text: `SELECT * FROM "${workspace}"."${collection}"."${dataset}" LIMIT 0` } }));
  return new Map((checked.columns ?? []).map((c) => [c.name, c.type]));
}
