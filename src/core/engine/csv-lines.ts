import fs from 'node:fs';

/**
 * Where CSV records end, exactly as DuckDB's CSV reader sees it. DuckDB reports records; people read
 * lines; and an upload is cut into record-aligned chunks while it arrives — both need to know which
 * newlines end a record and which sit inside a quoted field.
 *
 * The states and transitions are DuckDB's own (csv_state_machine_cache.cpp): a quote opens a quoted
 * field only at the start of a field (after a delimiter, a newline, the start of the file, or one
 * space after those); inside a quoted field a doubled quote (escape = quote) or an escaped quote or
 * escape (escape ≠ quote) stays inside; a newline ends a record only outside quotes. A quote in the
 * middle of an unquoted field is an ordinary character.
 */

export interface CsvDialect {
  delimiter: number;
  quote: number;
  escape: number;
}

/**
 * The bytes of a dialect with DuckDB's defaults for what is not given (`,` `"` `"`; the escape stays
 * `"` even when another quote is given), or undefined when a character is not a single byte.
 */
export function csvDialect(options: { delimiter?: string; quote?: string; escape?: string }): CsvDialect | undefined {
  const byte = (text: string) => {
    const bytes = Buffer.from(text, 'utf8');
    return bytes.length === 1 ? bytes[0] : undefined;
  };
  const delimiter = byte(options.delimiter ?? ',');
  const quote = byte(options.quote ?? '"');
  const escape = byte(options.escape ?? '"');
  if (delimiter === undefined || quote === undefined || escape === undefined) return undefined;
  if (delimiter === NL || delimiter === CR || quote === NL || quote === CR || escape === NL || escape === CR) return undefined;
  return { delimiter, quote, escape };
}

const NL = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;

// DuckDB's CSV states (the subset that decides record boundaries). RECORD and INVALID come last so
// that one comparison finds both in the byte-by-byte loop.
const STANDARD = 0; // inside an unquoted field
const DELIMITER = 1; // just after a delimiter
const CARRIAGE = 2; // just after a carriage return
const QUOTED = 3; // inside a quoted field
const UNQUOTED = 4; // just after the quote that may close a quoted field
const ESCAPE = 5; // just after an escape inside a quoted field
const BLANK = 6; // one space at the start of a field
const RECORD = 7; // just after a newline that ends a record (and at the start of the file)
const INVALID = 8; // DuckDB's invalid state: it refuses the file, or repairs it in ways not modelled here
const STATES = 9;

/** The next state after byte `b` in state `s`. */
function step(s: number, b: number, d: number, q: number, e: number): number {
  switch (s) {
    case QUOTED:
      if (b === q) return UNQUOTED;
      if (b === e && e !== q) return ESCAPE;
      return QUOTED;
    case UNQUOTED:
      if (b === NL) return RECORD;
      if (b === CR) return CARRIAGE;
      if (b === d) return DELIMITER;
      if (b === q && e === q) return QUOTED;
      return INVALID;
    case ESCAPE:
      return b === q || b === e ? QUOTED : INVALID;
    case CARRIAGE:
      if (b === NL) return RECORD;
      if (b === CR) return CARRIAGE;
      if (b === d) return INVALID; // DuckDB refuses "\r" + delimiter (or starts a record there): not modelled
      if (b === q) return QUOTED;
      if (b === SPACE) return BLANK;
      return STANDARD;
    case DELIMITER:
    case RECORD:
      if (b === d) return DELIMITER;
      if (b === NL) return RECORD;
      if (b === CR) return CARRIAGE;
      if (b === q) return QUOTED;
      if (b === SPACE) return BLANK;
      return STANDARD;
    case BLANK:
      if (b === d) return DELIMITER;
      if (b === NL) return RECORD;
      if (b === CR) return CARRIAGE;
      if (b === q) return QUOTED;
      return STANDARD;
    default: // STANDARD, INVALID
      if (b === d) return DELIMITER;
      if (b === NL) return RECORD;
      if (b === CR) return CARRIAGE;
      return STANDARD;
  }
}

/**
 * DuckDB's CSV state machine fed incrementally, reporting record-ending newlines. It is exact for
 * files DuckDB reads; where DuckDB would refuse the file or its behaviour is not modelled (the
 * invalid state, a delimiter right after a carriage return) it gives up: `lost` becomes true and no
 * further boundary is reported. Callers then keep the rest of the file in one piece.
 *
 * It jumps from quote to quote with indexOf (memchr), so a file with few quotes costs next to
 * nothing; where quotes are dense it walks byte by byte through a transition table instead.
 */
export class CsvRecordScanner {
  private state = RECORD;
  /** True once the scanner can no longer vouch for record boundaries. */
  lost = false;
  private readonly d: number;
  private readonly q: number;
  private readonly e: number;
  private readonly table: Uint8Array;

