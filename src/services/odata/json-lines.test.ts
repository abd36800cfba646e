import { writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BufferPool, JsonLinesFile, PageText } from './json-lines.ts';

const MB = 1024 * 1024;
// Buffers are compared with === inside expect: when Object.is fails, toBe (even .not.toBe) deep-compares
// the two for its message, which for buffers of megabytes takes gigabytes of heap.

let dir: string;
let files = 0;
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'json-lines-'));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

/** A path in the temporary directory that no file has yet. */
const freshPath = () => path.join(dir, `rows-${files++}.json`);

const lines = (rows: unknown[]) => rows.map((row) => `${JSON.stringify(row)}\n`).join('');

/** Appends the pieces one after another, `pauseMs` before each (0: none); the first piece creates the file. */
async function write(file: string, pieces: (string | Buffer)[], pauseMs: number | number[] = 3): Promise<void> {
  for (const [i, piece] of (pieces.length ? pieces : ['']).entries()) {
    const pause = typeof pauseMs === 'number' ? pauseMs : (pauseMs[i % pauseMs.length] ?? 0);
    if (pause > 0) await sleep(pause);
    await fs.appendFile(file, piece);
  }
}

/** Cuts the text into pieces at the given byte positions (which may fall inside rows and characters). */
function cut(text: string, at: number[]): Buffer[] {
  const bytes = Buffer.from(text);
  const cuts = [...new Set(at.map((n) => n % (bytes.length + 1)))].sort((a, b) => a - b);
  return [...cuts, bytes.length].map((end, i) => bytes.subarray(i === 0 ? 0 : cuts[i - 1], end));
}

/**
 * Reads until a read comes up short, `wants[i]` rows at a time (round robin), as the cursor does:
 * the offset moves past the rows each read delivered. A shared page keeps growing; otherwise each
 * read gets a fresh page from the pool and gives it back. Returns the text of each read and the counts.
 */
async function readAll(file: JsonLinesFile, wants: number[], sharePage = false): Promise<{ texts: string[]; counts: number[] }> {
  const pool = new BufferPool();
  const shared = new PageText(pool, 16);
  const texts: string[] = [];
  const counts: number[] = [];
  for (let i = 0; ; i++) {
    const want = wants[i % wants.length];
    const page = sharePage ? shared : new PageText(pool, 16);
    const at = page.length;
    const before = page.rows;
    const rows = await file.readInto(page, want);
    counts.push(rows);
    expect(page.rows - before).toBe(rows);
    if (rows > 0) {
      file.offset += page.ends[before + rows - 1] + 1 - at;
      texts.push(page.buffer.subarray(at, page.ends[before + rows - 1]).toString());
    }
    if (!sharePage) page.release();
    if (rows < want) break;
  }
  if (sharePage) {
    // The shared page holds every row read, in order.
    expect(shared.text(shared.rows).toString()).toBe(texts.join(','));
  }
  return { texts, counts };
}

const parsed = (texts: string[]) => JSON.parse(`[${texts.join(',')}]`) as unknown[];

describe('BufferPool', () => {
  it('hands back a buffer it was given when it is large enough', () => {
    const pool = new BufferPool();
    const buffer = pool.take(100_000);
    expect(buffer.length).toBeGreaterThanOrEqual(100_000);
    pool.give(buffer);
    expect(pool.take(50_000) === buffer).toBe(true);
    // Taken, so no longer in the pool.
    expect(pool.take(50_000) === buffer).toBe(false);
    pool.give(buffer);
    expect(pool.take(200_000) === buffer).toBe(false);
  });

  it('keeps no buffer above 16 MB', () => {
    const pool = new BufferPool();
    const big = Buffer.allocUnsafeSlow(16 * MB + 1);
    pool.give(big);
    expect(pool.take(16 * MB + 1) === big).toBe(false);
    const limit = Buffer.allocUnsafeSlow(16 * MB);
    pool.give(limit);
    expect(pool.take(16 * MB) === limit).toBe(true);
  });

  it('keeps the 4 largest buffers', () => {
    const pool = new BufferPool();
    const buffers = [3, 1, 5, 2, 4].map((n) => Buffer.allocUnsafeSlow(n * 100_000));
    for (const buffer of buffers) pool.give(buffer);
    const [b3, , b5, b2, b4] = buffers;
    expect(pool.take(500_000) === b5).toBe(true);
    expect(pool.take(400_000) === b4).toBe(true);
    expect(pool.take(300_000) === b3).toBe(true);
    expect(pool.take(200_000) === b2).toBe(true);
    // The smallest was dropped: this one is new.
    const fresh = pool.take(100_000);
    expect(buffers.some((b) => b === fresh)).toBe(false);
  });
});

