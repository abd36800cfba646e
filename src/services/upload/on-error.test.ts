/**
 * Values a contract cannot store: the 409 names the record (not only the line) and the exact fix;
 * the contract's on_error policy (fail | null | skip) stores them as NULL or leaves their records
 * out, counts them in the write, the contract and the commit, and keeps a downloadable rejects file.
 */
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';

let t: TestApp;
let alice: TestUser; // owner of sales
let will: TestUser; // writer on sales
let duck: DuckDBInstance;
let db: DuckDBConnection;

beforeAll(async () => {
  t = await createTestApp();
  [alice, will] = await Promise.all(['alice', 'will'].map((id) => signIn(t.app, t.adminToken, id)));
  await createWorkspace(alice, 'sales', { will: 'writer' });
  duck = await DuckDBInstance.create(':memory:');
  db = await duck.connect();
});
afterAll(async () => {
  db?.closeSync();
  duck?.closeSync();
  await t?.close();
});

async function contractOf(user: TestUser, contract: unknown, samples: { name: string; content: string }[]) {
  const body = await multipartBody({ contract, samples });
  const res = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${user.token}` }, payload: body.payload });
  expect(res.statusCode, res.body).toBe(201);
  const c = res.json();
  if (c.state === 'proposed') {
    const accepted = await user.request('PUT', `/upload/v2/contracts/${c.contract_id}/accept`, { schema_fingerprint: c.schema_fingerprint });
    expect(accepted.statusCode, accepted.body).toBe(200);
  }
  return c as { contract_id: string; on_error: string };
}

const write = (user: TestUser, id: string, name: string, content: string, type = 'text/csv') =>
  t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${id}/data`, headers: { authorization: `Bearer ${user.token}`, 'content-type': type, 'x-file-name': name }, payload: content });
const commit = (user: TestUser, id: string, key?: string) =>
  t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${id}/commit`, headers: { authorization: `Bearer ${user.token}`, ...(key ? { 'idempotency-key': key } : {}) } });
const rejects = (user: TestUser, id: string, file?: string) => user.request('GET', `/upload/v2/contracts/${id}/rejects${file ? `?file=${encodeURIComponent(file)}` : ''}`);

const ORDERS = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'qty', type: 'BIGINT' },
  { name: 'day', type: 'DATE' },
];
const declared = (dataset: string, extra: Record<string, unknown> = {}) => ({ destination: `sales.c.${dataset}`, schema: { mode: 'declared', columns: ORDERS }, ...extra });
const SAMPLE = [{ name: 'o.csv', content: 'id,qty,day\n1,2,2024-01-01\n' }];

async function datasetRows(dataset: string) {
  const [latest] = (await t.app.lakeport.catalog.listSnapshots({ workspace: 'sales', collection: 'c', dataset })).sort((a, b) => b.snapshot_id - a.snapshot_id);
  const files = await t.app.lakeport.catalog.snapshotFiles(latest.snapshot_id);
  const paths = await Promise.all(files.map((f) => t.deps.blobs.localPath(f.path)));
  const list = paths.map((p) => `'${p.replace(/'/g, "''")}'`).join(', ');
  return (await db.runAndReadAll(`SELECT id, qty, day::VARCHAR AS day FROM read_parquet([${list}]) ORDER BY id`)).getRowObjectsJson();
}

