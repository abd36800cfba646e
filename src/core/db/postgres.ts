import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { inTransaction, type Db } from './db.ts';
import type { Database } from './schema.ts';

// COUNT(*) and other int8 results: parse as numbers (row counts stay far below 2^53).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export async function openPostgres(connectionString: string): Promise<Db> {
  const pool = new pg.Pool({ connectionString, max: 10 });
  pool.on('error', () => {
    /* idle client errors surface on the next query */
  });
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    driver: 'postgres',
    async scriptTransaction(fn) {
      const client = await pool.connect();
      try {
        const session = {
          exec: async (sql: string) => void (await client.query(sql)),
          query: async <R>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as R[],
        };
        return await inTransaction(session, fn);
      } finally {
        client.release();
      }
    },
    async close() {
      await kysely.destroy();
    },
  };
}
