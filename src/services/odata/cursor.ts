import { LRUCache } from 'lru-cache';
import type { ReadSession } from '../../core/engine/index.ts';
import { jsonColumnsSql } from './json-rows.ts';
import type { RowsQuery } from './rows.ts';

const MIN_RANGE_ROWS = 2_048;
/** The most source rows the first range reads: two of the row groups Lakeport writes, so both DuckDB threads work. */
const FIRST_RANGE_ROWS = 2 * 122_880;
const MAX_RANGE_ROWS = 4 * 122_880;
/** Ranges are read ahead while fewer rows than this many pages are left, and less JSON than READ_AHEAD_BYTES. */
const READ_AHEAD_PAGES = 8;
const READ_AHEAD_BYTES = 32 * 1024 * 1024;
/** Later ranges aim at about this much JSON. */
const RANGE_BYTES = 16 * 1024 * 1024;

function clampRangeRows(rows: number): number {
  return Math.min(MAX_RANGE_ROWS, Math.max(MIN_RANGE_ROWS, Math.round(rows)));
}

/** The matching rows of one range of source rows, as DuckDB's JSON writer wrote them. */
interface Range {
  /** The number of the range's first source row: tokens count delivered rows from here. */
  start: number;
  text: Buffer;
  /** Where the newlines of `text` are: row r lies between newlines r and r + 1. */
  newlines: Int32Array;
  rows: number;
  /** Rows of this range already delivered. */
  taken: number;
}

/**
 * The newlines of a JSON array as DuckDB writes it: `[`, a line per row (tab, object, a comma but
 * on the last), `]` (no rows is `[`, a tab, `]`). Rows hold no raw newline: JSON escapes them.
 */
function rangeOf(start: number, text: Buffer): Range {
  let newlines = new Int32Array(Math.max(16, text.length >> 6));
  let n = 0;
  for (let at = text.indexOf(10); at >= 0; at = text.indexOf(10, at + 1)) {
    if (n === newlines.length) {
      const grown = new Int32Array(n * 2);
      grown.set(newlines);
      newlines = grown;
    }
    newlines[n++] = at;
  }
  const rows = n >= 3 && text[newlines[0] + 2] === 123 ? n - 2 : 0;
  return { start, text, newlines: newlines.subarray(0, n), rows, taken: 0 };
}

/** Rows `from` to `to` (exclusive) of a range, as JSON text joined by commas. */
function rowsText(range: Range, from: number, to: number): Buffer {
  const end = range.newlines[to];
  return range.text.subarray(range.newlines[from] + 2, range.text[end - 1] === 44 ? end - 1 : end);
}

/** One page taken from a cursor: its rows' JSON in pieces (commas between them included), and the next page's $skiptoken. */
export interface CursorPage {
  pieces: Buffer[];
  next?: string;
}

const COMMA = Buffer.from(',');

/**
 * A plain read ($filter/$select, in row order) paged through in ranges of source rows. Each range is
 * one query without LIMIT, so DuckDB scans its row groups in parallel and writes the rows with its
 * own JSON writer; pages are cut from the ranges at row boundaries. The next range is read while
 * the pages of the last one are served. The page's $skiptoken is `row.rows`: the first row of a
 * range and how many of its matching rows were delivered, which rows.ts can also continue from.
 */
export class RangeCursor {
  private readonly ranges: Range[] = [];
  private file: number;
  private row: number;
  /** Matching rows at the start that earlier pages delivered. */
  private pass: number;
  private rangeRows: number;
  /** Rows per page (pages of one cursor all have the size of its first). */
  private readonly top: number;
  private reading?: Promise<void>;
  private failure?: unknown;

  constructor(
    private readonly session: ReadSession,
    private readonly query: RowsQuery,
    start: { skiptoken: number; skiptokenRows: number; top: number },
  ) {
    this.top = start.top;
    // A small page needs few rows: the first range is a few pages of unfiltered rows, and no more
    // than RANGE_BYTES of JSON by a generous guess at a row's size (later ranges go by what they met).
    const guessedRowBytes = query.shown.columns.reduce((n, c) => n + c.name.length + (c.type === 'VARCHAR' ? 64 : 24), 0);
    this.rangeRows = clampRangeRows(Math.min(FIRST_RANGE_ROWS, 8 * start.top, RANGE_BYTES / guessedRowBytes));
    ({ file: this.file, row: this.row } = session.locate(start.skiptoken));
    this.pass = start.skiptokenRows;
  }

