import { quoteIdent, type ReadSession } from '../../core/engine/index.ts';
import { jsonRowSql } from './json-rows.ts';
import type { ODataColumn } from './model.ts';
import type { RowsOptions } from './options.ts';
import type { CompiledQuery } from './query/index.ts';

/** Rows per piece of text DuckDB hands over: big enough to cost little per row, small enough to stream. */
const BLOCK_ROWS = 1024;

export interface RowsQuery {
  /** The query as asked (its columns are what each row shows). */
  shown: CompiledQuery;
  /** The same query over every column, row number included: what a plain read pages through. */
  all: CompiledQuery;
  /** The row-number column. */
  rowId: string;
  /** IEEE754Compatible=true: Int64 and Decimal values (and the count) as JSON strings. */
  ieee754?: boolean;
}

export interface RowsPage {
  /** `@odata.context` of the response. */
  contextUrl: string;
  /** The URL of the next page, given its $skiptoken. */
  nextLink(skiptoken: string): string;
  /** Told where the next page starts, once the page's rows are read (before its last piece is sent). */
  onNext?(skiptoken: string): void;
}

interface Block {
  text: string;
  rows: number;
  /** The row number and JSON of the block's last row (plain reads). */
  last: number | null;
  lastText: string | null;
  /** The probe row just past the page: it only says that more rows follow. */
  probe: boolean;
}

/**
 * The rows of an ordered `sql`, at most `room` plus one probe row that only says more follow, as
 * JSON text in blocks of BLOCK_ROWS rows, in order. DuckDB writes each row's JSON and joins each
 * block, so rows never become JavaScript values one by one.
 */
async function* orderedBlocks(session: ReadSession, sql: string, values: readonly unknown[], columns: readonly ODataColumn[], room: number, ieee754?: boolean): AsyncGenerator<Block> {
  const text =
    `SELECT string_agg(j, ',' ORDER BY n), count(*), min(n) >= ${room} FROM (` +
    `SELECT j, row_number() OVER () - 1 AS n FROM (SELECT ${jsonRowSql(columns, ieee754)} AS j FROM (${sql}) LIMIT ${room + 1}))` +
    ` GROUP BY CASE WHEN n >= ${room} THEN -1 ELSE n // ${BLOCK_ROWS} END ORDER BY min(n)`;
  for await (const [joined, rows, probe] of session.rows(text, values as never[])) {
    yield { text: String(joined), rows: Number(rows), last: null, lastText: null, probe: probe === true };
  }
}

/**
 * As orderedBlocks for a plain read of one file, whose rows carry their row numbers, after `passed`
 * matching rows: blocks are cut by row number (no window over the rows), and the probe row is cut off
 * the end of the last block.
 */
async function* fileBlocks(
  session: ReadSession,
  sql: string,
  values: readonly unknown[],
  columns: readonly ODataColumn[],
  rowId: string,
  room: number,
  passed: number,
  ieee754?: boolean,
): AsyncGenerator<Block> {
  const id = quoteIdent(rowId);
  const text =
    `SELECT string_agg(j, ',' ORDER BY id), count(*), max(id), arg_max(j, id) FROM (` +
    `SELECT ${jsonRowSql(columns, ieee754)} AS j, ${id} AS id FROM (${sql}) LIMIT ${room + 1} OFFSET ${passed}) GROUP BY id // ${BLOCK_ROWS} ORDER BY max(id)`;
  let held: Block | undefined;
  let total = 0;
  for await (const [joined, rows, last, lastText] of session.rows(text, values as never[])) {
    if (held) yield held;
    held = { text: String(joined), rows: Number(rows), last: Number(last), lastText: String(lastText), probe: false };
    total += held.rows;
  }
  if (!held) return;
  if (total <= room) {
    yield held;
    return;
  }
  if (held.rows > 1) yield { text: held.text.slice(0, held.text.length - held.lastText!.length - 1), rows: held.rows - 1, last: null, lastText: null, probe: false };
  yield { ...held, rows: 1, probe: true };
}

/**
 * One page of rows as an OData JSON document, streamed: the envelope is written around the blocks
 * of rows as DuckDB produces them.
 *
 * Paging: a plain read ($filter/$select only) continues from a row number — its $skiptoken is the
 * number of the next row to read, or a row number and how many matching rows from it on were
 * already delivered (`row.rows`, as pages read ahead in ranges write it, see cursor.ts) — reading
 * the files in order and letting each Parquet scan skip straight to that row, so page 1 000 costs
 * what page 1 does. An ordered or aggregated read needs a total order, and its $skiptoken is the
 * count of rows already delivered.
 */
export async function* rowsDocument(session: ReadSession, query: RowsQuery, options: RowsOptions, page: RowsPage): AsyncGenerator<string> {
  const { shown, all } = query;
  const counted = options.count ? String(await session.scalar(shown.countSql(await session.relation()), shown.params.values)) : undefined;
  // @odata.count is an Edm.Int64: a string under IEEE754Compatible=true.
  const count = counted !== undefined && query.ieee754 ? JSON.stringify(counted) : counted;
  if (options.top === 0) {
    yield `${pageHead(page.contextUrl, count)}${pageTail()}`;
    return;
  }
  yield pageHead(page.contextUrl, count);
  let sent = 0;
  let next: string | undefined;
  const emit = (block: Block) => {
    const piece = (sent > 0 ? ',' : '') + block.text;
    sent += block.rows;
    return piece;
  };

  if (options.orderby === undefined && options.apply === undefined) {
    // `$skip` here only comes with `$orderby=<row id>` and no filter (inRowOrder): row `skip + token`; tokens count from it.
    let { file, row } = session.locate(options.skip + options.skiptoken);
    // Rows passed over count within the file the token's row lies in (a range never spans files).
    let passed = options.skiptokenRows;
    for (; file < session.dataset.files.length && next === undefined; file++, row = 0, passed = 0) {
      // Without a filter the page needs only its own rows and the probe: the scan is bounded to them.
      const to = options.filter === undefined ? Math.min(session.dataset.files[file].rows, row + passed + options.top - sent + 1) : undefined;
      const relation = await session.fileRelation(file, row, to);
      for await (const block of fileBlocks(session, all.sql(relation), all.params.values, shown.columns, query.rowId, options.top - sent, passed, query.ieee754)) {
        // The probe row is the first row of the next page.
        if (block.probe) next = String(block.last! - options.skip);
        else yield emit(block);
      }
    }
  } else {
    const offset = options.skip + options.skiptoken;
    const ordered = `${shown.sql(await session.relation(), { totalOrder: true })} OFFSET ${offset}`;
    for await (const block of orderedBlocks(session, ordered, shown.params.values, shown.columns, options.top, query.ieee754)) {
      if (block.probe) next = String(options.skiptoken + sent);
      else yield emit(block);
    }
  }
  if (next !== undefined) page.onNext?.(next);
  yield pageTail(next === undefined ? undefined : page.nextLink(next));
}

/** An OData JSON page up to its first row: the context URL, the count when asked, the start of `value`. */
export function pageHead(contextUrl: string, count?: string): string {
  return `{"@odata.context":${JSON.stringify(contextUrl)}${count === undefined ? '' : `,"@odata.count":${count}`},"value":[`;
}

/** The end of an OData JSON page, with the next page's URL when there is one. */
export function pageTail(nextLink?: string): string {
  return nextLink === undefined ? ']}' : `],"@odata.nextLink":${JSON.stringify(nextLink)}}`;
}
