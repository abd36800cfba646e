import path from 'node:path';
import type { Db } from './db.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';

export type { Db, ScriptTransaction } from './db.ts';
export type * from './schema.ts';
export { migrate, loadMigrations } from './migrate.ts';
export { selectAsJson } from './json-rows.ts';

/** PostgreSQL when a URL is given, else embedded PGlite under the data directory (`memory` for tests). */
export async function openDatabase(options: { databaseUrl?: string; dataDir?: string | 'memory'; template?: Blob }): Promise<Db> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl);
  const dir = options.dataDir === 'memory' || options.dataDir === undefined ? undefined : path.join(options.dataDir, 'pgdata');
  return openPglite(dir, options.template);
}
