import type { ColumnDef } from '../../../core/catalog/index.ts';
import type { DatasetVersion } from '../model.ts';
import { annotation, boolValue, collection, intValue, record, stringValue, type Expression } from './expressions.ts';
import { llmDescribed, materializedView, sortOrder } from './properties.ts';
import type { ColumnStatistics } from './stats.ts';

/**
 * The Custom.* annotations of one dataset version, each only where it applies and has a value.
 * Dataset-level ones go on the EntitySet, column-level ones on the Property.
 */

const nonEmpty = (text: string | null | undefined): string | undefined => (text && text.trim() !== '' ? text : undefined);
const integer = (value: unknown): Expression | undefined => (/^-?\d+$/.test(String(value)) ? intValue(String(value)) : undefined);
function optionalString(text: string | null | undefined): Expression | undefined {
  const value = nonEmpty(text);
  return value === undefined ? undefined : stringValue(value);
}

function isoTime(value: Date | string): string {
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toISOString();
}

/** A string-valued annotation, or none for an absent or blank value. */
function optionalAnnotation(indent: string, term: string, text: string | null | undefined): string {
  const value = optionalString(text);
  return value === undefined ? '' : annotation(indent, term, value);
}

function snapshotAnnotation({ snapshot }: DatasetVersion, indent: string): string {
  if (!snapshot) return '';
  return annotation(
    indent,
    'Snapshot',
    record([
      ['Id', integer(snapshot.snapshot_id)],
      ['TotalRecords', integer(snapshot.total_records)],
      ['TotalDataSize', integer(snapshot.total_size)],
      ['CommitMessage', optionalString(snapshot.message)],
      ['Author', optionalString(snapshot.author)],
    ]),
  );
}

/** Custom.Tags, annotated with Custom.Count, for any version that has a snapshot (an empty collection when no tag names it). */
function tagsAnnotation({ snapshot, tags }: DatasetVersion, indent: string): string {
  if (!snapshot) return '';
  const items = tags.map((tag) =>
    record([
      ['Name', stringValue(tag.name)],
      ['SnapshotId', integer(tag.snapshot_id)],
      ['CreatedBy', optionalString(tag.created_by)],
    ]),
  );
  return annotation(indent, 'Tags', collection(items), annotation(`${indent}  `, 'Count', intValue(items.length)));
}

function accessAnnotations({ role, policies }: DatasetVersion, indent: string): string {
  const out = annotation(indent, 'Role', stringValue(role));
  return policies.length === 0 ? out : out + annotation(indent, 'Policy', collection(policies.map(stringValue)));
}

function sortOrderAnnotation(properties: Record<string, unknown>, columns: readonly string[], propertyOf: (column: string) => string, indent: string): string {
  const keys = sortOrder(properties, columns);
  if (keys.length === 0) return '';
  const items = keys.map((key) => record([['Column', stringValue(propertyOf(key.column))], ['Direction', stringValue(key.direction)]]));
  return annotation(indent, 'SortOrder', collection(items));
}

function materializedViewAnnotation(version: DatasetVersion, indent: string): string {
  const view = materializedView(version.dataset);
  if (!view) return '';
  const fields: [string, Expression | undefined][] = [
    ['Definition', optionalString(view.definition)],
    ['Refresh', optionalString(view.refresh)],
    ['Sources', view.sources.length > 0 ? collection(view.sources.map(stringValue)) : undefined],
    ['LastRefreshed', version.snapshot ? stringValue(isoTime(version.snapshot.committed_at)) : undefined],
  ];
  return fields.some(([, value]) => value !== undefined) ? annotation(indent, 'MaterializedView', record(fields)) : '';
}

/** The EntitySet's annotations, written at `indent`. `propertyOf` maps a column name to its EDM property name. */
export function datasetAnnotations(version: DatasetVersion, propertyOf: (column: string) => string, indent: string): string {
  const { dataset } = version;
  const described = llmDescribed(dataset.properties);
  return (
    optionalAnnotation(indent, 'Description', dataset.description) +
    (described === undefined ? '' : annotation(indent, 'LLMDescribed', boolValue(described))) +
    accessAnnotations(version, indent) +
    snapshotAnnotation(version, indent) +
    tagsAnnotation(version, indent) +
    sortOrderAnnotation(dataset.properties, dataset.columns.map((c) => c.name), propertyOf, indent) +
    materializedViewAnnotation(version, indent)
  );
}

function statisticsAnnotation(stats: ColumnStatistics | undefined, indent: string): string {
  if (!stats) return '';
  return annotation(
    indent,
    'Statistics',
    record([
      ['Min', stats.min === undefined ? undefined : stringValue(stats.min)],
      ['Max', stats.max === undefined ? undefined : stringValue(stats.max)],
      ['DistinctValueCount', stats.distinctCount === undefined ? undefined : intValue(stats.distinctCount)],
      ['NullCount', stats.nullCount === undefined ? undefined : intValue(stats.nullCount)],
      ['CIDR', stats.cidr === undefined ? undefined : stringValue(stats.cidr)],
    ]),
  );
}

/** A Property's annotations, written at `indent`. */
export function columnAnnotations(column: ColumnDef, stats: ColumnStatistics | undefined, indent: string): string {
  return (
    optionalAnnotation(indent, 'Description', column.description) +
    optionalAnnotation(indent, 'OriginalType', column.original_type) +
    optionalAnnotation(indent, 'SourceType', column.source_type) +
    statisticsAnnotation(stats, indent)
  );
}
