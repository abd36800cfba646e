import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabaseUrl, createTestDb, TEST_DATABASE_URL, type TestDb } from '../../../test/harness.ts';
import { startTcpProxy } from '../../../test/tcp-proxy.ts';
import { loadMigrations, migrate, openDatabase } from './index.ts';

describe(`metadata database (${TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb({ migrate: false });
  });
  afterAll(async () => t.dispose());

  it('applies every migration once, then nothing', async () => {
    const all = loadMigrations().map((m) => m.version);
    expect(await migrate(t.db)).toEqual(all);
    expect(await migrate(t.db)).toEqual([]);
  });

  it('rolls a failing migration back whole', async () => {
    const bad = [{ version: 9001, name: 'bad', sql: 'CREATE TABLE half_done (x int); SELECT no_such_function();' }];
    await expect(migrate(t.db, bad)).rejects.toThrow();
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'half_done'`.execute(t.db.kysely);
    expect(rows[0].n).toBe(0);
  });

  it('keeps concurrent transactions apart', async () => {
    await sql`CREATE TABLE IF NOT EXISTS counter_test (id int PRIMARY KEY, n int NOT NULL)`.execute(t.db.kysely);
    await sql`INSERT INTO counter_test VALUES (1, 0) ON CONFLICT DO NOTHING`.execute(t.db.kysely);
    await Promise.all(
      Array.from({ length: 20 }, () =>
        t.db.kysely.transaction().execute(async (trx) => {
          const { rows } = await sql<{ n: number }>`SELECT n FROM counter_test WHERE id = 1 FOR UPDATE`.execute(trx);
          await new Promise((r) => setTimeout(r, 1));
          await sql`UPDATE counter_test SET n = ${rows[0].n + 1} WHERE id = 1`.execute(trx);
        }),
      ),
    );
    const { rows } = await sql<{ n: number }>`SELECT n FROM counter_test WHERE id = 1`.execute(t.db.kysely);
    expect(rows[0].n).toBe(20);
  });

  it('hands back typed values, and errors with their PostgreSQL code and constraint', async () => {
    const { rows } = await sql<{ at: Date; big: string; doc: unknown; bytes: Uint8Array }>`
      SELECT TIMESTAMPTZ '2024-05-06 07:08:09+00' AS at, 4294967296::int8 AS big, '{"a":[1,"x"]}'::jsonb AS doc, '\\x0102ff'::bytea AS bytes`.execute(t.db.kysely);
    expect(rows[0].at).toBeInstanceOf(Date);
    expect(rows[0].at.toISOString()).toBe('2024-05-06T07:08:09.000Z');
    expect(Number(rows[0].big)).toBe(4294967296);
    expect(rows[0].doc).toEqual({ a: [1, 'x'] });
    expect([...rows[0].bytes]).toEqual([1, 2, 255]);

    await sql`CREATE TABLE IF NOT EXISTS unique_test (name text CONSTRAINT unique_test_name UNIQUE)`.execute(t.db.kysely);
    await sql`INSERT INTO unique_test VALUES ('a')`.execute(t.db.kysely);
    await expect(sql`INSERT INTO unique_test VALUES ('a')`.execute(t.db.kysely)).rejects.toMatchObject({ code: '23505', constraint: 'unique_test_name' });
  });
});

describe('Db.relaxedCommit', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb();
  });
  afterAll(async () => t.dispose());

  it('commits what it writes, visible at once; on PostgreSQL without waiting for the WAL flush, in that transaction only', async () => {
    await sql`CREATE TABLE relaxed_test (id int PRIMARY KEY)`.execute(t.db.kysely);
    const setting = await t.db.relaxedCommit(async (q) => {
      await sql`INSERT INTO relaxed_test VALUES (1)`.execute(q);
      return (await sql<{ s: string }>`SELECT current_setting('synchronous_commit') AS s`.execute(q)).rows[0].s;
    });
    expect(setting).toBe(TEST_DATABASE_URL ? 'off' : 'on');
    expect((await sql<{ s: string }>`SELECT current_setting('synchronous_commit') AS s`.execute(t.db.kysely)).rows[0].s).toBe('on');
    expect((await sql<{ n: number }>`SELECT count(*)::int AS n FROM relaxed_test`.execute(t.db.kysely)).rows[0].n).toBe(1);
    await expect(t.db.relaxedCommit((q) => sql`INSERT INTO relaxed_test VALUES (1)`.execute(q))).rejects.toMatchObject({ code: '23505' });
  });
});

