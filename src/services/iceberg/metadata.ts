import crypto from 'node:crypto';
import { sortOrder, type DataFile, type Dataset, type Snapshot, type Tag } from '../../core/catalog/index.ts';
import { avroFile, ENTRY_STATUS, MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_SCHEMA, type DataFileRecord, type ManifestEntryRecord, type ManifestFileRecord } from './avro.ts';
import { boundBytes } from './bounds.ts';
import { icebergSchema, type IcebergSchema } from './schema.ts';

/**
 * Iceberg format v2 table metadata of a Lakeport dataset, built deterministically from what the
 * catalog holds (docs/iceberg.md, "Metadata"): the same catalog state always gives the same bytes,
 * so each file is written once and never rewritten. Pure functions; the service stores the files.
 */

/** Where a table's files are, for readers: its location, and a data file's address. */
export interface TableLayout {
  /** The table location: the metadata files are under `<location>/metadata/`. */
  location: string;
  dataFile(file: Pick<DataFile, 'file_id' | 'path'>): string;
}

/** A file row of Catalog.fileHistory. */
export type FileHistoryRow = Pick<DataFile, 'file_id' | 'added_in_snapshot' | 'removed_in_snapshot' | 'row_count' | 'size_bytes'>;

/** What a table's metadata is made of: the dataset, all its snapshots (expired ones too), tags, file rows, and the state's snapshot. */
export interface TableState {
  dataset: Dataset;
  /** Every snapshot of the dataset, expired ones included (Catalog.listSnapshots). */
  snapshots: Snapshot[];
  tags: Tag[];
  files: FileHistoryRow[];
  /** The snapshot the state is at: the current one, or one selected (`table@tag`); null before the first commit. */
  at: Snapshot | null;
}

const FORMAT_VERSION = 2;
/** Iceberg's last partition field id of an unpartitioned table (partition field ids start at 1000). */
const UNPARTITIONED_LAST_PARTITION_ID = 999;
const MAIN = 'main';

const sha256 = (text: string | Buffer) => crypto.createHash('sha256').update(text).digest('hex');
const ms = (date: Date) => new Date(date).getTime();

