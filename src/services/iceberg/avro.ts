import crypto from 'node:crypto';
import avro from 'avsc';

/**
 * Iceberg's manifest list (`manifest_file`) and manifest (`manifest_entry`) Avro schemas, format
 * version 2, field for field as the table spec defines them (with their field ids), and the writer
 * of such files. Optional fields are unions with null defaulting to null; maps keyed by field id are
 * arrays of key/value records with the `map` logical type (spec, Appendix A).
 */

type AvroSchema = Record<string, unknown>;

const optional = (type: unknown) => ({ type: ['null', type], default: null });
const field = (id: number, name: string, type: unknown, required = true) => (required ? { name, type, 'field-id': id } : { name, ...optional(type), 'field-id': id });
const intMap = (id: number, keyId: number, valueId: number, name: string, value: unknown) =>
  field(
    id,
    name,
    {
      type: 'array',
      logicalType: 'map',
      items: { type: 'record', name: `k${keyId}_v${valueId}`, fields: [field(keyId, 'key', 'int'), field(valueId, 'value', value)] },
    },
    false,
  );
const list = (id: number, elementId: number, name: string, items: unknown) => field(id, name, { type: 'array', items, 'element-id': elementId }, false);

/** `manifest_file` (spec, "Manifest Lists"), v2. */
export const MANIFEST_FILE_SCHEMA: AvroSchema = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    field(500, 'manifest_path', 'string'),
    field(501, 'manifest_length', 'long'),
    field(502, 'partition_spec_id', 'int'),
    field(517, 'content', 'int'),
    field(515, 'sequence_number', 'long'),
    field(516, 'min_sequence_number', 'long'),
    field(503, 'added_snapshot_id', 'long'),
    field(504, 'added_files_count', 'int'),
    field(505, 'existing_files_count', 'int'),
    field(506, 'deleted_files_count', 'int'),
    field(512, 'added_rows_count', 'long'),
    field(513, 'existing_rows_count', 'long'),
    field(514, 'deleted_rows_count', 'long'),
    list(507, 508, 'partitions', {
      type: 'record',
      name: 'r508',
      fields: [field(509, 'contains_null', 'boolean'), field(518, 'contains_nan', 'boolean', false), field(510, 'lower_bound', 'bytes', false), field(511, 'upper_bound', 'bytes', false)],
    }),
    field(519, 'key_metadata', 'bytes', false),
  ],
};

/** `manifest_entry` with its `data_file` (spec, "Manifests"), v2, for an unpartitioned spec (an empty partition struct). */
export const MANIFEST_ENTRY_SCHEMA: AvroSchema = {
  type: 'record',
  name: 'manifest_entry',
  fields: [
    field(0, 'status', 'int'),
    field(1, 'snapshot_id', 'long', false),
    field(3, 'sequence_number', 'long', false),
    field(4, 'file_sequence_number', 'long', false),
    field(2, 'data_file', {
      type: 'record',
      name: 'r2',
      fields: [
        field(134, 'content', 'int'),
        field(100, 'file_path', 'string'),
        field(101, 'file_format', 'string'),
        field(102, 'partition', { type: 'record', name: 'r102', fields: [] }),
        field(103, 'record_count', 'long'),
        field(104, 'file_size_in_bytes', 'long'),
        intMap(108, 117, 118, 'column_sizes', 'long'),
        intMap(109, 119, 120, 'value_counts', 'long'),
        intMap(110, 121, 122, 'null_value_counts', 'long'),
        intMap(137, 138, 139, 'nan_value_counts', 'long'),
        intMap(125, 126, 127, 'lower_bounds', 'bytes'),
        intMap(128, 129, 130, 'upper_bounds', 'bytes'),
        field(131, 'key_metadata', 'bytes', false),
        list(132, 133, 'split_offsets', 'long'),
        list(135, 136, 'equality_ids', 'int'),
        field(140, 'sort_order_id', 'int', false),
        field(143, 'referenced_data_file', 'string', false),
      ],
    },
    ),
  ],
};

/** The entry status of a manifest entry. */
export const ENTRY_STATUS = { existing: 0, added: 1, deleted: 2 } as const;

export interface ManifestFileRecord {
  manifest_path: string;
  manifest_length: number;
  partition_spec_id: number;
  content: 0 | 1;
  sequence_number: number;
  min_sequence_number: number;
  added_snapshot_id: number;
  added_files_count: number;
  existing_files_count: number;
  deleted_files_count: number;
  added_rows_count: number;
  existing_rows_count: number;
  deleted_rows_count: number;
  partitions: [];
  key_metadata: null;
}

export interface DataFileRecord {
  content: 0;
  file_path: string;
  file_format: string;
  partition: Record<string, never>;
  record_count: number;
  file_size_in_bytes: number;
  column_sizes: null;
  value_counts: { key: number; value: number }[] | null;
  null_value_counts: { key: number; value: number }[] | null;
  nan_value_counts: null;
  lower_bounds: { key: number; value: Buffer }[] | null;
  upper_bounds: { key: number; value: Buffer }[] | null;
  key_metadata: null;
  split_offsets: null;
  equality_ids: null;
  sort_order_id: null;
  referenced_data_file: null;
}

export interface ManifestEntryRecord {
  status: (typeof ENTRY_STATUS)[keyof typeof ENTRY_STATUS];
  snapshot_id: number;
  sequence_number: number;
  file_sequence_number: number;
  data_file: DataFileRecord;
}

/**
 * An Avro object container file of `records`, deflate-compressed, with `metadata` in its header
 * beside the schema. Its sync marker is derived from `name`, so the same input gives the same bytes.
 */
export async function avroFile(schema: AvroSchema, records: readonly object[], metadata: Record<string, string>, name: string): Promise<Buffer> {
  const encoder = new avro.streams.BlockEncoder(schema as unknown as avro.Schema, {
    codec: 'deflate',
    syncMarker: crypto.createHash('sha256').update(name).digest().subarray(0, 16),
    metadata: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, Buffer.from(v, 'utf8')])),
    writeHeader: true,
  } as ConstructorParameters<typeof avro.streams.BlockEncoder>[1]);
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    encoder.on('data', (chunk: Buffer) => chunks.push(chunk));
    encoder.on('end', () => resolve(Buffer.concat(chunks)));
    encoder.on('error', reject);
  });
  for (const record of records) encoder.write(record);
  encoder.end();
  return done;
}
