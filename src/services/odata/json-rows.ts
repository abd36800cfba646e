import { quoteIdent } from '../../core/engine/index.ts';
import type { ODataColumn } from './model.ts';

/**
 * A column's value as OData JSON expects it; DuckDB's own JSON writer does the rest. `finite` says
 * a FLOAT/DOUBLE column holds no NaN or infinity, which then need no case of their own.
 */
function jsonValue(column: ODataColumn, finite = false): string {
  const ref = quoteIdent(column.name);
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
export function jsonRowSql(columns: readonly ODataColumn[]): string {
  return `to_json(struct_pack(${columns.map((c) => `${quoteIdent(c.name)} := ${jsonValue(c)}`).join(', ')}))::VARCHAR`;
}

/**
 * The select list of `columns` as OData JSON expects their values, for DuckDB's JSON writer
 * (COPY … (FORMAT json)); `nonFinite` names the FLOAT/DOUBLE columns that may hold NaN or infinity.
 */
export function jsonColumnsSql(columns: readonly ODataColumn[], nonFinite: ReadonlySet<string>): string {
  return columns.map((c) => `${jsonValue(c, !nonFinite.has(c.name))} AS ${quoteIdent(c.name)}`).join(', ');
}
