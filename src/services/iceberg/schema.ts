import type { ColumnDef } from '../../core/catalog/index.ts';
import { decimalParts, normalizeType } from '../../core/engine/types.ts';

/**
 * A dataset's columns as an Iceberg schema (docs/iceberg.md, "Type mapping"): each DuckDB type in
 * `ColumnDef.type` becomes the Iceberg type a reader reads from the Parquet column DuckDB wrote, with
 * field ids, and the name mapping that lets readers find the columns of Parquet files written
 * without field ids (Lakeport's are). A column whose type has no Iceberg reading is left out.
 */

export type IcebergType = string | StructType | ListType | MapType;

export interface StructField {
  id: number;
  name: string;
  required: boolean;
  type: IcebergType;
  doc?: string;
}

export interface StructType {
  type: 'struct';
  fields: StructField[];
}

export interface ListType {
  type: 'list';
  'element-id': number;
  element: IcebergType;
  'element-required': boolean;
}

export interface MapType {
  type: 'map';
  'key-id': number;
  key: IcebergType;
  'value-id': number;
  value: IcebergType;
  'value-required': boolean;
}

/** One entry of `schema.name-mapping.default` (Iceberg spec, "Name Mapping Serialization"). */
export interface NameMapping {
  'field-id': number;
  names: string[];
  fields?: NameMapping[];
}

/** A top-level column of the schema: its field, its Lakeport column, and its primitive type (metrics are kept for those only). */
export interface SchemaColumn {
  field: StructField;
  column: ColumnDef;
  primitive?: string;
}

export interface IcebergSchema {
  /** `{type: 'struct', schema-id, fields}` as the table metadata holds it. */
  json: StructType & { 'schema-id': number };
  columns: SchemaColumn[];
  nameMapping: NameMapping[];
  lastColumnId: number;
  /** Columns left out: no Iceberg type reads what DuckDB writes for them. */
  omitted: string[];
  /** Columns carrying a logical type (`ipv4`), by name: the table property `lakeport.logical-types`. */
  logicalTypes: Record<string, string>;
}

/** A DuckDB type, parsed: primitives by their upper-case name, nested types by their parts. */
type DuckType =
  | { kind: 'primitive'; name: string }
  | { kind: 'list'; element: DuckType }
  | { kind: 'struct'; fields: { name: string; type: DuckType }[] }
  | { kind: 'map'; key: DuckType; value: DuckType };

/** The Iceberg primitive of each DuckDB type Lakeport writes to Parquet (what the Parquet column physically holds). */
const PRIMITIVES: Record<string, string> = {
  BOOLEAN: 'boolean',
  TINYINT: 'int',
  SMALLINT: 'int',
  INTEGER: 'int',
  // Parquet UINT_8 / UINT_16 read as int, UINT_32 as long (as Iceberg Java reads them); UINT_64 has no reading.
  UTINYINT: 'int',
  USMALLINT: 'int',
  UINTEGER: 'long',
  BIGINT: 'long',
  // DuckDB writes HUGEINT and UHUGEINT to Parquet as DOUBLE.
  HUGEINT: 'double',
  UHUGEINT: 'double',
  FLOAT: 'float',
  DOUBLE: 'double',
  VARCHAR: 'string',
  IPV4: 'string',
  JSON: 'string',
  BLOB: 'binary',
  BYTEA: 'binary',
  UUID: 'uuid',
  DATE: 'date',
  TIME: 'time',
  TIMESTAMP: 'timestamp',
  TIMESTAMP_MS: 'timestamp',
  TIMESTAMP_S: 'timestamp',
  'TIMESTAMP WITH TIME ZONE': 'timestamptz',
};

/** `a, b(c, d), "e,f" g` → its top-level parts (commas inside parentheses, brackets or quotes do not split). */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') quoted = !quoted;
    else if (quoted) continue;
    else if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

