import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.ts';
import { DuckDBInstance } from '@duckdb/node-api';
import { FileShapeError, Ingestor, ROW_GROUP_ROWS, ValueNotStorableError, type ReadOptions, type TargetColumn } from './index.ts';

let ingestor: Ingestor;
const dir = tempDir('lakeport-ingest-');
const file = (name: string, content: string | Buffer) => {
  const p = path.join(dir.dir, name);
  fs.writeFileSync(p, content);
  return p;
};
beforeAll(async () => {
  ingestor = await Ingestor.create();
});
afterAll(() => {
  ingestor.close();
  dir.remove();
});

describe('inspect', () => {
  it('reads types and a real value per column from a messy CSV', async () => {
    const p = file('messy.csv', '\uFEFFid;note;amount;at;ip\n1;"two\nlines";12.50;2024-03-01 10:00:00+02;10.0.0.1\n2;"";;2024-03-02 11:00:00+02;192.168.1.20\n');
    const schema = await ingestor.inspect(p, 'csv', { delimiter: ';' });
    expect(schema.columns.map((c) => [c.name, c.type])).toEqual([
      ['id', 'BIGINT'],
      ['note', 'VARCHAR'],
      ['amount', 'DECIMAL(18,2)'], // fixed-point text
      ['at', 'TIMESTAMP WITH TIME ZONE'],
      ['ip', 'IPV4'],
    ]);
    expect(schema.values.note).toBe('two\nlines');
    expect(schema.values.ip).toBe('10.0.0.1');
    expect(schema.values.amount).toBe('12.50');
    expect(schema.columns.find((c) => c.name === 'amount')?.sourceType).toBe('DOUBLE');
  });

  it('marks nested JSON types unsupported and tolerates missing keys', async () => {
    const p = file('a.jsonl', '{"a":1,"b":"x"}\n{"b":"y","c":{"q":1}}\n');
    const schema = await ingestor.inspect(p, 'jsonl', {});
    expect(schema.columns.find((c) => c.name === 'c')).toMatchObject({ type: undefined, sourceType: 'STRUCT(q BIGINT)' });
    expect(schema.columns.find((c) => c.name === 'a')?.type).toBe('BIGINT');
  });
});

