/**
 * Messy real-world files through the whole upload protocol (negotiate → accept → write), checked in
 * the Parquet the service stages: quoting, BOMs, delimiters, line endings, NULLs, zones, decimals,
 * JSONL gaps and Parquet with nested types. Fixtures are generated at test time (Parquet by DuckDB).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, tempDir, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';

let t: TestApp;
let alice: TestUser;
let duck: DuckDBInstance;
let db: DuckDBConnection;
const fixtures = tempDir('lakeport-messy-');

beforeAll(async () => {
  t = await createTestApp();
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
  duck = await DuckDBInstance.create(':memory:');
  db = await duck.connect();
  await db.run("SET TimeZone='UTC'");
});
afterAll(async () => {
  db?.closeSync();
  duck?.closeSync();
  await t?.close();
  fixtures.remove();
});

// ── helpers ───────────────────────────────────────────────────────────────────

type Sample = { name: string; content: string | Buffer };
type PlanEntry = { column: string; action: string; source_type: string | null; target_type: string | null };

async function negotiate(contract: unknown, samples: Sample[]) {
  const body = await multipartBody({ contract, samples });
  const res = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

async function accept(c: { contract_id: string; schema_fingerprint: string }) {
  const res = await alice.request('PUT', `/upload/v2/contracts/${c.contract_id}/accept`, { schema_fingerprint: c.schema_fingerprint });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function write(id: string, name: string, content: string | Buffer, type = 'text/csv') {
  return t.app.inject({
    method: 'POST',
    url: `/upload/v2/contracts/${id}/data`,
    headers: { authorization: `Bearer ${alice.token}`, 'x-file-name': name, ...(type ? { 'content-type': type } : {}) },
    payload: content,
  });
}

/** Negotiates with the whole file as its sample, accepts, writes it, and returns the contract and the write. */
async function upload(destination: string, name: string, content: string | Buffer, contract: Record<string, unknown> = {}, type = 'text/csv') {
  const c = await negotiate({ destination: `sales.messy.${destination}`, schema: { mode: 'infer' }, ...contract }, [{ name, content }]);
  if (c.state === 'proposed') await accept(c);
  const res = await write(c.contract_id, name, content, type);
  expect(res.statusCode, res.body).toBe(200);
  return { contract: c, written: res.json() };
}

const targets = (c: { plan: PlanEntry[] }) => Object.fromEntries(c.plan.map((p) => [p.column, p.target_type]));

async function stagedPaths(contractId: string): Promise<string[]> {
  const paths: string[] = [];
  for await (const blob of t.deps.blobs.list(`lake/_staging/${contractId}/`)) paths.push(await t.deps.blobs.localPath(blob.key));
  return paths;
}

const parquetList = (paths: string[]) => `read_parquet([${paths.map((p) => `'${p.replace(/'/g, "''")}'`).join(', ')}])`;

/** Rows of the Parquet the contract staged. */
async function staged(contractId: string, select = '*', order = 'id') {
  const paths = await stagedPaths(contractId);
  expect(paths.length).toBeGreaterThan(0);
  return (await db.runAndReadAll(`SELECT ${select} FROM ${parquetList(paths)} ORDER BY ${order}`)).getRowObjectsJson();
}

/** Column name → type of the Parquet the contract staged. */
async function stagedTypes(contractId: string) {
  const rows = (await db.runAndReadAll(`DESCRIBE SELECT * FROM ${parquetList(await stagedPaths(contractId))}`)).getRowObjectsJson() as { column_name: string; column_type: string }[];
  return Object.fromEntries(rows.map((r) => [r.column_name, r.column_type]));
}

/** A real Parquet file written by DuckDB. */
async function parquetFile(select: string): Promise<Buffer> {
  const file = path.join(fixtures.dir, `${crypto.randomUUID()}.parquet`);
  await db.run(`COPY (${select}) TO '${file}' (FORMAT parquet)`);
  return fs.readFileSync(file);
}

/** The footer exactly as a client takes it: the last 8 + footer_length bytes (footer, its length, PAR1). */
function footerOf(file: Buffer): Buffer {
  const length = file.readUInt32LE(file.length - 8);
  expect(file.subarray(-4).toString('latin1')).toBe('PAR1');
  return file.subarray(file.length - 8 - length);
}

