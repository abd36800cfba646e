/**
 * Text encodings: a file that is not UTF-8 is refused at negotiation in words (which file, line and
 * bytes, what it looks like, the fix); with `format.encoding` it is converted while it streams and
 * its text lands in the dataset exactly — read back from the committed Parquet files.
 */
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import fc from 'fast-check';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, tempDir, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';

let t: TestApp;
let alice: TestUser;
let duck: DuckDBInstance;
let db: DuckDBConnection;

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales', {});
  duck = await DuckDBInstance.create(':memory:');
  db = await duck.connect();
});
afterAll(async () => {
  db?.closeSync();
  duck?.closeSync();
  await t?.close();
});

const latin1 = (s: string) => Buffer.from(s, 'latin1');
/** Windows-1252 bytes of a text (only the characters these tests use beyond Latin-1). */
const cp1252 = (s: string) => Buffer.from([...s].map((ch) => ({ '€': 0x80, '‘': 0x91, '’': 0x92, '“': 0x93, '”': 0x94, '–': 0x96 })[ch] ?? ch.charCodeAt(0)));

const LATIN1_CSV = latin1('id,city,note\n1,Zurich,plain\n2,Z\xfcrich,caf\xe9\n3,S\xe3o Paulo,"na\xefve, \xbd"\n');
const LATIN1_ROWS = [
  { id: '1', city: 'Zurich', note: 'plain' },
  { id: '2', city: 'Zürich', note: 'café' },
  { id: '3', city: 'São Paulo', note: 'naïve, ½' },
];
const CP1252_CSV = cp1252('id;price;quote\n1;12 €;“smart” – ‘quotes’\n2;3 €;it’s\n');
const CP1252_ROWS = [
  { id: '1', price: '12 €', quote: '“smart” – ‘quotes’' },
  { id: '2', price: '3 €', quote: 'it’s' },
];

async function negotiate(contract: unknown, name: string, content: string | Buffer) {
  const body = await multipartBody({ contract, samples: [{ name, content }] });
  return t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload });
}

async function accepted(contract: { contract_id: string; state: string; schema_fingerprint: string }) {
  if (contract.state !== 'proposed') return;
  const res = await alice.request('PUT', `/upload/v2/contracts/${contract.contract_id}/accept`, { schema_fingerprint: contract.schema_fingerprint });
  expect(res.statusCode, res.body).toBe(200);
}

function write(contractId: string, name: string, content: Buffer) {
  return t.app.inject({
    method: 'POST',
    url: `/upload/v2/contracts/${contractId}/data`,
    headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/octet-stream', 'x-file-name': name },
    payload: content,
  });
}

/** Negotiates (sample = `sample` or the whole file), writes, commits; the contract, the write and the committed rows. */
async function upload(dataset: string, name: string, content: Buffer, format?: Record<string, unknown>, sample: Buffer = content) {
  const res = await negotiate({ destination: `sales.enc.${dataset}`, ...(format ? { format } : {}) }, name, sample);
  expect(res.statusCode, res.body).toBe(201);
  const contract = res.json();
  await accepted(contract);
  const w = await write(contract.contract_id, name, content);
  expect(w.statusCode, w.body).toBe(200);
  const done = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contract.contract_id}/commit`, headers: { authorization: `Bearer ${alice.token}` } });
  expect(done.statusCode, done.body).toBe(200);
  const files = await t.app.lakeport.catalog.snapshotFiles(done.json().snapshot.snapshot_id);
  const paths = await Promise.all(files.map((f) => t.deps.blobs.localPath(f.path)));
  const list = paths.map((p) => `'${p.replace(/'/g, "''")}'`).join(', ');
  const rows = (await db.runAndReadAll(`SELECT * FROM read_parquet([${list}])`)).getRowObjectsJson();
  return { contract, written: w.json(), rows };
}