describe('convert', () => {
  const target: TargetColumn[] = [
    { name: 'id', type: 'BIGINT', nullable: false, source: 'id' },
    { name: 'amount', type: 'DECIMAL(18,2)', nullable: true, source: 'amount' },
  ];

  it('writes Parquet with the target types and statistics', async () => {
    const p = file('ok.csv', 'id,amount\n1,10.50\n2,\n3,7.25\n');
    const out = path.join(dir.dir, 'ok.parquet');
    const result = await ingestor.convert({
      path: p,
      format: 'csv',
      options: {},
      fileColumns: [{ name: 'id', type: 'BIGINT', sourceType: 'BIGINT' }, { name: 'amount', type: 'DOUBLE', sourceType: 'DOUBLE' }],
      target,
      destination: out,
    });
    expect(result.rows).toBe(3);
    expect(result.bytes).toBeGreaterThan(0);
    expect(result.stats.amount).toMatchObject({ min: '7.25', max: '10.50', null_count: 1 });
    expect(result.stats.id).toMatchObject({ min: '1', max: '3', null_count: 0 });
  });

  it(`writes row groups of ${ROW_GROUP_ROWS} rows`, async () => {
    const rows = 2 * ROW_GROUP_ROWS + 100;
    const p = file('groups.csv', `id,amount\n${Array.from({ length: rows }, (_, i) => `${i},1.5`).join('\n')}\n`);
    const out = path.join(dir.dir, 'groups.parquet');
    const fileColumns = [{ name: 'id', type: 'BIGINT', sourceType: 'BIGINT' }, { name: 'amount', type: 'DOUBLE', sourceType: 'DOUBLE' }];
    expect((await ingestor.convert({ path: p, format: 'csv', options: {}, fileColumns, target, destination: out })).rows).toBe(rows);
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    try {
      const groups = (await c.runAndReadAll('SELECT row_group_num_rows FROM parquet_metadata($path) WHERE column_id = 0 ORDER BY row_group_id', { path: out })).getRows();
      expect(groups.map(([n]) => Number(n))).toEqual([ROW_GROUP_ROWS, ROW_GROUP_ROWS, 100]);
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });

  it('names the column, line and value of a bad value at row 100 000', async () => {
    const lines = ['id,amount'];
    for (let i = 1; i <= 120_000; i++) lines.push(`${i},${i}.5`);
    lines[100_000] = '100000,abc';
    const p = file('bad.csv', `${lines.join('\n')}\n`);
    const out = path.join(dir.dir, 'bad.parquet');
    const error = await ingestor
      .convert({ path: p, format: 'csv', options: {}, fileColumns: [{ name: 'id', type: 'BIGINT', sourceType: 'BIGINT' }, { name: 'amount', type: 'DOUBLE', sourceType: 'DOUBLE' }], target, destination: out })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValueNotStorableError);
    expect(error).toMatchObject({ column: 'amount', row: 100_001, value: 'abc' });
    expect(fs.existsSync(out)).toBe(false);
  });

  it('finds bad JSONL values and NULLs in NOT NULL columns by record number', async () => {
    const p = file('b.jsonl', '{"id":1,"amount":1}\n{"amount":2}\n');
    const error = await ingestor
      .convert({ path: p, format: 'jsonl', options: {}, fileColumns: [{ name: 'id', type: 'BIGINT', sourceType: 'BIGINT' }, { name: 'amount', type: 'BIGINT', sourceType: 'BIGINT' }], target, destination: path.join(dir.dir, 'b.parquet') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValueNotStorableError);
    expect(error).toMatchObject({ column: 'id', row: 2, value: null });
  });

  it('refuses a value that is not an IPv4 address in an IPV4 column', async () => {
    const p = file('ip.csv', 'ip\n10.0.0.1\n300.1.1.1\n');
    const error = await ingestor
      .convert({ path: p, format: 'csv', options: {}, fileColumns: [{ name: 'ip', type: 'IPV4', sourceType: 'VARCHAR' }], target: [{ name: 'ip', type: 'IPV4', nullable: true, source: 'ip' }], destination: path.join(dir.dir, 'ip.parquet') })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ column: 'ip', row: 3, value: '300.1.1.1' });
  });

  it('reports a file whose columns differ from its sample', async () => {
    const p = file('shape.csv', 'a,b,c\n1,2,3\n');
    const error = await ingestor
      .convert({ path: p, format: 'csv', options: {}, fileColumns: [{ name: 'id', type: 'BIGINT', sourceType: 'BIGINT' }], target: [target[0]], destination: path.join(dir.dir, 's.parquet') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(TypeError);
    void FileShapeError;
  });
});

describe('convertStream', () => {
  const columns = [
    { name: 'id', type: 'BIGINT', sourceType: 'BIGINT' },
    { name: 'note', type: 'VARCHAR', sourceType: 'VARCHAR' },
    { name: 'amount', type: 'DOUBLE', sourceType: 'DOUBLE' },
  ];
  const targetOf = (cols: { name: string; type: string }[]): TargetColumn[] => cols.map((c) => ({ name: c.name, type: c.type, nullable: true, source: c.name }));

  /** `bytes` as a request body arriving in pieces of `piece` bytes. */
  async function* body(bytes: Buffer, piece = 7) {
    for (let i = 0; i < bytes.length; i += piece) yield Buffer.from(bytes.subarray(i, i + piece));
  }

  let parts = 0;
  const scratch = () => {
    const d = path.join(dir.dir, `scratch-${parts++}`);
    fs.mkdirSync(d, { recursive: true });
    return d;
  };

  /** The directories of the last stream(): chunks in flight, and parts. */
  let last = { scratchDir: '', out: '' };

  async function stream(content: string | Buffer, options: { chunkBytes?: number; format?: 'csv' | 'jsonl'; read?: ReadOptions; cols?: typeof columns; piece?: number } = {}) {
    const bytes = typeof content === 'string' ? Buffer.from(content) : content;
    const scratchDir = scratch();
    const out = scratch();
    last = { scratchDir, out };
    let k = 0;
    const result = await ingestor.convertStream({
      body: body(bytes, options.piece),
      format: options.format ?? 'csv',
      options: options.read ?? {},
      fileColumns: options.cols ?? columns,
      target: targetOf(options.cols ?? columns),
      scratchDir,
      partPath: async () => path.join(out, `part-${k++}.parquet`),
      chunkBytes: options.chunkBytes ?? 16,
      maxBytes: 1 << 30,
      tooLarge: () => new Error('too large'),
    });
    // Nothing is left in the scratch directory; the parts are the caller's.
    expect(fs.readdirSync(scratchDir)).toEqual([]);
    return { ...result, out };
  }

  async function rowsOf(paths: string[]) {
    const rows: unknown[][] = [];
    for (const p of paths) rows.push(...(await ingestor.readPage(p, 0, 1_000_000)).rows);
    return rows;
  }

  async function whole(content: string | Buffer, format: 'csv' | 'jsonl' = 'csv', read: ReadOptions = {}, cols = columns) {
    const p = file(`whole-${parts++}.${format}`, content);
    const out = path.join(dir.dir, `whole-${parts++}.parquet`);
    const converted = await ingestor.convert({ path: p, format, options: read, fileColumns: cols, target: targetOf(cols), destination: out });
    return { rows: await rowsOf([out]), converted };
  }

  /** What a conversion ends in: its rows, or its error's kind and the column, row and value it names. */
  const outcome = (run: Promise<{ rows: unknown[][] }>) =>
    run.then(
      (r) => ({ rows: r.rows }),
      (e: unknown) => (e instanceof ValueNotStorableError ? { refused: [e.column, e.row, e.value] } : e instanceof FileShapeError ? { shape: e.line ?? null } : { other: String(e) }),
    );

  /**
   * Chunked conversion ends as converting the whole file does: the same rows in the same order, or
   * the same refused value. (A file that also breaks the CSV structure somewhere is refused either
   * way; DuckDB reports structure first in a whole file, chunks report the first problem in order.)
   */
  function same(got: Awaited<ReturnType<typeof outcome>>, expected: Awaited<ReturnType<typeof outcome>>) {
    if ('shape' in expected) expect('rows' in got, JSON.stringify(got)).toBe(false);
    else expect(got).toEqual(expected);
  }

  it('gives the rows of the whole file, in order, however the file is cut and arrives', async () => {
    const note = fc.oneof(
      { weight: 30, arbitrary: fc.constantFrom('plain', '', '"quoted, with comma"', '"two\nlines"', '"crlf\r\ninside"', '"say ""hi"""', ' "spaced\nquote"', 'mid"quote', '"\n"', '"a\n\nb"') },
      { weight: 1, arbitrary: fc.constantFrom('"closed"early', '"unterminated\n') },
    );
    const id = fc.oneof({ weight: 20, arbitrary: fc.nat({ max: 999 }).map(String) }, { weight: 1, arbitrary: fc.constant('x1') });
    const amount = fc.oneof({ weight: 20, arbitrary: fc.constantFrom('1.5', '', '-2', '3e2') }, { weight: 1, arbitrary: fc.constant('abc') });
    const record = fc.tuple(id, note, amount).map((f) => f.join(','));
    await fc.assert(
      fc.asyncProperty(
        fc.array(record, { maxLength: 25 }),
        fc.constantFrom('\n', '\r\n'),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 50 }),
        async (records, eol, bom, blankLine, chunkBytes, piece) => {
          const lines = ['id,note,amount', ...records];
          if (blankLine && lines.length > 2) lines.splice(2, 0, '');
          const text = Buffer.from(lines.map((l) => l + eol).join(''));
          const content = bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), text]) : text;
          const expected = await outcome(whole(content));
          const got = await outcome(stream(content, { chunkBytes, piece }).then(async (r) => ({ rows: await rowsOf(r.parts.map((p) => p.path)) })));
          same(got, expected);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('the same with a backslash escape and another delimiter', async () => {
    const read: ReadOptions = { delimiter: ';', escape: '\\' };
    const note = fc.constantFrom('plain', '"a;b"', '"say \\"hi\\""', '"back\\\\"', '"l1\nl2"', '"\\"\n\\""', 'x"y', '"bad\\x"');
    const record = fc.tuple(fc.nat({ max: 99 }).map(String), note, fc.constantFrom('1', '', '2.5')).map((f) => f.join(';'));
    await fc.assert(
      fc.asyncProperty(fc.array(record, { maxLength: 20 }), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 30 }), async (records, chunkBytes, piece) => {
        const content = Buffer.from(['id;note;amount', ...records].map((l) => `${l}\n`).join(''));
        const expected = await outcome(whole(content, 'csv', read));
        const got = await outcome(stream(content, { chunkBytes, piece, read }).then(async (r) => ({ rows: await rowsOf(r.parts.map((p) => p.path)) })));
        same(got, expected);
      }),
      { numRuns: 30 },
    );
  });

  it('names the true line of a bad value in a later chunk, after quoted newlines, CRLF and a byte order mark', async () => {
    const lines = ['id,note,amount'];
    for (let i = 1; i <= 300; i++) lines.push(i % 7 === 0 ? `${i},"note ${i}\r\nsecond line",${i}.5` : `${i},n${i},${i}.5`);
    lines[250] = '250,"bad one",12.x5';
    const text = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${lines.join('\r\n')}\r\n`)]);
    const physical = text.toString().split('\n').findIndex((l) => l.includes('12.x5')) + 1;
    expect(physical).toBeGreaterThan(251); // the quoted newlines before it add lines
    const error = await stream(text, { chunkBytes: 512, piece: 333 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValueNotStorableError);
    expect(error).toMatchObject({ column: 'amount', row: physical, value: '12.x5' });
    expect((await outcome(whole(text))) as unknown).toEqual({ refused: ['amount', physical, '12.x5'] });
  });

  it('names the line in the whole file when a later chunk has the wrong number of columns', async () => {
    const lines = ['id,note,amount'];
    for (let i = 1; i <= 100; i++) lines.push(`${i},"x\ny",${i}`);
    lines[80] = '80,short';
    const text = `${lines.join('\n')}\n`;
    const physical = text.split('\n').indexOf('80,short') + 1;
    const error = await stream(text, { chunkBytes: 200 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FileShapeError);
    expect((error as FileShapeError).line).toBe(physical);
    expect((error as Error).message).toContain(`line ${physical}`);
    expect((error as Error).message).toMatch(/Expected Number of Columns/);
  });

  it('the bad value at row 100 000, in 64 KiB chunks: the same line as the whole file, and no part left', async () => {
    const lines = ['id,note,amount'];
    for (let i = 1; i <= 120_000; i++) lines.push(`${i},n,${i}.5`);
    lines[100_000] = '100000,n,abc';
    const text = `${lines.join('\n')}\n`;
    const error = await stream(text, { chunkBytes: 64 * 1024, piece: 65536 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ column: 'amount', row: 100_001, value: 'abc' });
    // The parts of the chunks that converted before it are gone, and so are the chunks.
    expect(fs.readdirSync(last.out)).toEqual([]);
    expect(fs.readdirSync(last.scratchDir)).toEqual([]);
  });

  it('a file smaller than a chunk is one part; a file cut exactly at record ends gives no empty part', async () => {
    const small = await stream('id,note,amount\n1,a,1.5\n2,b,2.5\n', { chunkBytes: 1 << 20 });
    expect(small.parts.map((p) => p.rows)).toEqual([2]);
    // Header (15 bytes) + one 10-byte record is a chunk of exactly 25 bytes.
    const exact = await stream('id,note,amount\n1,aaa,1.5\n2,bbb,2.5\n', { chunkBytes: 25 });
    expect(exact.parts.map((p) => p.rows)).toEqual([1, 1]);
    expect(await rowsOf(exact.parts.map((p) => p.path))).toEqual([
      [1, 'aaa', 1.5],
      [2, 'bbb', 2.5],
    ]);
    const headerOnly = await stream('id,note,amount\n', { chunkBytes: 4 });
    expect(headerOnly.parts.map((p) => p.rows)).toEqual([0]);
  });

  it('JSONL in chunks: the rows in order, and a bad value named at its line (blank lines counted)', async () => {
    const cols = [
      { name: 'id', type: 'BIGINT', sourceType: 'BIGINT' },
      { name: 'n', type: 'INTEGER', sourceType: 'INTEGER' },
    ];
    const records = Array.from({ length: 50 }, (_, i) => `{"id":${i},"n":${i}}`);
    const ok = await stream(`${records.join('\n')}\n`, { format: 'jsonl', cols, chunkBytes: 64 });
    expect(ok.parts.length).toBeGreaterThan(5);
    expect((await rowsOf(ok.parts.map((p) => p.path))).map((r) => r[0])).toEqual(records.map((_, i) => i));
    const bad = [...records];
    bad[40] = '{"id":40,"n":"forty"}';
    bad.splice(10, 0, '');
    const error = await stream(`${bad.join('\n')}\n`, { format: 'jsonl', cols, chunkBytes: 64 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ column: 'n', row: 42, value: 'forty' });
  });

  it('checks the header once, against the first chunk, and reads later chunks by it', async () => {
    const text = `amount,id,note\n${Array.from({ length: 40 }, (_, i) => `${i}.5,${i},n${i}`).join('\n')}\n`;
    const r = await stream(text, { chunkBytes: 64 });
    expect(r.parts.length).toBeGreaterThan(3);
    const rows = await rowsOf(r.parts.map((p) => p.path));
    expect(rows[39]).toEqual([39, 'n39', 39.5]);
    const wrong = await stream(`a,b,c\n${'1,2,3\n'.repeat(30)}`, { chunkBytes: 32 }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(FileShapeError);
  });
});

describe('readPage', () => {
  it('gives the same pages with the file row count as without it', async () => {
    const p = path.join(dir.dir, 'pages.parquet');
    const csv = file('pages.csv', `n\n${Array.from({ length: 25 }, (_, i) => i).join('\n')}\n`);
    const n = { name: 'n', type: 'BIGINT', sourceType: 'BIGINT' };
    await ingestor.convert({ path: csv, format: 'csv', options: {}, fileColumns: [n], target: [{ name: 'n', type: 'BIGINT', nullable: true, source: 'n' }], destination: p });
    for (const [offset, limit] of [[0, 10], [0, 25], [0, 100], [10, 10], [20, 10], [24, 1], [25, 5], [30, 5]]) {
      const plain = await ingestor.readPage(p, offset, limit);
      expect(await ingestor.readPage(p, offset, limit, 25), `offset ${offset} limit ${limit}`).toEqual(plain);
      expect(plain.rows.map((r) => r[0])).toEqual(Array.from({ length: Math.max(0, Math.min(limit, 25 - offset)) }, (_, i) => offset + i));
    }
  });
});
