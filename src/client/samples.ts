/**
 * Samples for upload negotiation: what the client sends in a contract's `sample` parts.
 *
 * - CSV / JSONL: a file no larger than the budget (`maxBytes`, 1 MiB by default) is sent whole. A larger
 *   one is sampled across the file (`spreadLayout`): its head (a quarter of the budget, with the header),
 *   up to 16 evenly spaced middle ranges (five eighths of the budget between them) and its tail (an
 *   eighth), each cut to whole records and concatenated into one valid CSV / JSONL sample. A range
 *   where no record boundary can be established soundly (`alignCsvRange`) is left out. Below 512 KiB
 *   the whole budget is the head.
 * - Parquet: the footer — the last `8 + footer_length` bytes (footer, its 4-byte little-endian length,
 *   and the trailing `PAR1` magic).
 *
 * The record-boundary and footer logic are pure functions over buffers (`csvSampleEnd`,
 * `jsonlSampleEnd`, `csvHeadShape`, `alignCsvRange`, `alignJsonlRange`, `parquetFooterLength`);
 * `readSample` only adds the file reads.
 */
import { open } from 'node:fs/promises';
import path from 'node:path';

export type FileFormat = 'csv' | 'jsonl' | 'parquet';

export const FILE_FORMATS: readonly FileFormat[] = ['csv', 'jsonl', 'parquet'];

/** Default sample budget for text formats: 1 MiB (head 256 KiB, 10 middle ranges of 64 KiB, tail 128 KiB). */
export const DEFAULT_SAMPLE_BYTES = 1024 * 1024;

export interface DetectedFormat {
  type: FileFormat;
  /** Set for `.tsv` files (a tab). */
  delimiter?: string;
}

const EXTENSIONS: Record<string, DetectedFormat> = {
  '.csv': { type: 'csv' },
  '.tsv': { type: 'csv', delimiter: '\t' },
  '.jsonl': { type: 'jsonl' },
  '.ndjson': { type: 'jsonl' },
  '.parquet': { type: 'parquet' },
};

/** The format a file name's extension implies (case-insensitive), or `undefined` when it implies none. */
export function detectFormat(fileName: string): DetectedFormat | undefined {
  const found = EXTENSIONS[path.extname(fileName).toLowerCase()];
  return found ? { ...found } : undefined;
}

/** The `content-type` a file of this format is written with. */
export function contentTypeFor(format: FileFormat): string {
  switch (format) {
    case 'csv':
      return 'text/csv';
    case 'jsonl':
      return 'application/x-ndjson';
    case 'parquet':
      return 'application/vnd.apache.parquet';
  }
}

export class SampleError extends Error {
  override name = 'SampleError';
}

export interface CsvDialect {
  /**
   * Field separator; one byte. Not given, the server sniffs it: a sample is then cut as if any of
   * DuckDB's candidates (`,` `;` tab `|`) separated fields, so a quoted line break after any of them
   * is not taken for the end of a record.
   */
  delimiter?: string;
  /** Quote character; one byte. Default `"`. */
  quote?: string;
  /** Escape character inside quoted fields; one byte. Default: the quote (RFC 4180 `""`). */
  escape?: string;
}

export interface SampleOptions extends CsvDialect {
  /** Text sample budget in bytes (default 1 MiB). Parquet footers are not limited by it. */
  maxBytes?: number;
}

const UTF8_BOM = [0xef, 0xbb, 0xbf];
const LF = 0x0a;
const CR = 0x0d;

function singleByte(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const bytes = Buffer.from(value, 'utf8');
  if (bytes.length !== 1) throw new SampleError(`the CSV ${name} must be a single one-byte character, got ${JSON.stringify(value)}`);
  return bytes[0];
}

/** The delimiters DuckDB's sniffer tries: `,` `;` tab `|`. */
const SNIFFED_DELIMITERS = [0x2c, 0x3b, 0x09, 0x7c];

function hasBom(buf: Uint8Array): boolean {
  return buf.length >= 3 && buf[0] === UTF8_BOM[0] && buf[1] === UTF8_BOM[1] && buf[2] === UTF8_BOM[2];
}

/**
 * The length of the longest prefix of `buf` that ends with a complete CSV record (just after its line
 * break), or 0 when `buf` holds no complete record.
 *
 * A line break is `\n`, `\r\n` or a lone `\r`, and ends a record only outside a quoted field. A field is
 * quoted when it starts with the quote character; inside it, a doubled quote (or the escape character
 * followed by any byte) is part of the value. A quote in the middle of an unquoted field is a literal,
 * as RFC 4180 readers treat it. A UTF-8 byte-order mark at the very start is skipped for parsing.
 */
