/**
 * What a cluster invites, refused at start (docs/deploy.md, "Start-up refusals"): each case runs the
 * real CLI as an operator would, and expects exit 2 with one line that names the setting to fix and
 * the section of docs/deploy.md, and no stack trace.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loadMigrations, migrate, openDatabase, type Db } from '../src/core/db/index.ts';
import { STORAGE_MARKER_KEY } from '../src/core/startup/index.ts';
import { createPostgresDatabaseUrl, TEST_DATABASE_URL, tempDir } from './harness.ts';

const run = promisify(execFile);
const BIN = path.resolve(import.meta.dirname, '../bin/lakeport.cjs');
const CLOCK_OFFSET = path.resolve(import.meta.dirname, 'fixtures/clock-offset.cjs');
const KEY_A = Buffer.alloc(32, 1).toString('base64');
const KEY_B = Buffer.alloc(32, 2).toString('base64');
const TIMEOUT = 180_000;

/** On PGlite: an embedded cluster made and migrated once, copied into each test's data directory (initdb takes ~20 s). */
const seed = tempDir('lakeport-refusal-seed-');
beforeAll(async () => {
  if (TEST_DATABASE_URL) return;
  const db = await openDatabase({ dataDir: seed.dir });
  await migrate(db);
  await db.close();
});
afterAll(() => seed.remove());

/** A data directory and, on PostgreSQL, a database of its own (on PGlite, `empty`: no embedded cluster yet); removed when the test ends. */
async function place(options: { empty?: boolean } = {}): Promise<{ dataDir: string; env: NodeJS.ProcessEnv }> {
  const data = tempDir('lakeport-refusal-');
  onTestFinished(() => data.remove());
  if (!TEST_DATABASE_URL && !options.empty) fs.cpSync(path.join(seed.dir, 'pgdata'), path.join(data.dir, 'pgdata'), { recursive: true });
  const env: NodeJS.ProcessEnv = { ...process.env, LAKEPORT_DATA_DIR: data.dir, PORT: '0', LAKEPORT_LOG_LEVEL: 'warn', LAKEPORT_MASTER_KEY: KEY_A, LAKEPORT_STORAGE_URL: '' };
  delete env.DATABASE_URL;
  delete env.NODE_OPTIONS;
  if (TEST_DATABASE_URL) {
    const db = await createPostgresDatabaseUrl();
    onTestFinished(() => db.drop());
    env.DATABASE_URL = db.url;
  }
  return { dataDir: data.dir, env };
}

const lakeport = (env: NodeJS.ProcessEnv, ...args: string[]) => run('node', [BIN, ...args], { env, timeout: TIMEOUT - 10_000 });

/** Initialises the cluster as its first server would (and an operator's command does): identity, signing keys. */
async function initialise(env: NodeJS.ProcessEnv): Promise<void> {
  const { stdout } = await lakeport(env, 'admin', 'rotate-keys');
  expect(JSON.parse(stdout)).toMatchObject({ kid: expect.stringMatching(/^key_/) });
}

/** Runs the command, expects the refusal: exit 2, one `lakeport:` line pointing at docs/deploy.md#anchor, no stack trace. */
async function refused(env: NodeJS.ProcessEnv, args: string[], anchor: string): Promise<string> {
  const error = await lakeport(env, ...args).then(
    ({ stdout }) => ({ code: 0, stderr: `(it started: ${stdout})` }),
    (e: { code: number; stderr: string }) => e,
  );
  expect(error.code, error.stderr).toBe(2);
  const lines = error.stderr.split('\n').filter((l) => l.startsWith('lakeport: '));
  expect(lines, error.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`; see docs/deploy\\.md#${anchor}$`));
  expect(error.stderr).not.toMatch(/^\s+at /m);
  return lines[0];
}

/** The cluster's metadata database, opened here while no Lakeport process has it. */
async function withDb<T>(env: NodeJS.ProcessEnv, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir: env.LAKEPORT_DATA_DIR });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

