import { Readable } from 'node:stream';
import type { Principal } from '../../core/authz/index.ts';
import type { Logger } from '../../core/logger.ts';
import { RangeCursor, type CursorPage, type RangeCursors } from './cursor.ts';
import type { DatasetVersion } from './model.ts';
import { inRowOrder, parseSkiptoken, type RowsOptions } from './options.ts';
import { compileQuery } from './query/index.ts';
import type { PageText, ReadAhead } from './read-ahead.ts';
import { pageHead, pageTail, rowsDocument } from './rows.ts';
import type { ODataService } from './service.ts';
import { entityOf } from './service.ts';

export interface RowPagesDeps {
  odata: ODataService;
  readAhead: ReadAhead;
  cursors: RangeCursors;
  log: Logger;
}

/** A rows request, with the version it reads once the caller is authorized for it. */
export interface PageRequest {
  caller: Principal;
  /** Authorizes the caller and resolves the version; a rejection is the request's answer. */
  version: Promise<DatasetVersion>;
  options: RowsOptions;
  /** The request's path and query: a page's URL is this with its $skiptoken. */
  url: string;
  /** The public URL of a page, given its path and query. */
  publicUrl(url: string): string;
  /** `@odata.context`, given the version and the names of the columns each row shows. */
  contextUrl(version: DatasetVersion, columns: string[]): string;
}

type PageRead = ReturnType<RowPages['readOf']>;

/** The request's own page token, as its nextLink carried it. */
function tokenOf(options: RowsOptions): string {
  return options.skiptokenRows > 0 ? `${options.skiptoken}.${options.skiptokenRows}` : String(options.skiptoken);
}

/** The public URL of the request's page at `token`. */
function nextLink(request: PageRequest, token: string): string {
  return request.publicUrl(pageUrl(request.url, token));
}

/** Pages are kept for the value format they were written in (IEEE754Compatible comes in a header, not the URL). */
const formatKey = (options: RowsOptions) => (options.ieee754 ? 'ieee754\n' : '');

const snapshotOf = (version: DatasetVersion) => version.snapshot?.snapshot_id ?? null;

/** A request's path and query with `$skiptoken` set, everything else as the client sent it. */
function pageUrl(requestUrl: string, skiptoken: string): string {
  const url = new URL(requestUrl, 'http://x');
  url.searchParams.set('$skiptoken', skiptoken);
  return `${url.pathname}${url.search}`;
}

/** A page being read, settled either way (so a page dropped before it is awaited fails nobody). */
function settle(page: Promise<CursorPage>): Promise<{ page?: CursorPage; error?: unknown }> {
  return page.then(
    (page) => ({ page }),
    (error: unknown) => ({ error }),
  );
}

/** Gives back a page read for nothing and closes its cursor. */
async function discard(cursor: RangeCursor, page: Promise<{ page?: CursorPage }>): Promise<void> {
  (await page).page?.release();
  await cursor.close();
}

/**
 * The pages of rows requests. A plain read ($filter/$select) goes through a cursor that reads ranges
 * of rows, each scanned by DuckDB in parallel, the next range while the client reads the last page
 * (cursor.ts); a client following nextLink continues the same cursor. Other reads ($orderby,
 * $apply, $count) read each page by itself, and the pages after the one asked for are read ahead
 * (read-ahead.ts).
 */
export class RowPages {
  constructor(private readonly deps: RowPagesDeps) {}

  /** The page's JSON, streamed; query errors surface before it is returned. Call `closed` when the response has closed (sent or not). */
  async open(request: PageRequest): Promise<{ body: Readable; closed(): void }> {
    const { options } = request;
    if (options.orderby === undefined && options.apply === undefined && !options.count && options.top > 0) return this.fromCursor(request);
    const version = await request.version;
    await this.deps.odata.pin(version);
    const read = this.readOf(request, version);
    const ready = await this.deps.readAhead.take(read.keyOf(read.token));
    if (ready) {
      if (ready.next !== undefined) this.follow(read, ready.next);
      return { body: Readable.from(ready.pieces), closed: () => undefined };
    }
    const { session, document } = await this.openPage(read, read.asked, (next) => this.follow(read, next));
    try {
      // The first piece runs the count (if asked) and so surfaces query errors as a proper status.
      const first = await document.next();
      const body = Readable.from(
        (async function* () {
          try {
            if (!first.done) yield first.value;
            yield* document;
          } finally {
            session.close();
          }
        })(),
      );
      return { body, closed: () => session.interrupt() };
    } catch (error) {
      session.close();
      throw error;
    }
  }