export function csvSampleEnd(buf: Uint8Array, dialect: CsvDialect = {}): number {
  const delimiters = new Uint8Array(256);
  if (dialect.delimiter === undefined || dialect.delimiter === '') for (const b of SNIFFED_DELIMITERS) delimiters[b] = 1;
  else delimiters[singleByte('delimiter', dialect.delimiter, 0x2c)] = 1;
  const quote = singleByte('quote', dialect.quote, 0x22);
  const escape = singleByte('escape', dialect.escape, quote);
  let end = 0;
  let inQuotes = false;
  let fieldStart = true;
  let i = hasBom(buf) ? 3 : 0;
  while (i < buf.length) {
    const byte = buf[i];
    if (inQuotes) {
      if (escape !== quote && byte === escape) {
        i += 2; // the escaped byte belongs to the value, whatever it is
        continue;
      }
      if (byte === quote) {
        if (escape === quote && buf[i + 1] === quote) {
          i += 2; // "" is one literal quote
          continue;
        }
        inQuotes = false;
      }
      i += 1;
      continue;
    }
    if (byte === LF) {
      end = i + 1;
      fieldStart = true;
    } else if (byte === CR) {
      // `\r\n` ends after the `\n`; a lone `\r` (old Mac files) ends the record by itself. A `\r` that is
      // the last byte we have may be the first half of a `\r\n`, so it is not taken as an end.
      if (i + 1 >= buf.length) break;
      if (buf[i + 1] === LF) i += 1;
      end = i + 1;
      fieldStart = true;
    } else if (delimiters[byte] === 1) {
      fieldStart = true;
    } else if (byte === quote && fieldStart) {
      inQuotes = true;
      fieldStart = false;
    } else {
      fieldStart = false;
    }
    i += 1;
  }
  return end;
}

/** The length of the prefix of `buf` up to and including its last `\n`, or 0 when there is none. */
export function jsonlSampleEnd(buf: Uint8Array): number {
  return buf.lastIndexOf(LF) + 1;
}

// ── Sampling across the file ────────────────────────────────────────────────────────────────────────

/** Below this budget the whole budget is the head (too little to spread). */
const SPREAD_MIN_BYTES = 512 * 1024;
const MAX_MIDDLE_RANGES = 16;
const MIN_RANGE_BYTES = 64 * 1024;

export interface ByteRange {
  start: number;
  end: number;
}

export interface SpreadLayout {
  /** Bytes of the head, `[0, head)`. */
  head: number;
  middle: ByteRange[];
  /** The tail, ending at the file's end; none when the budget is too small to spread. */
  tail?: ByteRange;
}

/**
 * Where a file of `size` bytes (larger than `budget`) is sampled from: the head `[0, budget/4)`,
 * N = min(16, ⌊(5/8·budget) / 64 KiB⌋) middle ranges of ⌊(5/8·budget) / N⌋ bytes each, evenly spaced
 * with equal gaps between the head and the tail, and the tail, the last ⌊budget/8⌋ bytes. With a budget
 * under 512 KiB the head is the whole budget and nothing else is read.
 */
export function spreadLayout(size: number, budget: number): SpreadLayout {
  if (budget < SPREAD_MIN_BYTES || size <= budget) return { head: Math.min(size, budget), middle: [] };
  const head = Math.floor(budget / 4);
  const tail = Math.floor(budget / 8);
  const middleBytes = budget - head - tail;
  const n = Math.min(MAX_MIDDLE_RANGES, Math.floor(middleBytes / MIN_RANGE_BYTES));
  const length = Math.floor(middleBytes / n);
  const tailStart = size - tail;
  const gap = (tailStart - head - n * length) / (n + 1);
  const middle = Array.from({ length: n }, (_, i) => {
    const start = head + Math.floor(gap * (i + 1)) + i * length;
    return { start, end: start + length };
  });
  return { head, middle, tail: { start: tailStart, end: size } };
}

interface DialectBytes {
  d: number;
  q: number;
  e: number;
}

// DuckDB's CSV reader states that decide where records end (the client's copy of the rules in
// core/engine/csv-lines.ts: a quote opens a quoted field only at a field's start, or after one space).
const FIELD = 0; // at the start of a field: after a delimiter or a record's end
const BLANK = 1; // one space at the start of a field
const PLAIN = 2; // inside an unquoted field
const QUOTED = 3; // inside a quoted field
const CLOSED = 4; // just after the quote that may close a quoted field
const ESCAPED = 5; // just after an escape inside a quoted field (escape ≠ quote)