/** The rows of a CSV text (no quoted newlines in these tests). */
function parseCsv(text: string): string[][] {
  return text
    .trim()
    .split('\n')
    .map((line) => [...line.matchAll(/("(?:[^"]|"")*"|[^,]*)(,|$)/g)].filter((m) => m.index! < line.length || m[1] !== '').map((m) => (m[1].startsWith('"') ? m[1].slice(1, -1).replace(/""/g, '"') : m[1])));
}

describe('a refused value names its record and the fix', () => {
  it('gives the record number apart from the line when a quoted field spans lines before it', async () => {
    const c = await contractOf(alice, declared('recline'), SAMPLE);
    // (first a plain control: the bad value on record 2, line 3)
    const res = await write(alice, c.contract_id, 'o.csv', 'id,qty,day\n1,3,2024-01-01\n2,x7,2024-01-02\n');
    expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', record: 2, line: 3, row: 3, column: 'qty', value: 'x7', type: 'BIGINT' });
    const multi = await contractOf(alice, { destination: 'sales.c.recline2', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'note', type: 'VARCHAR' }, { name: 'qty', type: 'BIGINT' }] } }, [
      { name: 'm.csv', content: 'id,note,qty\n1,a,2\n' },
    ]);
    const bad = await write(alice, multi.contract_id, 'm.csv', 'id,note,qty\n1,"two\nlines\nhere",2\n2,b,3\n3,c,oops\n');
    expect(bad.statusCode, bad.body).toBe(409);
    const body = bad.json();
    expect(body).toMatchObject({ code: 'VALUE_NOT_STORABLE', file: 'm.csv', record: 3, line: 6, column: 'qty', value: 'oops', type: 'BIGINT' });
    expect(body.detail).toContain('record 3 (line 6)');
  });

  it('counts records across chunks: a bad value in a later chunk gives its record in the whole file', async () => {
    t.app.lakeport.uploads.setLimits({ chunkBytes: 200 });
    try {
      const c = await contractOf(alice, { destination: 'sales.c.chunkrec', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'note', type: 'VARCHAR' }, { name: 'qty', type: 'BIGINT' }] } }, [
        { name: 'big.csv', content: 'id,note,qty\n1,a,2\n' },
      ]);
      const lines = ['id,note,qty'];
      for (let i = 1; i <= 300; i++) lines.push(i === 10 ? `${i},"multi\nline",${i}` : i === 250 ? `${i},n,bad${i}` : `${i},n${i},${i}`);
      const res = await write(alice, c.contract_id, 'big.csv', `${lines.join('\n')}\n`);
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', record: 250, line: 252, column: 'qty', value: 'bad250' });
    } finally {
      t.app.lakeport.uploads.setLimits({ chunkBytes: 64 * 1024 * 1024 });
    }
  });

  it('in infer and declared mode the fix retypes the column (CLI flag and PATCH body) or sets on_error', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.fixinfer', schema: { mode: 'infer' } }, [{ name: 's.csv', content: 'id,qty\n1,2\n2,3\n' }]);
    const res = await write(alice, c.contract_id, 's.csv', 'id,qty\n1,2\n2,abc\n');
    expect(res.statusCode, res.body).toBe(409);
    const body = res.json();
    expect(body.fix).toEqual({
      retype: { type: 'VARCHAR', cli: '--column qty=VARCHAR', patch: { columns: { qty: { type: 'VARCHAR' } } } },
      on_error: { cli: ['--on-error null', '--on-error skip'], patch: [{ columns: {}, on_error: 'null' }, { columns: {}, on_error: 'skip' }] },
    });
    expect(body.detail).toContain('--column qty=VARCHAR');
    expect(body.detail).toContain('{"columns":{"qty":{"type":"VARCHAR"}}}');
    expect(body.detail).toContain('on_error');
    // A number in an integer column fits a DOUBLE.
    const d = await contractOf(alice, declared('fixdeclared'), SAMPLE);
    const num = await write(alice, d.contract_id, 'o.csv', 'id,qty,day\n1,99999999999999999999999,2024-01-01\n');
    expect(num.json().fix.retype).toEqual({ type: 'DOUBLE', cli: '--column qty=DOUBLE', patch: { columns: { qty: { type: 'DOUBLE' } } } });
    // And the PATCH it names works: the same file is then stored.
    const patched = await alice.request('PATCH', `/upload/v2/contracts/${d.contract_id}`, num.json().fix.retype.patch);
    expect(patched.statusCode, patched.body).toBe(200);
    expect((await write(alice, d.contract_id, 'o.csv', 'id,qty,day\n1,99999999999999999999999,2024-01-01\n')).statusCode).toBe(200);
  });

  it('in dataset mode the fix is on_error or changing the dataset, not a retype', async () => {
    await t.app.lakeport.catalog.createDataset({ workspace: 'sales', collection: 'c', dataset: 'fixds' }, { columns: ORDERS.map((c) => ({ nullable: true, ...c })) }, 'alice');
    const c = await contractOf(alice, { destination: 'sales.c.fixds', schema: { mode: 'dataset' } }, SAMPLE);
    const res = await write(alice, c.contract_id, 'o.csv', 'id,qty,day\n1,many,2024-01-01\n');
    expect(res.statusCode, res.body).toBe(409);
    const body = res.json();
    expect(body.fix.retype).toBeUndefined();
    expect(body.fix.on_error.patch).toEqual([{ columns: {}, on_error: 'null' }, { columns: {}, on_error: 'skip' }]);
    expect(body.fix.dataset).toMatch(/dataset/);
    expect(body.detail).toMatch(/on_error/);
    expect(body.detail).not.toContain('--column');
  });
});

