import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { StartRefusal } from '../startup/refusal.ts';
import type { Db } from './db.ts';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
/** Arbitrary constant: every Lakeport process migrating one database takes this advisory lock. */
const MIGRATION_LOCK_KEY = 7_242_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * Servers of an earlier release cannot run beside it (it drops or reinterprets what they use): its
   * first line is `-- lakeport: offline — why`. A starting server does not apply it to a database in use.
   */
  offline?: boolean;
}

const OFFLINE = /^-- lakeport: offline\b/;

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const sql = fs.readFileSync(path.join(dir, file), 'utf8');
      return { version: Number(file.slice(0, 4)), name: file.slice(5, -4), sql, offline: OFFLINE.test(sql) };
    });
}

export interface MigrateOptions {
  /**
   * A server or worker applying migrations as it starts (rather than `lakeport migrate`): on
   * PostgreSQL, a database already in use is not given an offline migration (servers of the earlier
   * release may still run against it); the start is refused, naming `lakeport migrate`.
   */
  starting?: boolean;
}

const label = (m: { version: number; name: string }) => `${String(m.version).padStart(4, '0')}_${m.name}`;

/**
 * Applies pending migrations in one transaction under a transaction-scoped advisory lock, so two
 * servers starting at once against one database never both migrate: the second waits, then finds
 * nothing left to do. Returns the versions it applied. Refuses (StartRefusal) a database that has
 * migrations these do not know (a newer release migrated it), and, when `starting`, see MigrateOptions.
 */
export async function migrate(db: Db, migrations: Migration[] = loadMigrations(), options: MigrateOptions = {}): Promise<number[]> {
  return db.scriptTransaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const rows = await tx.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version');
    const applied = new Set(rows.map((r) => Number(r.version)));
    const newest = Math.max(0, ...migrations.map((m) => m.version));
    const unknown = rows.filter((r) => Number(r.version) > newest);
    if (unknown.length > 0) {
      throw new StartRefusal(
        `the metadata database was migrated by a newer Lakeport (${unknown.map((r) => label({ version: Number(r.version), name: r.name })).join(', ')}; this one knows up to ${String(newest).padStart(4, '0')})`,
        'run the newer release here too: every server and worker sharing DATABASE_URL runs one release',
        'upgrades',
      );
    }
    const pending = migrations.filter((m) => !applied.has(m.version));
    const offline = pending.find((m) => m.offline);
    if (options.starting && offline && applied.size > 0 && db.driver === 'postgres') {
      throw new StartRefusal(
        `migration ${label(offline)} cannot be applied while servers of the earlier release may run (${offline.sql.split('\n')[0].replace(/^-- lakeport: offline\W*/, '')})`,
        'stop every Lakeport server and worker that uses this DATABASE_URL, run `lakeport migrate` once, then start them on the new release',
        'upgrades',
      );
    }
    const done: number[] = [];
    for (const m of pending) {
      await tx.exec(m.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      done.push(m.version);
    }
    return done;
  });
}