/** A struct member `name TYPE` or `"quoted ""name""" TYPE`. */
function structMember(text: string): { name: string; type: DuckType } | undefined {
  const quoted = /^"((?:[^"]|"")*)"\s+(.+)$/s.exec(text);
  if (quoted) return { name: quoted[1].replace(/""/g, '"'), type: parseDuckType(quoted[2]) };
  const bare = /^([^\s"]+)\s+(.+)$/s.exec(text);
  return bare ? { name: bare[1], type: parseDuckType(bare[2]) } : undefined;
}

/** Parses a DuckDB type as the catalog stores it: `INTEGER`, `DECIMAL(18,2)`, `VARCHAR[]`, `STRUCT(a INTEGER, b VARCHAR)`, `MAP(VARCHAR, INTEGER)`. */
export function parseDuckType(raw: string): DuckType {
  const text = raw.trim();
  const array = /^(.*)\[\d*\]$/s.exec(text);
  if (array) return { kind: 'list', element: parseDuckType(array[1]) };
  const nested = /^(STRUCT|ROW|MAP|LIST)\s*\((.*)\)$/is.exec(text);
  if (nested) {
    const args = splitTopLevel(nested[2]);
    const kind = nested[1].toUpperCase();
    if (kind === 'LIST' && args.length === 1) return { kind: 'list', element: parseDuckType(args[0]) };
    if (kind === 'MAP' && args.length === 2) return { kind: 'map', key: parseDuckType(args[0]), value: parseDuckType(args[1]) };
    if (kind === 'STRUCT' || kind === 'ROW') {
      const fields = args.map(structMember);
      if (fields.every((f) => f !== undefined)) return { kind: 'struct', fields: fields as { name: string; type: DuckType }[] };
    }
    return { kind: 'primitive', name: text.toUpperCase() };
  }
  const upper = text.toUpperCase().replace(/\s+/g, ' ');
  if (/^ENUM\s*\(/.test(upper)) return { kind: 'primitive', name: 'VARCHAR' };
  return { kind: 'primitive', name: normalizeType(upper) ?? upper };
}

/** The Iceberg primitive of a DuckDB primitive, or undefined when none reads it. */
function icebergPrimitive(name: string): string | undefined {
  const decimal = decimalParts(name);
  if (decimal) return `decimal(${decimal[0]},${decimal[1]})`;
  return PRIMITIVES[name];
}

/** Whether every part of the type has an Iceberg reading. */
function mappable(type: DuckType): boolean {
  switch (type.kind) {
    case 'primitive':
      return icebergPrimitive(type.name) !== undefined;
    case 'list':
      return mappable(type.element);
    case 'map':
      return mappable(type.key) && mappable(type.value);
    case 'struct':
      return type.fields.length > 0 && type.fields.every((f) => mappable(f.type));
  }
}

/**
 * Iceberg ids for a nested type, assigned as Iceberg's own writers do: a struct's fields first, then
 * what is inside each; a list's element and a map's key and value, then inside them. `next` hands out ids.
 */
function icebergType(type: DuckType, next: () => number): { type: IcebergType; mapping?: NameMapping[] } {
  switch (type.kind) {
    case 'primitive':
      return { type: icebergPrimitive(type.name)! };
    case 'list': {
      const id = next();
      const element = icebergType(type.element, next);
      return {
        type: { type: 'list', 'element-id': id, element: element.type, 'element-required': false },
        mapping: [{ 'field-id': id, names: ['element'], ...(element.mapping ? { fields: element.mapping } : {}) }],
      };
    }
    case 'map': {
      const keyId = next();
      const valueId = next();
      const key = icebergType(type.key, next);
      const value = icebergType(type.value, next);
      return {
        type: { type: 'map', 'key-id': keyId, key: key.type, 'value-id': valueId, value: value.type, 'value-required': false },
        mapping: [
          { 'field-id': keyId, names: ['key'], ...(key.mapping ? { fields: key.mapping } : {}) },
          { 'field-id': valueId, names: ['value'], ...(value.mapping ? { fields: value.mapping } : {}) },
        ],
      };
    }
    case 'struct': {
      const ids = type.fields.map(() => next());
      const fields: StructField[] = [];
      const mapping: NameMapping[] = [];
      type.fields.forEach((f, i) => {
        const inner = icebergType(f.type, next);
        fields.push({ id: ids[i], name: f.name, required: false, type: inner.type });
        mapping.push({ 'field-id': ids[i], names: [f.name], ...(inner.mapping ? { fields: inner.mapping } : {}) });
      });
      return { type: { type: 'struct', fields }, mapping };
    }
  }
}

/** The physical DuckDB type of a column: an IPv4 column is a VARCHAR labelled `logical_type: 'ipv4'`. */
function columnType(column: ColumnDef): DuckType {
  if (column.logical_type?.toLowerCase() === 'ipv4') return { kind: 'primitive', name: 'IPV4' };
  return parseDuckType(column.type);
}

const IPV4_DOC = 'IPv4 address as dotted-quad text (Lakeport logical type ipv4)';

/** The Iceberg schema of a dataset's columns; its id is the dataset's definition version. */
export function icebergSchema(columns: readonly ColumnDef[], schemaId: number): IcebergSchema {
  const kept = columns.map((column) => ({ column, type: columnType(column) })).filter(({ type }) => mappable(type));
  const omitted = columns.filter((c) => !kept.some((k) => k.column === c)).map((c) => c.name);
  let lastId = kept.length;
  const next = () => ++lastId;
  const result: SchemaColumn[] = [];
  const nameMapping: NameMapping[] = [];
  const logicalTypes: Record<string, string> = {};
  kept.forEach(({ column, type }, i) => {
    const id = i + 1;
    const inner = icebergType(type, next);
    const ipv4 = type.kind === 'primitive' && type.name === 'IPV4';
    if (column.logical_type) logicalTypes[column.name] = column.logical_type.toLowerCase();
    const doc = column.description ?? (ipv4 ? IPV4_DOC : undefined);
    const field: StructField = { id, name: column.name, required: !column.nullable, type: inner.type, ...(doc ? { doc } : {}) };
    result.push({ field, column, primitive: typeof inner.type === 'string' ? inner.type : undefined });
    nameMapping.push({ 'field-id': id, names: [column.name], ...(inner.mapping ? { fields: inner.mapping } : {}) });
  });
  return {
    json: { type: 'struct', 'schema-id': schemaId, fields: result.map((c) => c.field) },
    columns: result,
    nameMapping,
    lastColumnId: lastId,
    omitted,
    logicalTypes,
  };
}
