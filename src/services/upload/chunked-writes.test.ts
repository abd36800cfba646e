/**
 * Writes converted in chunks while they arrive: a write becomes several Parquet parts (here with a
 * chunk size of a few hundred bytes), and every guarantee of a write holds for all of its parts —
 * the rows in the file's order, all or nothing, the true line of a refused value, one snapshot.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBlobStore } from '../../core/storage/index.ts';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';

let t: TestApp;
let alice: TestUser;
let duck: DuckDBInstance;
let db: DuckDBConnection;
const CHUNK = 256;

beforeAll(async () => {
  t = await createTestApp();
  t.app.lakeport.uploads.setLimits({ chunkBytes: CHUNK });
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
  duck = await DuckDBInstance.create(':memory:');
  db = await duck.connect();
});
afterAll(async () => {
  db?.closeSync();
  duck?.closeSync();
  await t?.close();
});

const COLUMNS = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'note', type: 'VARCHAR' },
  { name: 'amount', type: 'DOUBLE' },
];

async function contractOf(dataset: string, files: string[]) {
  const body = await multipartBody({
    contract: { destination: `sales.c.${dataset}`, schema: { mode: 'declared', columns: COLUMNS } },
    samples: files.map((name) => ({ name, content: 'id,note,amount\n1,a,1.5\n' })),
  });
  const res = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { contract_id: string };
}

const write = (id: string, name: string, content: string | Buffer) =>
  t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${id}/data`, headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'text/csv', 'x-file-name': name }, payload: content });
const commit = (id: string) => t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${id}/commit`, headers: { authorization: `Bearer ${alice.token}` } });
const get = (id: string) => alice.request('GET', `/upload/v2/contracts/${id}`);

async function staged(contractId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const blob of t.deps.blobs.list(`lake/_staging/${contractId}/`)) keys.push(blob.key);
  return keys.sort();
}

/** The rows of blobs read one after the other, in the given order (no sorting). */
async function rowsInOrder(keys: string[]) {
  const rows: unknown[] = [];
  for (const key of keys) {
    const p = (await t.deps.blobs.localPath(key)).replace(/'/g, "''");
    rows.push(...(await db.runAndReadAll(`SELECT id, note, amount FROM read_parquet('${p}')`)).getRowObjectsJson());
  }
  return rows;
}

/** Files of uploads in flight: chunks in the scratch directory, parts in the store's temp directory. */
function leftovers(): string[] {
  const list = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).map(String) : []);
  return [...list(t.deps.scratchDir).filter((f) => f.startsWith('upload-')), ...list(path.join((t.deps.blobs as LocalBlobStore).root, '.tmp'))];
}