describe('a file that is not UTF-8 is refused at negotiation, in words', () => {
  it('Latin-1: the file, line, bytes, the line as Latin-1 reads it, and the fix', async () => {
    const res = await negotiate({ destination: 'sales.enc.l1' }, 'cities.csv', LATIN1_CSV);
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json();
    expect(body).toMatchObject({ code: 'SAMPLE_NOT_UTF8', file: 'cities.csv', line: 3, bytes: '0xFC', suggested_encoding: 'latin-1' });
    expect(body.detail).toContain('cities.csv');
    expect(body.detail).toContain('line 3');
    expect(body.detail).toContain('0xFC');
    expect(body.detail).toContain('"2,Zürich,café"');
    expect(body.detail).toContain('"format": {"encoding": "latin-1"}');
    expect(body.detail).toContain('lakeport upload --encoding latin-1');
  });

  it('Windows-1252: bytes 0x80–0x9F with windows-1252 characters suggest windows-1252', async () => {
    const res = await negotiate({ destination: 'sales.enc.w1' }, 'prices.csv', CP1252_CSV);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ code: 'SAMPLE_NOT_UTF8', line: 2, bytes: '0x80', suggested_encoding: 'windows-1252' });
    expect(res.json().detail).toContain('"format": {"encoding": "windows-1252"}');
    expect(res.json().detail).toContain('1;12 €;“smart” – ‘quotes’');
  });

  it('JSONL is checked too', async () => {
    const res = await negotiate({ destination: 'sales.enc.j1' }, 'cities.jsonl', latin1('{"id":1,"city":"Zurich"}\n{"id":2,"city":"Z\xfcrich"}\n'));
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ code: 'SAMPLE_NOT_UTF8', file: 'cities.jsonl', line: 2, suggested_encoding: 'latin-1' });
  });

  it('a UTF-16 byte order mark is refused naming the encoding', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('id,name\n1,a\n', 'utf16le')]);
    const res = await negotiate({ destination: 'sales.enc.u16' }, 'wide.csv', utf16);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('SAMPLE_NOT_UTF8');
    expect(res.json().detail).toMatch(/wide\.csv.*UTF-16 LE/);
    // Whatever encoding is asked for: the bytes are UTF-16.
    const asLatin1 = await negotiate({ destination: 'sales.enc.u16', format: { encoding: 'latin-1' } }, 'wide.csv', utf16);
    expect(asLatin1.statusCode, asLatin1.body).toBe(400);
  });

  it('an encoding Lakeport does not know is a 422 listing the ones it does', async () => {
    const res = await negotiate({ destination: 'sales.enc.x', format: { encoding: 'utf-16' } }, 'a.csv', 'a\n1\n');
    expect(res.statusCode, res.body).toBe(422);
    for (const name of ['utf-8', 'latin-1', 'iso-8859-1', 'windows-1252', 'cp1252']) expect(res.body).toContain(name);
  });
});