describe('Db.changes', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb();
  });
  afterAll(async () => t.dispose());

  it.runIf(!TEST_DATABASE_URL)('moves before every statement that may write, and stands still for plain SELECTs (PGlite)', async () => {
    const { kysely, changes } = t.db;
    const moves = async (run: () => Promise<unknown>) => {
      const before = changes!();
      await run();
      return changes!() - before;
    };
    await sql`CREATE TABLE changes_test (id int PRIMARY KEY)`.execute(kysely);
    const test = kysely.withTables<{ changes_test: { id: number } }>();
    expect(await moves(() => kysely.selectFrom('workspaces').selectAll().execute())).toBe(0);
    expect(await moves(() => test.insertInto('changes_test').values({ id: 1 }).execute())).toBe(1);
    expect(await moves(() => test.updateTable('changes_test').set({ id: 2 }).execute())).toBe(1);
    expect(await moves(() => test.deleteFrom('changes_test').execute())).toBe(1);
    // Raw SQL, a SELECT with a WITH clause (which may write), and a transaction count as writes.
    expect(await moves(() => sql`SELECT 1`.execute(kysely))).toBe(1);
    expect(await moves(() => kysely.with('w', (db) => db.selectFrom('workspaces').select('name')).selectFrom('w').selectAll().execute())).toBe(1);
    expect(await moves(() => kysely.transaction().execute((trx) => trx.selectFrom('workspaces').selectAll().execute()))).toBe(2); // BEGIN, COMMIT
    expect(await moves(() => t.db.scriptTransaction((tx) => tx.query('SELECT 1')))).toBeGreaterThan(0);
  });

  it.runIf(TEST_DATABASE_URL)('is not kept where other processes may write (PostgreSQL)', () => {
    expect(t.db.changes).toBeUndefined();
  });
});

describe.runIf(TEST_DATABASE_URL)('migrations under concurrency (PostgreSQL)', () => {
  it('lets only one of several starting servers migrate', async () => {
    const { url, drop } = await createPostgresDatabaseUrl();
    const dbs = await Promise.all(Array.from({ length: 4 }, () => openDatabase({ databaseUrl: url })));
    try {
      const results = await Promise.all(dbs.map((db) => migrate(db)));
      const all = loadMigrations().map((m) => m.version);
      expect(results.filter((r) => r.length > 0)).toEqual([all]);
      expect(results.filter((r) => r.length === 0)).toHaveLength(3);
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
      await drop();
    }
  });
});

describe.runIf(TEST_DATABASE_URL)('losing the connection to PostgreSQL (a restart, a network cut)', () => {
  it('fails the statements under way, never the process, and reconnects by itself', async () => {
    const { url, drop } = await createPostgresDatabaseUrl();
    const target = new URL(url);
    const relay = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    target.hostname = '127.0.0.1';
    target.port = String(relay.port);
    const db = await openDatabase({ databaseUrl: target.toString() });
    try {
      // A connection checked out between two statements of a transaction when the cut comes: its
      // 'error' event has no pool listener then, and an unheard 'error' would end the process.
      const cutInside = db.kysely.transaction().execute(async (trx) => {
        await sql`SELECT 1`.execute(trx);
        relay.cut();
        await new Promise((r) => setTimeout(r, 100));
        await sql`SELECT 2`.execute(trx);
      });
      // A clear 503 for the statements that met the cut, and for those sent while it lasts.
      const unavailable = { status: 503, code: 'METADATA_UNAVAILABLE' };
      await expect(cutInside).rejects.toMatchObject(unavailable);
      await expect(sql`SELECT 1`.execute(db.kysely)).rejects.toMatchObject(unavailable);
      await expect(db.scriptTransaction((tx) => tx.query('SELECT 1'))).rejects.toMatchObject(unavailable);
      // A statement under way when the connection is reset (not closed): the socket's own error.
      relay.restore();
      const sleeping = sql`SELECT pg_sleep(5)`.execute(db.kysely);
      await new Promise((r) => setTimeout(r, 300));
      relay.cut({ reset: true });
      await expect(sleeping).rejects.toMatchObject(unavailable);
      // A statement's own failure stays what it is.
      relay.restore();
      await expect(sql`SELECT no_such_column FROM no_such_table`.execute(db.kysely)).rejects.toMatchObject({ code: '42P01' });
      const { rows } = await sql<{ one: number }>`SELECT 1 AS one`.execute(db.kysely);
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
      await relay.close();
      await drop();
    }
  });
});
