/**
 * CSV dialects: what negotiation sniffs (delimiter, quote, escape, header, date formats) is part of
 * the contract, shown in it, overridable by the client, and used by every write — end to end
 * through the HTTP API, the committed rows read back from the dataset's Parquet files.
 */
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';

let t: TestApp;
let alice: TestUser;
let duck: DuckDBInstance;
let db: DuckDBConnection;

beforeAll(async () => {
  t = await createTestApp();
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales', {});
  duck = await DuckDBInstance.create(':memory:');
  db = await duck.connect();
  await db.run("SET TimeZone='UTC'");
});
afterAll(async () => {
  db?.closeSync();
  duck?.closeSync();
  await t?.close();
});

async function negotiate(contract: unknown, name: string, content: string) {
  const body = await multipartBody({ contract, samples: [{ name, content }] });
  return t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload });
}

/** Negotiates (sample = the whole file), accepts, writes, commits; the contract and the committed rows. */
async function upload(dataset: string, name: string, content: string, format?: Record<string, unknown>) {
  const res = await negotiate({ destination: `sales.c.${dataset}`, ...(format ? { format } : {}) }, name, content);
  expect(res.statusCode, res.body).toBe(201);
  const c = res.json();
  if (c.state === 'proposed') {
    const accepted = await alice.request('PUT', `/upload/v2/contracts/${c.contract_id}/accept`, { schema_fingerprint: c.schema_fingerprint });
    expect(accepted.statusCode, accepted.body).toBe(200);
  }
  const w = await t.app.inject({
    method: 'POST',
    url: `/upload/v2/contracts/${c.contract_id}/data`,
    headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'text/csv', 'x-file-name': name },
    payload: content,
  });
  expect(w.statusCode, w.body).toBe(200);
  const done = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${c.contract_id}/commit`, headers: { authorization: `Bearer ${alice.token}` } });
  expect(done.statusCode, done.body).toBe(200);
  const files = await t.app.lakeport.catalog.snapshotFiles(done.json().snapshot.snapshot_id);
  const paths = await Promise.all(files.map((f) => t.deps.blobs.localPath(f.path)));
  const list = paths.map((p) => `'${p.replace(/'/g, "''")}'`).join(', ');
  const rows = (await db.runAndReadAll(`SELECT * FROM read_parquet([${list}])`)).getRowObjectsJson();
  return { contract: c, rows, written: w.json() };
}

describe('CSV dialects', () => {
  it("a ';'-separated file is sniffed, the dialect is in the contract, and the write splits on ';'", async () => {
    const { contract, rows } = await upload('semi', 'semi.csv', 'a;b\n1;x\n2;y\n');
    expect(contract.files).toEqual([
      { name: 'semi.csv', format: 'csv', encoding: 'utf-8', csv: { delimiter: ';', quote: '"', escape: '"', header: true, newline: '\n', date_format: null, timestamp_format: null, encoding: 'utf-8' } },
    ]);
    expect(contract.plan.map((p: { column: string; target_type: string }) => [p.column, p.target_type])).toEqual([
      ['a', 'BIGINT'],
      ['b', 'VARCHAR'],
    ]);
    expect(rows).toEqual([
      { a: '1', b: 'x' },
      { a: '2', b: 'y' },
    ]);
    // The contract as read back keeps it.
    expect((await alice.request('GET', `/upload/v2/contracts/${contract.contract_id}`)).json().files[0].csv.delimiter).toBe(';');
  });

  it('a tab-separated file round-trips', async () => {
    const { contract, rows } = await upload('tabs', 'tabs.csv', 'id\tname\tnote\n1\tAnn\ta, b\n2\tBob\tc;d\n');
    expect(contract.files[0].csv).toMatchObject({ delimiter: '\t', header: true });
    expect(rows).toEqual([
      { id: '1', name: 'Ann', note: 'a, b' },
      { id: '2', name: 'Bob', note: 'c;d' },
    ]);
  });

  it("a '|'-separated file round-trips", async () => {
    const { contract, rows } = await upload('pipes', 'pipes.csv', 'id|name|amount\n1|Ann, Jr.|1.5\n2|Bob;x|2.25\n');
    expect(contract.files[0].csv).toMatchObject({ delimiter: '|', header: true });
    expect(rows).toEqual([
      { id: '1', name: 'Ann, Jr.', amount: 1.5 },
      { id: '2', name: 'Bob;x', amount: 2.25 },
    ]);
  });

  it('a quoted field with an embedded newline (and doubled quotes) round-trips, with a ; delimiter', async () => {
    const { contract, rows } = await upload('quoted', 'quoted.csv', 'id;text\n1;"line one\nline two"\n2;"say ""hi""; ok"\n3;plain\n');
    expect(contract.files[0].csv).toMatchObject({ delimiter: ';', quote: '"', escape: '"', header: true });
    expect(rows).toEqual([
      { id: '1', text: 'line one\nline two' },
      { id: '2', text: 'say "hi"; ok' },
      { id: '3', text: 'plain' },
    ]);
  });

  it('a sniffed date format is used by the write', async () => {
    const { contract, rows } = await upload('dates', 'dates.csv', 'id;day\n1;31/01/2024\n2;01/02/2024\n');
    expect(contract.files[0].csv).toMatchObject({ delimiter: ';', date_format: '%d/%m/%Y' });
    expect(contract.plan.find((p: { column: string }) => p.column === 'day').target_type).toBe('DATE');
    expect(rows).toEqual([
      { id: '1', day: '2024-01-31' },
      { id: '2', day: '2024-02-01' },
    ]);
  });

  it('a | file with quoted newlines, cut into many chunks, is read with the dialect in every chunk', async () => {
    const uploads = t.app.lakeport.uploads;
    uploads.setLimits({ chunkBytes: 512 });
    try {
      const text = (i: number) => `row ${i}\nsecond | line, "q"`;
      const lines = Array.from({ length: 400 }, (_, i) => `${i + 1}|"${text(i + 1).replace(/"/g, '""')}"|${(i + 1) / 4}`);
      const { contract, rows, written } = await upload('chunked', 'chunked.csv', `id|text|x\n${lines.join('\n')}\n`);
      expect(contract.files[0].csv).toMatchObject({ delimiter: '|', quote: '"', header: true });
      expect(written.written[0].parts).toBeGreaterThan(10);
      const sorted = [...rows].sort((a, b) => Number(a.id) - Number(b.id));
      expect(sorted).toEqual(Array.from({ length: 400 }, (_, i) => ({ id: String(i + 1), text: text(i + 1), x: (i + 1) / 4 })));
    } finally {
      uploads.setLimits({ chunkBytes: 64 * 1024 * 1024 });
    }
  });

  it("the client's delimiter and header win over sniffing", async () => {
    // Read with ',' the file has one column, "a;b", of text.
    const { contract, rows } = await upload('given', 'given.csv', 'a;b\n1;x\n', { delimiter: ',' });
    expect(contract.files[0].csv).toMatchObject({ delimiter: ',', header: true });
    expect(rows).toEqual([{ 'a;b': '1;x' }]);
    const noHeader = await upload('noheader', 'noheader.csv', 'x|y\nz|w\n', { header: false });
    expect(noHeader.contract.files[0].csv).toMatchObject({ delimiter: '|', header: false });
    expect(noHeader.rows).toEqual([
      { column0: 'x', column1: 'y' },
      { column0: 'z', column1: 'w' },
    ]);
  });
});
