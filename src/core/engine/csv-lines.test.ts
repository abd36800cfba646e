import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.ts';
import { countFileNewlines, countNewlines, csvDialect, csvRecordLine, CsvRecordScanner, jsonlRecordLine, type CsvDialect } from './csv-lines.ts';

const dir = tempDir('lakeport-csv-lines-');
afterAll(() => dir.remove());
let n = 0;
const file = (content: string | Buffer) => {
  const p = path.join(dir.dir, `f${n++}.csv`);
  fs.writeFileSync(p, content);
  return p;
};

/**
 * The record-ending newlines of `bytes`, one byte at a time, written from DuckDB's transition table
 * (csv_state_machine_cache.cpp) independently of the scanner. `invalid`: DuckDB reaches its invalid
 * state (the scanner must give up there); `unmodelled`: a delimiter right after a carriage return,
 * which the scanner may give up at (it is read on as an ordinary byte here).
 */
function reference(bytes: Buffer, { delimiter: d, quote: q, escape: e }: CsvDialect): { ends: number[]; invalid: boolean; unmodelled: boolean } {
  type S = 'std' | 'delim' | 'rec' | 'cr' | 'quoted' | 'unquoted' | 'escape' | 'blank';
  let s: S = 'rec';
  const ends: number[] = [];
  let unmodelled = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    const fieldStart = s === 'delim' || s === 'rec' || s === 'cr' || s === 'blank';
    if (s === 'quoted') {
      if (b === q) s = 'unquoted';
      else if (b === e && e !== q) s = 'escape';
    } else if (s === 'escape') {
      if (b !== q && b !== e) return { ends, invalid: true, unmodelled };
      s = 'quoted';
    } else if (s === 'unquoted') {
      if (b === 0x0a) s = 'rec';
      else if (b === 0x0d) s = 'cr';
      else if (b === d) s = 'delim';
      else if (b === q && e === q) s = 'quoted';
      else return { ends, invalid: true, unmodelled };
    } else if (s === 'cr' && b === d) {
      unmodelled = true;
      s = 'std';
    } else if (b === d) s = 'delim';
    else if (b === 0x0a) s = 'rec';
    else if (b === 0x0d) s = 'cr';
    else if (b === q && fieldStart) s = 'quoted';
    else if (b === 0x20 && fieldStart && s !== 'blank') s = 'blank';
    else s = 'std';
    if (s === 'rec') ends.push(i + 1);
  }
  return { ends, invalid: false, unmodelled };
}

/**
 * The boundaries the scanner reports when `bytes` arrive in the given pieces and, like the chunker,
 * it is asked each time for the first boundary at least `gap` bytes after the last one.
 */
function scanned(bytes: Buffer, dialect: CsvDialect, cuts: number[], gap = 0): { ends: number[]; lost: boolean } {
  const scanner = new CsvRecordScanner(dialect);
  const ends: number[] = [];
  let base = 0;
  let last = 0;
  for (const [from, to] of pieces(bytes.length, cuts)) {
    const buf = Buffer.from(bytes.subarray(from, to)); // a buffer of its own, as from a socket
    let pos = 0;
    for (;;) {
      const end = scanner.next(buf, pos, Math.max(pos, last + gap - base));
      if (end === -1) break;
      ends.push(base + end);
      last = base + end;
      pos = end;
    }
    base += buf.length;
  }
  return { ends, lost: scanner.lost };
}

/** The boundaries `scanned` should report, from all of them. */
function wanted(all: number[], gap: number): number[] {
  const ends: number[] = [];
  let last = 0;
  for (const end of all) {
    if (end - 1 >= last + gap) {
      ends.push(end);
      last = end;
    }
  }
  return ends;
}

function pieces(length: number, cuts: number[]): [number, number][] {
  const points = [...new Set([0, ...cuts.map((c) => c % (length + 1)), length])].sort((a, b) => a - b);
  return points.slice(1).map((to, i) => [points[i], to]);
}

const DIALECTS: CsvDialect[] = [
  { delimiter: 0x2c, quote: 0x22, escape: 0x22 }, // , " "
  { delimiter: 0x3b, quote: 0x22, escape: 0x5c }, // ; " \
  { delimiter: 0x09, quote: 0x27, escape: 0x22 }, // \t ' "
  { delimiter: 0x20, quote: 0x22, escape: 0x22 }, // space-delimited
];

/** CSV-ish text: mostly the characters that matter, with some ordinary ones. */
const csvish = fc
  .array(fc.constantFrom('a', '1', ',', ';', '\t', ' ', '"', "'", '\\', '\n', '\r', '\r\n', 'xyz', '""', '"a,b"'), { maxLength: 200 })
  .map((parts) => Buffer.from(parts.join('')));