interface CsvWalk {
  /** Positions just after each complete record's line break. */
  ends: number[];
  /** DuckDB's reader would go invalid, or a checked record has another field count. */
  refuted: boolean;
  /** The field count checked against (the first record's, when none was given). */
  fields: number;
}

/**
 * Reads the records of `buf[from..to)` with DuckDB's rules, from a record's start, or (`quoted`) from
 * inside a quoted field — the first record is then partial and its field count is not checked. Every
 * other complete record must have `fields` fields (`-1`: as many as the first). Stops at the first
 * refutation. At `eof` the buffer's end ends the last record.
 */
function walkCsv(buf: Uint8Array, from: number, to: number, { d, q, e }: DialectBytes, fields: number, quoted: boolean, eof: boolean): CsvWalk {
  const ends: number[] = [];
  let s = quoted ? QUOTED : FIELD;
  let count = 1;
  let check = !quoted;
  const refuted = () => ({ ends, refuted: true, fields });
  const endRecord = (at: number): boolean => {
    if (check) {
      if (fields < 0) fields = count;
      else if (count !== fields) return false;
    }
    ends.push(at);
    count = 1;
    check = true;
    s = FIELD;
    return true;
  };
  let i = from;
  while (i < to) {
    const b = buf[i];
    if (s === QUOTED) {
      if (b === q) s = CLOSED;
      else if (b === e && e !== q) s = ESCAPED;
      i++;
      continue;
    }
    if (s === ESCAPED) {
      if (b !== q && b !== e) return refuted();
      s = QUOTED;
      i++;
      continue;
    }
    if (s === CLOSED && b !== d && b !== LF && b !== CR) {
      if (b !== q || e !== q) return refuted();
      s = QUOTED; // "" inside a quoted field
      i++;
      continue;
    }
    if (b === d) {
      count++;
      s = FIELD;
    } else if (b === LF) {
      if (!endRecord(i + 1)) return refuted();
    } else if (b === CR) {
      if (i + 1 >= to) {
        if (!eof) break; // maybe the first half of a CRLF
        if (!endRecord(i + 1)) return refuted();
      } else if (buf[i + 1] === LF) {
        if (!endRecord(i + 2)) return refuted();
        i++;
      } else {
        if (buf[i + 1] === d) return refuted(); // DuckDB refuses a delimiter after a lone CR
        if (!endRecord(i + 1)) return refuted();
      }
    } else if (s === FIELD || s === BLANK) {
      s = b === q ? QUOTED : b === 0x20 && s === FIELD ? BLANK : PLAIN;
    } else {
      s = PLAIN;
    }
    i++;
  }
  if (eof && i >= to) {
    const last = ends.length > 0 ? ends[ends.length - 1] : from;
    if (s === QUOTED || s === ESCAPED) return refuted(); // an unterminated quoted field
    if (last < to && !endRecord(to)) return refuted();
  }
  return { ends, refuted: false, fields };
}

/** The position just after the first line break (`\n`, `\r\n` or a lone `\r`) in `buf`, or -1. */
function firstBreak(buf: Uint8Array): number {
  for (let i = 0; i < buf.length; i++) {
    if (buf[i] === LF) return i + 1;
    if (buf[i] === CR) {
      if (i + 1 >= buf.length) return -1;
      return buf[i + 1] === LF ? i + 2 : i + 1;
    }
  }
  return -1;
}

/** The first position in both ascending lists, or -1. */
function firstShared(a: number[], b: number[]): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) return a[i];
    if (a[i] < b[j]) i++;
    else j++;
  }
  return -1;
}

export interface CsvShape {
  delimiter: string;
  /** Fields in every record of the head. */
  fields: number;
}

function dialectBytes(dialect: CsvDialect, delimiter: string): DialectBytes {
  const q = singleByte('quote', dialect.quote, 0x22);
  return { d: singleByte('delimiter', delimiter, 0x2c), q, e: singleByte('escape', dialect.escape, q) };
}

/**
 * How the head of a CSV file (whole records; a BOM is skipped) reads: for the delimiter given, or for
 * each of DuckDB's candidates (`,` `;` tab `|`) that splits every record of the head into the same
 * number (more than one) of fields, that number. Empty when none does: the file is then not sampled
 * past its head.
 */
