import { AppError, appError } from '../errors/index.ts';
import type { ColumnDef, DatasetKind, DatasetProperties } from '../db/index.ts';

export const DATASET_KINDS: readonly DatasetKind[] = ['table', 'view', 'external', 'materialized_view'];

const OPTIONAL_TEXT_FIELDS = ['logical_type', 'source_type', 'original_type', 'description'] as const;

function invalid(detail: string): AppError {
  return appError('INVALID_DEFINITION', detail);
}

export function checkKind(kind: unknown): DatasetKind {
  if (!DATASET_KINDS.includes(kind as DatasetKind)) throw invalid(`Dataset kind must be one of ${DATASET_KINDS.join(', ')}`);
  return kind as DatasetKind;
}

/**
 * Validates columns (a table needs at least one; names unique regardless of case; a type each) and
 * returns them with a fixed key order, so two equal definitions serialise alike.
 */
export function normalizeColumns(kind: DatasetKind, columns: ColumnDef[]): ColumnDef[] {
  if (!Array.isArray(columns)) throw invalid('columns must be an array');
  if (kind === 'table' && columns.length === 0) throw invalid('A table needs at least one column');
  const seen = new Set<string>();
  return columns.map((column, i) => {
    const name = typeof column?.name === 'string' ? column.name.trim() : '';
    if (!name) throw invalid(`Column ${i + 1} has no name`);
    if (seen.has(name.toLowerCase())) throw invalid(`Column '${name}' appears more than once (names are compared without case)`);
    seen.add(name.toLowerCase());
    const type = typeof column.type === 'string' ? column.type.trim() : '';
    if (!type) throw invalid(`Column '${name}' has no type`);
    if (typeof column.nullable !== 'boolean') throw invalid(`Column '${name}': nullable must be true or false`);
    const out: ColumnDef = { name, type, nullable: column.nullable };
    for (const field of OPTIONAL_TEXT_FIELDS) {
      const value = column[field];
      if (value === undefined || value === null) continue;
      if (typeof value !== 'string') throw invalid(`Column '${name}': ${field} must be a string`);
      out[field] = value;
    }
    return out;
  });
}

/** Applies a properties patch: a value sets a key, `null` removes it. */
export function mergeDatasetProperties(current: DatasetProperties, patch: DatasetProperties): DatasetProperties {
  checkProperties(patch);
  const next: DatasetProperties = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  return next;
}

export function checkProperties(properties: unknown): DatasetProperties {
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) {
    throw invalid('Dataset properties must be an object');
  }
  return properties as DatasetProperties;
}

export function checkDescription(description: unknown): string | null {
  if (description === undefined || description === null) return null;
  if (typeof description !== 'string') throw invalid('description must be a string or null');
  return description;
}

/** Compares JSON values regardless of object key order (jsonb does not keep it). */
export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as DatasetProperties)
        .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}
