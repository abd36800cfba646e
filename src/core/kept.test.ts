import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, TEST_DATABASE_URL, type TestDb } from '../../test/harness.ts';
import { KeptReads } from './kept.ts';

describe(`KeptReads over the metadata database (${TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb();
    await sql`CREATE TABLE kept_a (id int PRIMARY KEY, v text NOT NULL)`.execute(t.db.kysely);
    await sql`CREATE TABLE kept_b (id int PRIMARY KEY)`.execute(t.db.kysely);
    await sql`INSERT INTO kept_a VALUES (1, 'one')`.execute(t.db.kysely);
  });
  afterAll(async () => t.dispose());

  /** A KeptReads of kept_a's value for an id, counting its reads. */
  function keptA(ttlMs = 60_000) {
    const reads = { count: 0 };
    const kept = new KeptReads<number, string>({ ttlMs, max: 10, tables: { writes: t.db.writes, names: ['kept_a'] } });
    const read = (id: number) => async () => {
      reads.count++;
      const { rows } = await sql<{ v: string }>`SELECT v FROM kept_a WHERE id = ${id}`.execute(t.db.kysely);
      return rows[0]?.v as string;
    };
    return { kept, read, reads };
  }
  // Writes of every kind, through Kysely's builders and raw SQL, in and out of transactions.
  const db = () => t.db.kysely as unknown as import('kysely').Kysely<{ kept_a: { id: number; v: string }; kept_b: { id: number } }>;

  it('keeps an answer until this process writes its table, and only its table', async () => {
    const { kept, read, reads } = keptA();
    expect(await kept.get(1, read(1))).toBe('one');
    expect(await kept.get(1, read(1))).toBe('one');
    expect(reads.count).toBe(1);
    await db().insertInto('kept_b').values({ id: 1 }).execute();
    await sql`UPDATE kept_b SET id = 2`.execute(t.db.kysely);
    expect(await kept.get(1, read(1))).toBe('one');
    expect(reads.count).toBe(1);
    for (const write of [
      () => db().updateTable('kept_a').set({ v: 'uno' }).where('id', '=', 1).execute(),
      () => sql`UPDATE kept_a SET v = 'eins' WHERE id = 1`.execute(t.db.kysely),
      () => db().insertInto('kept_a').values({ id: 2, v: 'two' }).execute(),
      () => db().deleteFrom('kept_a as a').where('a.id', '=', 2).execute(),
      () => sql`WITH x AS (INSERT INTO kept_a VALUES (3, 'three') RETURNING id) SELECT id FROM x`.execute(t.db.kysely),
      () => t.db.kysely.transaction().execute((trx) => sql`UPDATE kept_a SET v = 'one' WHERE id = 1`.execute(trx)),
    ]) {
      const before = reads.count;
      await write();
      await kept.get(1, read(1));
      expect(reads.count).toBe(before + 1);
    }
    expect(await kept.get(1, read(1))).toBe('one');
  });

  it('does not keep what was read while a transaction writing the table was committing', async () => {
    // A deferred trigger that makes COMMIT take 300 ms: a read sent meanwhile sees the old value.
    await sql`CREATE FUNCTION kept_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END $$`.execute(t.db.kysely);
    await sql`CREATE CONSTRAINT TRIGGER kept_slow AFTER UPDATE ON kept_a DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION kept_slow_commit()`.execute(t.db.kysely);
    try {
      const { kept, read } = keptA();
      await kept.get(1, read(1));
      const version = t.db.writes.version(['kept_a']);
      const transaction = t.db.kysely.transaction().execute((trx) => sql`UPDATE kept_a SET v = 'changed' WHERE id = 1`.execute(trx));
      // Once COMMIT is on its way (the count moved for it), read: on PostgreSQL this sees 'one'
      // (on PGlite it waits for the transaction, which holds the only session).
      while (t.db.writes.version(['kept_a']) < version + 3) await new Promise((r) => setImmediate(r));
      const during = kept.get(1, read(1));
      await transaction;
      expect(['one', 'changed']).toContain(await during);
      expect(await kept.get(1, read(1))).toBe('changed');
    } finally {
      await sql`DROP TRIGGER kept_slow ON kept_a`.execute(t.db.kysely);
      await sql`UPDATE kept_a SET v = 'one' WHERE id = 1`.execute(t.db.kysely);
    }
  });

  it('drops an answer after its time, and on forget; a read overlapping a forget is not kept', async () => {
    const short = keptA(50);
    await short.kept.get(1, short.read(1));
    await new Promise((r) => setTimeout(r, 80));
    await short.kept.get(1, short.read(1));
    expect(short.reads.count).toBe(2);

    const { kept, read, reads } = keptA();
    await kept.get(1, read(1));
    kept.forget(1);
    await kept.get(1, read(1));
    kept.forget((id, v) => id === 1 && v === 'one');
    const overlapping = kept.get(1, async () => {
      kept.forget();
      return read(1)();
    });
    await overlapping;
    await kept.get(1, read(1));
    expect(reads.count).toBe(4);
  });

  it('lets callers missing the same answer at once wait for one read', async () => {
    const { kept, read, reads } = keptA();
    const answers = await Promise.all(Array.from({ length: 8 }, () => kept.get(1, read(1))));
    expect(answers).toEqual(Array(8).fill('one'));
    expect(reads.count).toBe(1);
  });

  it('never keeps undefined, nor what `keep` refuses, and keeps nothing with a time of 0', async () => {
    const { kept, read, reads } = keptA();
    expect(await kept.get(9, read(9))).toBeUndefined();
    expect(await kept.get(9, read(9))).toBeUndefined();
    await kept.get(1, read(1), (v) => v !== 'one');
    await kept.get(1, read(1));
    expect(reads.count).toBe(4);
    const none = keptA(0);
    await none.kept.get(1, none.read(1));
    await none.kept.get(1, none.read(1));
    expect(none.reads.count).toBe(2);
  });
});
