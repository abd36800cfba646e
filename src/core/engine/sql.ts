/** A SQL identifier, quoted (file column names are arbitrary text). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** A SQL string literal, for the few places DuckDB cannot take a bound parameter (struct keys). */
export function quoteString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}
