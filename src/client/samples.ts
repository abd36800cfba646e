/**
 * Samples for upload negotiation: what the client sends in a contract's `sample` parts.
 *
 * - CSV / JSONL: a prefix of the file (at most `maxBytes`, 1 MiB by default) cut after the last complete
 *   record. A file no larger than the limit is sent whole.
 * - Parquet: the footer — the last `8 + footer_length` bytes (footer, its 4-byte little-endian length,
 *   and the trailing `PAR1` magic).
 *
 * The record-boundary and footer logic are pure functions over buffers (`csvSampleEnd`,
 * `jsonlSampleEnd`, `parquetFooterLength`); `readSample` only adds the file reads.
 */
import { open } from 'node:fs/promises';
import path from 'node:path';

export type FileFormat = 'csv' | 'jsonl' | 'parquet';

export const FILE_FORMATS: readonly FileFormat[] = ['csv', 'jsonl', 'parquet'];

/** Default sample limit for text formats: 1 MiB. */
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
  /** Largest text sample in bytes (default 1 MiB). Parquet footers are not limited by it. */
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
    const prefix = Buffer.alloc(maxBytes);
    await readFully(handle, prefix, 0);
    const end = format === 'csv' ? csvSampleEnd(prefix, options) : jsonlSampleEnd(prefix);
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
