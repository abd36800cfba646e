import type { Dataset } from '../../../core/catalog/index.ts';

/**
 * What $metadata reads from a dataset's free-form `properties` (keys documented in
 * docs/odata-metadata.md). A key of the wrong shape is ignored, never an error: $metadata must
 * always render.
 */

/** OData lists tables, materialized views and logical views (not external stubs): in the service document and $metadata. */
export function servedByOData(dataset: Pick<Dataset, 'kind'>): boolean {
  return dataset.kind !== 'external';
}

/**
 * Whether the dataset has snapshot versions (@previous, @tag, @id, rows from files): tables and
 * materialized views. A logical view (kind 'view', docs/views.md) has none: it is only a SELECT.
 */
export function supportsVersions(dataset: Pick<Dataset, 'kind'>): boolean {
  return dataset.kind !== 'external' && !isLogicalView(dataset);
}

/** A logical view: SQL only, no snapshots (a materialized view is kind 'materialized_view'). */
export function isLogicalView(dataset: Pick<Dataset, 'kind'>): boolean {
  return dataset.kind === 'view';
}

export interface SortKey {
  column: string;
  direction: 'asc' | 'desc';
}

/** `properties.sort_order`: `[{column, direction?}]` or `["col", "col desc"]`; entries naming no column are dropped. */
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

/** `properties.llm_described`: true when a language model wrote the descriptions. */
export function llmDescribed(properties: Record<string, unknown>): boolean | undefined {
  return typeof properties.llm_described === 'boolean' ? properties.llm_described : undefined;
}

export interface MaterializedView {
  definition?: string;
  refresh?: string;
  sources: string[];
}

/** `properties.materialized_view`: `{definition?: SQL, refresh?: string, sources?: string[]}`, for kind 'materialized_view' only (written by CREATE MATERIALIZED VIEW). */
export function materializedView(dataset: Pick<Dataset, 'kind' | 'properties'>): MaterializedView | undefined {
  if (dataset.kind !== 'materialized_view') return undefined;
  const raw = dataset.properties.materialized_view;
  const view = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value : undefined);
  const sources = Array.isArray(view.sources) ? view.sources.filter((s): s is string => typeof s === 'string') : [];
  return { definition: text(view.definition), refresh: text(view.refresh), sources };
}