// ── CSV ───────────────────────────────────────────────────────────────────────

describe('CSV', () => {
  it('quoted fields with newlines, delimiters and doubled quotes inside', async () => {
    const file = 'id,note,n\n1,"first line\nsecond line",10\n2,"a ""quoted"" word, with a comma",20\n3,plain,30\n4,"trailing\n",40\n';
    const { contract, written } = await upload('quoted', 'quoted.csv', file);
    expect(targets(contract)).toEqual({ id: 'BIGINT', note: 'VARCHAR', n: 'BIGINT' });
    expect(written.written[0].rows).toBe(4);
    expect(await staged(contract.contract_id)).toEqual([
      { id: '1', note: 'first line\nsecond line', n: '10' },
      { id: '2', note: 'a "quoted" word, with a comma', n: '20' },
      { id: '3', note: 'plain', n: '30' },
      { id: '4', note: 'trailing\n', n: '40' },
    ]);
  });

  it('a UTF-8 BOM is not part of the first column name (infer and declared)', async () => {
    const file = '\uFEFFid,name\n1,Zoë\n2,Łukasz\n';
    const { contract } = await upload('bom', 'bom.csv', file);
    expect(contract.plan.map((p: PlanEntry) => p.column)).toEqual(['id', 'name']);
    expect(targets(contract)).toEqual({ id: 'BIGINT', name: 'VARCHAR' });
    expect(await staged(contract.contract_id)).toEqual([
      { id: '1', name: 'Zoë' },
      { id: '2', name: 'Łukasz' },
    ]);

    const declared = await negotiate(
      { destination: 'sales.messy.bom_declared', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT', nullable: false }, { name: 'name', type: 'VARCHAR' }] } },
      [{ name: 'bom.csv', content: file }],
    );
    expect(declared.plan.map((p: PlanEntry) => [p.column, p.action])).toEqual([
      ['id', 'keep'],
      ['name', 'keep'],
    ]);
    expect(declared.issues).toEqual([]);
    const res = await write(declared.contract_id, 'bom.csv', file);
    expect(res.statusCode, res.body).toBe(200);
    expect(await staged(declared.contract_id, 'id')).toEqual([{ id: '1' }, { id: '2' }]);
  });

  it('semicolon delimiters (format.delimiter ";")', async () => {
    const file = 'id;name;amount;city\n1;Ada;10.5;"Paris; France"\n2;Bob;7;Lyon\n';
    const { contract } = await upload('semicolon', 'semi.csv', file, { format: { delimiter: ';' } });
    expect(targets(contract)).toEqual({ id: 'BIGINT', name: 'VARCHAR', amount: 'DECIMAL(18,1)', city: 'VARCHAR' });
    expect(await staged(contract.contract_id)).toEqual([
      { id: '1', name: 'Ada', amount: '10.5', city: 'Paris; France' },
      { id: '2', name: 'Bob', amount: '7.0', city: 'Lyon' },
    ]);
  });

  it('tab-separated values (format.delimiter "\\t", a .tsv file)', async () => {
    const file = 'id\tname\tnote\n1\tLovelace, Ada\thas, commas\n2\tBob\t"quoted\ttab"\n';
    const { contract } = await upload('tsv', 'data.tsv', file, { format: { delimiter: '\t' } });
    expect(contract.files).toEqual([{ name: 'data.tsv', format: 'csv', encoding: 'utf-8', csv: expect.objectContaining({ delimiter: '\t', header: true }) }]);
    expect(targets(contract)).toEqual({ id: 'BIGINT', name: 'VARCHAR', note: 'VARCHAR' });
    expect(await staged(contract.contract_id)).toEqual([
      { id: '1', name: 'Lovelace, Ada', note: 'has, commas' },
      { id: '2', name: 'Bob', note: 'quoted\ttab' },
    ]);
  });

  it('pipe-delimited values (format.delimiter "|")', async () => {
    const file = 'id|name|amount\n1|Ada, L.|1.25\n2|Bob|2.5\n';
    const { contract } = await upload('pipe', 'data.psv', file, { format: { delimiter: '|', type: 'csv' } }, 'text/plain');
    expect(targets(contract)).toEqual({ id: 'BIGINT', name: 'VARCHAR', amount: 'DOUBLE' });
    expect(await staged(contract.contract_id)).toEqual([
      { id: '1', name: 'Ada, L.', amount: 1.25 },
      { id: '2', name: 'Bob', amount: 2.5 },
    ]);
  });

  it('CRLF line endings leave no carriage return in values or types', async () => {
    const file = 'id,name,amount,day\r\n1,Ada,1.5,2024-01-02\r\n2,"Bob\r\nJr",2.5,2024-01-03\r\n3,Cy,,2024-01-04\r\n';
    const { contract } = await upload('crlf', 'crlf.csv', file, {}, 'text/csv; charset=utf-8');
    expect(targets(contract)).toEqual({ id: 'BIGINT', name: 'VARCHAR', amount: 'DECIMAL(18,1)', day: 'DATE' });
    expect(await staged(contract.contract_id, 'id, name, amount, day::VARCHAR AS day')).toEqual([
      { id: '1', name: 'Ada', amount: '1.5', day: '2024-01-02' },
      { id: '2', name: 'Bob\r\nJr', amount: '2.5', day: '2024-01-03' },
      { id: '3', name: 'Cy', amount: null, day: '2024-01-04' },
    ]);
  });

  it('a bad value in a CRLF file names its line', async () => {
    const c = await negotiate({ destination: 'sales.messy.crlf_bad', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'amount', type: 'DOUBLE' }] } }, [
      { name: 'crlf.csv', content: 'id,amount\r\n1,1.5\r\n' },
    ]);
    const res = await write(c.contract_id, 'crlf.csv', 'id,amount\r\n1,1.5\r\n2,2.5\r\n3,abc\r\n4,4.5\r\n');
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'amount', row: 4, value: 'abc' });
  });

  it('the line named for a bad value is the line in the file, even after quoted newlines', async () => {
    // Record 1 spans lines 2-4; the bad value is on line 8 of the file (record 5, the 6th record with the header).
    const file = 'id,note,amount\n1,"a\nb\nc",1.5\n2,x,2.5\n3,y,3.5\n4,z,4.5\n5,w,oops\n6,v,6.5\n';
    expect(file.split('\n')[7]).toBe('5,w,oops');
    const c = await negotiate(
      { destination: 'sales.messy.quoted_bad', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'note', type: 'VARCHAR' }, { name: 'amount', type: 'DOUBLE' }] } },
      [{ name: 'q.csv', content: file }],
    );
    const res = await write(c.contract_id, 'q.csv', file);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'amount', value: 'oops', row: 8 });
  });

  it('an empty quoted string stays an empty string; an empty unquoted field is NULL', async () => {
    const file = 'id,note,n\n1,"",1\n2,,2\n3,x,\n4," ",4\n';
    const { contract } = await upload('nulls', 'nulls.csv', file);
    expect(targets(contract)).toEqual({ id: 'BIGINT', note: 'VARCHAR', n: 'BIGINT' });
    expect(await staged(contract.contract_id, 'id, note, note IS NULL AS note_null, n')).toEqual([
      { id: '1', note: '', note_null: false, n: '1' },
      { id: '2', note: null, note_null: true, n: '2' },
      { id: '3', note: 'x', note_null: false, n: null },
      { id: '4', note: ' ', note_null: false, n: '4' },
    ]);
  });

  it('a declared null_string reads as NULL, and a quoted one stays a string', async () => {
    const file = 'id,note\n1,NA\n2,"NA"\n3,ok\n';
    const { contract } = await upload('nullstr', 'nullstr.csv', file, { format: { null_string: 'NA' } });
    expect(await staged(contract.contract_id, 'id, note')).toEqual([
      { id: '1', note: null },
      { id: '2', note: 'NA' },
      { id: '3', note: 'ok' },
    ]);
  });

  it('timestamps with zones are TIMESTAMP WITH TIME ZONE and keep their instant; without a zone they are TIMESTAMP', async () => {
    const file = [
      'id,at,local',
      '1,2024-03-01 10:00:00+02,2024-03-01 10:00:00',
      '2,2024-03-01 10:00:00+00,2024-03-01 11:00:00',
      '3,2024-03-01 10:00:00-05:30,2024-03-01 12:00:00',
      '4,2024-12-31 23:59:59.5+01,2024-12-31 23:59:59',
    ].join('\n');
    const { contract } = await upload('zones', 'zones.csv', file);
    expect(targets(contract)).toEqual({ id: 'BIGINT', at: 'TIMESTAMP WITH TIME ZONE', local: 'TIMESTAMP' });
    expect(await stagedTypes(contract.contract_id)).toEqual({ id: 'BIGINT', at: 'TIMESTAMP WITH TIME ZONE', local: 'TIMESTAMP' });
    expect(await staged(contract.contract_id, `id, strftime("at", '%Y-%m-%dT%H:%M:%S.%gZ') AS "at", local::VARCHAR AS local`)).toEqual([
      { id: '1', at: '2024-03-01T08:00:00.000Z', local: '2024-03-01 10:00:00' },
      { id: '2', at: '2024-03-01T10:00:00.000Z', local: '2024-03-01 11:00:00' },
      { id: '3', at: '2024-03-01T15:30:00.000Z', local: '2024-03-01 12:00:00' },
      { id: '4', at: '2024-12-31T22:59:59.500Z', local: '2024-12-31 23:59:59' },
    ]);
  });

  it('decimals with a declared DECIMAL(18,2) are exact, and one that does not fit is refused', async () => {
    const file = 'id,amount\n1,10.50\n2,0.1\n3,-3.25\n4,1234567890123456.78\n5,\n6,0\n';
    const c = await negotiate({ destination: 'sales.messy.decimals', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'amount', type: 'DECIMAL(18,2)' }] } }, [
      { name: 'd.csv', content: file },
    ]);
    expect(c.state).toBe('accepted');
    expect(c.plan.find((p: PlanEntry) => p.column === 'amount')).toMatchObject({ target_type: 'DECIMAL(18,2)' });
    const res = await write(c.contract_id, 'd.csv', file);
    expect(res.statusCode, res.body).toBe(200);
    expect(await stagedTypes(c.contract_id)).toEqual({ id: 'BIGINT', amount: 'DECIMAL(18,2)' });
    expect(await staged(c.contract_id, 'id, amount::VARCHAR AS amount')).toEqual([
      { id: '1', amount: '10.50' },
      { id: '2', amount: '0.10' },
      { id: '3', amount: '-3.25' },
      { id: '4', amount: '1234567890123456.78' },
      { id: '5', amount: null },
      { id: '6', amount: '0.00' },
    ]);

    const tooBig = await write(c.contract_id, 'd.csv', 'id,amount\n1,1.00\n2,12345678901234567.00\n');
    expect(tooBig.statusCode, tooBig.body).toBe(409);
    expect(tooBig.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'amount', row: 3, value: '12345678901234567.00' });
    // The refused rewrite left the earlier write of d.csv in place.
    expect((await alice.request('GET', `/upload/v2/contracts/${c.contract_id}`)).json().written).toEqual([expect.objectContaining({ file: 'd.csv', rows: 6 })]);
  });
});