/** A CSV whose ids run 1..count, with quoted newlines and CRLF line ends, and a byte order mark. */
function file(count: number, edit?: (lines: string[]) => void) {
  const lines = ['id,note,amount'];
  for (let i = 1; i <= count; i++) lines.push(i % 5 === 0 ? `${i},"line one\r\nline two, ""quoted""",${i}.25` : `${i},n${i},${i}.25`);
  edit?.(lines);
  return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${lines.join('\r\n')}\r\n`)]);
}

describe('a write converted in chunks', () => {
  it('becomes several parts, staged and committed as one snapshot, with the rows in the file order', async () => {
    const c = await contractOf('chunked', ['big.csv']);
    const content = file(200);
    const res = await write(c.contract_id, 'big.csv', content);
    expect(res.statusCode, res.body).toBe(200);
    const written = res.json().written[0];
    expect(written).toMatchObject({ file: 'big.csv', rows: 200, source_bytes: content.length });
    expect(written.parts).toBeGreaterThan(5);
    const keys = await staged(c.contract_id);
    expect(keys).toHaveLength(written.parts);
    expect((await get(c.contract_id)).json()).toMatchObject({ written: [{ file: 'big.csv', rows: 200, parts: written.parts }], totals: { files: 1, rows: 200 } });

    const cm = await commit(c.contract_id);
    expect(cm.statusCode, cm.body).toBe(200);
    expect(cm.json()).toMatchObject({ rows_written: 200, snapshot: { total_records: 200 } });
    const files = await t.app.lakeport.catalog.snapshotFiles(cm.json().snapshot.snapshot_id);
    expect(files.map((f) => f.path)).toEqual(keys);
    expect(files.reduce((n, f) => n + Number(f.row_count), 0)).toBe(200);
    // The snapshot's files, in the catalog's order, hold the rows in the file's order.
    const rows = (await rowsInOrder(files.map((f) => f.path))) as { id: string; note: string }[];
    expect(rows.map((r) => Number(r.id))).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(rows[4].note).toBe('line one\r\nline two, "quoted"');
    // Each part has its own statistics.
    expect(files[0].column_stats).toMatchObject({ id: { min: '1' } });
    expect(files.at(-1)!.column_stats).toMatchObject({ id: { max: '200' } });
  });

  it('refuses a bad value in a later chunk naming its line in the file; nothing of it is staged and earlier writes stay', async () => {
    const c = await contractOf('chunked_bad', ['good.csv', 'bad.csv']);
    const good = file(30);
    expect((await write(c.contract_id, 'good.csv', good)).statusCode).toBe(200);
    const before = await staged(c.contract_id);
    expect(before.length).toBeGreaterThan(1);

    const bad = file(300, (lines) => (lines[250] = '250,n250,12.x5'));
    const line = bad.toString().split('\n').findIndex((l) => l.startsWith('250,n250,12.x5')) + 1;
    expect(line).toBe(251 + 49); // record 251 of the file, after 49 quoted line breaks
    const res = await write(c.contract_id, 'bad.csv', bad);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', file: 'bad.csv', column: 'amount', row: line, line, record: 250, value: '12.x5', type: 'DOUBLE' });
    expect(res.json().detail).toContain(`record 250 (line ${line})`);

    expect(await staged(c.contract_id)).toEqual(before);
    // Neither the chunks nor the parts converted before the bad one are left anywhere.
    expect(leftovers()).toEqual([]);
    expect((await get(c.contract_id)).json().written).toEqual([expect.objectContaining({ file: 'good.csv', rows: 30 })]);
    const cm = await commit(c.contract_id);
    expect(cm.json().rows_written).toBe(30);
  });

  it('names the line of a row with too few columns in a later chunk', async () => {
    const c = await contractOf('chunked_shape', ['s.csv']);
    const bad = file(120, (lines) => (lines[100] = '100,short'));
    const line = bad.toString().split('\n').findIndex((l) => l.startsWith('100,short')) + 1;
    const res = await write(c.contract_id, 's.csv', bad);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ code: 'FILE_DIFFERS_FROM_SAMPLE', file: 's.csv', line });
    expect(await staged(c.contract_id)).toEqual([]);
  });

  it('a rewrite of the file replaces every part of the earlier write; abandoning deletes them all', async () => {
    const c = await contractOf('chunked_rewrite', ['r.csv']);
    expect((await write(c.contract_id, 'r.csv', file(100))).statusCode).toBe(200);
    const first = await staged(c.contract_id);
    const again = await write(c.contract_id, 'r.csv', file(60));
    expect(again.statusCode, again.body).toBe(200);
    const second = await staged(c.contract_id);
    expect(second.length).toBe(again.json().written[0].parts);
    expect(second.some((k) => first.includes(k))).toBe(false);
    expect((await get(c.contract_id)).json().totals).toMatchObject({ files: 1, rows: 60 });
    const res = await alice.request('DELETE', `/upload/v2/contracts/${c.contract_id}`);
    expect(res.statusCode).toBe(204);
    expect(await staged(c.contract_id)).toEqual([]);
  });

  it('a file over the size limit is 413 FILE_TOO_LARGE, with nothing staged', async () => {
    const c = await contractOf('chunked_large', ['l.csv']);
    t.app.lakeport.uploads.setLimits({ fileMaxBytes: 2000 });
    try {
      const res = await write(c.contract_id, 'l.csv', file(200));
      expect(res.statusCode, res.body).toBe(413);
      expect(res.json().code).toBe('FILE_TOO_LARGE');
    } finally {
      t.app.lakeport.uploads.setLimits({ fileMaxBytes: 50 * 1024 ** 3 });
    }
    expect(await staged(c.contract_id)).toEqual([]);
    expect((await get(c.contract_id)).json().written).toEqual([]);
  });

  it('a file smaller than a chunk is one part', async () => {
    const c = await contractOf('chunked_small', ['small.csv']);
    const res = await write(c.contract_id, 'small.csv', 'id,note,amount\n1,a,1.5\n2,b,2.5\n');
    expect(res.json().written[0]).toMatchObject({ rows: 2, parts: 1 });
  });
});