describe('with format.encoding the file converts while it streams', () => {
  it('Latin-1 round-trips exactly; the encoding is in the contract', async () => {
    const { contract, rows } = await upload('latin', 'cities.csv', LATIN1_CSV, { encoding: 'latin-1' });
    expect(contract.files).toEqual([
      { name: 'cities.csv', format: 'csv', encoding: 'latin-1', csv: { delimiter: ',', quote: '"', escape: '"', header: true, newline: '\n', date_format: null, timestamp_format: null, encoding: 'latin-1' } },
    ]);
    expect(contract.values).toMatchObject({ city: 'Zurich' });
    expect(rows).toEqual(LATIN1_ROWS);
    expect((await alice.request('GET', `/upload/v2/contracts/${contract.contract_id}`)).json().files[0].csv.encoding).toBe('latin-1');
  });

  it('Windows-1252 (€, smart quotes) round-trips exactly; the alias cp1252 is stored by its name', async () => {
    const { contract, rows } = await upload('cp', 'prices.csv', CP1252_CSV, { encoding: 'cp1252' });
    expect(contract.files[0].csv).toMatchObject({ delimiter: ';', encoding: 'windows-1252' });
    expect(rows).toEqual(CP1252_ROWS);
  });

  it('the alias iso-8859-1 is Latin-1 (0x80–0x9F stay control codes, unlike windows-1252)', async () => {
    const { contract, rows } = await upload('iso', 'c.csv', latin1('id,t\n1,a\x80b\n'), { encoding: 'iso-8859-1' });
    expect(contract.files[0].csv.encoding).toBe('latin-1');
    expect(rows).toEqual([{ id: '1', t: 'a\u0080b' }]);
  });

  it('a Latin-1 file cut into many chunks round-trips', async () => {
    const uploads = t.app.lakeport.uploads;
    uploads.setLimits({ chunkBytes: 256 });
    try {
      const names = ['Zürich', 'café', 'São Paulo', 'Málaga', 'Ærøskøbing', 'naïve "quoted", ½'];
      const expected = Array.from({ length: 500 }, (_, i) => ({ id: String(i + 1), text: `${names[i % names.length]} ${i + 1}` }));
      const file = latin1(`id,text\n${expected.map((r) => `${r.id},"${r.text.replace(/"/g, '""')}"`).join('\n')}\n`);
      const { rows, written } = await upload('chunks', 'many.csv', file, { encoding: 'latin-1' }, file.subarray(0, file.lastIndexOf(0x0a, 300) + 1));
      expect(written.written[0].parts).toBeGreaterThan(10);
      expect(written.written[0].source_bytes).toBe(file.length);
      expect([...rows].sort((a, b) => Number(a.id) - Number(b.id))).toEqual(expected);
    } finally {
      uploads.setLimits({ chunkBytes: 64 * 1024 * 1024 });
    }
  });

  it('JSONL in Latin-1 round-trips', async () => {
    const { contract, rows } = await upload('jsonl', 'cities.jsonl', latin1('{"id":1,"city":"Z\xfcrich"}\n{"id":2,"city":"caf\xe9"}\n'), { encoding: 'latin-1' });
    expect(contract.files).toEqual([{ name: 'cities.jsonl', format: 'jsonl', encoding: 'latin-1' }]);
    expect(rows).toEqual([
      { id: '1', city: 'Zürich' },
      { id: '2', city: 'café' },
    ]);
  });

  it('a UTF-8 byte order mark stays accepted (and is not part of the first column name)', async () => {
    const { contract, rows } = await upload('bom', 'bom.csv', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('id,city\n1,Zürich\n')]));
    expect(contract.files[0].csv.encoding).toBe('utf-8');
    expect(rows).toEqual([{ id: '1', city: 'Zürich' }]);
  });
});