export function csvHeadShape(head: Uint8Array, dialect: CsvDialect = {}): CsvShape[] {
  const given = dialect.delimiter !== undefined && dialect.delimiter !== '';
  const candidates = given ? [dialect.delimiter!] : SNIFFED_DELIMITERS.map((b) => String.fromCharCode(b));
  const shapes: CsvShape[] = [];
  for (const delimiter of candidates) {
    const walk = walkCsv(head, hasBom(head) ? 3 : 0, head.length, dialectBytes(dialect, delimiter), -1, false, false);
    if (!walk.refuted && walk.ends.length > 0 && (given || walk.fields > 1)) shapes.push({ delimiter, fields: walk.fields });
  }
  return shapes;
}

/**
 * The whole records in `buf`, bytes read from the middle (or, `eof`, the end) of a CSV file whose
 * records all have `shape.fields` fields: `[start, end)` within `buf`, or `undefined` when no record
 * boundary can be established soundly.
 *
 * A line break inside a file either ends a record or sits inside a quoted field. From the first one,
 * `buf` is read both ways with DuckDB's rules. A reading that goes invalid, or gives a record of another
 * field count, is refuted; what stands decides. If both readings stand, the first record end they
 * share is certain (from there on they are one reading); if the quoted reading never leaves its field
 * (the bytes hold no quote that could close it), the unquoted one is taken only for a long range with
 * no quote at all (MIN_QUOTELESS_RANGE).
 */
/**
 * A middle range whose quoted reading never closes is read as plain only when it is at least this long
 * and holds no quote byte: a quoted field spanning all of it, whose lines also have the file's field
 * count, is assumed not to occur. Shorter ones, or ones with a quote, are left out of the sample.
 */
const MIN_QUOTELESS_RANGE = 4096;

export function alignCsvRange(buf: Uint8Array, shape: CsvShape, dialect: CsvDialect = {}, eof = false): ByteRange | undefined {
  const first = firstBreak(buf);
  if (first === -1) return undefined;
  const bytes = dialectBytes(dialect, shape.delimiter);
  const plain = walkCsv(buf, first, buf.length, bytes, shape.fields, false, eof);
  const quoted = walkCsv(buf, first, buf.length, bytes, shape.fields, true, eof);
  let start: number;
  let ends: number[];
  if (!plain.refuted && (quoted.refuted || quoted.ends.length === 0)) {
    // The quoted reading never left its field: nothing here refutes it unless the range is long and
    // holds no quote at all (a quoted field would then have to span all of it: assumed not to).
    if (!quoted.refuted && !(buf.length >= MIN_QUOTELESS_RANGE && !buf.includes(bytes.q))) return undefined;
    start = first;
    ends = plain.ends;
  } else if (plain.refuted && !quoted.refuted) {
    start = quoted.ends[0];
    ends = quoted.ends;
  } else if (!plain.refuted) {
    start = firstShared(plain.ends, quoted.ends);
    ends = plain.ends;
  } else {
    return undefined;
  }
  const end = ends.length > 0 ? ends[ends.length - 1] : -1;
  return start >= 0 && end > start ? { start, end } : undefined;
}

/** The whole JSONL records in `buf`, read from the middle (or, `eof`, the end) of a file: a line break always ends one. */
export function alignJsonlRange(buf: Uint8Array, eof = false): ByteRange | undefined {
  const start = buf.indexOf(LF) + 1;
  const end = eof ? buf.length : buf.lastIndexOf(LF) + 1;
  return start > 0 && end > start ? { start, end } : undefined;
}

/**
 * One sample from the head (cut to whole records) and the ranges read further on (the last may end at
 * the file's end, `eof`): each range cut to its whole records (`alignCsvRange` for every delimiter the
 * head reads alike with, which must agree; `alignJsonlRange`), the ranges that hold none left out.
 * `undefined` for a CSV head that no delimiter reads with a constant field count.
 */
export function spreadSample(format: 'csv' | 'jsonl', head: Buffer, ranges: { bytes: Buffer; eof: boolean }[], dialect: CsvDialect = {}): Buffer | undefined {
  const shapes = format === 'csv' ? csvHeadShape(head, dialect) : [];
  if (format === 'csv' && shapes.length === 0) return undefined;
  const pieces = [head];
  for (const { bytes, eof } of ranges) {
    let cut: ByteRange | undefined;
    if (format === 'jsonl') cut = alignJsonlRange(bytes, eof);
    else {
      const cuts = shapes.map((shape) => alignCsvRange(bytes, shape, dialect, eof));
      cut = cuts.every((c) => c && c.start === cuts[0]!.start && c.end === cuts[0]!.end) ? cuts[0] : undefined;
    }
    if (cut) pieces.push(bytes.subarray(cut.start, cut.end));
  }
  // A tail whose last record has no line break ends the sample; one before it would join two records.
  for (let i = 0; i < pieces.length - 1; i++) {
    const piece = pieces[i];
    const last = piece[piece.length - 1];
    if (last !== LF && last !== CR) pieces[i] = Buffer.concat([piece, Buffer.from('\n')]);
  }
  return Buffer.concat(pieces);
}

