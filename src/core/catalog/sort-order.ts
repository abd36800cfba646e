/** A dataset's declared sort order (`properties.sort_order`, set by ALTER DATASET … SET SORTED BY; docs/sql.md). */
export interface SortKey {
  column: string;
  direction: 'asc' | 'desc';
}

/**
 * `properties.sort_order`: `[{column, direction?}]` or `["col", "col desc"]`, matched to `columns`
 * without case; entries of the wrong shape or naming no column are dropped, never an error.
 */
export function sortOrder(properties: Record<string, unknown>, columns: readonly string[]): SortKey[] {
  const raw = properties.sort_order;
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((entry) => {
    const key = sortKey(entry);
    const column = key && columns.find((name) => name.toLowerCase() === key.column.toLowerCase());
    return key && column ? [{ column, direction: key.direction }] : [];
  });
}

function sortKey(entry: unknown): SortKey | undefined {
  if (typeof entry === 'string') {
    const match = /^\s*(.+?)(?:\s+(asc|desc))?\s*$/i.exec(entry);
    return match ? { column: match[1], direction: direction(match[2]) } : undefined;
  }
  if (typeof entry !== 'object' || entry === null) return undefined;
  const { column, direction: dir } = entry as Record<string, unknown>;
  if (typeof column !== 'string' || (dir !== undefined && typeof dir !== 'string')) return undefined;
  if (dir !== undefined && !/^(asc|desc)$/i.test(dir)) return undefined;
  return { column, direction: direction(dir) };
}

function direction(raw: string | undefined): 'asc' | 'desc' {
  return raw?.toLowerCase() === 'desc' ? 'desc' : 'asc';
}