describe('PageText', () => {
  /** Copies `text` after the page's content (as a read would) and adds its rows. */
  const add = (page: PageText, text: string, want: number) => {
    const bytes = Buffer.from(text);
    page.reserve(bytes.length);
    bytes.copy(page.buffer, page.length);
    return page.addRows(bytes.length, want);
  };

  it('keeps whole rows up to the number wanted, their newlines turned into commas', () => {
    const page = new PageText(new BufferPool(), 64);
    expect(add(page, '{"a":1}\n{"a":2}\n{"a":', 5)).toBe(2);
    expect(page.rows).toBe(2);
    expect(page.length).toBe(16);
    expect(page.buffer.subarray(0, page.length).toString()).toBe('{"a":1},{"a":2},');
    expect(page.text(2).toString()).toBe('{"a":1},{"a":2}');
    expect(page.text(1).toString()).toBe('{"a":1}');
    expect(page.text(0).toString()).toBe('');
    // The partial row is not kept: the next read brings it again, whole.
    expect(add(page, '{"a":3}\n{"a":4}\n{"a":5}\n', 2)).toBe(2);
    expect(page.text(page.rows).toString()).toBe('{"a":1},{"a":2},{"a":3},{"a":4}');
    expect(add(page, '', 3)).toBe(0);
    expect(page.rows).toBe(4);
  });

  it('keeps its content when it grows, and counts past 1024 rows', () => {
    const pool = new BufferPool();
    const page = new PageText(pool, 16);
    const first = page.buffer;
    const rows = Array.from({ length: 3000 }, (_, i) => ({ i, pad: 'x'.repeat(i % 50) }));
    const text = lines(rows);
    // In pieces of about 20 KB, so the 64 KB buffer has to grow.
    for (let at = 0; at < text.length; ) {
      const end = Math.min(text.length, text.indexOf('\n', at + 20_000) + 1 || text.length);
      add(page, text.slice(at, end), Infinity);
      at = end;
    }
    expect(page.buffer === first).toBe(false);
    expect(page.rows).toBe(3000);
    expect(JSON.parse(`[${page.text(page.rows).toString()}]`)).toEqual(rows);
    // The outgrown buffer went back to the pool.
    expect(pool.take(first.length) === first).toBe(true);
  });

  it('clears to empty, and gives its buffer back on release', () => {
    const pool = new BufferPool();
    const page = new PageText(pool, 10);
    add(page, '{}\n{}\n', 10);
    page.clear();
    expect(page.rows).toBe(0);
    expect(page.length).toBe(0);
    expect(page.text(0).length).toBe(0);
    page.release();
    expect(pool.take(10) === page.buffer).toBe(true);
  });
});

