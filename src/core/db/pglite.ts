import fs from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, type DatabaseConnection, type Driver, type TransactionSettings } from 'kysely';
import { KyselyPGlite } from 'kysely-pglite';
import type { Db } from './db.ts';
import { Mutex } from './mutex.ts';
import type { Database } from './schema.ts';

/** kysely-pglite's driver hands every caller the same session; serialise them so transactions never interleave. */
class SerialDriver implements Driver {
  private readonly releases = new WeakMap<DatabaseConnection, () => void>();

  constructor(
    private readonly inner: Driver,
    private readonly mutex: Mutex,
  ) {}

  init() {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const release = await this.mutex.acquire();
    try {
      const connection = await this.inner.acquireConnection();
      this.releases.set(connection, release);
      return connection;
    } catch (error) {
      release();
      throw error;
    }
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
    return this.inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection) {
    return this.inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection) {
    return this.inner.rollbackTransaction(connection);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    await this.inner.releaseConnection(connection);
    this.releases.get(connection)?.();
    this.releases.delete(connection);
  }

  destroy() {
    return this.inner.destroy();
  }
}

/**
 * Embedded PostgreSQL. `dataDir` undefined keeps everything in memory; `template` (a data-directory
 * dump) skips initdb, which tests use to start a fresh database in about a second.
 */
export async function openPglite(dataDir: string | undefined, template?: Blob): Promise<Db> {
  if (dataDir) fs.mkdirSync(dataDir, { recursive: true });
  const client = await PGlite.create({ ...(dataDir ? { dataDir } : {}), ...(template ? { loadDataDir: template } : {}) });
  const mutex = new Mutex();
  const { dialect } = new KyselyPGlite(client);
  const kysely = new Kysely<Database>({
    dialect: {
      createAdapter: () => dialect.createAdapter(),
      createDriver: () => new SerialDriver(dialect.createDriver(), mutex),
      createIntrospector: (db) => dialect.createIntrospector(db),
      createQueryCompiler: () => dialect.createQueryCompiler(),
    },
  });
  return {
    kysely,
    driver: 'pglite',
    async scriptTransaction(fn) {
      const release = await mutex.acquire();
      try {
        return await client.transaction((tx) =>
          fn({
            exec: async (sql) => void (await tx.exec(sql)),
            query: async <R>(sql: string, params: unknown[] = []) => (await tx.query<R>(sql, params)).rows,
          }),
        );
      } finally {
        release();
      }
    },
    async close() {
      await kysely.destroy();
    },
  };
}