/** The table's UUID: derived from the dataset id (a name-based, version 5 style UUID), so it never changes. */
export function tableUuid(datasetId: string): string {
  const b = crypto.createHash('sha1').update(`lakeport:iceberg:${datasetId}`).digest().subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x50;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * What a snapshot's manifest list and manifest depend on besides the snapshot itself: the location
 * (their file paths) and the schema (their field ids). Part of their names, so a new public URL or
 * definition gives new files rather than rewriting old ones.
 */
export function manifestTag(location: string, schema: IcebergSchema): string {
  return sha256(`${location}\n${JSON.stringify(schema.json)}`).slice(0, 12);
}

export const manifestListName = (snapshotId: number, tag: string) => `snap-${snapshotId}-${tag}.avro`;
export const manifestName = (snapshotId: number, tag: string) => `${snapshotId}-${tag}-m0.avro`;

/** The Iceberg operation of a Lakeport snapshot (spec, "Snapshots"). */
function operationOf(snapshot: Snapshot, addedFiles: number): 'append' | 'overwrite' | 'delete' | 'replace' {
  switch (snapshot.operation) {
    case 'create':
    case 'append':
      return 'append';
    case 'maintenance':
      return 'replace';
    default:
      return addedFiles === 0 ? 'delete' : 'overwrite';
  }
}

interface FileCounts {
  files: number;
  rows: number;
  bytes: number;
}

const none = (): FileCounts => ({ files: 0, rows: 0, bytes: 0 });
const add = (c: FileCounts, f: FileHistoryRow) => {
  c.files++;
  c.rows += Number(f.row_count);
  c.bytes += Number(f.size_bytes);
};

/** Per snapshot: the files it added and removed, and how many files it holds (every file row counts while it is live). */
function countsBySnapshot(state: TableState) {
  const sequenceOf = new Map(state.snapshots.map((s) => [Number(s.snapshot_id), Number(s.sequence)]));
  const added = new Map<number, FileCounts>();
  const removed = new Map<number, FileCounts>();
  const delta = new Map<number, number>();
  for (const f of state.files) {
    const a = Number(f.added_in_snapshot);
    if (!added.has(a)) added.set(a, none());
    add(added.get(a)!, f);
    const addedAt = sequenceOf.get(a) ?? 0;
    delta.set(addedAt, (delta.get(addedAt) ?? 0) + 1);
    if (f.removed_in_snapshot !== null) {
      const r = Number(f.removed_in_snapshot);
      if (!removed.has(r)) removed.set(r, none());
      add(removed.get(r)!, f);
      const removedAt = sequenceOf.get(r) ?? 0;
      delta.set(removedAt, (delta.get(removedAt) ?? 0) - 1);
    }
  }
  // A snapshot that has not expired finds all of its files among the rows, so the running count is exact for it.
  const total = new Map<number, number>();
  let running = 0;
  for (const s of state.snapshots) {
    running += delta.get(Number(s.sequence)) ?? 0;
    total.set(Number(s.snapshot_id), running);
  }
  return { added, removed, total };
}

/** The table properties Lakeport sets (docs/iceberg.md, "Table properties"). */
function tableProperties(dataset: Dataset, schema: IcebergSchema): Record<string, string> {
  const properties: Record<string, string> = {
    'schema.name-mapping.default': JSON.stringify(schema.nameMapping),
    'write.format.default': 'parquet',
    'lakeport.dataset': `${dataset.workspace}.${dataset.collection}.${dataset.name}`,
    'lakeport.dataset-id': dataset.dataset_id,
    'lakeport.kind': dataset.kind,
    'lakeport.definition-version': String(dataset.definition_version),
  };
  if (dataset.description) properties.comment = dataset.description;
  if (Object.keys(schema.logicalTypes).length > 0) properties['lakeport.logical-types'] = JSON.stringify(schema.logicalTypes);
  if (schema.omitted.length > 0) properties['lakeport.omitted-columns'] = JSON.stringify(schema.omitted);
  return properties;
}

/** Sort order 0 (unsorted) and, when the dataset declares one (ALTER DATASET … SET SORTED BY), order 1. */
function sortOrders(dataset: Dataset, schema: IcebergSchema) {
  const orders: { 'order-id': number; fields: object[] }[] = [{ 'order-id': 0, fields: [] }];
  const fields = sortOrder(dataset.properties, dataset.columns.map((c) => c.name)).flatMap((key) => {
    const column = schema.columns.find((c) => c.column.name === key.column);
    // Only primitive columns sort; DuckDB puts NULLs last in either direction.
    return column?.primitive ? [{ transform: 'identity', 'source-id': column.field.id, direction: key.direction, 'null-order': 'nulls-last' }] : [];
  });
  if (fields.length > 0) orders.push({ 'order-id': 1, fields });
  return orders;
}

export interface BuiltMetadata {
  /** `<snapshot id>-<hash of the content>.metadata.json` (`0-…` before the first commit). */
  name: string;
  json: TableMetadataJson;
  text: string;
  schema: IcebergSchema;
  tag: string;
}

export type TableMetadataJson = Record<string, unknown> & {
  'format-version': number;
  'table-uuid': string;
  snapshots: Record<string, unknown>[]; refs: Record<string, { 'snapshot-id': number; type: string }> };

/**
 * The table metadata of a state: the snapshots up to `at` that have not expired (each Lakeport
 * snapshot one Iceberg snapshot, same id and sequence number), `main` at `at`, every tag among them.
 */
export function tableMetadata(state: TableState, layout: TableLayout): BuiltMetadata {
  const { dataset, at } = state;
  const schema = icebergSchema(dataset.columns, dataset.definition_version);
  const tag = manifestTag(layout.location, schema);
  const upTo = at ? Number(at.sequence) : 0;
  const history = state.snapshots.filter((s) => Number(s.sequence) <= upTo);
  const live = history.filter((s) => s.expired_at === null);
  const liveIds = new Set(live.map((s) => Number(s.snapshot_id)));
  const counts = countsBySnapshot(state);

  const snapshots = live.map((s) => {
    const id = Number(s.snapshot_id);
    const added = counts.added.get(id) ?? none();
    const parent = s.parent_snapshot_id === null ? null : Number(s.parent_snapshot_id);
    // What a snapshot removed is known while its parent has not expired (expiry deletes file rows no live snapshot needs).
    const removed = parent === null || liveIds.has(parent) ? (counts.removed.get(id) ?? none()) : undefined;
    const summary: Record<string, string> = {
      operation: operationOf(s, added.files),
      'added-data-files': String(added.files),
      'added-records': String(added.rows),
      'added-files-size': String(added.bytes),
      ...(removed
        ? { 'deleted-data-files': String(removed.files), 'deleted-records': String(removed.rows), 'removed-files-size': String(removed.bytes) }
        : {}),
      'total-data-files': String(counts.total.get(id) ?? 0),
      'total-records': String(Number(s.total_records)),
      'total-files-size': String(Number(s.total_size)),
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
      'lakeport.operation': s.operation,
    };
    return {
      'snapshot-id': id,
      ...(parent === null ? {} : { 'parent-snapshot-id': parent }),
      'sequence-number': Number(s.sequence),
      'timestamp-ms': ms(s.committed_at),
      summary,
      'manifest-list': `${layout.location}/metadata/${manifestListName(id, tag)}`,
      'schema-id': schema.json['schema-id'],
    };
  });

  // The log of current snapshots, from after the last expired one (spec, "Table Metadata Fields").
  const lastExpired = history.reduce((seq, s) => (s.expired_at !== null ? Math.max(seq, Number(s.sequence)) : seq), 0);
  const snapshotLog = live.filter((s) => Number(s.sequence) > lastExpired).map((s) => ({ 'snapshot-id': Number(s.snapshot_id), 'timestamp-ms': ms(s.committed_at) }));

  const refs: TableMetadataJson['refs'] = {};
  if (at) refs[MAIN] = { 'snapshot-id': Number(at.snapshot_id), type: 'branch' };
  const tags = state.tags.filter((t) => t.name !== MAIN && liveIds.has(Number(t.snapshot_id))).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const t of tags) refs[t.name] = { 'snapshot-id': Number(t.snapshot_id), type: 'tag' };

  // Everything that shaped this file, so the time moves whenever its content may.
  const lastUpdated = Math.max(
    at ? ms(at.committed_at) : 0,
    ms(dataset.updated_at),
    ...tags.map((t) => ms(t.created_at)),
    ...history.filter((s) => s.expired_at !== null).map((s) => ms(s.expired_at!)),
  );
  const orders = sortOrders(dataset, schema);

  const json: TableMetadataJson = {
    'format-version': FORMAT_VERSION,
    'table-uuid': tableUuid(dataset.dataset_id),
    location: layout.location,
    'last-sequence-number': upTo,
    'last-updated-ms': lastUpdated,
    'last-column-id': schema.lastColumnId,
    'current-schema-id': schema.json['schema-id'],
    schemas: [schema.json],
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: [] }],
    'last-partition-id': UNPARTITIONED_LAST_PARTITION_ID,
    'default-sort-order-id': orders[orders.length - 1]['order-id'],
    'sort-orders': orders,
    properties: tableProperties(dataset, schema),
    // Iceberg Java's v2 convention for "no current snapshot".
    'current-snapshot-id': at ? Number(at.snapshot_id) : -1,
    refs,
    snapshots,
    'snapshot-log': snapshotLog,
    'metadata-log': [],
  };
  const text = JSON.stringify(json);
  return { name: `${at ? Number(at.snapshot_id) : 0}-${sha256(text).slice(0, 16)}.metadata.json`, json, text, schema, tag };
}