describe('JsonLinesFile', () => {
  it('reads the rows in order while a writer appends them, from before the file exists', async () => {
    const rows = Array.from({ length: 40 }, (_, i) => ({ id: i, name: `row ${i}`, note: i % 3 ? 'a\nb "c"' : 'é😀' }));
    const text = lines(rows);
    const file = freshPath();
    // Pieces of 37 bytes cut rows (and characters) anywhere.
    const pieces = cut(text, Array.from({ length: Math.ceil(text.length / 37) }, (_, i) => i * 37));
    const written = write(file, pieces, 2);
    const source = new JsonLinesFile(file, written);
    const { texts, counts } = await readAll(source, [1, 7, 3, 2]);
    expect(parsed(texts)).toEqual(rows);
    // Every read but the last got what it asked for.
    expect(counts).toEqual([1, 7, 3, 2, 1, 7, 3, 2, 1, 7, 3, 2, 1, 0]);
    expect(source.offset).toBe(Buffer.byteLength(text));
    await source.close();
    await expect(fs.access(file)).rejects.toThrow();
  });

  it('reads into one page that grows, as a cursor reading several ranges does', async () => {
    const rows = Array.from({ length: 500 }, (_, i) => ({ id: i, text: 'y'.repeat(i) }));
    const file = freshPath();
    const text = lines(rows);
    const written = write(file, cut(text, [1000, 5000, 20_000, 50_000, 90_000]), 1);
    const source = new JsonLinesFile(file, written);
    const { texts } = await readAll(source, [100, 1, 250], true);
    expect(parsed(texts)).toEqual(rows);
    await source.close();
  });

  it('reads a row longer than a read whole', async () => {
    const rows = [{ id: 1 }, { id: 2, long: 'z'.repeat(300_000) }, { id: 3 }];
    const file = freshPath();
    const source = new JsonLinesFile(file, write(file, cut(lines(rows), [10, 70_000, 200_000])));
    const { texts } = await readAll(source, [2]);
    expect(parsed(texts)).toEqual(rows);
    await source.close();
  });

  it("fails with the writer's error", async () => {
    const file = freshPath();
    const error = new Error('query failed');
    let fail!: (error: Error) => void;
    const written = new Promise<void>((_, reject) => (fail = reject));
    const source = new JsonLinesFile(file, written);
    await fs.writeFile(file, '{"a":1}\n{"a":');
    const page = new PageText(new BufferPool(), 16);
    // Waits for the second row until the writer fails.
    const reading = source.readInto(page, 2);
    setTimeout(() => fail(error), 10);
    await expect(reading).rejects.toBe(error);
    await expect(source.readInto(page, 1)).rejects.toBe(error);
    await expect(source.written()).rejects.toBe(error);
    await source.close();
  });

  it("fails with the writer's error when the writer never created the file", async () => {
    const error = new Error('no such table');
    const source = new JsonLinesFile(freshPath(), Promise.reject(error));
    await expect(source.readInto(new PageText(new BufferPool(), 16), 10)).rejects.toBe(error);
  });

  it('reads the rows when the writer creates the file and finishes while a first open is failing', async () => {
    const file = freshPath();
    let finish!: () => void;
    const source = new JsonLinesFile(file, new Promise<void>((resolve) => (finish = resolve)));
    const page = new PageText(new BufferPool(), 16);
    const reading = source.readInto(page, 5);
    // The open (on libuv's pool) fails before the file exists; its failure is handled after the writer finished.
    const until = Date.now() + 20;
    while (Date.now() < until);
    writeFileSync(file, '{"a":1}\n{"a":2}\n');
    finish();
    expect(await reading).toBe(2);
    expect(parsed([page.text(2).toString()])).toEqual([{ a: 1 }, { a: 2 }]);
    await source.close();
  });

  it('fails on a file that ends without a newline once the writer finished', async () => {
    const file = freshPath();
    const source = new JsonLinesFile(file, write(file, ['{"a":1}\n{"a', '":2}'], 2));
    const page = new PageText(new BufferPool(), 16);
    expect(await source.readInto(page, 1)).toBe(1);
    source.offset += page.length;
    page.clear();
    await expect(source.readInto(page, 5)).rejects.toThrow(`${file} ends without a newline`);
    await source.close();
  });

  it('reads no rows from an empty file', async () => {
    const file = freshPath();
    await fs.writeFile(file, '');
    const source = new JsonLinesFile(file, Promise.resolve());
    const page = new PageText(new BufferPool(), 16);
    expect(await source.readInto(page, 10)).toBe(0);
    expect(page.rows).toBe(0);
    expect(page.length).toBe(0);
    await source.close();
  });

  it('starts `skip` bytes past the offset', async () => {
    const file = freshPath();
    await fs.writeFile(file, '{"a":1}\n{"a":2}\n{"a":3}\n{"a":4}\n');
    const source = new JsonLinesFile(file, Promise.resolve());
    source.offset = 8;
    const page = new PageText(new BufferPool(), 16);
    expect(await source.readInto(page, 1, 8)).toBe(1);
    expect(page.text(1).toString()).toBe('{"a":3}');
    // The offset is the caller's to move: reading again from the same place gives the same row.
    expect(await source.readInto(page, 5, 8)).toBe(2);
    expect(page.text(3).toString()).toBe('{"a":3},{"a":3},{"a":4}');
    expect(source.offset).toBe(8);
    await source.close();
  });

  it('reads back any rows, however the writer cuts them and the reader asks for them', async () => {
    const char = fc.oneof(fc.constantFrom('\n', '"', '\\', '\r', '\u2028', 'é', '€', '😀', ','), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }));
    const text = fc.string({ unit: char, maxLength: 40 });
    const row = fc.record({ id: fc.integer(), name: text, tags: fc.array(text, { maxLength: 3 }) }, { noNullPrototype: true });
    await fc.assert(
      fc.asyncProperty(
        fc.array(row, { maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.array(fc.constantFrom(0, 0, 1, 3), { minLength: 1, maxLength: 4 }),
        fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        async (rows, cuts, pauses, wants, sharePage) => {
          const file = freshPath();
          const source = new JsonLinesFile(file, write(file, cut(lines(rows), cuts), pauses));
          try {
            const { texts } = await readAll(source, wants, sharePage);
            expect(parsed(texts)).toEqual(rows);
          } finally {
            await source.written();
            await source.close();
          }
        },
      ),
      { numRuns: 50 },
    );
  });
});
