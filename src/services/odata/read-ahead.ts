import { LRUCache } from 'lru-cache';
import { silentLogger, type Logger } from '../../core/logger.ts';

/** A page as the client gets it: the pieces of its JSON text, and where the page after it starts. */
export interface PageText {
  pieces: (string | Buffer)[];
  next?: string;
}

export interface ReadAheadLimits {
  /** Text held by pages read ahead and not yet asked for, in characters. */
  maxChars: number;
  /** How long a page read ahead waits for its client. */
  ttlMs: number;
  /** Pages being read ahead at once, across all clients. */
  maxRunning: number;
  /** How many pages past the one asked for are read ahead. */
  depth: number;
}

export const DEFAULT_READ_AHEAD: ReadAheadLimits = { maxChars: 128 * 1024 * 1024, ttlMs: 30_000, maxRunning: 2, depth: 2 };

/**
 * Pages computed before the client asks for them. A client paging through nextLink asks for page
 * N+1 only once it has read page N; meanwhile DuckDB computes the pages that follow, so reading and
 * computing overlap. Keys name who asked, the snapshot read and the page's URL; the routes look a
 * page up only after the request is authorized and its version resolved, and a page is handed out
 * once. Work is bounded: a few pages run at once, and unclaimed pages expire or are evicted.
 */
export class ReadAhead {
  private readonly ready: LRUCache<string, PageText>;
  private readonly running = new Map<string, Promise<PageText | undefined>>();

  constructor(
    private readonly limits: ReadAheadLimits = DEFAULT_READ_AHEAD,
    private readonly log: Logger = silentLogger,
  ) {
    this.ready = new LRUCache({
      maxSize: limits.maxChars,
      ttl: limits.ttlMs,
      sizeCalculation: (page) => Math.max(1, page.pieces.reduce((n, piece) => n + piece.length, 0)),
    });
  }

  /** The page read ahead under `key` (waiting for it if it is still being read), or undefined; it is handed out once. */
  take(key: string): Promise<PageText | undefined> | undefined {
    const page = this.ready.get(key);
    if (page) {
      this.ready.delete(key);
      return Promise.resolve(page);
    }
    const running = this.running.get(key);
    this.running.delete(key);
    return running;
  }

  /**
   * Reads ahead the page that starts at `start`, then the pages after it, up to the depth limit.
   * `read` computes a page; `keyOf` names it. A page that fails is simply not kept: the client's own
   * request will read it (and see the error).
   */
  follow(start: string, keyOf: (skiptoken: string) => string, read: (skiptoken: string) => Promise<PageText>, depth = this.limits.depth): void {
    if (depth <= 0) return;
    const key = keyOf(start);
    const page = this.ready.has(key) ? Promise.resolve(this.ready.peek(key)) : (this.running.get(key) ?? this.start(key, () => read(start)));
    void page?.then((text) => {
      if (text?.next !== undefined) this.follow(text.next, keyOf, read, depth - 1);
    });
  }

  private start(key: string, read: () => Promise<PageText>): Promise<PageText | undefined> | undefined {
    if (this.running.size >= this.limits.maxRunning) return undefined;
    const job: Promise<PageText | undefined> = read().then(
      (page) => {
        // Kept only while unclaimed: take() removes the key from running when it hands the job out.
        if (this.running.get(key) === job) {
          this.running.delete(key);
          this.ready.set(key, page);
        }
        return page;
      },
      (error: unknown) => {
        if (this.running.get(key) === job) this.running.delete(key);
        this.log.warn({ err: error }, 'an OData page read ahead failed; the request for it reads it again');
        return undefined;
      },
    );
    this.running.set(key, job);
    return job;
  }
}
