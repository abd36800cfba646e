import { quoteIdent } from '../../core/engine/index.ts';
import { edmType } from './metadata/index.ts';
import type { ODataColumn } from './model.ts';

/** Whether `column` is an Edm.Int64 or Edm.Decimal, which IEEE754Compatible=true writes as strings. */
function beyondDoubles(column: ODataColumn): boolean {
  const edm = edmType(column.type);
  return edm.text === undefined && (edm.type === 'Edm.Int64' || edm.type === 'Edm.Decimal');
}

/**
 * A column's value as OData JSON expects it; DuckDB's own JSON writer does the rest. `finite` says
 * a FLOAT/DOUBLE column holds no NaN or infinity, which then need no case of their own.
 */
function jsonValue(column: ODataColumn, finite = false, ieee754 = false): string {
  const ref = quoteIdent(column.name);
  // IEEE754Compatible=true: 64-bit integers and decimals as strings, so no digit is lost to a double.
  if (ieee754 && beyondDoubles(column)) return `CAST(${ref} AS VARCHAR)`;
  switch (column.type) {
    case 'TIMESTAMP':
    case 'TIMESTAMP WITH TIME ZONE':
      // Edm.DateTimeOffset: ISO 8601 in UTC (the reader's session time zone); a naive timestamp reads as UTC.
      return `strftime(${ref}, '%Y-%m-%dT%H:%M:%S.%fZ')`;
    case 'FLOAT':
    case 'DOUBLE':
      if (finite) return ref;
      // OData JSON writes the IEEE special values as the strings NaN, INF and -INF.
      return `CASE WHEN isnan(${ref}) THEN to_json('NaN') WHEN isinf(${ref}) THEN to_json(CASE WHEN ${ref} > 0 THEN 'INF' ELSE '-INF' END) ELSE to_json(${ref}) END`;
    default:
      return ref;
  }
}

/**
 * A select-list item that turns each row of `columns` into one OData JSON object, as text, so rows
 * go from DuckDB to the socket without becoming JavaScript objects.
 */
export function jsonRowSql(columns: readonly ODataColumn[], ieee754 = false): string {
  return `to_json(struct_pack(${columns.map((c) => `${quoteIdent(c.name)} := ${jsonValue(c, false, ieee754)}`).join(', ')}))::VARCHAR`;
}

/**
 * The select list of `columns` as OData JSON expects their values, for DuckDB's JSON writer
 * (COPY … (FORMAT json)); `nonFinite` names the FLOAT/DOUBLE columns that may hold NaN or infinity.
 */
export function jsonColumnsSql(columns: readonly ODataColumn[], nonFinite: ReadonlySet<string>, ieee754 = false): string {
  return columns.map((c) => `${jsonValue(c, !nonFinite.has(c.name), ieee754)} AS ${quoteIdent(c.name)}`).join(', ');
}
