import { LRUCache } from 'lru-cache';
import { ROW_GROUP_ROWS, type ReadSession } from '../../core/engine/index.ts';
import { statIfExists } from '../../core/files.ts';
import type { Logger } from '../../core/logger.ts';
import { BufferPool, JsonLinesFile, PageText } from './json-lines.ts';
import { jsonColumnsSql } from './json-rows.ts';
import type { RowsQuery } from './rows.ts';

/** A range's source rows, at least and at most. */
const MIN_RANGE_ROWS = 2_048;
const MAX_RANGE_ROWS = 2_000_000;
/** A range aims at about this much JSON, which waits in a scratch file until its pages are taken. */
const RANGE_BYTES = 64 * 1024 * 1024;
/** The next range is written while fewer ranges than this hold rows not yet delivered. */
const RANGES_AHEAD = 2;

function clampRangeRows(rows: number): number {
  return Math.min(MAX_RANGE_ROWS, Math.max(MIN_RANGE_ROWS, Math.round(rows)));
}

/**
 * Where a range of about `rows` rows from `row` ends: a range of a row group or more ends on a row
 * group boundary (a row group split between two ranges is read twice) and takes the rest of the file
 * when less than two row groups would be left (one row group is read by one thread alone).
 */
function rangeEnd(row: number, rows: number, fileRows: number): number {
  if (rows < ROW_GROUP_ROWS) return Math.min(fileRows, row + rows);
  const to = Math.max(Math.ceil((row + 1) / ROW_GROUP_ROWS), Math.round((row + rows) / ROW_GROUP_ROWS)) * ROW_GROUP_ROWS;
  return fileRows - to < 2 * ROW_GROUP_ROWS ? fileRows : to;
}

/**
 * Where a cursor's first range ends: just past the first page (`need` rows, at least a vector of
 * rows), so the first page costs the same wherever it starts: the Parquet scan skips the row groups
 * before it and, within its row group, the rows before it, at little cost. The larger ranges after
 * it are written ahead while the first page is sent.
 */
function firstRangeEnd(row: number, fileRows: number, need: number): number {
  return Math.min(fileRows, row + Math.max(need, MIN_RANGE_ROWS));
}

/** The matching rows of one range of source rows, read from DuckDB's JSON while it is written. */
interface Range {
  /** The number of the range's first source row: tokens count delivered rows from here. */
  start: number;
  source: JsonLinesFile;
  /** Rows of this range already delivered. */
  taken: number;
  /** The last read reached the end of the range (its writer done). */
  finished: boolean;
}

/** The rows of one range in a page's text: `rows` rows from row `first` of the text, which start at byte `at`. */
interface Part {
  range: Range;
  first: number;
  rows: number;
  at: number;
}

/** One page taken from a cursor: its rows' JSON (joined by commas), the next page's $skiptoken, and `release` once it is sent. */
export interface CursorPage {
  text: Buffer;
  next?: string;
  release(): void;
}