describe('start-up refusals', () => {
  it('a master key other than the one the cluster was initialised with', { timeout: TIMEOUT }, async () => {
    const { env } = await place();
    await initialise(env);
    const line = await refused({ ...env, LAKEPORT_MASTER_KEY: KEY_B }, ['serve'], 'master-key');
    expect(line).toContain('set LAKEPORT_MASTER_KEY to the key the cluster was initialised with');
    expect(line).not.toContain(KEY_B);
    // Without LAKEPORT_MASTER_KEY a server makes a key file of its own: refused too, naming the file.
    const unset = { ...env };
    delete unset.LAKEPORT_MASTER_KEY;
    expect(await refused(unset, ['serve'], 'master-key')).toContain(`the master key (from ${path.join(env.LAKEPORT_DATA_DIR!, 'master-key')})`);
    // The right key still starts.
    await initialise(env);
  });

  it('a master key other than the one that sealed a database older than these checks', { timeout: TIMEOUT }, async () => {
    const { dataDir, env } = await place();
    await initialise(env);
    // As a database of an earlier release: its signing keys, no identity, no storage marker.
    await withDb(env, (db) => db.kysely.deleteFrom('cluster_identity').execute());
    fs.rmSync(path.join(dataDir, STORAGE_MARKER_KEY));
    await refused({ ...env, LAKEPORT_MASTER_KEY: KEY_B }, ['serve'], 'master-key');
    await initialise(env);
    const identity = await withDb(env, (db) => db.kysely.selectFrom('cluster_identity').select(['cluster_id', 'storage_location']).executeTakeFirstOrThrow());
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, STORAGE_MARKER_KEY), 'utf8')).cluster_id).toBe(identity.cluster_id);
  });

  it("a storage URL other than the cluster's, and a new database over a cluster's storage", { timeout: TIMEOUT }, async () => {
    const first = await place();
    await initialise(first.env);
    const other = tempDir('lakeport-refusal-storage-');
    onTestFinished(() => other.remove());
    const line = await refused({ ...first.env, LAKEPORT_STORAGE_URL: `file://${other.dir}` }, ['serve'], 'storage-url');
    expect(line).toContain(`the storage file://${other.dir} is not this cluster's`);
    expect(line).toContain('set LAKEPORT_STORAGE_URL');
    // Nothing was written to the wrong storage.
    expect(fs.readdirSync(other.dir)).toEqual([]);

    const second = await place();
    const shared = await refused({ ...second.env, LAKEPORT_STORAGE_URL: `file://${first.dataDir}` }, ['serve'], 'storage-url');
    expect(shared).toContain('holds the data of another Lakeport cluster');
    expect(shared).toContain('DATABASE_URL');
  });

  it.runIf(!TEST_DATABASE_URL)('an embedded data directory that a server on another host has open', { timeout: TIMEOUT }, async () => {
    const { dataDir, env } = await place({ empty: true });
    fs.writeFileSync(path.join(dataDir, 'pgdata.lock'), '4242 other-host.example');
    const line = await refused(env, ['serve'], 'pglite-one-host');
    expect(line).toContain('process 4242 on host other-host.example');
    expect(line).toContain('LAKEPORT_DATA_DIR');
    expect(line).toContain('DATABASE_URL');
    expect(fs.readFileSync(path.join(dataDir, 'pgdata.lock'), 'utf8')).toBe('4242 other-host.example');
  });

  it('a worker without DATABASE_URL', { timeout: TIMEOUT }, async () => {
    const { env } = await place({ empty: true });
    const line = await refused({ ...env, DATABASE_URL: '' }, ['worker'], 'worker-database');
    expect(line).toContain('set DATABASE_URL');
  });

  it.runIf(TEST_DATABASE_URL)("a host whose clock is far from the database's", { timeout: TIMEOUT }, async () => {
    const { env } = await place();
    const skewed = { ...env, NODE_OPTIONS: `--require ${CLOCK_OFFSET}`, LAKEPORT_TEST_CLOCK_OFFSET_MS: '120000' };
    const line = await refused(skewed, ['serve'], 'clocks');
    expect(line).toMatch(/clock is 12\d s ahead of the metadata database's \(at most 30 s are allowed\)/);
    expect(line).toContain('LAKEPORT_MAX_CLOCK_SKEW_SECONDS');
    await initialise({ ...skewed, LAKEPORT_MAX_CLOCK_SKEW_SECONDS: '300' });
  });

  it.runIf(TEST_DATABASE_URL)('an offline migration on a database in use, until `lakeport migrate` applies it', { timeout: TIMEOUT }, async () => {
    const { env } = await place();
    await withDb(env, (db) => migrate(db, loadMigrations().filter((m) => m.version < 7)));
    const line = await refused(env, ['serve'], 'upgrades');
    expect(line).toContain('migration 0007_upload_parts cannot be applied while servers of the earlier release may run');
    expect(line).toContain('run `lakeport migrate` once');
    const { stdout } = await lakeport(env, 'migrate');
    expect(stdout).toMatch(/^applied migrations 7, /);
    await initialise(env);
  });

  it('a database migrated by a newer release', { timeout: TIMEOUT }, async () => {
    const { env } = await place();
    await withDb(env, async (db) => {
      await migrate(db);
      await sql`INSERT INTO schema_migrations (version, name) VALUES (9999, 'from_the_future')`.execute(db.kysely);
    });
    const line = await refused(env, ['serve'], 'upgrades');
    expect(line).toContain('migrated by a newer Lakeport (9999_from_the_future;');
    await refused(env, ['migrate'], 'upgrades');
  });
});
