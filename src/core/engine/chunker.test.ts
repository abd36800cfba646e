import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.ts';
import { splitIntoChunks, type Chunk, type ChunkerOptions } from './chunker.ts';
import { csvDialect } from './csv-lines.ts';

const root = tempDir('lakeport-chunker-');
afterAll(() => root.remove());
let n = 0;

/** `bytes` as a body arriving in pieces that end at `cuts`. */
async function* body(bytes: Buffer, cuts: number[] = []) {
  const points = [...new Set([0, ...cuts.map((c) => c % (bytes.length + 1)), bytes.length])].sort((a, b) => a - b);
  for (let i = 1; i < points.length; i++) yield Buffer.from(bytes.subarray(points[i - 1], points[i]));
}

async function split(bytes: Buffer | string, options: Partial<ChunkerOptions> = {}, cuts: number[] = []) {
  const dir = path.join(root.dir, `d${n++}`);
  fs.mkdirSync(dir);
  const chunks: Chunk[] = [];
  const data = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  const size = await splitIntoChunks(body(data, cuts), {
    dir,
    ext: '.csv',
    records: 'csv',
    dialect: csvDialect({}),
    header: true,
    chunkBytes: 10,
    maxBytes: 1 << 30,
    tooLarge: () => new Error('too large'),
    onChunk: (c) => chunks.push(c),
    ...options,
  });
  const files = chunks.map((c) => fs.readFileSync(c.path));
  return {
    size,
    chunks,
    files: files.map((f) => f.toString()),
    /** The upload's own bytes of each chunk. */
    own: files.map((f, i) => f.subarray(chunks[i].headerBytes)),
  };
}

