import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { inject } from 'vitest';
import { createAppDeps } from '../src/app-deps.ts';
import { silentLogger } from '../src/core/logger.ts';
import { buildApp, type AppDeps, type AppOptions } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase, type Db } from '../src/core/db/index.ts';
import { AdminToken } from '../src/core/http/index.ts';
import { Ingestor, RowReader, SqlAnalyzer } from '../src/core/engine/index.ts';
import { createDatabaseBeside } from './pg-database.ts';
import type { MaterializedViewOptions } from '../src/services/jobs/index.ts';

/** Where the suite keeps metadata: PostgreSQL when DATABASE_URL is set (CI runs both), else PGlite in memory. */
export const TEST_DATABASE_URL = process.env.DATABASE_URL;

let template: Promise<Blob | undefined> | undefined;
/** The empty PGlite cluster that test/global-setup.ts dumped once, so no test file pays for initdb. */
function pgliteTemplate(): Promise<Blob | undefined> {
  const file = inject('pgliteTemplate');
  template ??= file ? fs.promises.readFile(file).then((bytes) => new Blob([bytes])) : Promise.resolve(undefined);
  return template;
}

export interface TestDb {
  db: Db;
  dispose(): Promise<void>;
}

/** A fresh, empty database (its own PostgreSQL database, or an in-memory PGlite), migrated. */
export async function createTestDb(options: { migrate?: boolean } = {}): Promise<TestDb> {
  let db: Db;
  let dispose: () => Promise<void>;
  if (TEST_DATABASE_URL) {
    const database = await createPostgresDatabaseUrl();
    db = await openDatabase({ databaseUrl: database.url });
    dispose = async () => {
      await db.close();
      await database.drop();
    };
  } else {
    db = await openDatabase({ dataDir: 'memory', template: await pgliteTemplate() });
    dispose = () => db.close();
  }
  if (options.migrate !== false) await migrate(db);
  return { db, dispose };
}

/** The URL of a fresh database, for tests that open several connections to one database. */
export async function createPostgresDatabaseUrl(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!TEST_DATABASE_URL) throw new Error('DATABASE_URL is not set');
  return createDatabaseBeside(TEST_DATABASE_URL, 'lakeport_test');
}

export function tempDir(prefix = 'lakeport-test-'): { dir: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export const TEST_PUBLIC_URL = 'http://lakeport.test';

let analyzer: Promise<SqlAnalyzer> | undefined;
function sharedAnalyzer(): Promise<SqlAnalyzer> {
  analyzer ??= SqlAnalyzer.create();
  return analyzer;
}

let ingestor: Promise<Ingestor> | undefined;
/** One DuckDB ingestion engine per test file (it is stateless between calls). */
function sharedIngestor(): Promise<Ingestor> {
  ingestor ??= Ingestor.create({ threads: 2, memoryLimit: '512MB' });
  return ingestor;
}

let reader: Promise<RowReader> | undefined;
function sharedReader(): Promise<RowReader> {
  reader ??= RowReader.create({ threads: 2, memoryLimit: '512MB' });
  return reader;
}

export interface TestApp {
  app: FastifyInstance;
  db: Db;
  deps: AppDeps;
  adminToken: string;
  /** The temporary data directory: the lake, scratch space and the master key. */
  dataDir: string;
  close(): Promise<void>;
}

/**
 * Two instances of the application over one fresh database, as two servers sharing PostgreSQL would
 * be (without job workers): `app` and `other`. `close` closes both.
 */
export async function createTwoServerApp(overrides: Partial<AppDeps> = {}): Promise<TestApp & { other: FastifyInstance }> {
  const t = await createTestApp(overrides, { workers: false });
  const other = await buildApp(t.deps, { workers: false });
  await other.ready();
  return {
    ...t,
    other,
    async close() {
      await other.close();
      await t.close();
    },
  };
}

/** The whole application over a fresh database, for `app.inject` route tests. */
export async function createTestApp(overrides: Partial<AppDeps> = {}, options: { workers?: boolean; logger?: AppOptions['logger']; trustProxy?: AppOptions['trustProxy']; materializedViews?: MaterializedViewOptions } = {}): Promise<TestApp> {
  const { db, dispose } = await createTestDb();
  const lakeDir = tempDir('lakeport-lake-');
  const adminToken = `test-admin-${crypto.randomBytes(12).toString('hex')}`;
  // The lake, scratch space and master key in a temporary data directory; small job settings, queries run inline.
  const config = loadConfig({
    LAKEPORT_DATA_DIR: lakeDir.dir,
    LAKEPORT_PUBLIC_URL: TEST_PUBLIC_URL,
    PORT: '0',
    LAKEPORT_MASTER_KEY: crypto.randomBytes(32).toString('base64'),
    LAKEPORT_JOB_TIMEOUT_SECONDS: '30',
    LAKEPORT_JOB_WORKERS: '4',
    LAKEPORT_JOBS_PER_IDENTITY: '4',
    LAKEPORT_JOB_MEMORY_LIMIT: '256MB',
    LAKEPORT_JOB_THREADS: '1',
    LAKEPORT_JOB_ISOLATION: 'inline',
    // Automatic compaction would add maintenance snapshots under other tests; its own tests turn it on.
    LAKEPORT_COMPACTION: 'off',
  });
  const deps = await createAppDeps(config, { db, adminToken: new AdminToken(adminToken), ingestor: await sharedIngestor(), reader: await sharedReader(), analyzer: await sharedAnalyzer(), ...overrides }, silentLogger);
  if (options.materializedViews) deps.jobs = { ...deps.jobs, materializedViews: options.materializedViews };
  const app = await buildApp(deps, { workers: options.workers ?? true, logger: options.logger, trustProxy: options.trustProxy });
  await app.ready();
  return {
    app,
    db,
    deps,
    adminToken,
    dataDir: lakeDir.dir,
    async close() {
      await app.close();
      await dispose();
      lakeDir.remove();
    },
  };
}
