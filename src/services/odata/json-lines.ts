import fs from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { isNotFoundError } from '../../core/files.ts';

const NEWLINE = 10;
const COMMA = 44;
/** How often a reader that caught up with the writer looks for more rows. */
const POLL_MS = 2;
const MIN_READ_BYTES = 64 * 1024;
/** Page buffers kept for reuse, and the largest kept. */
const POOLED_BUFFERS = 4;
const MAX_POOLED_BYTES = 16 * 1024 * 1024;

/**
 * Buffers for page text, reused once the response that sent them has closed: pages of megabytes
 * allocated and dropped one after another would have the garbage collector walk the heap for each
 * few of them.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];

  take(bytes: number): Buffer {
    const at = this.free.findIndex((b) => b.length >= bytes);
    if (at >= 0) return this.free.splice(at, 1)[0];
    return Buffer.allocUnsafeSlow(Math.max(MIN_READ_BYTES, bytes));
  }

  give(buffer: Buffer): void {
    if (buffer.length > MAX_POOLED_BYTES) return;
    this.free.push(buffer);
    if (this.free.length > POOLED_BUFFERS) this.free.sort((a, b) => b.length - a.length).pop();
  }
}

/**
 * The text of a page: whole rows of JSON one after another, each followed by a comma (its newline,
 * replaced); row r ends at `ends[r]`. The buffer comes from a pool; `release` gives it back.
 */
export class PageText {
  buffer: Buffer;
  length = 0;
  rows = 0;
  ends = new Int32Array(1024);

  constructor(
    private readonly pool: BufferPool,
    bytes: number,
  ) {
    this.buffer = pool.take(bytes);
  }

  /** The first `rows` rows, joined by commas. */
  text(rows: number): Buffer {
    return this.buffer.subarray(0, rows === 0 ? 0 : this.ends[rows - 1]);
  }

  /** Room for `bytes` more. */
  reserve(bytes: number): void {
    if (this.buffer.length - this.length >= bytes) return;
    const grown = this.pool.take(Math.max(this.buffer.length * 2, this.length + bytes));
    this.buffer.copy(grown, 0, 0, this.length);
    this.pool.give(this.buffer);
    this.buffer = grown;
  }

  clear(): void {
    this.length = 0;
    this.rows = 0;
  }

  release(): void {
    this.pool.give(this.buffer);
  }

  /** Counts the whole rows among `bytes` new bytes, up to `want` of them, and keeps only those. */
  addRows(bytes: number, want: number): number {
    const view = this.buffer.subarray(0, this.length + bytes);
    let found = 0;
    for (let at = view.indexOf(NEWLINE, this.length); at >= 0 && found < want; at = view.indexOf(NEWLINE, at + 1)) {
      if (this.rows === this.ends.length) {
        const grown = new Int32Array(this.rows * 2);
        grown.set(this.ends);
        this.ends = grown;
      }
      view[at] = COMMA;
      this.ends[this.rows++] = at;
      found++;
    }
    if (found > 0) this.length = this.ends[this.rows - 1] + 1;
    return found;
  }
}

/**
 * A JSON-lines file (one object per line, as DuckDB's JSON writer writes them) read while it is
 * written: the writer only appends, so every whole line seen is final. `written` settles when the
 * writer is done; a reader that catches up waits for more.
 */
export class JsonLinesFile {
  /** Bytes of whole rows delivered so far: reading starts here. */
  offset = 0;
  private opening?: Promise<fs.FileHandle>;
  private bytesPerRow = 256;
  private done = false;
  private failure?: { error: unknown };
  private readonly settled: Promise<void>;

  constructor(
    private readonly path: string,
    written: Promise<void>,
  ) {
    this.settled = written.then(
      () => void (this.done = true),
      (error: unknown) => void (this.failure = { error }),
    );
  }

  /** The writer's end: resolves when it finished, rejects with its error. */
  async written(): Promise<void> {
    await this.settled;
    if (this.failure) throw this.failure.error;
  }

  /**
   * Appends up to `want` whole rows to the page, starting `skip` bytes past `offset`; waits while the
   * writer is behind. Fewer than `want` only when the writer has finished and no row is left.
   */
  async readInto(page: PageText, want: number, skip = 0): Promise<number> {
    let rows = 0;
    let position = this.offset + skip;
    let least = MIN_READ_BYTES;
    for (;;) {
      if (this.failure) throw this.failure.error;
      // Whether the writer was done before this read: then a read that comes up short is the end.
      const done = this.done;
      const ask = Math.max(least, Math.ceil((want - rows) * this.bytesPerRow * 1.1));
      page.reserve(ask);
      const start = page.length;
      const read = await this.read(page.buffer, start, ask, position, done);
      const found = page.addRows(read, want - rows);
      if (found > 0) {
        rows += found;
        position += page.length - start;
        this.bytesPerRow = (page.length - start) / found;
      }
      if (rows === want) return rows;
      if (read === ask) {
        if (found === 0) least = ask * 2; // a row longer than what was read
        continue;
      }
      if (done) {
        if (read > page.length - start) throw new Error(`${this.path} ends without a newline`);
        return rows;
      }
      await Promise.race([this.settled, sleep(POLL_MS)]);
    }
  }

  /** Closes and removes the file. */
  async close(): Promise<void> {
    // A failed open was the failure of the read that started it: then there is no handle to close.
    const [opened] = await Promise.allSettled([this.opening]);
    this.opening = undefined;
    try {
      if (opened.status === 'fulfilled') await opened.value?.close();
    } finally {
      await fs.rm(this.path, { force: true });
    }
  }

  /** `writerDone`: whether the writer had finished before this read, so the file must exist. */
  private async read(buffer: Buffer, at: number, length: number, position: number, writerDone: boolean): Promise<number> {
    // One open at a time, so a second reader never opens (and leaks) a second handle.
    this.opening ??= fs.open(this.path, 'r');
    let handle: fs.FileHandle;
    try {
      handle = await this.opening;
    } catch (error) {
      this.opening = undefined;
      // The writer creates the file when it starts (it may have started and finished since this open failed).
      if (isNotFoundError(error) && !writerDone) return 0;
      throw error;
    }
    return (await handle.read(buffer, at, length, position)).bytesRead;
  }
}