describe('splitIntoChunks', () => {
  it('cuts a CSV at record boundaries after the chunk size, repeating the header on top of later chunks', async () => {
    const r = await split('id,note\n1,aaaaaaaaaa\n2,bb\n3,cccccccccccc\n4,d\n');
    expect(r.files).toEqual(['id,note\n1,aaaaaaaaaa\n', 'id,note\n2,bb\n3,cccccccccccc\n', 'id,note\n4,d\n']);
    expect(r.chunks.map((c) => [c.index, c.headerBytes, c.headerLines, c.bytes, c.last])).toEqual([
      [0, 0, 0, 21, false],
      [1, 8, 1, 20, false],
      [2, 8, 1, 4, true],
    ]);
    expect(r.size).toBe(45);
  });

  it('never cuts inside a quoted field, even one full of newlines that straddles the chunk size', async () => {
    const file = 'id,note\n1,"x\ny\nz\n,\n"",\n"\n2,"a\r\nb"\r\n3,c\n';
    const r = await split(file, { chunkBytes: 9 });
    expect(r.files).toEqual(['id,note\n1,"x\ny\nz\n,\n"",\n"\n', 'id,note\n2,"a\r\nb"\r\n', 'id,note\n3,c\n']);
  });

  it('keeps CRLF line ends whole and the byte order mark only at the top of the first chunk', async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const file = Buffer.concat([bom, Buffer.from('"id",n\r\n1,aaaaaaaaaaaa\r\n2,b\r\n')]);
    const r = await split(file, {}, [1, 2]); // the mark itself arrives in pieces
    expect(r.own.map((b) => b.toString('latin1'))).toEqual([Buffer.concat([bom, Buffer.from('"id",n\r\n1,aaaaaaaaaaaa\r\n')]).toString('latin1'), '2,b\r\n']);
    expect(r.files[1]).toBe('"id",n\r\n2,b\r\n');
    expect(r.chunks[1]).toMatchObject({ headerBytes: 8, headerLines: 1 });
  });

  it('a file smaller than a chunk is one chunk, byte for byte', async () => {
    const file = 'id,note\n1,a\n2,b\n';
    const r = await split(file, { chunkBytes: 1 << 20 });
    expect(r.files).toEqual([file]);
    expect(r.chunks).toEqual([expect.objectContaining({ index: 0, headerBytes: 0, headerLines: 0, bytes: file.length, last: true })]);
  });

  it('a record ending exactly at the chunk size ends the chunk there; one byte less moves the cut to the next record', async () => {
    // 'id\n' + '123456\n' is exactly 10 bytes.
    expect((await split('id\n123456\n78\n9\n', { chunkBytes: 10 })).files).toEqual(['id\n123456\n', 'id\n78\n9\n']);
    expect((await split('id\n12345\n678\n9\n', { chunkBytes: 10 })).files).toEqual(['id\n12345\n678\n', 'id\n9\n']);
    expect((await split('id\n1234567\n89\n', { chunkBytes: 10 })).files).toEqual(['id\n1234567\n', 'id\n89\n']);
    // The last record ends exactly at the chunk size and the end of the file: no chunk of only a header after it.
    expect((await split('id\n123456\n', { chunkBytes: 10 })).files).toEqual(['id\n123456\n']);
  });

  it('without a header nothing is repeated; JSONL is cut at any newline; other formats stay whole', async () => {
    expect((await split('1,aaaaaaaaaa\n2,b\n', { header: false })).files).toEqual(['1,aaaaaaaaaa\n', '2,b\n']);
    const jsonl = '{"a":"x\\ny"}\n{"a":"zzzzzzzzzzzz"}\r\n{"a":1}';
    const j = await split(jsonl, { records: 'lines', dialect: undefined, header: undefined, ext: '.jsonl' });
    expect(j.files).toEqual(['{"a":"x\\ny"}\n', '{"a":"zzzzzzzzzzzz"}\r\n', '{"a":1}']);
    expect(j.chunks.map((c) => c.headerBytes)).toEqual([0, 0, 0]);
    expect((await split('PAR1\nxxxxxxxxxxxxxxxxxxxx\nPAR1', { records: 'none', dialect: undefined })).files).toHaveLength(1);
  });

  it('keeps the rest whole where boundaries cannot be vouched for', async () => {
    // A header with a quoted newline, a dialect of multi-byte characters, data DuckDB would refuse.
    expect((await split('"i\nd",n\n1,aaaaaaaaaaaa\n2,b\n')).files).toHaveLength(1);
    expect((await split('id§n\n1§aaaaaaaaaaaa\n2§b\n', { dialect: csvDialect({ delimiter: '§' }) })).files).toHaveLength(1);
    const r = await split('id,n\n1,aaaaaaaaaaaa\n2,"b"x\n3,cccccccccccccc\n4,d\n');
    expect(r.files).toEqual(['id,n\n1,aaaaaaaaaaaa\n', 'id,n\n2,"b"x\n3,cccccccccccccc\n4,d\n']);
  });

  it('refuses more than the maximum size, and discards the rest once told to', async () => {
    await expect(split('id\n1\n2\n3\n', { maxBytes: 5 }, [2, 4])).rejects.toThrow('too large');
    let keep = true;
    const chunks: number[] = [];
    const { size } = await split(
      'id\n1,aaaaaaaaaaa\n2,bbbbbbbbbbbb\n3,c\n',
      {
        maxBytes: 1 << 20,
        keep: () => keep,
        onChunk: (c) => {
          chunks.push(c.index);
          keep = false;
        },
      },
      [14, 20, 28],
    );
    expect(size).toBe(36);
    expect(chunks).toEqual([0]);
  });

  it('the chunks, without their repeated headers, are the upload byte for byte, cut only at record ends', async () => {
    const field = fc.oneof(fc.constantFrom('', 'a', '12', 'x y'), fc.constantFrom('"q"', '"a,b"', '"l1\nl2"', '"say ""hi"""', '"\r\n"'));
    const record = fc.array(field, { minLength: 2, maxLength: 2 }).map((f) => f.join(','));
    await fc.assert(
      fc.asyncProperty(fc.array(record, { maxLength: 30 }), fc.constantFrom('\n', '\r\n'), fc.nat({ max: 40 }), fc.array(fc.nat(), { maxLength: 5 }), async (records, eol, size, cuts) => {
        const file = Buffer.from(['h1,h2', ...records].map((r) => r + eol).join(''));
        const r = await split(file, { chunkBytes: size + 1 }, cuts);
        expect(Buffer.concat(r.own).equals(file)).toBe(true);
        let offset = 0;
        for (const [i, own] of r.own.entries()) {
          if (i > 0) expect(r.files[i].startsWith(`h1,h2${eol}`)).toBe(true);
          offset += own.length;
          // A cut is at the end of some record of the file.
          const ends = ['h1,h2', ...records].reduce<number[]>((acc, rec) => [...acc, (acc.at(-1) ?? 0) + Buffer.byteLength(rec + eol)], []);
          expect(offset === file.length || ends.includes(offset)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
