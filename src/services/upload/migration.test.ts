/** Migration 0007: writes made before it (one Parquet file each) become writes with one part. */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations, migrate } from '../../core/db/index.ts';
import { createTestDb, type TestDb } from '../../../test/harness.ts';
import { UploadRepo } from './repo.ts';

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb({ migrate: false });
});
afterAll(async () => t?.dispose());

describe('0007_upload_parts', () => {
  it('moves each existing write path and statistics to part 0, and keeps the totals', async () => {
    await migrate(t.db, loadMigrations().filter((m) => m.version < 7));
    await sql`INSERT INTO upload_contracts (contract_id, owner, workspace, collection, dataset, requested_mode, mode, state, format, files, overrides, plan, issues, sample_values, target, schema_fingerprint, expires_at)
      VALUES ('ctr_old', 'alice', 'ws', 'c', 'd', 'auto', 'infer', 'accepted', '{}', '[]', '{}', '[]', '[]', '{}', '[]', 'sha256:x', now() + interval '1 day')`.execute(t.db.kysely);
    await sql`INSERT INTO upload_writes (write_id, contract_id, file_name, format, path, rows, bytes, source_bytes, column_stats)
      VALUES ('wr_old', 'ctr_old', 'a.csv', 'csv', 'lake/_staging/ctr_old/x.parquet', 3, 100, 40, '{"id":{"min":"1","max":"3","null_count":0}}')`.execute(t.db.kysely);

    expect(await migrate(t.db)).toContain(7);

    const repo = new UploadRepo(t.db);
    expect(await repo.writes('ctr_old')).toEqual([expect.objectContaining({ write_id: 'wr_old', file_name: 'a.csv', parts: 1 })]);
    const parts = await repo.writeParts('ctr_old');
    expect(parts).toEqual([
      expect.objectContaining({ write_id: 'wr_old', part: 0, path: 'lake/_staging/ctr_old/x.parquet', file_name: 'a.csv', column_stats: { id: { min: '1', max: '3', null_count: 0 } } }),
    ]);
    expect(Number(parts[0].rows)).toBe(3);
    expect(Number(parts[0].bytes)).toBe(100);

    // A rewrite replaces the migrated write and answers its file for deletion.
    const replaced = await repo.putWrite(
      { write_id: 'wr_new', contract_id: 'ctr_old', file_name: 'a.csv', format: 'csv', rows: 4, bytes: 10, source_bytes: 20, parts: 2 },
      [0, 1].map((part) => ({ write_id: 'wr_new', part, path: `lake/_staging/ctr_old/y-${part}.parquet`, rows: 2, bytes: 5, column_stats: '{}' })),
    );
    expect(replaced).toEqual(['lake/_staging/ctr_old/x.parquet']);
    expect((await repo.writeParts('ctr_old')).map((p) => p.path)).toEqual(['lake/_staging/ctr_old/y-0.parquet', 'lake/_staging/ctr_old/y-1.parquet']);
  });
});
