import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, TEST_DATABASE_URL, type TestDb } from '../../../test/harness.ts';
import { selectAsJson } from './index.ts';

describe(`selectAsJson (${TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb();
    await sql`INSERT INTO catalog_namespaces (workspace, billing_account) VALUES ('jr', 'acct')`.execute(t.db.kysely);
    await sql`INSERT INTO catalog_collections (workspace, name, created_by) VALUES ('jr', 'c', 'me')`.execute(t.db.kysely);
    await sql`INSERT INTO catalog_datasets (dataset_id, workspace, collection, name, kind, columns, description, created_by, updated_by, created_at)
      SELECT 'jr_' || i, 'jr', 'c', 'd' || i, 'table', ${JSON.stringify([{ name: 'x', type: 'BIGINT', nullable: true }])}::jsonb,
        CASE WHEN i = 2 THEN ${'quote " \\ <tag> and ünïcode'} END, 'me', 'me', timestamptz '2026-01-02 03:04:05.678901+00' + i * interval '1 day'
      FROM generate_series(1, 3) i`.execute(t.db.kysely);
  });
  afterAll(async () => t.dispose());

  const datasets = () => t.db.kysely.selectFrom('catalog_datasets').where('workspace', '=', 'jr');

  it('gives the rows a plain query gives, in its order, with dates as Dates', async () => {
    const query = datasets().selectAll().orderBy('name', 'desc');
    const plain = await query.execute();
    const json = await selectAsJson(t.db.kysely, query, ['created_at', 'updated_at', 'dropped_at']);
    expect(json.map((r) => r.name)).toEqual(['d3', 'd2', 'd1']);
    expect(json).toEqual(plain);
    expect(json[0].created_at).toBeInstanceOf(Date);
    expect(json[2].created_at.toISOString()).toBe('2026-01-03T03:04:05.678Z');
    expect(json[1].description).toBe('quote " \\ <tag> and ünïcode');
    expect(json[0].columns).toEqual([{ name: 'x', type: 'BIGINT', nullable: true }]);
  });

  it('gives an empty list when nothing matches', async () => {
    expect(await selectAsJson(t.db.kysely, datasets().select('name').where('name', '=', 'none'))).toEqual([]);
  });

  it('binds the query’s values', async () => {
    const rows = await selectAsJson(t.db.kysely, datasets().select(['name']).where('name', 'in', ['d1', "d2' OR 1=1 --"]));
    expect(rows).toEqual([{ name: 'd1' }]);
  });
});
