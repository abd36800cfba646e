import type { DuckDBConnection } from '@duckdb/node-api';

/** The DuckDB memory one instance has in use (buffer manager, all tags), in bytes; on a short-lived connection of it. */
export async function duckdbMemoryBytes(connect: () => Promise<DuckDBConnection>): Promise<number> {
  const connection = await connect();
  try {
    const reader = await connection.runAndReadAll('SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT FROM duckdb_memory()');
    return Number(reader.getRows()[0]?.[0] ?? 0);
  } finally {
    connection.closeSync();
  }
}