  constructor(dialect: CsvDialect) {
    this.d = dialect.delimiter;
    this.q = dialect.quote;
    this.e = dialect.escape;
    this.table = new Uint8Array(STATES * 256);
    for (let s = 0; s < STATES; s++) for (let b = 0; b < 256; b++) this.table[s * 256 + b] = step(s, b, this.d, this.q, this.e);
  }

  /**
   * Consumes `buf[from..]` up to and including the first record-ending newline at an index ≥ `want`,
   * and returns the index just after it; or consumes the whole buffer and returns -1. Bytes before
   * `want` are consumed without reporting their boundaries. Call again from the returned index.
   */
  next(buf: Buffer, from: number, want: number): number {
    if (this.lost) return -1;
    const { q, e, d } = this;
    const end = buf.length;
    let s = this.state;
    let pos = from;
    let hops = 0;
    while (pos < end) {
      // Many quotes close together: one indexOf per quote costs more than looking at every byte.
      if (++hops > 64 && hops * 256 > pos - from) return this.walk(buf, pos, want, s);
      if (s === QUOTED) {
        // Inside quotes only the quote (and a distinct escape) matter: jump to the next one.
        let next = this.find(buf, pos, false);
        if (e !== q) {
          const esc = this.find(buf, pos, true);
          if (esc !== -1 && (next === -1 || esc < next)) next = esc;
        }
        if (next === -1) {
          pos = end;
          break;
        }
        s = buf[next] === q ? UNQUOTED : ESCAPE;
        pos = next + 1;
      } else if (s === UNQUOTED || s === ESCAPE) {
        s = step(s, buf[pos], d, q, e);
        pos++;
        if (s === INVALID) return this.lose();
        if (s === RECORD && pos - 1 >= want) {
          this.state = s;
          return pos;
        }
      } else {
        // Outside quotes nothing changes until the next quote, except that every newline ends a record.
        const quote = this.find(buf, pos, false);
        const stretchEnd = quote === -1 ? end : quote;
        if (want < stretchEnd) {
          const nl = buf.indexOf(NL, Math.max(pos, want));
          if (nl !== -1 && nl < stretchEnd) {
            this.state = RECORD;
            return nl + 1;
          }
        }
        s = this.across(buf, pos, stretchEnd, s);
        if (s === INVALID) return this.lose();
        pos = stretchEnd;
        if (quote !== -1) {
          s = step(s, q, d, q, e); // opens a quoted field at the start of a field; otherwise an ordinary byte
          pos = quote + 1;
        }
      }
    }
    this.state = s;
    return -1;
  }

  /** `next`, byte by byte. */
  private walk(buf: Buffer, pos: number, want: number, s: number): number {
    const table = this.table;
    const end = buf.length;
    for (let i = pos; i < end; i++) {
      s = table[(s << 8) | buf[i]];
      if (s >= RECORD) {
        if (s === INVALID) return this.lose();
        if (i >= want) {
          this.state = s;
          return i + 1;
        }
      }
    }
    this.state = s;
    return -1;
  }

  // The last search for a quote (and for an escape) in the current buffer: callers that ask for
  // every record (csvRecordLine) would otherwise search the rest of the buffer once per record.
  private searched?: Buffer;
  private quoteFrom = Infinity;
  private quoteAt = -1;
  private escapeFrom = Infinity;
  private escapeAt = -1;

  /** The index of the first quote (or escape) in `buf` at or after `pos`, or -1. */
  private find(buf: Buffer, pos: number, escape: boolean): number {
    if (this.searched !== buf) {
      this.searched = buf;
      this.quoteFrom = this.escapeFrom = Infinity;
    }
    if (escape) {
      if (!(this.escapeFrom <= pos && (this.escapeAt === -1 || this.escapeAt >= pos))) {
        this.escapeAt = buf.indexOf(this.e, pos);
        this.escapeFrom = pos;
      }
      return this.escapeAt;
    }
    if (!(this.quoteFrom <= pos && (this.quoteAt === -1 || this.quoteAt >= pos))) {
      this.quoteAt = buf.indexOf(this.q, pos);
      this.quoteFrom = pos;
    }
    return this.quoteAt;
  }

  /**
   * The state after `buf[from..to)`, a stretch without quotes, entered outside quotes. Any byte other
   * than a delimiter, newline, carriage return or space leads to STANDARD from every state outside
   * quotes, so only the bytes after the last such byte need stepping through. (What a stretch without
   * quotes holds before that byte cannot move a record boundary.)
   */
  private across(buf: Buffer, from: number, to: number, s: number): number {
    if (from >= to) return s;
    const { d, q, e } = this;
    let last = to - 1;
    while (last >= from) {
      const b = buf[last];
      if (b !== d && b !== NL && b !== CR && b !== SPACE) break;
      last--;
    }
    if (last >= from) {
      s = STANDARD;
      from = last + 1;
    }
    for (let i = from; i < to; i++) {
      s = step(s, buf[i], d, q, e);
      if (s === INVALID) return INVALID;
    }
    return s;
  }

