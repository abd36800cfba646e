import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { bomLength, CsvRecordScanner, type CsvDialect } from './csv-lines.ts';

/** One piece of an upload, in a file of its own, that starts and ends at record boundaries. */
export interface Chunk {
  /** 0-based position in the upload. */
  index: number;
  path: string;
  /** Bytes at the top of the chunk file that are not part of the upload here: the repeated CSV header. */
  headerBytes: number;
  /** Newlines in that repeated header (0 for the first chunk, which holds the header itself). */
  headerLines: number;
  /** The upload's own bytes in this chunk. */
  bytes: number;
  /** The last chunk of the upload (known once the upload has ended). */
  last: boolean;
}

export interface ChunkerOptions {
  /** An existing directory for the chunk files. */
  dir: string;
  /** Extension of the chunk files (`.csv`, `.jsonl`). */
  ext: string;
  /**
   * How records end: `csv` (DuckDB's CSV rules, with `dialect`), `lines` (every newline: JSONL), or
   * `none` (one chunk: formats that cannot be split, like Parquet).
   */
  records: 'csv' | 'lines' | 'none';
  dialect?: CsvDialect;
  /** CSV: the first record is a header; it is repeated at the top of every later chunk. */
  header?: boolean;
  /**
   * A chunk is cut at the first record end that makes it at least this many bytes long (or 1/16 of
   * what came before it, when that is more, so a huge upload does not become thousands of files).
   */
  chunkBytes: number;
  /** The first chunk's size, when it is to differ (a small one starts the conversion sooner). */
  firstChunkBytes?: number;
  /** The most bytes the upload may have. */
  maxBytes: number;
  tooLarge: () => Error;
  /** Called when a chunk file is complete, in order. */
  onChunk: (chunk: Chunk) => void;
  /** Asked before each piece is written; once false, the rest of the upload is read and discarded. */
  keep?: () => boolean;
}

const NL = 0x0a;
/** A header longer than this is not repeated: the upload is not split. */
const MAX_HEADER_BYTES = 1 << 20;
const WRITE_BUFFER = 8 << 20;

/**
 * Writes an upload to record-aligned chunk files while it arrives, handing each complete chunk on
 * (for conversion) while the rest still streams in. The chunks' upload bytes, concatenated, are the
 * upload byte for byte; later chunks of a CSV with a header start with a copy of it, so each chunk
 * reads like a file of its own. Where record boundaries cannot be vouched for (a CSV dialect with
 * multi-byte characters, a header spanning lines, input DuckDB would refuse), the rest stays in one
 * chunk. Returns the upload's size.
 */
export async function splitIntoChunks(body: AsyncIterable<Buffer | Uint8Array | string>, o: ChunkerOptions): Promise<number> {
  const keep = o.keep ?? (() => true);
  const csv = o.records === 'csv' && o.dialect !== undefined ? new CsvRecordScanner(o.dialect) : undefined;
  let splitting = o.records === 'lines' || csv !== undefined;
  let needHeader = csv !== undefined && o.header !== false;
  const headerParts: Buffer[] = [];
  let headerLength = 0;
  let header = Buffer.alloc(0);
  let headerLines = 0;

  let total = 0;
  let first = true;
  let held: Buffer | undefined; // the first bytes, held until a byte order mark can be recognised
  let chunkStart = 0; // absolute offset of the current chunk's first upload byte
  let index = 0;
  let current = open(0, undefined);
  let discarding = false;

  function open(i: number, top: Buffer | undefined) {
    const file = path.join(o.dir, `chunk-${String(i).padStart(5, '0')}${o.ext}`);
    const stream = fs.createWriteStream(file, { highWaterMark: WRITE_BUFFER });
    // A failed write surfaces in write() or close(); this keeps it from being an unhandled 'error'.
    const failed = new Promise<never>((_, reject) => stream.once('error', reject));
    failed.catch(() => undefined);
    if (top && top.length > 0) stream.write(top);
    return { index: i, file, stream, failed, headerBytes: top?.length ?? 0, headerLines: top ? headerLines : 0, bytes: 0 };
  }

  async function put(data: Buffer) {
    if (data.length === 0) return;
    current.bytes += data.length;
    if (!current.stream.write(data)) await Promise.race([once(current.stream, 'drain'), current.failed]);
  }

  async function close(last = false) {
    const c = current;
    c.stream.end();
    await Promise.race([once(c.stream, 'close'), c.failed]);
    return { index: c.index, path: c.file, headerBytes: c.headerBytes, headerLines: c.headerLines, bytes: c.bytes, last } satisfies Chunk;
  }

  /** Bytes the current chunk should reach before it is cut. */
  const target = () => (index === 0 && o.firstChunkBytes !== undefined ? o.firstChunkBytes : Math.max(o.chunkBytes, Math.floor(chunkStart / 16)));

  async function feed(buf: Buffer, base: number) {
    let pos = 0;
    let written = 0;
    if (base === 0 && csv) pos = bomLength(buf); // DuckDB skips it; it is not part of the header
    const headerFrom = pos;
    while (splitting) {
      let want: number;
      if (needHeader) want = pos;
      else {
        want = chunkStart + target() - 1 - base; // the newline that makes the chunk `target` bytes long, or any after it
        if (want >= buf.length) {
          csv?.next(buf, pos, Infinity); // follow the quotes to the end of the buffer
          break;
        }
      }
      let cut: number;
      if (csv) cut = csv.next(buf, pos, Math.max(want, pos));
      else {
        const nl = buf.indexOf(NL, Math.max(want, pos));
        cut = nl === -1 ? -1 : nl + 1;
      }
      if (cut === -1) {
        if (csv?.lost) splitting = false;
        break;
      }
      pos = cut;
      if (needHeader) {
        needHeader = false;
        headerParts.push(buf.subarray(headerFrom, cut));
        header = Buffer.concat(headerParts);
        headerParts.length = 0;
        headerLines = 1;
        // A header with a quoted newline in it is not repeated (DuckDB reads one after a byte order mark differently).
        if (header.indexOf(NL) !== header.length - 1) splitting = false;
        continue;
      }
      await put(buf.subarray(written, cut));
      written = cut;
      o.onChunk(await close());
      chunkStart = base + cut;
      current = open(++index, header);
    }
    if (needHeader && splitting) {
      headerParts.push(buf.subarray(headerFrom));
      headerLength += buf.length - headerFrom;
      if (headerLength > MAX_HEADER_BYTES) splitting = false;
    }
    await put(buf.subarray(written));
  }

  try {
    for await (const piece of body) {
      const buf = typeof piece === 'string' ? Buffer.from(piece) : Buffer.isBuffer(piece) ? piece : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
      total += buf.length;
      if (total > o.maxBytes) throw o.tooLarge();
      if (discarding || !keep()) {
        discarding = true;
        continue;
      }
      if (first && csv) {
        // A byte order mark split over two pieces would be taken for data: hold the first bytes back.
        held = held ? Buffer.concat([held, buf]) : buf;
        if (held.length < 3) continue;
        first = false;
        const all = held;
        held = undefined;
        await feed(all, 0);
        continue;
      }
      first = false;
      await feed(buf, total - buf.length);
    }
    if (held && !discarding) await feed(held, 0);
    if (discarding) current.stream.destroy();
    else if (current.index > 0 && current.bytes === 0) {
      // The last cut fell at the very end: no chunk of only a header. (The chunk before it was
      // handed on as not the last; that only decides how it is converted.)
      await close();
      await fs.promises.rm(current.file, { force: true });
    } else o.onChunk(await close(true));
  } catch (error) {
    current.stream.destroy();
    throw error;
  }
  return total;
}