describe('on_error null and skip', () => {
  const DIRTY = 'id,qty,day\n1,10,2024-01-01\n2,ten,2024-01-02\n3,30,someday\n4,40,2024-01-04\n,50,2024-01-05\n';

  it('null: a value that cannot be stored becomes NULL; a NULL id (NOT NULL) skips its record; counted and downloadable', async () => {
    const c = await contractOf(alice, declared('onnull', { on_error: 'null' }), SAMPLE);
    expect(c.on_error).toBe('null');
    const w = await write(alice, c.contract_id, 'o.csv', DIRTY);
    expect(w.statusCode, w.body).toBe(200);
    expect(w.json().written[0]).toMatchObject({ rows: 4, rows_rejected: 1, values_nulled: 2 });
    expect(w.json().totals).toMatchObject({ rows: 4, rows_rejected: 1, values_nulled: 2 });
    const view = (await alice.request('GET', `/upload/v2/contracts/${c.contract_id}`)).json();
    expect(view).toMatchObject({ on_error: 'null', written: [expect.objectContaining({ rows_rejected: 1, values_nulled: 2 })] });

    const cm = await commit(alice, c.contract_id, 'k-null');
    expect(cm.statusCode, cm.body).toBe(200);
    expect(cm.json()).toMatchObject({ rows_written: 4, rows_rejected: 1, values_nulled: 2, rejects_url: `/upload/v2/contracts/${c.contract_id}/rejects` });
    // A replay (same key, or none) answers the same counts.
    expect((await commit(alice, c.contract_id, 'k-null')).json()).toEqual(cm.json());
    expect((await commit(alice, c.contract_id)).json()).toMatchObject({ rows_rejected: 1, values_nulled: 2, rejects_url: cm.json().rejects_url });

    expect(await datasetRows('onnull')).toEqual([
      { id: '1', qty: '10', day: '2024-01-01' },
      { id: '2', qty: null, day: '2024-01-02' },
      { id: '3', qty: '30', day: null },
      { id: '4', qty: '40', day: '2024-01-04' },
    ]);

    const r = await rejects(alice, c.contract_id);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.headers['content-type']).toMatch(/text\/csv/);
    const [header, ...rows] = parseCsv(r.body);
    expect(header).toEqual(['file', 'record', 'line', 'column', 'value', 'reason', 'action']);
    expect(rows.map((x) => x.slice(0, 5).concat(x[6]))).toEqual([
      ['o.csv', '2', '3', 'qty', 'ten', 'nulled'],
      ['o.csv', '3', '4', 'day', 'someday', 'nulled'],
      ['o.csv', '5', '6', 'id', '', 'skipped'],
    ]);
    expect(rows[2][5]).toMatch(/NOT NULL/);
  });

  it('skip: the record is left out; counted; a later PATCH can switch the policy', async () => {
    const c = await contractOf(alice, declared('onskip'), SAMPLE);
    expect(c.on_error).toBe('fail');
    expect((await write(alice, c.contract_id, 'o.csv', DIRTY)).statusCode).toBe(409);
    const patched = await alice.request('PATCH', `/upload/v2/contracts/${c.contract_id}`, { columns: {}, on_error: 'skip' });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().on_error).toBe('skip');
    const w = await write(alice, c.contract_id, 'o.csv', DIRTY);
    expect(w.statusCode, w.body).toBe(200);
    expect(w.json().written[0]).toMatchObject({ rows: 2, rows_rejected: 3, values_nulled: 0 });
    const cm = await commit(alice, c.contract_id);
    expect(cm.json()).toMatchObject({ rows_written: 2, rows_rejected: 3, values_nulled: 0 });
    expect(await datasetRows('onskip')).toEqual([
      { id: '1', qty: '10', day: '2024-01-01' },
      { id: '4', qty: '40', day: '2024-01-04' },
    ]);
    const rows = parseCsv((await rejects(alice, c.contract_id, 'o.csv')).body).slice(1);
    expect(rows.map((x) => [x[1], x[3], x[6]])).toEqual([
      ['2', 'qty', 'skipped'],
      ['3', 'day', 'skipped'],
      ['5', 'id', 'skipped'],
    ]);
  });

  it('skip across chunks: global record and line numbers, rows in order', async () => {
    t.app.lakeport.uploads.setLimits({ chunkBytes: 200 });
    try {
      const c = await contractOf(alice, { destination: 'sales.c.skipchunks', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'note', type: 'VARCHAR' }, { name: 'qty', type: 'BIGINT' }] }, on_error: 'skip' }, [
        { name: 'big.csv', content: 'id,note,qty\n1,a,2\n' },
      ]);
      const lines = ['id,note,qty'];
      const bad = new Set([7, 120, 250, 299]);
      for (let i = 1; i <= 300; i++) lines.push(i === 10 ? `${i},"multi\nline",${i}` : bad.has(i) ? `${i},n,bad${i}` : `${i},n${i},${i}`);
      const w = await write(alice, c.contract_id, 'big.csv', `${lines.join('\n')}\n`);
      expect(w.statusCode, w.body).toBe(200);
      expect(w.json().written[0]).toMatchObject({ rows: 296, rows_rejected: 4 });
      expect(w.json().written[0].parts).toBeGreaterThan(3);
      const rows = parseCsv((await rejects(alice, c.contract_id)).body).slice(1);
      expect(rows.map((x) => [Number(x[1]), Number(x[2]), x[4]])).toEqual([
        [7, 8, 'bad7'],
        [120, 122, 'bad120'],
        [250, 252, 'bad250'],
        [299, 301, 'bad299'],
      ]);
      // Capped, the list keeps the file's first values whichever chunk finished first.
      t.app.lakeport.uploads.setLimits({ maxRejects: 2 });
      const capped = await write(alice, c.contract_id, 'big.csv', `${lines.join('\n')}\n`);
      expect(capped.json().written[0]).toMatchObject({ rows: 296, rows_rejected: 4 });
      expect(parseCsv((await rejects(alice, c.contract_id)).body).slice(1).map((x) => Number(x[1]))).toEqual([7, 120]);
    } finally {
      t.app.lakeport.uploads.setLimits({ chunkBytes: 64 * 1024 * 1024, maxRejects: 100_000 });
    }
  });

  it('a large single-chunk file (all threads) keeps record numbers and row order', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.skipbig', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'qty', type: 'BIGINT' }] }, on_error: 'skip' }, [
      { name: 'big.csv', content: 'id,qty\n1,2\n' },
    ]);
    const bad = [5, 77_777, 150_000, 199_999];
    const lines = ['id,qty'];
    for (let i = 1; i <= 200_000; i++) lines.push(bad.includes(i) ? `${i},x${i}` : `${i},${i}`);
    const w = await write(alice, c.contract_id, 'big.csv', `${lines.join('\n')}\n`);
    expect(w.statusCode, w.body).toBe(200);
    expect(w.json().written[0]).toMatchObject({ rows: 199_996, rows_rejected: 4, parts: 1 });
    const rows = parseCsv((await rejects(alice, c.contract_id)).body).slice(1);
    expect(rows.map((x) => [Number(x[1]), Number(x[2]), x[4]])).toEqual(bad.map((b) => [b, b + 1, `x${b}`]));
    const keys: string[] = [];
    for await (const blob of t.deps.blobs.list(`lake/_staging/${c.contract_id}/`)) if (blob.key.endsWith('.parquet')) keys.push(blob.key);
    expect(keys).toHaveLength(1);
    const p = (await t.deps.blobs.localPath(keys[0])).replace(/'/g, "''");
    const out = (await db.runAndReadAll(`SELECT count(*) FILTER (WHERE id <= lag) AS disorder FROM (SELECT id, lag(id) OVER () AS lag FROM read_parquet('${p}'))`)).getRowObjectsJson();
    expect(out).toEqual([{ disorder: '0' }]);
  });

  it("null honours the dialect's date format and the IPv4 check", async () => {
    const c = await contractOf(
      alice,
      { destination: 'sales.c.nullfmt', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'day', type: 'DATE' }, { name: 'ip', type: 'IPV4' }] }, format: { date_format: '%d/%m/%Y' }, on_error: 'null' },
      [{ name: 'f.csv', content: 'id,day,ip\n1,31/12/2024,10.0.0.1\n' }],
    );
    const w = await write(alice, c.contract_id, 'f.csv', 'id,day,ip\n1,31/12/2024,10.0.0.1\n2,2024-12-31,300.1.1.1\n');
    expect(w.statusCode, w.body).toBe(200);
    expect(w.json().written[0]).toMatchObject({ rows: 2, rows_rejected: 0, values_nulled: 2 });
    const rows = parseCsv((await rejects(alice, c.contract_id)).body).slice(1);
    expect(rows.map((x) => [x[1], x[3], x[4], x[5]])).toEqual([
      ['2', 'day', '2024-12-31', '"2024-12-31" is not a valid DATE'],
      ['2', 'ip', '300.1.1.1', '"300.1.1.1" is not an IPv4 address'],
    ]);
  });

  it('null never rounds a DECIMAL: a value with more decimals than the column keeps becomes NULL, and the rejects file says why', async () => {
    const c = await contractOf(
      alice,
      { destination: 'sales.c.nulldec', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'price', type: 'DECIMAL(18,2)' }] }, on_error: 'null' },
      [{ name: 'p.csv', content: 'id,price\n1,12.50\n' }],
    );
    const w = await write(alice, c.contract_id, 'p.csv', 'id,price\n1,12.50\n2,12.505\n3,x\n4,7.100\n');
    expect(w.statusCode, w.body).toBe(200);
    expect(w.json().written[0]).toMatchObject({ rows: 4, rows_rejected: 0, values_nulled: 2 });
    const rows = parseCsv((await rejects(alice, c.contract_id)).body).slice(1);
    expect(rows.map((x) => [x[1], x[3], x[4], x[5]])).toEqual([
      ['2', 'price', '12.505', '"12.505" has more than 2 decimals'],
      ['3', 'price', 'x', '"x" is not a valid DECIMAL(18,2)'],
    ]);
  });

  it('keeps the first maxRejects values (the counts stay exact); a rewrite replaces the rejects file; DELETE after commit removes it', async () => {
    t.app.lakeport.uploads.setLimits({ maxRejects: 2 });
    try {
      const c = await contractOf(alice, declared('capped', { on_error: 'null' }), SAMPLE);
      const body = `id,qty,day\n${Array.from({ length: 10 }, (_, i) => `${i + 1},q${i + 1},2024-01-01`).join('\n')}\n`;
      const first = await write(alice, c.contract_id, 'o.csv', body);
      expect(first.json().written[0]).toMatchObject({ rows: 10, values_nulled: 10 });
      const listed = parseCsv((await rejects(alice, c.contract_id)).body).slice(1);
      expect(listed.map((x) => x[4])).toEqual(['q1', 'q2']);
      const files = async () => {
        const keys: string[] = [];
        for await (const blob of t.deps.blobs.list(`lake/_staging/${c.contract_id}/`)) if (blob.key.endsWith('-rejects.csv')) keys.push(blob.key);
        return keys;
      };
      const [before] = await files();
      expect((await write(alice, c.contract_id, 'o.csv', 'id,qty,day\n1,zz,2024-01-01\n')).json().written[0]).toMatchObject({ values_nulled: 1 });
      const after = await files();
      expect(after).toHaveLength(1);
      expect(after[0]).not.toBe(before);
      expect(parseCsv((await rejects(alice, c.contract_id)).body).slice(1).map((x) => x[4])).toEqual(['zz']);
      expect((await commit(alice, c.contract_id)).statusCode).toBe(200);
      expect(await files()).toHaveLength(1); // kept after the commit
      expect((await alice.request('DELETE', `/upload/v2/contracts/${c.contract_id}`)).statusCode).toBe(204);
      expect(await files()).toEqual([]);
      expect(await datasetRows('capped')).toEqual([{ id: '1', qty: null, day: '2024-01-01' }]); // the dataset's files stay
    } finally {
      t.app.lakeport.uploads.setLimits({ maxRejects: 100_000 });
    }
  });

  it('JSONL under skip', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.skipjson', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'n', type: 'INTEGER' }] }, on_error: 'skip' }, [
      { name: 'x.jsonl', content: '{"id":1,"n":1}\n' },
    ]);
    const w = await write(alice, c.contract_id, 'x.jsonl', '{"id":1,"n":1}\n{"id":2,"n":"two"}\n{"id":3,"n":3}\n', 'application/x-ndjson');
    expect(w.statusCode, w.body).toBe(200);
    expect(w.json().written[0]).toMatchObject({ rows: 2, rows_rejected: 1 });
    const rows = parseCsv((await rejects(alice, c.contract_id)).body).slice(1);
    expect(rows.map((x) => [x[1], x[2], x[3], x[4]])).toEqual([['2', '2', 'n', 'two']]);
  });

  it('the rejects are the contract owner’s: another identity gets 404, an unknown file 422', async () => {
    const c = await contractOf(alice, declared('rejauthz', { on_error: 'skip' }), SAMPLE);
    expect((await write(alice, c.contract_id, 'o.csv', DIRTY)).statusCode).toBe(200);
    const other = await rejects(will, c.contract_id);
    expect(other.statusCode).toBe(404);
    expect(other.json().code).toBe('CONTRACT_NOT_FOUND');
    expect((await rejects(alice, c.contract_id, 'nope.csv')).statusCode).toBe(422);
  });

  it('fail keeps refusing (the default); an unknown policy is a 422', async () => {
    const body = await multipartBody({ contract: declared('badpolicy', { on_error: 'maybe' }), samples: SAMPLE });
    const res = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload });
    expect(res.statusCode).toBe(422);
  });

  it('a clean file under skip has no rejects: counts are 0, no rejects_url, an empty rejects file', async () => {
    const c = await contractOf(alice, declared('clean', { on_error: 'skip' }), SAMPLE);
    const w = await write(alice, c.contract_id, 'o.csv', 'id,qty,day\n1,2,2024-01-01\n');
    expect(w.json().written[0]).toMatchObject({ rows: 1, rows_rejected: 0, values_nulled: 0 });
    const cm = await commit(alice, c.contract_id);
    expect(cm.json()).toMatchObject({ rows_rejected: 0, values_nulled: 0 });
    expect(cm.json().rejects_url).toBeUndefined();
    expect(parseCsv((await rejects(alice, c.contract_id)).body)).toHaveLength(1);
  });
});