  /** The next page's rows, and the token of the page after them when more rows follow. */
  async page(): Promise<CursorPage> {
    const { top } = this;
    // One row more than the page shows says whether another page follows.
    while (this.available() <= top && !this.exhausted()) await this.readNext();
    const pieces: Buffer[] = [];
    for (let need = top; need > 0 && this.ranges.length > 0; ) {
      const range = this.ranges[0];
      const n = Math.min(need, range.rows - range.taken);
      if (n > 0) {
        if (pieces.length > 0) pieces.push(COMMA);
        pieces.push(rowsText(range, range.taken, range.taken + n));
        range.taken += n;
        need -= n;
      }
      if (range.taken === range.rows) this.ranges.shift();
    }
    const first = this.ranges[0];
    const next = first ? `${first.start}.${first.taken}` : this.exhausted() ? undefined : String(this.session.rowNumber(this.file, this.row));
    this.readAhead();
    return { pieces, next };
  }

  /** Stops reading and frees the connection. */
  async close(): Promise<void> {
    this.session.interrupt();
    await this.reading?.catch(() => undefined);
    this.session.close();
  }

  /** Reads the next range in the background while fewer than a few pages' rows are left. */
  private readAhead(): void {
    const buffered = this.ranges.reduce((n, r) => n + r.text.length - r.newlines[r.taken], 0);
    if (this.available() < READ_AHEAD_PAGES * this.top && buffered < READ_AHEAD_BYTES && !this.exhausted() && !this.reading && !this.failure) {
      void this.readNext().then(() => this.readAhead(), () => undefined);
    }
  }

  private available(): number {
    return this.ranges.reduce((n, r) => n + r.rows - r.taken, 0);
  }

  private exhausted(): boolean {
    return this.file >= this.session.dataset.files.length;
  }

  private readNext(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.reading ??= this.readRange().then(
      () => (this.reading = undefined),
      (error: unknown) => {
        this.failure = error;
        this.reading = undefined;
        throw error;
      },
    );
    return this.reading;
  }

  private async readRange(): Promise<void> {
    const { file, row } = this;
    const fileRows = this.session.dataset.files[file].rows;
    const to = Math.min(fileRows, row + this.rangeRows);
    const { all, shown } = this.query;
    const relation = await this.session.fileRelation(file, row, to);
    const nonFinite = await this.session.nonFiniteColumns(file, shown.columns.filter((c) => c.type === 'FLOAT' || c.type === 'DOUBLE'));
    const text = await this.session.jsonArray(`SELECT ${jsonColumnsSql(shown.columns, nonFinite)} FROM (${all.sql(relation)})`, all.params.values);
    const range = rangeOf(this.session.rowNumber(file, row), text);
    range.taken = Math.min(this.pass, range.rows);
    this.pass -= range.taken;
    if (range.taken < range.rows) this.ranges.push(range);
    this.rangeRows = clampRangeRows((RANGE_BYTES * (to - row)) / Math.max(1, text.length));
    [this.file, this.row] = to >= fileRows ? [file + 1, 0] : [file, to];
  }
}

/**
 * Cursors between pages: a client following nextLink continues the cursor its last page came from.
 * Keys name who asked, the snapshot and the page's URL (the routes authorize before they look); a
 * cursor is handed out once, and one that waits too long is closed.
 */
export class RangeCursors {
  private readonly cursors = new LRUCache<string, RangeCursor>({
    max: 16,
    ttl: 30_000,
    ttlAutopurge: true,
    dispose: (cursor, _key, reason) => {
      if (reason !== 'delete') void cursor.close();
    },
  });

  take(key: string): RangeCursor | undefined {
    const cursor = this.cursors.get(key);
    if (cursor) this.cursors.delete(key);
    return cursor;
  }

  keep(key: string, cursor: RangeCursor): void {
    this.cursors.set(key, cursor);
  }
}