  /** What every page of a request needs: its queries, its URLs, and the keys of its cursors and pages read ahead. */
  private readOf(request: PageRequest, version: DatasetVersion) {
    const { options } = request;
    const entity = entityOf(version.dataset);
    /** The query of the page at `start`; now() is the time it is compiled, just before the rows are read. */
    const compile = (start: Pick<RowsOptions, 'skiptoken' | 'skiptokenRows'>) => {
      // `$orderby=<row id>` (with `$skip` or not) reads as a plain read from a row number.
      const pageOptions = inRowOrder({ ...options, ...start }, entity.rowId);
      const now = new Date();
      const shown = compileQuery(pageOptions, entity.properties, now);
      return {
        options: pageOptions,
        query: { shown, all: compileQuery({ ...pageOptions, select: undefined }, entity.properties, now), rowId: entity.rowId, ieee754: options.ieee754 === true },
      };
    };
    const asked = compile(options);
    return {
      request,
      version,
      compile,
      asked,
      token: tokenOf(options),
      contextUrl: request.contextUrl(version, asked.query.shown.columns.map((c) => c.name)),
      nextLink: (token: string) => nextLink(request, token),
      // Cursors and pages read ahead belong to this caller and this snapshot.
      keyOf: (token: string) => `${request.caller.identity}\n${snapshotOf(version) ?? ''}\n${formatKey(options)}${pageUrl(request.url, token)}`,
    };
  }

  /**
   * A plain read's page, from the cursor the last page left (or a new one), which is kept for the
   * next. A kept cursor starts reading the page while the caller is authorized and the version
   * resolved; the page goes out only once both are done, and is dropped, with the cursor, when the
   * caller may no longer read or `@current` has moved to another snapshot since.
   */
  private async fromCursor(request: PageRequest) {
    const cursorKey = (token: string) => `${request.caller.identity}\n${formatKey(request.options)}${pageUrl(request.url, token)}`;
    const kept = this.deps.cursors.take(cursorKey(tokenOf(request.options)));
    const early = kept && settle(kept.cursor.page());
    let version: DatasetVersion;
    try {
      version = await request.version;
      await this.deps.odata.pin(version);
    } catch (error) {
      if (kept) void discard(kept.cursor, early!);
      throw error;
    }
    let cursor: RangeCursor;
    let contextUrl: string;
    let taken: Promise<CursorPage>;
    if (kept && kept.snapshot === snapshotOf(version)) {
      ({ cursor, contextUrl } = kept);
      taken = early!.then((r) => r.page ?? Promise.reject(r.error));
    } else {
      if (kept) void discard(kept.cursor, early!);
      const read = this.readOf(request, version);
      contextUrl = read.contextUrl;
      cursor = new RangeCursor(await this.deps.odata.open(version), read.asked.query, this.deps.cursors.pool, request.options, this.deps.log);
      taken = cursor.page();
    }
    try {
      const page = await taken;
      if (page.next === undefined) void cursor.close();
      else this.deps.cursors.keep(cursorKey(page.next), { cursor, snapshot: snapshotOf(version), contextUrl });
      const tail = pageTail(page.next === undefined ? undefined : nextLink(request, page.next));
      return { body: Readable.from([pageHead(contextUrl), page.text, tail]), closed: page.release };
    } catch (error) {
      void cursor.close();
      throw error;
    }
  }

  private async openPage(read: PageRead, page: ReturnType<typeof read.compile>, onNext?: (token: string) => void) {
    const session = await this.deps.odata.open(read.version);
    return { session, document: rowsDocument(session, page.query, page.options, { contextUrl: read.contextUrl, nextLink: read.nextLink, onNext }) };
  }

  /** Reads ahead the pages from `token` on. */
  private follow(read: PageRead, token: string): void {
    this.deps.readAhead.follow(token, read.keyOf, async (token): Promise<PageText> => {
      let next: string | undefined;
      const { session, document } = await this.openPage(read, read.compile(parseSkiptoken(token)), (token) => (next = token));
      try {
        const pieces: string[] = [];
        for await (const piece of document) pieces.push(piece);
        return { pieces, next };
      } finally {
        session.close();
      }
    });
  }
}
