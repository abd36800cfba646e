import type { DuckDBConnection } from '@duckdb/node-api';
import { quoteIdent, quoteString } from './sql.ts';
import { physicalType } from './types.ts';

export interface DatasetFiles {
  /** Local Parquet paths of a snapshot; may be empty (then an empty relation of `columns`). */
  files: string[];
  /** The dataset's columns, in order (DuckDB types, or Lakeport's IPV4), each optionally exposed under another name. */
  columns: { name: string; type: string; as?: string }[];
  /**
   * Adds a BIGINT column of this name numbering the rows in file order, stable for an immutable
   * file list: `firstIds[i]` is the number of the first row of `files[i]`.
   */
  rowId?: { column: string; firstIds: number[] };
  /** Only rows from this row number on within each file (pushed into the Parquet scan, which skips row groups). */
  fromRowInFile?: number;
  /** Only rows before this row number within each file (likewise pushed down). */
  toRowInFile?: number;
}

/** The (lowercased) column names of a list of immutable files, by the list's SQL text. */
export interface ColumnNameCache {
  get(files: string): Set<string> | undefined;
  set(files: string, names: Set<string>): void;
}

/** read_parquet's own columns, named so they cannot meet a dataset column. */
const FILE_COLUMN = '_lakeport_file';
const ROW_IN_FILE = 'file_row_number';

/**
 * A SELECT over a snapshot's Parquet files with exactly the dataset's columns: files written under
 * an older definition get NULL for columns they lack and every column is cast to its current type.
 * The paths are Lakeport's own (not user input), quoted as literals.
 */
export async function datasetRelation(connection: DuckDBConnection, dataset: DatasetFiles, cache?: ColumnNameCache): Promise<string> {
  const typed = (expression: string, c: DatasetFiles['columns'][number]) => `CAST(${expression} AS ${physicalType(c.type)}) AS ${quoteIdent(c.as ?? c.name)}`;
  const { rowId, fromRowInFile = 0, toRowInFile } = dataset;
  if (dataset.files.length === 0) {
    const empty = dataset.columns.map((c) => typed('NULL', c));
    if (rowId) empty.push(`CAST(NULL AS BIGINT) AS ${quoteIdent(rowId.column)}`);
    return `SELECT ${empty.join(', ')} WHERE false`;
  }
  const files = `[${dataset.files.map(quoteString).join(', ')}]`;
  // Hive partitioning off: a `col=value` directory in a path must not override a column.
  const options = 'union_by_name = true, hive_partitioning = false';
  let present = cache?.get(files);
  if (!present) {
    const described = (await connection.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${files}, ${options})`)).getRowObjectsJson() as { column_name: string }[];
    present = new Set(described.map((r) => r.column_name.toLowerCase()));
    cache?.set(files, present);
  }
  const select = dataset.columns.map((c) => typed(present.has(c.name.toLowerCase()) ? quoteIdent(c.name) : 'NULL', c));
  const numbered = rowId !== undefined || fromRowInFile > 0 || toRowInFile !== undefined;
  if (numbered && (present.has(ROW_IN_FILE) || present.has(FILE_COLUMN))) {
    throw new Error(`A data file has a column named ${ROW_IN_FILE} or ${FILE_COLUMN}, which Lakeport reserves`);
  }
  if (!numbered) return `SELECT ${select.join(', ')} FROM read_parquet(${files}, ${options})`;
  if (rowId) {
    const first = rowId.firstIds;
    const base = dataset.files.length === 1 ? String(first[0]) : `CASE ${FILE_COLUMN} ${dataset.files.map((f, i) => `WHEN ${quoteString(f)} THEN ${first[i]}`).join(' ')} END`;
    select.push(`(${base} + ${ROW_IN_FILE})::BIGINT AS ${quoteIdent(rowId.column)}`);
  }
  const bounds = [
    ...(fromRowInFile > 0 ? [`${ROW_IN_FILE} >= ${Math.trunc(fromRowInFile)}`] : []),
    ...(toRowInFile !== undefined ? [`${ROW_IN_FILE} < ${Math.trunc(toRowInFile)}`] : []),
  ];
  const where = bounds.length > 0 ? ` WHERE ${bounds.join(' AND ')}` : '';
  return `SELECT ${select.join(', ')} FROM read_parquet(${files}, ${options}, filename = '${FILE_COLUMN}', file_row_number = true)${where}`;
}