// ── JSONL ─────────────────────────────────────────────────────────────────────

describe('JSONL', () => {
  it('a missing key is NULL', async () => {
    const file = '{"id":1,"name":"a","score":1.5}\n{"id":2,"score":2}\n{"id":3,"name":"c"}\n{"name":"d","id":4,"score":null}\n';
    const { contract, written } = await upload('jsonl_missing', 'gaps.jsonl', file, {}, 'application/x-ndjson');
    expect(contract.files).toEqual([{ name: 'gaps.jsonl', format: 'jsonl', encoding: 'utf-8' }]);
    expect(targets(contract)).toEqual({ id: 'BIGINT', name: 'VARCHAR', score: 'DOUBLE' });
    expect(written.written[0]).toMatchObject({ format: 'jsonl', rows: 4 });
    expect(await staged(contract.contract_id)).toEqual([
      { id: '1', name: 'a', score: 1.5 },
      { id: '2', name: null, score: 2 },
      { id: '3', name: 'c', score: null },
      { id: '4', name: 'd', score: null },
    ]);
  });
});

// ── Parquet ───────────────────────────────────────────────────────────────────

describe('Parquet', () => {
  it('a footer sample (the last 8 + footer_length bytes) plans the file; the whole file is written afterwards', async () => {
    const file = await parquetFile(`
      SELECT i::INTEGER AS id, i * 0.5::DOUBLE AS score, 'name-' || i AS name, DATE '2024-01-01' + i::INTEGER AS day,
             TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(i) AS at, (i * 1.25)::DECIMAL(10,2) AS price, i % 2 = 0 AS even
      FROM range(1, 5001) t(i)`);
    const footer = footerOf(file);
    expect(footer.length).toBeLessThan(file.length / 4);
    const c = await negotiate({ destination: 'sales.messy.parquet_flat', schema: { mode: 'infer' } }, [{ name: 'flat.parquet', content: footer }]);
    expect(c.files).toEqual([{ name: 'flat.parquet', format: 'parquet' }]);
    expect(targets(c)).toEqual({ id: 'INTEGER', score: 'DOUBLE', name: 'VARCHAR', day: 'DATE', at: 'TIMESTAMP WITH TIME ZONE', price: 'DECIMAL(10,2)', even: 'BOOLEAN' });
    expect(c.issues).toEqual([]);
    expect(String(c.values.id)).toBe('1');
    await accept(c);
    const res = await write(c.contract_id, 'flat.parquet', file, 'application/vnd.apache.parquet');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().written[0]).toMatchObject({ file: 'flat.parquet', format: 'parquet', rows: 5000, source_bytes: file.length });
    expect(await stagedTypes(c.contract_id)).toEqual({ id: 'INTEGER', score: 'DOUBLE', name: 'VARCHAR', day: 'DATE', at: 'TIMESTAMP WITH TIME ZONE', price: 'DECIMAL(10,2)', even: 'BOOLEAN' });
    const rows = await staged(c.contract_id, `id, score, name, day::VARCHAR AS day, strftime("at", '%Y-%m-%dT%H:%M:%SZ') AS "at", price::VARCHAR AS price, even`, 'id LIMIT 2');
    expect(rows).toEqual([
      { id: 1, score: 0.5, name: 'name-1', day: '2024-01-02', at: '2024-01-01T00:00:01Z', price: '1.25', even: false },
      { id: 2, score: 1, name: 'name-2', day: '2024-01-03', at: '2024-01-01T00:00:02Z', price: '2.50', even: true },
    ]);
    // And it commits.
    const cm = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${c.contract_id}/commit`, headers: { authorization: `Bearer ${alice.token}` } });
    expect(cm.statusCode, cm.body).toBe(200);
    expect(cm.json().rows_written).toBe(5000);
  });

  it('nested types (LIST, STRUCT) are unsupported and block; declining them unblocks and they are absent from the data', async () => {
    const file = await parquetFile(`
      SELECT i::BIGINT AS id, [i, i + 1] AS tags, {'a': i, 'b': 'x' || i} AS meta, 'n' || i AS name
      FROM range(1, 6) t(i)`);
    const c = await negotiate({ destination: 'sales.messy.parquet_nested', schema: { mode: 'infer' } }, [{ name: 'nested.parquet', content: footerOf(file) }]);
    expect(c.plan.map((p: PlanEntry) => [p.column, p.action, p.target_type])).toEqual([
      ['id', 'keep', 'BIGINT'],
      ['tags', 'unsupported', null],
      ['meta', 'unsupported', null],
      ['name', 'keep', 'VARCHAR'],
    ]);
    expect(c.plan.find((p: PlanEntry) => p.column === 'tags').source_type).toMatch(/\[\]$/);
    expect(c.plan.find((p: PlanEntry) => p.column === 'meta').source_type).toMatch(/^STRUCT/);
    const blocking = c.issues.filter((i: { severity: string }) => i.severity === 'blocking');
    expect(blocking.map((i: { code: string; column: string }) => [i.code, i.column])).toEqual([
      ['UNSUPPORTED_TYPE', 'tags'],
      ['UNSUPPORTED_TYPE', 'meta'],
    ]);

    await accept(c);
    const refused = await write(c.contract_id, 'nested.parquet', file, 'application/vnd.apache.parquet');
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().code).toBe('CONTRACT_BLOCKED');

    const patched = await alice.request('PATCH', `/upload/v2/contracts/${c.contract_id}`, { columns: { tags: { ignore: true }, meta: { ignore: true } } });
    expect(patched.statusCode, patched.body).toBe(200);
    const replanned = patched.json();
    expect(replanned.plan.map((p: PlanEntry) => [p.column, p.action])).toEqual([
      ['id', 'keep'],
      ['tags', 'ignored'],
      ['meta', 'ignored'],
      ['name', 'keep'],
    ]);
    expect(replanned.issues.filter((i: { severity: string }) => i.severity === 'blocking')).toEqual([]);
    await accept(replanned);
    const ok = await write(c.contract_id, 'nested.parquet', file, 'application/octet-stream');
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().written[0]).toMatchObject({ rows: 5 });
    expect(await stagedTypes(c.contract_id)).toEqual({ id: 'BIGINT', name: 'VARCHAR' });
    expect(await staged(c.contract_id, 'id, name', 'id LIMIT 2')).toEqual([
      { id: '1', name: 'n1' },
      { id: '2', name: 'n2' },
    ]);
    const cm = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${c.contract_id}/commit`, headers: { authorization: `Bearer ${alice.token}` } });
    expect(cm.statusCode, cm.body).toBe(200);
    const dataset = await t.app.lakeport.catalog.getDataset({ workspace: 'sales', collection: 'messy', dataset: 'parquet_nested' });
    expect(dataset.columns.map((col) => col.name)).toEqual(['id', 'name']);
  });

  it('a JSONL file with a nested object and a list: unsupported, declined, absent', async () => {
    const file = '{"id":1,"tags":["a","b"],"geo":{"lat":1.5,"lon":2.5}}\n{"id":2,"tags":[],"geo":null}\n';
    const c = await negotiate({ destination: 'sales.messy.jsonl_nested', schema: { mode: 'infer' } }, [{ name: 'n.jsonl', content: file }]);
    expect(c.plan.map((p: PlanEntry) => [p.column, p.action])).toEqual([
      ['id', 'keep'],
      ['tags', 'unsupported'],
      ['geo', 'unsupported'],
    ]);
    const replanned = (await alice.request('PATCH', `/upload/v2/contracts/${c.contract_id}`, { columns: { tags: { ignore: true }, geo: { ignore: true } } })).json();
    await accept(replanned);
    const res = await write(c.contract_id, 'n.jsonl', file, 'application/x-ndjson');
    expect(res.statusCode, res.body).toBe(200);
    expect(await staged(c.contract_id)).toEqual([{ id: '1' }, { id: '2' }]);
  });
});

// ── content types ─────────────────────────────────────────────────────────────

describe('content-type of a write', () => {
  // The spec: "headers x-file-name, content-type (both optional strings)"; the format is the negotiated one.
  it.each([
    ['no content-type at all', ''],
    ['text/csv with a charset', 'text/csv; charset=utf-8'],
    ['curl --data-binary without -H (application/x-www-form-urlencoded)', 'application/x-www-form-urlencoded'],
    ['the registered TSV type (text/tab-separated-values)', 'text/tab-separated-values'],
    ['application/csv', 'application/csv'],
  ])('%s: the body is taken as the file', async (_label, type) => {
    const file = 'id,name\n1,a\n2,b\n';
    const c = await negotiate({ destination: `sales.messy.ct_${crypto.randomUUID().slice(0, 8)}`, schema: { mode: 'infer' } }, [{ name: 'x.csv', content: file }]);
    await accept(c);
    const res = await write(c.contract_id, 'x.csv', file, type);
    expect(res.statusCode, `${type}: ${res.body}`).toBe(200);
    expect(res.json().written[0].rows).toBe(2);
    expect(await staged(c.contract_id)).toEqual([
      { id: '1', name: 'a' },
      { id: '2', name: 'b' },
    ]);
  });
});
