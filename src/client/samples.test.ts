import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import {
  DEFAULT_SAMPLE_BYTES,
  SampleError,
  alignCsvRange,
  alignJsonlRange,
  contentTypeFor,
  csvHeadShape,
  csvSampleEnd,
  detectFormat,
  jsonlSampleEnd,
  parquetFooterLength,
  readSample,
  spreadLayout,
  spreadSample,
} from './samples.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-samples-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let counter = 0;
function file(content: string | Buffer, ext = '.csv'): string {
  const p = path.join(dir, `f${counter++}${ext}`);
  fs.writeFileSync(p, content);
  return p;
}

const b = (s: string) => Buffer.from(s, 'utf8');

describe('detectFormat', () => {
  it('maps the extensions, case-insensitively', () => {
    expect(detectFormat('a.csv')).toEqual({ type: 'csv' });
    expect(detectFormat('/x/y/A.CSV')).toEqual({ type: 'csv' });
    expect(detectFormat('a.tsv')).toEqual({ type: 'csv', delimiter: '\t' });
    expect(detectFormat('a.jsonl')).toEqual({ type: 'jsonl' });
    expect(detectFormat('a.ndjson')).toEqual({ type: 'jsonl' });
    expect(detectFormat('a.parquet')).toEqual({ type: 'parquet' });
  });
  it('knows nothing of other names', () => {
    for (const name of ['a.txt', 'a', 'csv', 'a.csv.gz', 'a.json', '.csv.bak']) expect(detectFormat(name)).toBeUndefined();
  });
  it('gives each format its content type', () => {
    expect(contentTypeFor('csv')).toBe('text/csv');
    expect(contentTypeFor('jsonl')).toBe('application/x-ndjson');
    expect(contentTypeFor('parquet')).toBe('application/vnd.apache.parquet');
  });
});

