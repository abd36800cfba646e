import fs from 'node:fs';
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';

/** Writes the rows of `sql` to a Parquet file (making its directory) with a test's own DuckDB connection; returns the path. */
export async function writeParquet(connection: DuckDBConnection, sql: string, file: string): Promise<string> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  await connection.run(`COPY (${sql}) TO '${file}' (FORMAT parquet)`);
  return file;
}

/** A Parquet file's rows as JSON-friendly objects. */
export async function readParquet(connection: DuckDBConnection, file: string): Promise<Record<string, unknown>[]> {
  return (await connection.runAndReadAll(`SELECT * FROM read_parquet('${file}')`)).getRowObjectsJson() as Record<string, unknown>[];
}
