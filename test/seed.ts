import { DuckDBInstance } from '@duckdb/node-api';
import type { ColumnDef } from '../src/core/catalog/index.ts';
import type { TestApp } from './harness.ts';

let duck: Promise<DuckDBInstance> | undefined;

/**
 * Commits a snapshot of rows produced by `selectSql` (plain DuckDB SQL, run by the test itself) to a
 * dataset, creating the dataset on first use. Returns the snapshot id.
 */
export async function seedSnapshot(
  t: TestApp,
  ref: { workspace: string; collection: string; dataset: string },
  columns: ColumnDef[],
  selectSql: string,
  options: { overwrite?: boolean; message?: string } = {},
): Promise<number> {
  duck ??= DuckDBInstance.create(':memory:');
  const connection = await (await duck).connect();
  const local = await t.deps.blobs.tempPath('.parquet');
  try {
    const count = (await connection.runAndReadAll(`COPY (${selectSql}) TO '${local}' (FORMAT parquet)`)).getRowObjectsJson()[0] as { Count: string };
    const key = `lake/${ref.workspace}/${ref.collection}/${ref.dataset}/${crypto.randomUUID()}.parquet`;
    const info = await t.deps.blobs.putFile(key, local);
    const { catalog } = t.app.lakeport;
    const existing = await catalog.findDataset(ref);
    const dataset = existing ?? (await catalog.createDataset(ref, { columns }, 'seed'));
    const snapshot = await catalog.commitSnapshot({
      dataset: dataset.dataset_id,
      operation: existing ? (options.overwrite ? 'overwrite' : 'append') : 'create',
      removeAllFiles: existing !== undefined && options.overwrite,
      author: 'seed',
      message: options.message,
      addFiles: [{ path: key, row_count: Number(count.Count), size_bytes: info.size }],
    });
    return snapshot.snapshot_id;
  } finally {
    connection.closeSync();
  }
}