/** A file's metrics keyed by field id: value and null counts, and bounds, for the top-level primitive columns its statistics cover. */
function metrics(file: DataFile, schema: IcebergSchema): Pick<DataFileRecord, 'value_counts' | 'null_value_counts' | 'lower_bounds' | 'upper_bounds'> {
  const valueCounts: { key: number; value: number }[] = [];
  const nullCounts: { key: number; value: number }[] = [];
  const lower: { key: number; value: Buffer }[] = [];
  const upper: { key: number; value: Buffer }[] = [];
  for (const { field, column, primitive } of schema.columns) {
    const stats = file.column_stats?.[column.name];
    if (!primitive || !stats) continue;
    valueCounts.push({ key: field.id, value: Number(file.row_count) });
    nullCounts.push({ key: field.id, value: Number(stats.null_count) });
    const min = boundBytes(primitive, stats.min, 'lower');
    const max = boundBytes(primitive, stats.max, 'upper');
    if (min) lower.push({ key: field.id, value: min });
    if (max) upper.push({ key: field.id, value: max });
  }
  const orNull = <T>(list: T[]) => (list.length > 0 ? list : null);
  return { value_counts: orNull(valueCounts), null_value_counts: orNull(nullCounts), lower_bounds: orNull(lower), upper_bounds: orNull(upper) };
}