/**
 * A plain read ($filter/$select, in row order) paged through in ranges of source rows. Each range is
 * one query without LIMIT, so DuckDB scans its row groups in parallel, and writes the rows with its
 * own JSON writer to a scratch file. Pages are read from that file at row boundaries while it is
 * written, into buffers that are reused once sent. The next range is written while the pages of
 * the last are served. The page's $skiptoken is `row.rows`: the first row of a range and how many
 * of its matching rows were delivered, which rows.ts can also continue from.
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
  private bytesPerRow = 256;
  /** The range being started (its query prepared); one at a time, as the session has one connection. */
  private starting?: Promise<void>;
  /** The last range's writer, which the next range waits for. */
  private writing: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** No range was started yet (see firstRangeEnd). */
  private first = true;

  constructor(
    private readonly session: ReadSession,
    private readonly query: RowsQuery,
    private readonly pool: BufferPool,
    start: { skiptoken: number; skiptokenRows: number; top: number },
    private readonly log: Logger,
  ) {
    this.top = start.top;
    // A small page needs few rows: the first range is some pages of unfiltered rows, and no more
    // than RANGE_BYTES of JSON by a generous guess at a row's size (later ranges go by what they met).
    const guessedRowBytes = query.shown.columns.reduce((n, c) => n + c.name.length + (c.type === 'VARCHAR' ? 64 : 24), 0);
    this.rangeRows = clampRangeRows(Math.min(64 * start.top, RANGE_BYTES / guessedRowBytes));
    ({ file: this.file, row: this.row } = session.locate(start.skiptoken));
    this.pass = start.skiptokenRows;
  }

  /** The next page's rows, and the token of the page after them when more rows follow. */
  async page(): Promise<CursorPage> {
    const { top } = this;
    const page = new PageText(this.pool, Math.ceil((top + 1) * this.bytesPerRow * 1.1));
    try {
      if (this.pass > 0) {
        // Rows that earlier pages delivered (a token's `.rows`) are passed over.
        this.deliver(page, await this.read(page, this.pass), page.rows);
        this.pass = 0;
        page.clear();
      }
      // One row more than the page shows says whether another page follows.
      const parts = await this.read(page, top + 1);
      const rows = Math.min(top, page.rows);
      this.deliver(page, parts, rows);
      if (rows > 0) this.bytesPerRow = (page.ends[rows - 1] + 1) / rows;
      const first = this.ranges[0];
      const next = first ? `${first.start}.${first.taken}` : this.exhausted() ? undefined : String(this.session.rowNumber(this.file, this.row));
      this.writeAhead();
      return { text: page.text(rows), next, release: () => page.release() };
    } catch (error) {
      page.release();
      throw error;
    }
  }

  /** Stops the query, removes the scratch files and frees the connection; never rejects (a failure is logged). */
  async close(): Promise<void> {
    this.closed = true;
    this.session.interrupt();
    // The interrupt ends what was under way: its failure is expected (and pages that read it had it).
    await Promise.allSettled([this.starting, this.writing]);
    await Promise.all(this.ranges.splice(0).map((r) => this.closeSource(r.source)));
    this.session.close();
  }

  private async closeSource(source: JsonLinesFile): Promise<void> {
    await source.close().catch((error: unknown) => this.log.warn({ err: error }, 'could not remove a scratch file of an OData cursor'));
  }

  /** Reads `want` rows into the page from the ranges in turn (fewer only at the end of the last), starting ranges as needed. */
  private async read(page: PageText, want: number): Promise<Part[]> {
    const parts: Part[] = [];
    for (let i = 0; page.rows < want; ) {
      if (i === this.ranges.length) {
        if (this.exhausted()) break;
        await this.startRange();
        continue;
      }
      const range = this.ranges[i++];
      const first = page.rows;
      const at = page.length;
      const rows = await range.source.readInto(page, want - first);
      range.finished = first + rows < want;
      parts.push({ range, first, rows, at });
    }
    return parts;
  }

  /** Marks the page's first `rows` rows delivered; a range delivered to its end is dropped. */
  private deliver(page: PageText, parts: Part[], rows: number): void {
    for (const part of parts) {
      const taken = Math.min(part.rows, Math.max(0, rows - part.first));
      if (taken > 0) {
        part.range.source.offset += page.ends[part.first + taken - 1] + 1 - part.at;
        part.range.taken += taken;
      }
      if (taken === part.rows && part.range.finished) this.drop(part.range);
    }
  }

  /** Starts writing the next range when fewer than RANGES_AHEAD ranges hold rows to deliver, as soon as the last is written. */
  private writeAhead(): void {
    if (this.ranges.length < RANGES_AHEAD && !this.exhausted() && !this.starting && !this.closed) {
      this.startRange()
        .then(() => this.writing)
        .then(
          () => this.writeAhead(),
          // A failed range fails the page that reads it; the log says why it failed ahead of time.
          (error: unknown) => {
            if (!this.closed) this.log.warn({ err: error }, 'an OData cursor could not read its next range ahead');
          },
        );
    }
  }

  private exhausted(): boolean {
    return this.file >= this.session.dataset.files.length;
  }

  private drop(range: Range): void {
    this.ranges.splice(this.ranges.indexOf(range), 1);
    void this.closeSource(range.source);
  }

  private startRange(): Promise<void> {
    this.starting ??= this.nextRange().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** Prepares the next range's query and starts writing its rows once the last range is written. */
  private async nextRange(): Promise<void> {
    // The last range's writer, done either way: its failure fails the page that reads its rows.
    await Promise.allSettled([this.writing]);
    const { file, row } = this;
    const fileRows = this.session.dataset.files[file].rows;
    const to = this.first ? firstRangeEnd(row, fileRows, this.top + 1) : rangeEnd(row, this.rangeRows, fileRows);
    this.first = false;
    const { all, shown } = this.query;
    const relation = await this.session.fileRelation(file, row, to);
    const nonFinite = await this.session.nonFiniteColumns(file, shown.columns.filter((c) => c.type === 'FLOAT' || c.type === 'DOUBLE'));
    if (this.closed) throw new Error('The cursor is closed');
    const { path, written } = this.session.jsonLines(`SELECT ${jsonColumnsSql(shown.columns, nonFinite, this.query.ieee754)} FROM (${all.sql(relation)})`, all.params.values);
    const source = new JsonLinesFile(path, written);
    this.writing = source.written().then(async () => {
      // Later ranges aim at RANGE_BYTES by the size of what this one wrote.
      const bytes = (await statIfExists(path))?.size;
      if (bytes) this.rangeRows = clampRangeRows((RANGE_BYTES * (to - row)) / bytes);
    });
    // Its failure fails the page that reads its rows; the log has it in any case.
    this.writing.catch((error: unknown) => this.log.debug({ err: error }, 'an OData cursor range failed while it was written'));
    // The position moves with the range it went to, so no one sees one without the other.
    this.ranges.push({ start: this.session.rowNumber(file, row), source, taken: 0, finished: false });
    [this.file, this.row] = to >= fileRows ? [file + 1, 0] : [file, to];
  }
}

/** A cursor kept for the page after the one it last read: the snapshot it reads and the pages' `@odata.context`. */
export interface KeptCursor {
  cursor: RangeCursor;
  snapshot: number | null;
  contextUrl: string;
}

/**
 * Cursors between pages: a client following nextLink continues the cursor its last page came from.
 * Keys name who asked and the page's URL; a cursor is handed out once, and one that waits too long
 * is closed.
 */
export class RangeCursors {
  /** The buffers the cursors' pages are read into. */
  readonly pool = new BufferPool();
  private readonly cursors = new LRUCache<string, KeptCursor>({
    max: 16,
    ttl: 30_000,
    ttlAutopurge: true,
    dispose: (kept, _key, reason) => {
      if (reason !== 'delete') void kept.cursor.close();
    },
  });

  take(key: string): KeptCursor | undefined {
    const kept = this.cursors.get(key);
    if (kept) this.cursors.delete(key);
    return kept;
  }

  keep(key: string, kept: KeptCursor): void {
    this.cursors.set(key, kept);
  }
}