describe('csvSampleEnd', () => {
  it('cuts after the last line break', () => {
    expect(csvSampleEnd(b('a,b\n1,2\n3,'))).toBe(8);
    expect(csvSampleEnd(b('a,b\n1,2\n'))).toBe(8);
  });
  it('finds no record in a buffer without a line break', () => {
    expect(csvSampleEnd(b('a,b,c'))).toBe(0);
    expect(csvSampleEnd(b(''))).toBe(0);
  });
  it('does not end a record at a newline inside a quoted field', () => {
    const text = 'id,note\n1,"two\nlines"\n2,"open\nfield';
    expect(csvSampleEnd(b(text))).toBe('id,note\n1,"two\nlines"\n'.length);
  });
  it('without a delimiter, a quoted line break after any delimiter the server sniffs (; tab |) stays inside its field', () => {
    for (const d of [';', '\t', '|']) {
      const text = `id${d}note\n1${d}"two\nlines"\n2${d}"open\nfield`;
      expect(csvSampleEnd(b(text))).toBe(`id${d}note\n1${d}"two\nlines"\n`.length);
    }
    // A delimiter given is the only one: after ';' a quote mid-field is a literal.
    expect(csvSampleEnd(b('id,note\n1;"x\ny\n'), { delimiter: ',' })).toBe('id,note\n1;"x\ny\n'.length);
    expect(csvSampleEnd(b('id,note\n1;"x\ny\n'))).toBe('id,note\n'.length);
  });
  it('treats "" inside a quoted field as an escaped quote, not the field end', () => {
    const text = 'id,q\n1,"say ""hi""\nthere"\n2,"a ""\nb';
    expect(csvSampleEnd(b(text))).toBe('id,q\n1,"say ""hi""\nthere"\n'.length);
    // A field that is just an escaped quote, then a newline inside the still-open field.
    expect(csvSampleEnd(b('a\n""""\n"""\nx'))).toBe('a\n""""\n'.length);
  });
  it('keeps CRLF records whole', () => {
    const text = 'a,b\r\n1,"x\r\ny"\r\n2,3';
    expect(csvSampleEnd(b(text))).toBe('a,b\r\n1,"x\r\ny"\r\n'.length);
  });
  it('accepts a lone CR as a record end', () => {
    expect(csvSampleEnd(b('a,b\r1,2\r3'))).toBe(8);
  });
  it('does not end at a CR that is the last byte (it may be half of a CRLF)', () => {
    expect(csvSampleEnd(b('a,b\r\n1,2\r'))).toBe(5);
    expect(csvSampleEnd(b('a,b\r'))).toBe(0);
  });
  it('skips a UTF-8 BOM for parsing but counts its bytes', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const buf = Buffer.concat([bom, b('"a\nb",c\n1,2\n3')]);
    expect(csvSampleEnd(buf)).toBe(3 + '"a\nb",c\n1,2\n'.length);
  });
  it('reads a quote in the middle of an unquoted field as a literal', () => {
    expect(csvSampleEnd(b('size,name\n5" disk,x\n7,y'))).toBe('size,name\n5" disk,x\n'.length);
  });
  it('uses the given delimiter to find field starts', () => {
    expect(csvSampleEnd(b('a;b\n1;"x\ny"\n2;"z'), { delimiter: ';' })).toBe('a;b\n1;"x\ny"\n'.length);
    expect(csvSampleEnd(b('a\tb\n1\t"x\ny"\n2'), { delimiter: '\t' })).toBe('a\tb\n1\t"x\ny"\n'.length);
  });
  it('honours another escape character and quote', () => {
    expect(csvSampleEnd(b('a,b\n1,"x\\"\ny"\n2,"'), { escape: '\\' })).toBe('a,b\n1,"x\\"\ny"\n'.length);
    expect(csvSampleEnd(b("a,b\n1,'x\ny'\n2,'"), { quote: "'" })).toBe("a,b\n1,'x\ny'\n".length);
  });
  it('refuses a multi-byte dialect character', () => {
    expect(() => csvSampleEnd(b('a'), { delimiter: '||' })).toThrow(SampleError);
    expect(() => csvSampleEnd(b('a'), { delimiter: '§' })).toThrow(/single one-byte/);
  });
  it('always cuts where csv-parse sees complete records (property)', () => {
    const cell = fc.stringMatching(/^[a-z ",\n\r]{0,6}$/);
    const quoteCell = (c: string) => (/[",\n\r]/.test(c) || c === '' ? `"${c.replace(/"/g, '""')}"` : c);
    fc.assert(
      fc.property(
        fc.array(fc.array(cell, { minLength: 2, maxLength: 2 }), { minLength: 1, maxLength: 8 }),
        fc.constantFrom('\n', '\r\n'),
        fc.nat(),
        (rows, eol, cutAt) => {
          const text = rows.map((r) => r.map(quoteCell).join(',')).join(eol) + eol;
          const buf = b(text);
          const cut = cutAt % (buf.length + 1);
          const end = csvSampleEnd(buf.subarray(0, cut));
          expect(end).toBeLessThanOrEqual(cut);
          // The sample parses into whole records, each equal to the original's.
          const parsed = parse(buf.subarray(0, end), { relax_column_count: true, record_delimiter: eol }) as string[][];
          expect(parsed).toEqual(rows.slice(0, parsed.length));
          // And no further complete record would have fitted.
          const next = rows.slice(0, parsed.length + 1).map((r) => r.map(quoteCell).join(',')).join(eol) + eol;
          if (parsed.length < rows.length) expect(b(next).length).toBeGreaterThan(cut);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('jsonlSampleEnd', () => {
  it('cuts after the last newline', () => {
    expect(jsonlSampleEnd(b('{"a":1}\n{"a":2}\n{"a":'))).toBe(16);
    expect(jsonlSampleEnd(b('{"a":1}\r\n{"a"'))).toBe(9);
    expect(jsonlSampleEnd(b('{"a":1}'))).toBe(0);
  });
});

describe('readSample (CSV and JSONL)', () => {
  it('sends a file no larger than the limit whole, even without a final newline', async () => {
    const p = file('a,b\n1,"x\ny');
    expect((await readSample(p, 'csv', { maxBytes: 100 })).toString()).toBe('a,b\n1,"x\ny');
    const exact = file('a,b\n1,2');
    expect((await readSample(exact, 'csv', { maxBytes: 7 })).toString()).toBe('a,b\n1,2');
  });
  it('sends an empty file as an empty sample', async () => {
    expect((await readSample(file(''), 'csv')).length).toBe(0);
  });
  it('cuts a larger file after the last complete record within the limit', async () => {
    const rows = Array.from({ length: 1000 }, (_, i) => `${i},"line one\nline ""two""",${'x'.repeat(i % 7)}`);
    const text = `id,note,pad\n${rows.join('\n')}\n`;
    const p = file(text);
    const sample = await readSample(p, 'csv', { maxBytes: 4096 });
    expect(sample.length).toBeLessThanOrEqual(4096);
    expect(text.startsWith(sample.toString())).toBe(true);
    const parsed = parse(sample, { columns: true }) as { id: string; note: string }[];
    expect(parsed.length).toBeGreaterThan(50);
    expect(parsed.every((r, i) => r.id === String(i) && r.note === 'line one\nline "two"')).toBe(true);
    // Nothing more would have fitted.
    expect(text.indexOf('\n' + String(parsed.length) + ',', 0) + 1 + rows[parsed.length].length + 1).toBeGreaterThan(4096);
  });
  it('defaults to a 1 MiB budget; a file within it is sent whole', async () => {
    expect(DEFAULT_SAMPLE_BYTES).toBe(1024 * 1024);
    const line = `${'y'.repeat(99)}\n`; // 100 bytes
    const p = file(line.repeat(10_000)); // 1 MB
    expect((await readSample(p, 'csv')).length).toBe(1_000_000);
  });
  it('samples only the head of a one-column CSV (no delimiter splits its records): the whole budget', async () => {
    const line = `${'y'.repeat(99)}\n`;
    const p = file(line.repeat(30_000)); // 3 MB
    const sample = await readSample(p, 'csv');
    expect(sample.length).toBe(Math.floor(DEFAULT_SAMPLE_BYTES / 100) * 100);
  });
  it('keeps CRLF and the BOM bytes', async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const p = file(Buffer.concat([bom, b('"h\r\n1",h2\r\n'.concat('a,b\r\n'.repeat(100)))]));
    const sample = await readSample(p, 'csv', { maxBytes: 64 });
    expect(sample.subarray(0, 3)).toEqual(bom);
    expect(sample.toString('latin1').endsWith('a,b\r\n')).toBe(true);
    const head = '"h\r\n1",h2\r\n';
    expect(sample.length).toBe(3 + head.length + 5 * Math.floor((64 - 3 - head.length) / 5));
  });
  it('uses the delimiter of a TSV file to find quoted fields', async () => {
    const p = file(`a\tb\n${'1\t"x\ny"\n'.repeat(50)}`, '.tsv');
    const sample = await readSample(p, 'csv', { maxBytes: 30, delimiter: '\t' });
    expect(sample.toString()).toBe(`a\tb\n${'1\t"x\ny"\n'.repeat(3)}`); // 4 + 3 * 8 = 28 <= 30
  });
  it('refuses a single record larger than the limit with a clear error', async () => {
    const p = file(`"${'z'.repeat(500)}\n${'z'.repeat(500)}"\n1\n`);
    await expect(readSample(p, 'csv', { maxBytes: 256 })).rejects.toThrow(/no complete record in the first 256 bytes.*larger than the sample limit/);
    const j = file(`{"a":"${'q'.repeat(2000)}"}\n{"a":1}\n`, '.jsonl');
    await expect(readSample(j, 'jsonl', { maxBytes: 1024 })).rejects.toThrow(SampleError);
    await expect(readSample(j, 'jsonl', { maxBytes: 1024 })).rejects.toThrow(/1 KiB/);
  });
  it('cuts JSONL at the last newline', async () => {
    const lines = Array.from({ length: 100 }, (_, i) => JSON.stringify({ i, s: 'a\nb' }));
    const p = file(`${lines.join('\n')}\n`, '.jsonl');
    const sample = (await readSample(p, 'jsonl', { maxBytes: 200 })).toString();
    expect(sample.endsWith('\n')).toBe(true);
    expect(sample.length).toBeLessThanOrEqual(200);
    const parsedLines = sample.trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(parsedLines.map((o) => o.i)).toEqual(Array.from({ length: parsedLines.length }, (_, i) => i));
  });
  it('refuses a bad limit', async () => {
    await expect(readSample(file('a'), 'csv', { maxBytes: 0 })).rejects.toThrow(/positive/);
  });
  it('reports a missing file', async () => {
    await expect(readSample(path.join(dir, 'nope.csv'), 'csv')).rejects.toThrow(/ENOENT/);
  });
});

function parquetFile(footer: Buffer, body = Buffer.alloc(100, 1), magic = 'PAR1', lengthOverride?: number): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32LE(lengthOverride ?? footer.length);
  return Buffer.concat([Buffer.from('PAR1'), body, footer, len, Buffer.from(magic, 'latin1')]);
}

describe('Parquet footer', () => {
  it('extracts the last 8 + footer_length bytes', async () => {
    const footer = Buffer.from(Array.from({ length: 300 }, (_, i) => i % 251));
    const bytes = parquetFile(footer, Buffer.alloc(5000, 9));
    const p = file(bytes, '.parquet');
    const sample = await readSample(p, 'parquet');
    expect(sample.length).toBe(308);
    expect(sample.subarray(0, 300)).toEqual(footer);
    expect(sample.subarray(-4).toString('latin1')).toBe('PAR1');
    expect(sample.readUInt32LE(300)).toBe(300);
    expect(sample).toEqual(bytes.subarray(bytes.length - 308));
  });
  it('is not limited by maxBytes', async () => {
    const footer = Buffer.alloc(3000, 4);
    const p = file(parquetFile(footer), '.parquet');
    expect((await readSample(p, 'parquet', { maxBytes: 100 })).length).toBe(3008);
  });
  it('refuses a file without the PAR1 magic', async () => {
    const p = file(parquetFile(Buffer.alloc(10), undefined, 'PAR2'), '.parquet');
    await expect(readSample(p, 'parquet')).rejects.toThrow(/not a Parquet file .*PAR1/);
    const csv = file('a,b\n1,2\n3,4\n5,6\n', '.parquet');
    await expect(readSample(csv, 'parquet')).rejects.toThrow(SampleError);
  });
  it('refuses encrypted footers, tiny files and impossible lengths', async () => {
    await expect(readSample(file(parquetFile(Buffer.alloc(10), undefined, 'PARE'), '.parquet'), 'parquet')).rejects.toThrow(/encrypted/);
    await expect(readSample(file('PAR1', '.parquet'), 'parquet')).rejects.toThrow(/too small/);
    await expect(readSample(file(parquetFile(Buffer.alloc(10), Buffer.alloc(0), 'PAR1', 999_999), '.parquet'), 'parquet')).rejects.toThrow(/corrupt/);
    expect(() => parquetFooterLength(Buffer.from([0, 0, 0, 0, 0x50, 0x41, 0x52, 0x31]), 100)).toThrow(/corrupt/);
  });
  it('reads the length little-endian', () => {
    const tail = Buffer.from([0x01, 0x02, 0x00, 0x00, 0x50, 0x41, 0x52, 0x31]);
    expect(parquetFooterLength(tail, 10_000)).toBe(0x0201);
  });
});

// ── Sampling across the file ──────────────────────────────────────────────────────────────────────

describe('spreadLayout', () => {
  it('reads a file within the budget whole, and only the head for a budget under 512 KiB', () => {
    expect(spreadLayout(1000, 4096)).toEqual({ head: 1000, middle: [] });
    expect(spreadLayout(10_000_000, 256 * 1024)).toEqual({ head: 256 * 1024, middle: [] });
  });
  it('splits 4 MiB into a 1 MiB head, 16 middle ranges of 160 KiB with equal gaps, and a 512 KiB tail', () => {
    const size = 100_000_000;
    const layout = spreadLayout(size, 4 << 20);
    expect(layout.head).toBe(1 << 20);
    expect(layout.tail).toEqual({ start: size - (512 << 10), end: size });
    expect(layout.middle).toHaveLength(16);
    expect(layout.middle.every((r) => r.end - r.start === 160 << 10)).toBe(true);
    const edges = [layout.head, ...layout.middle.flatMap((r) => [r.start, r.end]), layout.tail!.start];
    const gaps = edges.flatMap((e, i) => (i % 2 === 0 ? [edges[i + 1] - e] : []));
    expect(Math.max(...gaps) - Math.min(...gaps)).toBeLessThanOrEqual(1);
    const total = layout.head + layout.middle.reduce((n, r) => n + r.end - r.start, 0) + (512 << 10);
    expect(total).toBe(4 << 20);
  });
  it('uses fewer, smaller ranges (at least 64 KiB) for a smaller budget', () => {
    const layout = spreadLayout(5 << 20, 1 << 20);
    expect(layout.middle).toHaveLength(10);
    expect(layout.middle[0].end - layout.middle[0].start).toBe(Math.floor((640 << 10) / 10));
    expect(layout.middle.at(-1)!.end).toBeLessThanOrEqual(layout.tail!.start);
  });
});

/** CSV text and the byte offsets at which its records start (the first, 0, included). */
function csvWithStarts(rows: string[][], eol = '\n', quote = (c: string) => (/[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)) {
  const starts = [0];
  const lines = rows.map((row) => row.map(quote).join(',') + eol);
  for (const line of lines) starts.push(starts[starts.length - 1] + Buffer.byteLength(line));
  const text = lines.join('');
  return { text, buf: b(text), starts: new Set(starts) };
}

describe('alignCsvRange', () => {
  it('drops a short range whose quotes all come before its first line break (found by the property test, seed -838133451)', () => {
    // From the file `…\n"a ,","\n, ,\n\n","a…`: the first break sits inside the quoted field, so `, ,` is no record.
    expect(alignCsvRange(b('"a ,","\n, ,\n'), { delimiter: ',', fields: 3 })).toBeUndefined();
    // A long range with no quote at all is still read as whole records.
    const plain = b(`x,y,z\n${'1,2,3\n'.repeat(1000)}`);
    expect(alignCsvRange(plain, { delimiter: ',', fields: 3 })).toEqual({ start: 6, end: plain.length });
  });

  const rows = Array.from({ length: 200 }, (_, i) => [String(i), i % 3 === 0 ? `two\nlines, "quoted"\n${i}` : `plain ${i}`, i % 5 === 0 ? 'a,b\n1,2' : 'x']);
  for (const eol of ['\n', '\r\n']) {
    it(`starts and ends every middle range on a record boundary, whatever byte it starts at (quoted line breaks, ${JSON.stringify(eol)})`, () => {
      const { buf, starts } = csvWithStarts(rows, eol);
      const shape = { delimiter: ',', fields: 3 };
      let aligned = 0;
      for (let from = 1; from < buf.length - 300; from += 7) {
        const range = alignCsvRange(buf.subarray(from, from + 300), shape);
        if (!range) continue;
        aligned++;
        expect(starts.has(from + range.start), `start from ${from}`).toBe(true);
        expect(starts.has(from + range.end), `end from ${from}`).toBe(true);
      }
      expect(aligned).toBeGreaterThan(100);
    });
  }
  it('takes the records up to the end of the file at eof, a last record without a line break included', () => {
    const text = 'a,b\n1,"x\ny"\n2,z';
    const range = alignCsvRange(b(text).subarray(5), { delimiter: ',', fields: 2 }, {}, true)!;
    expect(b(text).subarray(5).subarray(range.start, range.end).toString()).toBe('2,z');
  });
  it('drops a range inside one giant quoted field (its lines do not have the field count)', () => {
    const giant = `1,"${'some prose here\n'.repeat(1000)}",end\n2,b,c\n`;
    expect(alignCsvRange(b(giant).subarray(100, 5000), { delimiter: ',', fields: 3 })).toBeUndefined();
    // Reaching past the field's end, the quoted reading stands and the next record is found.
    const tail = b(giant).subarray(giant.length - 200);
    const range = alignCsvRange(tail, { delimiter: ',', fields: 3 }, {}, true)!;
    expect(tail.subarray(range.start, range.end).toString()).toBe('2,b,c\n');
  });
  it('drops a range without a line break, or one whose records do not have the field count', () => {
    expect(alignCsvRange(b('abc,def'), { delimiter: ',', fields: 2 })).toBeUndefined();
    expect(alignCsvRange(b('x\n1,2,3\n4,5,6\n'), { delimiter: ',', fields: 2 })).toBeUndefined();
  });
});

describe('csvHeadShape', () => {
  it('finds the delimiter that splits every record alike, with or without a header', () => {
    expect(csvHeadShape(b('id,note\n1,"a;b\nc"\n2,x\n'))).toEqual([{ delimiter: ',', fields: 2 }]);
    expect(csvHeadShape(b('1;2;3\n4;5;6\n'))).toEqual([{ delimiter: ';', fields: 3 }]);
    expect(csvHeadShape(b('a\tb\n1\t2\n'), { delimiter: '\t' })).toEqual([{ delimiter: '\t', fields: 2 }]);
    // Decimal commas under `;`: both read alike, and a range must agree under both.
    expect(csvHeadShape(b('1,5;2,5\n3,5;4,5\n'))).toEqual([
      { delimiter: ',', fields: 3 },
      { delimiter: ';', fields: 2 },
    ]);
    expect(csvHeadShape(b('one\ntwo\n'))).toEqual([]);
    expect(csvHeadShape(b('a,b\n1,2,3\n'))).toEqual([]);
  });
});

describe('spreadSample and readSample across the file', () => {
  const rowsOf = (n: number) => Array.from({ length: n }, (_, i) => [String(i), i % 4 === 0 ? `note ${i}\nwith, a "break"` : `note ${i}`, String(i % 10)]);

  it('samples head, middle ranges and tail of a large CSV into one CSV of whole records from the file', async () => {
    const rows = rowsOf(100_000);
    const { text } = csvWithStarts([['id', 'note', 'n'], ...rows], '\r\n');
    const p = file(text);
    const sample = await readSample(p, 'csv', { maxBytes: 1 << 20 });
    expect(text.length).toBeGreaterThan(2 << 20);
    expect(sample.length).toBeLessThanOrEqual(1 << 20);
    const parsed = parse(sample, { columns: true, record_delimiter: '\r\n' }) as { id: string; note: string; n: string }[];
    const ids = parsed.map((r) => Number(r.id));
    expect(parsed.filter((r) => JSON.stringify([r.id, r.note, r.n]) !== JSON.stringify(rows[Number(r.id)]))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(ids.at(-1)).toBe(rows.length - 1); // the tail
    expect(ids.some((id) => id > rows.length / 3 && id < (rows.length * 2) / 3)).toBe(true); // the middle
  });

  it('samples a CSV without a header alike', async () => {
    const rows = rowsOf(60_000);
    const p = file(csvWithStarts(rows).text);
    const parsed = parse(await readSample(p, 'csv', { maxBytes: 1 << 20 })) as string[][];
    expect(parsed[0]).toEqual(rows[0]);
    expect(parsed.filter((r) => JSON.stringify(r) !== JSON.stringify(rows[Number(r[0])]))).toEqual([]);
    expect(parsed.at(-1)).toEqual(rows.at(-1));
  });

  it('keeps the head of a file with one giant record and drops the ranges inside it', async () => {
    const p = file(`id,note,n\n1,"${'prose\n'.repeat(400_000)}",x\n2,b,c\n3,d,e`);
    expect((await readSample(p, 'csv', { maxBytes: 1 << 20 })).toString()).toBe('id,note,n\n2,b,c\n3,d,e');
  });

  it('samples JSONL across the file', async () => {
    const lines = Array.from({ length: 60_000 }, (_, i) => JSON.stringify({ i, s: 'a\nb "c"' }));
    const p = file(`${lines.join('\n')}\n`, '.jsonl');
    const sample = (await readSample(p, 'jsonl', { maxBytes: 1 << 20 })).toString();
    const got = sample.trimEnd().split('\n').map((l) => JSON.parse(l) as { i: number });
    expect(got.filter((o) => JSON.stringify(o) !== lines[o.i])).toEqual([]);
    expect(got.at(-1)!.i).toBe(59_999);
    expect(got.some((o) => o.i > 20_000 && o.i < 40_000)).toBe(true);
    expect(alignJsonlRange(b('{"a":1}\n{"a":2}\n{"a"'))).toEqual({ start: 8, end: 16 });
    expect(alignJsonlRange(b('1}\n{"a":2}'), true)).toEqual({ start: 3, end: 10 });
    expect(alignJsonlRange(b('{"a":1}'))).toBeUndefined();
  });

  it('property: DuckDB reads the sample of a random CSV with quoted line breaks into records of the file only', async () => {
    const duck = await DuckDBInstance.create(':memory:');
    const c = await duck.connect();
    const read = async (text: string) => {
      const p = file(text);
      const rows = (await c.runAndReadAll(
        "SELECT * FROM read_csv($p, delim=',', quote='\"', escape='\"', header=false, auto_detect=false, columns={'a': 'VARCHAR', 'b': 'VARCHAR', 'c': 'VARCHAR'})",
        { p },
      )).getRows();
      return rows.map((r) => JSON.stringify(r));
    };
    const cell = fc.stringMatching(/^[a-z ",\n]{0,6}$/);
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(cell, { minLength: 3, maxLength: 3 }), { minLength: 2, maxLength: 40 }),
          fc.array(fc.nat(), { minLength: 1, maxLength: 8 }),
          fc.boolean(),
          fc.boolean(),
          async (rows, cuts, toEof, sniff) => {
            const { text, buf } = csvWithStarts(rows, '\n', (x) => (/[",\n]/.test(x) || x === '' ? `"${x.replace(/"/g, '""')}"` : x));
            const points = [...new Set(cuts.map((n) => n % buf.length))].sort((x, y) => x - y);
            const head = buf.subarray(0, csvSampleEnd(buf.subarray(0, points[0])));
            if (head.length === 0) return;
            const ranges = points.slice(1).flatMap((at, i) => (i % 2 === 0 ? [{ bytes: buf.subarray(points[i], at), eof: false }] : []));
            if (toEof) ranges.push({ bytes: buf.subarray(points.at(-1)!), eof: true });
            const sample = spreadSample('csv', head, ranges, sniff ? {} : { delimiter: ',' });
            if (!sample) return;
            const records = new Set(await read(text));
            expect((await read(sample.toString())).filter((record) => !records.has(record))).toEqual([]);
          },
        ),
        { numRuns: 200 },
      );
    } finally {
      c.closeSync();
      duck.closeSync();
    }
  }, 60_000);
});