export interface ManifestInput {
  snapshot: Snapshot;
  /** The files the snapshot names (Catalog.snapshotFiles), in its order. */
  files: DataFile[];
  /** Every snapshot of the dataset (for the sequence numbers of the snapshots that added the files). */
  snapshots: Snapshot[];
  schema: IcebergSchema;
  tag: string;
  layout: TableLayout;
}

/**
 * A snapshot's manifest (every file it holds: added by it, or existing since an earlier snapshot,
 * with explicit sequence numbers) and its manifest list naming that one manifest. A snapshot
 * without files has a manifest list with no manifests.
 */
export async function snapshotManifests(input: ManifestInput): Promise<{ list: { name: string; bytes: Buffer }; manifest?: { name: string; bytes: Buffer } }> {
  const { snapshot, schema, tag, layout } = input;
  const id = Number(snapshot.snapshot_id);
  const sequence = Number(snapshot.sequence);
  const sequenceOf = new Map(input.snapshots.map((s) => [Number(s.snapshot_id), Number(s.sequence)]));
  const entries: ManifestEntryRecord[] = input.files.map((file) => {
    const addedIn = Number(file.added_in_snapshot);
    const fileSequence = sequenceOf.get(addedIn) ?? sequence;
    return {
      status: addedIn === id ? ENTRY_STATUS.added : ENTRY_STATUS.existing,
      snapshot_id: addedIn,
      sequence_number: fileSequence,
      file_sequence_number: fileSequence,
      data_file: {
        content: 0,
        file_path: layout.dataFile(file),
        file_format: file.format.toUpperCase(),
        partition: {},
        record_count: Number(file.row_count),
        file_size_in_bytes: Number(file.size_bytes),
        column_sizes: null,
        ...metrics(file, schema),
        nan_value_counts: null,
        key_metadata: null,
        split_offsets: null,
        equality_ids: null,
        sort_order_id: null,
        referenced_data_file: null,
      },
    };
  });
  const listName = manifestListName(id, tag);
  const listMetadata: Record<string, string> = { 'snapshot-id': String(id), 'sequence-number': String(sequence), 'format-version': String(FORMAT_VERSION) };
  if (snapshot.parent_snapshot_id !== null) listMetadata['parent-snapshot-id'] = String(Number(snapshot.parent_snapshot_id));
  if (entries.length === 0) return { list: { name: listName, bytes: await avroFile(MANIFEST_FILE_SCHEMA, [], listMetadata, listName) } };

  const name = manifestName(id, tag);
  const bytes = await avroFile(
    MANIFEST_ENTRY_SCHEMA,
    entries,
    {
      schema: JSON.stringify(schema.json),
      'schema-id': String(schema.json['schema-id']),
      'partition-spec': '[]',
      'partition-spec-id': '0',
      'format-version': String(FORMAT_VERSION),
      content: 'data',
    },
    name,
  );
  const count = (status: number) => entries.filter((e) => e.status === status);
  const rows = (list: ManifestEntryRecord[]) => list.reduce((n, e) => n + e.data_file.record_count, 0);
  const added = count(ENTRY_STATUS.added);
  const existing = count(ENTRY_STATUS.existing);
  const record: ManifestFileRecord = {
    manifest_path: `${layout.location}/metadata/${name}`,
    manifest_length: bytes.length,
    partition_spec_id: 0,
    content: 0,
    sequence_number: sequence,
    min_sequence_number: Math.min(...entries.map((e) => e.sequence_number)),
    added_snapshot_id: id,
    added_files_count: added.length,
    existing_files_count: existing.length,
    deleted_files_count: 0,
    added_rows_count: rows(added),
    existing_rows_count: rows(existing),
    deleted_rows_count: 0,
    partitions: [],
    key_metadata: null,
  };
  return { list: { name: listName, bytes: await avroFile(MANIFEST_FILE_SCHEMA, [record], listMetadata, listName) }, manifest: { name, bytes } };
}