describe('Parquet', () => {
  it('ignores the encoding: its bytes are not text to convert, its strings are UTF-8 already', async () => {
    const dir = tempDir('lakeport-enc-');
    const file = `${dir.dir}/enc.parquet`;
    await db.run(`COPY (SELECT 1::BIGINT AS id, 'Zürich €' AS city) TO '${file}' (FORMAT parquet)`);
    const bytes = fs.readFileSync(file);
    const footer = bytes.subarray(bytes.length - 8 - bytes.readUInt32LE(bytes.length - 8));
    const res = await negotiate({ destination: 'sales.enc.pq', format: { encoding: 'windows-1252' } }, 'enc.parquet', footer);
    expect(res.statusCode, res.body).toBe(201);
    const contract = res.json();
    expect(contract.files).toEqual([{ name: 'enc.parquet', format: 'parquet' }]);
    await accepted(contract);
    const w = await write(contract.contract_id, 'enc.parquet', bytes);
    expect(w.statusCode, w.body).toBe(200);
    dir.remove();
    const done = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contract.contract_id}/commit`, headers: { authorization: `Bearer ${alice.token}` } });
    expect(done.statusCode, done.body).toBe(200);
    const [part] = await t.app.lakeport.catalog.snapshotFiles(done.json().snapshot.snapshot_id);
    const rows = (await db.runAndReadAll('SELECT * FROM read_parquet($p)', { p: await t.deps.blobs.localPath(part.path) })).getRowObjectsJson();
    expect(rows).toEqual([{ id: '1', city: 'Zürich €' }]);
  });
});

describe('a write that is not UTF-8 when the contract says UTF-8', () => {
  it('is refused with a 409 naming the line and the fix', async () => {
    const res = await negotiate({ destination: 'sales.enc.late' }, 'late.csv', 'id,city\n1,Zurich\n');
    expect(res.statusCode, res.body).toBe(201);
    const contract = res.json();
    await accepted(contract);
    const w = await write(contract.contract_id, 'late.csv', latin1('id,city\n1,Zurich\n2,Bern\n3,Z\xfcrich\n'));
    expect(w.statusCode, w.body).toBe(409);
    expect(w.json()).toMatchObject({ code: 'FILE_DIFFERS_FROM_SAMPLE', file: 'late.csv', line: 4 });
    expect(w.json().detail).toMatch(/line 4 is not valid UTF-8/);
    expect(w.json().detail).toContain('"format": {"encoding": "latin-1"}');
  });

  it('names the line in the whole file when it is in a later chunk', async () => {
    const uploads = t.app.lakeport.uploads;
    uploads.setLimits({ chunkBytes: 128 });
    try {
      const res = await negotiate({ destination: 'sales.enc.late2' }, 'late.csv', 'id,city\n1,Zurich\n');
      const contract = res.json();
      await accepted(contract);
      const lines = Array.from({ length: 200 }, (_, i) => `${i + 1},${i === 149 ? 'Z\xfcrich' : 'Zurich'}`);
      const w = await write(contract.contract_id, 'late.csv', latin1(`id,city\n${lines.join('\n')}\n`));
      expect(w.statusCode, w.body).toBe(409);
      expect(w.json()).toMatchObject({ code: 'FILE_DIFFERS_FROM_SAMPLE', line: 151 });
    } finally {
      uploads.setLimits({ chunkBytes: 64 * 1024 * 1024 });
    }
  });

  it('JSONL too', async () => {
    const res = await negotiate({ destination: 'sales.enc.late3' }, 'late.jsonl', '{"id":1,"city":"Zurich"}\n');
    const contract = res.json();
    await accepted(contract);
    const w = await write(contract.contract_id, 'late.jsonl', latin1('{"id":1,"city":"Zurich"}\n{"id":2,"city":"Z\xfcrich"}\n'));
    expect(w.statusCode, w.body).toBe(409);
    expect(w.json()).toMatchObject({ code: 'FILE_DIFFERS_FROM_SAMPLE', line: 2 });
    expect(w.json().detail).toMatch(/line 2 is not valid UTF-8/);
  });
});

describe('NUL bytes', () => {
  it('a sample holding a NUL byte is refused as not text (it once reached the contract JSON and PostgreSQL refused it: a 500)', async () => {
    for (const format of [{}, { encoding: 'latin-1' }]) {
      const res = await negotiate({ destination: 'sales.enc.nul', format }, 'f.csv', Buffer.from([1, 10, 0]));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ code: 'SAMPLE_UNREADABLE', line: 2, file: 'f.csv' });
      expect(res.json().detail).toMatch(/NUL byte/);
    }
  });
});

describe('fuzz', () => {
  it('random bytes with encoding latin-1 never give a 5xx, at negotiation or write', async () => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), fc.constantFrom('f.csv', 'f.jsonl'), fc.constantFrom('latin-1', 'windows-1252'), async (bytes, name, encoding) => {
        const content = Buffer.from(bytes);
        const res = await negotiate({ destination: 'sales.enc.fuzz', format: { encoding } }, name, content);
        seen.add(res.statusCode);
        expect(res.statusCode, res.body).toBeLessThan(500);
        if (res.statusCode !== 201) return;
        const contract = res.json();
        await accepted(contract);
        const w = await write(contract.contract_id, name, content);
        seen.add(w.statusCode);
        expect(w.statusCode, w.body).toBeLessThan(500);
      }),
      { numRuns: 60 },
    );
    expect(seen).toContain(201);
  });
});
