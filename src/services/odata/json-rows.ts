import { quoteIdent } from '../../core/engine/index.ts';
import type { ODataColumn } from './model.ts';

/** A column's value as OData JSON expects it; DuckDB's own JSON writer does the rest. */
function jsonValue(column: ODataColumn): string {
  const ref = quoteIdent(column.name);
  switch (column.type) {
    case 'TIMESTAMP':
    case 'TIMESTAMP WITH TIME ZONE':
      // Edm.DateTimeOffset: ISO 8601 in UTC (the reader's session time zone); a naive timestamp reads as UTC.
      return `strftime(${ref}, '%Y-%m-%dT%H:%M:%S.%fZ')`;
    case 'FLOAT':
    case 'DOUBLE':
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
