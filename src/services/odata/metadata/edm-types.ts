import type { ColumnDef } from '../../../core/catalog/index.ts';
import { isNestedType, normalizeType } from '../../../core/engine/types.ts';

/**
 * An Edm primitive type with its facets. `text` says when the value is not delivered in its own
 * type but as a string: `json` for nested values (lists, structs, maps: their JSON text) and `cast`
 * for any other type Lakeport does not know (its SQL text form). The rows serialiser must do the same.
 */
export interface EdmType {
  type: string;
  precision?: number;
  scale?: number;
  maxLength?: number;
  text?: 'json' | 'cast';
}

/** DuckDB keeps times and timestamps to the microsecond. */
const MICROSECONDS = 6;

const SIMPLE: Record<string, EdmType> = {
  BOOLEAN: { type: 'Edm.Boolean' },
  TINYINT: { type: 'Edm.SByte' },
  SMALLINT: { type: 'Edm.Int16' },
  INTEGER: { type: 'Edm.Int32' },
  BIGINT: { type: 'Edm.Int64' },
  // Unsigned integers take the next wider signed type; UBIGINT (20 digits) and HUGEINT (39) need a decimal.
  UTINYINT: { type: 'Edm.Int16' },
  USMALLINT: { type: 'Edm.Int32' },
  UINTEGER: { type: 'Edm.Int64' },
  UBIGINT: { type: 'Edm.Decimal', precision: 20, scale: 0 },
  HUGEINT: { type: 'Edm.Decimal', precision: 39, scale: 0 },
  FLOAT: { type: 'Edm.Single' },
  DOUBLE: { type: 'Edm.Double' },
  VARCHAR: { type: 'Edm.String' },
  // A dotted quad is at most 15 characters.
  IPV4: { type: 'Edm.String', maxLength: 15 },
  DATE: { type: 'Edm.Date' },
  TIME: { type: 'Edm.TimeOfDay', precision: MICROSECONDS },
  TIMESTAMP: { type: 'Edm.DateTimeOffset', precision: MICROSECONDS },
  'TIMESTAMP WITH TIME ZONE': { type: 'Edm.DateTimeOffset', precision: MICROSECONDS },
};

/** The Edm type of a Lakeport column type (see core/engine/types.ts); aliases such as INT8 or TIMESTAMPTZ are accepted. */
export function edmType(lakeportType: string): EdmType {
  const normal = normalizeType(lakeportType);
  if (normal !== undefined) {
    const decimal = /^DECIMAL\((\d+),(\d+)\)$/.exec(normal);
    if (decimal) return { type: 'Edm.Decimal', precision: Number(decimal[1]), scale: Number(decimal[2]) };
    return { ...SIMPLE[normal] };
  }
  return { type: 'Edm.String', text: isNestedType(lakeportType) ? 'json' : 'cast' };
}

/**
 * The Lakeport type of a catalog column. The catalog stores an IPv4 column as a VARCHAR labelled
 * `logical_type: 'ipv4'`; everything else is its SQL type, normalised.
 */
export function lakeportType(column: Pick<ColumnDef, 'type' | 'logical_type'>): string {
  if (column.logical_type?.toLowerCase() === 'ipv4') return 'IPV4';
  return normalizeType(column.type) ?? column.type.trim().toUpperCase();
}