describe('CsvRecordScanner', () => {
  it('finds exactly the newlines DuckDB ends records at, whatever pieces the bytes arrive in', () => {
    fc.assert(
      fc.property(csvish, fc.constantFrom(...DIALECTS), fc.array(fc.nat(), { maxLength: 6 }), fc.constantFrom(0, 1, 7, 50), (bytes, dialect, cuts, gap) => {
        const reference_ = reference(bytes, dialect);
        const expected = wanted(reference_.ends, gap);
        const got = scanned(bytes, dialect, cuts, gap);
        // Every boundary reported is right; where it gives up, it reports none after.
        expect(got.ends).toEqual(expected.slice(0, got.ends.length));
        if (reference_.invalid) expect(got.lost).toBe(true);
        if (!reference_.invalid && !reference_.unmodelled) expect(got).toEqual({ ends: expected, lost: false });
        if (!got.lost) expect(got.ends).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
  });

  it('walks byte by byte through densely quoted data with the same answer', () => {
    for (const dialect of [DIALECTS[0], DIALECTS[1]]) {
      const [header, row] = dialect.escape === dialect.quote ? ['"x","y","z","n"\n', '"a","b ""c""","d\ne",1\r\n'] : ['"x";"y";"z";"n"\n', '"a";"b \\"c\\"";"d\ne";1\r\n'];
      const bytes = Buffer.from(`${header}${row.repeat(5000)}`);
      const all = reference(bytes, dialect);
      expect(all).toMatchObject({ invalid: false, unmodelled: false });
      expect(all.ends).toHaveLength(5001);
      for (const gap of [0, 1000, 20_000]) expect(scanned(bytes, dialect, [7, 65536, 65537, 100_000], gap).ends).toEqual(wanted(all.ends, gap));
    }
  });

  it('reports only boundaries at or after the wanted index, and resumes from where it stopped', () => {
    const bytes = Buffer.from('h\n"1\n2"\n3\n4\n');
    const scanner = new CsvRecordScanner(DIALECTS[0]);
    expect(scanner.next(bytes, 0, 3)).toBe(8); // not 2 (before 3), not 5 (inside quotes)
    expect(scanner.next(bytes, 8, 8)).toBe(10);
    expect(scanner.next(bytes, 10, 100)).toBe(-1);
  });

  it('gives up where DuckDB reaches its invalid state', () => {
    const scanner = new CsvRecordScanner(DIALECTS[0]);
    expect(scanner.next(Buffer.from('a,"b"c\n1,2\n'), 0, 0)).toBe(-1);
    expect(scanner.lost).toBe(true);
    expect(scanner.next(Buffer.from('3,4\n'), 0, 0)).toBe(-1);
  });
});

describe('csvDialect', () => {
  it("uses DuckDB's defaults and refuses characters of more than one byte", () => {
    expect(csvDialect({})).toEqual({ delimiter: 0x2c, quote: 0x22, escape: 0x22 });
    expect(csvDialect({ quote: "'" })).toEqual({ delimiter: 0x2c, quote: 0x27, escape: 0x22 });
    expect(csvDialect({ delimiter: '§' })).toBeUndefined();
    expect(csvDialect({ delimiter: '\n' })).toBeUndefined();
  });
});

describe('csvRecordLine', () => {
  it('counts newlines inside quoted fields as lines, not records', async () => {
    const p = file('id,note\n1,"a\nb\nc"\n2,x\n3,y\n');
    expect(await csvRecordLine(p, 1)).toBe(1);
    expect(await csvRecordLine(p, 2)).toBe(2);
    expect(await csvRecordLine(p, 3)).toBe(5);
    expect(await csvRecordLine(p, 4)).toBe(6);
  });

  it('reads a quote in the middle of a field as DuckDB does: an ordinary character', async () => {
    const p = file('id,note\n1,5"\n2,x\n3,"y\nz"\n4,w\n');
    expect(await csvRecordLine(p, 3)).toBe(3);
    expect(await csvRecordLine(p, 5)).toBe(6);
  });

  it('follows an escape that is not the quote, a space before a quote, CRLF and a byte order mark', async () => {
    expect(await csvRecordLine(file('a;b\n1;"x\\"\ny"\n2;z\n'), 3, { delimiter: ';', escape: '\\' })).toBe(4);
    expect(await csvRecordLine(file('a,b\n1, "x\ny"\n2,z\n'), 3)).toBe(4);
    expect(await csvRecordLine(file('a,b\r\n1,"x\r\ny"\r\n2,z\r\n'), 3)).toBe(4);
    expect(await csvRecordLine(file(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('"a",b\n1,"x\ny"\n2,z\n')])), 3)).toBe(4);
  });

  it('answers fast for a record far into a large file', async () => {
    const p = file(`id\n${Array.from({ length: 200_000 }, (_, i) => `${i}`).join('\n')}\n`);
    const start = performance.now();
    expect(await csvRecordLine(p, 150_001)).toBe(150_001);
    expect(performance.now() - start).toBeLessThan(5000);
  });
});

describe('jsonlRecordLine and newline counts', () => {
  it('skips blank lines as DuckDB does, but counts them as lines', async () => {
    const p = file('{"a":1}\n\n  \n{"a":2}\r\n{"a":3}\n');
    expect(await jsonlRecordLine(p, 1)).toBe(1);
    expect(await jsonlRecordLine(p, 2)).toBe(4);
    expect(await jsonlRecordLine(p, 3)).toBe(5);
  });

  it('counts newlines in buffers and files', async () => {
    expect(countNewlines(Buffer.from('a\nb\n\nc'))).toBe(3);
    expect(countNewlines(Buffer.from('a\nb\n\nc'), 2, 4)).toBe(1);
    expect(await countFileNewlines(file('h\n1\n2\n'), 2)).toBe(2);
  });
});
