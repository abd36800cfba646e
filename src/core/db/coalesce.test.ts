import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, TEST_DATABASE_URL, type TestDb } from '../../../test/harness.ts';
import { WriteCoalescer } from './coalesce.ts';

describe(`WriteCoalescer (${TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestDb;
  let db: Kysely<{ coalesced: { id: number } }>;
  const statements: number[] = [];
  let coalescer: WriteCoalescer<number>;
  beforeAll(async () => {
    t = await createTestDb();
    db = t.db.kysely as unknown as Kysely<{ coalesced: { id: number } }>;
    await sql`CREATE TABLE coalesced (id int PRIMARY KEY)`.execute(db);
    coalescer = new WriteCoalescer(async (ids) => {
      statements.push(ids.length);
      await db.insertInto('coalesced').values(ids.map((id) => ({ id }))).execute();
    });
  });
  afterAll(async () => t.dispose());

  it('writes what arrives in one turn together, and what arrives while statements are in flight in the next; each resolves once committed', async () => {
    statements.length = 0;
    await Promise.all(Array.from({ length: 20 }, (_, i) => coalescer.add(i)));
    expect(statements).toEqual([20]);
    // Two statements in flight at most: what arrives meanwhile waits, then goes together.
    const first = [coalescer.add(20)];
    await new Promise((r) => setImmediate(r));
    const second = [coalescer.add(21)];
    await new Promise((r) => setImmediate(r));
    const waiting = Array.from({ length: 5 }, (_, i) => coalescer.add(22 + i));
    await Promise.all([...first, ...second, ...waiting]);
    expect(statements.slice(1)).toEqual([1, 1, 5]);
    expect((await db.selectFrom('coalesced').select('id').execute()).length).toBe(27);
  });

  it('fails only the item that cannot be written', async () => {
    statements.length = 0;
    const results = await Promise.allSettled([100, 101, 5, 102].map((id) => coalescer.add(id)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const ids = (await db.selectFrom('coalesced').select('id').where('id', '>=', 100).orderBy('id').execute()).map((r) => r.id);
    expect(ids).toEqual([100, 101, 102]);
  });
});