const PAR1 = Buffer.from('PAR1', 'latin1');
const PARE = Buffer.from('PARE', 'latin1');

/**
 * Reads the footer length from the last 8 bytes of a Parquet file (`<u32 LE footer length>PAR1`) and
 * checks it against the file size. Throws a `SampleError` for anything that is not a plain Parquet file.
 */
export function parquetFooterLength(tail: Uint8Array, fileSize: number, fileName = 'file'): number {
  if (fileSize < 12 || tail.length < 8) {
    throw new SampleError(`${fileName}: not a Parquet file (${fileSize} bytes is too small for one)`);
  }
  const last8 = Buffer.from(tail.buffer, tail.byteOffset + tail.length - 8, 8);
  const magic = last8.subarray(4, 8);
  if (magic.equals(PARE)) {
    throw new SampleError(`${fileName}: encrypted Parquet footers (PARE) are not supported`);
  }
  if (!magic.equals(PAR1)) {
    throw new SampleError(`${fileName}: not a Parquet file (it does not end with the PAR1 magic bytes)`);
  }
  const footerLength = last8.readUInt32LE(0);
  // The file also starts with PAR1 (4 bytes), so the footer can be at most size - 12 bytes long.
  if (footerLength === 0 || footerLength > fileSize - 12) {
    throw new SampleError(`${fileName}: corrupt Parquet file (footer length ${footerLength} does not fit in ${fileSize} bytes)`);
  }
  return footerLength;
}

function formatBytes(n: number): string {
  if (n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/**
 * The sample of one file, as sent in a contract's `sample` part. `format` is the file's format (see
 * `detectFormat`); for CSV, `options` carries the dialect so quoted line breaks are recognised.
 */
export async function readSample(filePath: string, format: FileFormat, options: SampleOptions = {}): Promise<Buffer> {
  const maxBytes = options.maxBytes ?? DEFAULT_SAMPLE_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) throw new SampleError(`the sample limit must be a positive whole number of bytes, got ${maxBytes}`);
  const name = path.basename(filePath);
  const handle = await open(filePath, 'r');
  try {
    const { size } = await handle.stat();
    if (format === 'parquet') {
      const tail = Buffer.alloc(Math.min(8, size));
      await readFully(handle, tail, Math.max(0, size - 8));
      const footerLength = parquetFooterLength(tail, size, name);
      const sample = Buffer.alloc(footerLength + 8);
      await readFully(handle, sample, size - sample.length);
      return sample;
    }
    if (size <= maxBytes) {
      const whole = Buffer.alloc(size);
      await readFully(handle, whole, 0);
      return whole;
    }
    const layout = spreadLayout(size, maxBytes);
    const prefix = Buffer.alloc(maxBytes);
    await readFully(handle, prefix, 0);
    const cut = (bytes: Buffer) => (format === 'csv' ? csvSampleEnd(bytes, options) : jsonlSampleEnd(bytes));
    if (layout.tail) {
      const headEnd = cut(prefix.subarray(0, layout.head));
      const ranges: { bytes: Buffer; eof: boolean }[] = [];
      for (const range of headEnd > 0 ? [...layout.middle, layout.tail] : []) {
        const bytes = Buffer.alloc(range.end - range.start);
        await readFully(handle, bytes, range.start);
        ranges.push({ bytes, eof: range.end === size });
      }
      const spread = headEnd > 0 ? spreadSample(format, prefix.subarray(0, headEnd), ranges, options) : undefined;
      if (spread) return spread;
    }
    // Head only: the budget is too small to spread, the head holds no whole record, or the CSV's shape is unclear.
    const end = cut(prefix);
    if (end === 0) {
      throw new SampleError(
        `${name}: no complete record in the first ${formatBytes(maxBytes)}; a single record is larger than the sample limit (raise it, e.g. --sample-bytes ${maxBytes * 4})`,
      );
    }
    return prefix.subarray(0, end);
  } finally {
    await handle.close();
  }
}

async function readFully(handle: Awaited<ReturnType<typeof open>>, into: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < into.length) {
    const { bytesRead } = await handle.read(into, done, into.length - done, position + done);
    if (bytesRead === 0) throw new SampleError('the file changed size while it was being sampled');
    done += bytesRead;
  }
}