  private lose(): number {
    this.lost = true;
    this.state = INVALID;
    return -1;
  }
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** The number of bytes of a UTF-8 byte order mark at the start of `buf` (DuckDB skips it). */
export function bomLength(buf: Buffer): number {
  return buf.length >= 3 && buf.subarray(0, 3).equals(UTF8_BOM) ? 3 : 0;
}

/**
 * The 1-based physical line on which CSV record `record` (1-based, the header being record 1 when
 * there is one) starts, counting newlines inside quoted fields. DuckDB reports records; people read
 * lines. Beyond the last record it answers the line after the last newline.
 */
export async function csvRecordLine(path: string, record: number, options: { delimiter?: string; quote?: string; escape?: string } = {}): Promise<number> {
  const dialect = csvDialect(options) ?? { delimiter: 0x2c, quote: 0x22, escape: 0x22 };
  const scanner = new CsvRecordScanner(dialect);
  let line = 1;
  let current = 1;
  let first = true;
  for await (const chunk of fs.createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    let pos = first ? bomLength(chunk) : 0;
    first = false;
    while (current < record) {
      const cut = scanner.next(chunk, pos, pos);
      if (cut === -1) {
        line += countNewlines(chunk, pos, chunk.length);
        pos = chunk.length;
        break;
      }
      line += countNewlines(chunk, pos, cut);
      current++;
      pos = cut;
    }
    if (current >= record) return line;
    if (scanner.lost) {
      // DuckDB refuses such a file anyway; count plain lines from here on.
      return line + Math.max(0, record - current);
    }
  }
  return line;
}

/**
 * The 1-based physical line of JSONL record `record` (1-based): DuckDB skips blank lines and does not
 * count them, people do.
 */
export async function jsonlRecordLine(path: string, record: number): Promise<number> {
  let line = 1;
  let current = 0;
  let blank = true;
  for await (const chunk of fs.createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (b === NL) {
        if (!blank && ++current === record) return line;
        line++;
        blank = true;
      } else if (blank && b !== SPACE && b !== CR && b !== 0x09) {
        blank = false;
      }
    }
  }
  return line;
}

/** Newlines in `buf[from..to)`. */
export function countNewlines(buf: Buffer, from = 0, to = buf.length): number {
  let n = 0;
  let i = buf.indexOf(NL, from);
  while (i !== -1 && i < to) {
    n++;
    i = buf.indexOf(NL, i + 1);
  }
  return n;
}

/** Newlines in a file from byte `start` on. */
export async function countFileNewlines(path: string, start = 0): Promise<number> {
  let n = 0;
  for await (const chunk of fs.createReadStream(path, { start, highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) n += countNewlines(chunk);
  return n;
}

/**
 * csvRecordLine for many records in one pass over the file: each record (1-based, the header, when
 * there is one, being record 1) mapped to its 1-based physical line.
 */
export async function csvRecordLines(path: string, records: number[], options: { delimiter?: string; quote?: string; escape?: string } = {}): Promise<Map<number, number>> {
  const wanted = [...new Set(records)].sort((a, b) => a - b);
  const found = new Map<number, number>();
  const dialect = csvDialect(options) ?? { delimiter: 0x2c, quote: 0x22, escape: 0x22 };
  const scanner = new CsvRecordScanner(dialect);
  let k = 0;
  let line = 1;
  let current = 1;
  let first = true;
  const reach = () => {
    while (k < wanted.length && wanted[k] <= current) found.set(wanted[k++], line);
  };
  reach();
  for await (const chunk of fs.createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    if (k >= wanted.length) break;
    let pos = first ? bomLength(chunk) : 0;
    first = false;
    while (k < wanted.length) {
      const cut = scanner.next(chunk, pos, pos);
      if (cut === -1) {
        line += countNewlines(chunk, pos, chunk.length);
        break;
      }
      line += countNewlines(chunk, pos, cut);
      current++;
      pos = cut;
      reach();
    }
    if (scanner.lost) break; // DuckDB refuses such a file anyway; plain lines from here on
  }
  for (; k < wanted.length; k++) found.set(wanted[k], scanner.lost ? line + wanted[k] - current : line);
  return found;
}

/** jsonlRecordLine for many records in one pass: each record (1-based) mapped to its 1-based line. */
export async function jsonlRecordLines(path: string, records: number[]): Promise<Map<number, number>> {
  const wanted = [...new Set(records)].sort((a, b) => a - b);
  const found = new Map<number, number>();
  let k = 0;
  let line = 1;
  let current = 0;
  let blank = true;
  for await (const chunk of fs.createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    for (let i = 0; i < chunk.length && k < wanted.length; i++) {
      const b = chunk[i];
      if (b === NL) {
        if (!blank && ++current === wanted[k]) found.set(wanted[k++], line);
        line++;
        blank = true;
      } else if (blank && b !== SPACE && b !== CR && b !== 0x09) {
        blank = false;
      }
    }
    if (k >= wanted.length) break;
  }
  for (; k < wanted.length; k++) found.set(wanted[k], line);
  return found;
}
