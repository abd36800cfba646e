import type { Dataset } from '../../../core/catalog/index.ts';

export { sortOrder, type SortKey } from '../../../core/catalog/index.ts';

/**
 * What $metadata reads from a dataset's free-form `properties` (keys documented in
 * docs/odata-metadata.md). A key of the wrong shape is ignored, never an error: $metadata must
 * always render.
 */

/**
 * A stub listed from a workspace's external catalog (docs/catalog-bindings.md): the service document
 * and the service-wide $metadata list it (no columns are known), but its rows and its own $metadata
 * are 400 DATASET_NOT_VERSIONED — its data stays in its catalog.
 */
export function isExternalStub(dataset: Pick<Dataset, 'kind'>): boolean {
  return dataset.kind === 'external';
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
