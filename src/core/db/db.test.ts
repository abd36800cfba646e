import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabaseUrl, createTestDb, TEST_DATABASE_URL, type TestDb } from '../../../test/harness.ts';
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
