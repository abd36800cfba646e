import { quoteIdent } from '../../core/engine/index.ts';
import { odataError } from './errors.ts';
import { jsonRowSql } from './json-rows.ts';
import type { DatasetVersion } from './model.ts';
import type { RowsOptions } from './options.ts';
import { compileQuery } from './query/index.ts';
import { entityOf, type ODataService } from './service.ts';

/**
 * A key segment's address: the entity set segment (`ds[@label]`) and, when it ends with a key
 * (`ds(5)`, `ds(_lakeport_row_id=5)`), the key's text.
 */
export function splitKey(segment: string): { segment: string; key?: string } {
  const match = /^([^()]*)\(([^()]*)\)$/.exec(segment);
  return match ? { segment: match[1], key: match[2] } : { segment };
}

/** The row number a key names: `5` or `<row id property>=5`; 400 INVALID_KEY otherwise. */
export function parseKey(key: string, rowIdName: string): number {
  const eq = key.indexOf('=');
  const name = eq < 0 ? undefined : key.slice(0, eq).trim();
  const value = (eq < 0 ? key : key.slice(eq + 1)).trim();
  if ((name !== undefined && name !== rowIdName) || !/^\d{1,16}$/.test(value) || Number(value) > Number.MAX_SAFE_INTEGER) {
    throw odataError('INVALID_KEY', `The key must be the row number, (5) or (${rowIdName}=5), not (${key})`);
  }
  return Number(value);
}

/**
 * How many rows of the version match the request's `$filter` (and `$apply`, when given): the
 * answer of `…/$count`, as OData's text/plain number.
 */
export async function countRows(odata: ODataService, version: DatasetVersion, options: RowsOptions): Promise<string> {
  const entity = entityOf(version.dataset);
  const query = compileQuery({ filter: options.filter, apply: options.apply }, entity.properties, new Date());
  if (version.files.length === 0) {
    // Nothing to read: the query is still checked above, so a bad $filter is a 400 here too.
    return '0';
  }
  const session = await odata.open(version);
  try {
    return String(await session.scalar(query.countSql(await session.relation()), query.params.values));
  } finally {
    session.close();
  }
}

/**
 * The entity whose row number is `rowId`, as an OData JSON entity (`@odata.context` then its
 * properties, `$select` honoured), DuckDB writing its JSON; 404 ENTITY_NOT_FOUND past the last row.
 * Only the Parquet row group that holds the row is read.
 */
export async function entityText(odata: ODataService, version: DatasetVersion, rowId: number, options: Pick<RowsOptions, 'select' | 'ieee754'>, contextUrl: (columns: string[]) => string): Promise<string> {
  const entity = entityOf(version.dataset);
  const query = compileQuery({ select: options.select }, entity.properties, new Date());
  const notFound = () => odataError('ENTITY_NOT_FOUND', `No row ${rowId} in this version of the dataset (rows are numbered from 0)`);
  if (version.files.length === 0) throw notFound();
  const session = await odata.open(version);
  try {
    const { file, row } = session.locate(rowId);
    if (file >= version.files.length) throw notFound();
    const relation = await session.fileRelation(file, row, row + 1);
    const sql = `SELECT ${jsonRowSql(query.columns, options.ieee754)} FROM (${query.sql(`SELECT * FROM (${relation}) WHERE ${quoteIdent(entity.rowId)} = ${rowId}`)}) LIMIT 1`;
    let text: string | undefined;
    for await (const [json] of session.rows(sql, query.params.values)) text = String(json);
    if (text === undefined) throw notFound();
    const context = `{"@odata.context":${JSON.stringify(contextUrl(query.columns.map((c) => c.name)))}`;
    return text === '{}' ? `${context}}` : `${context},${text.slice(1)}`;
  } finally {
    session.close();
  }
}
