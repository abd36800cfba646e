import { LRUCache } from 'lru-cache';
import type { TableWrites } from './db/writes.ts';

/**
 * How long data and authorization facts read on a hot path (grants, workspace states, account
 * memberships, listings) are kept: another server's change is seen within this time, this
 * process's own at once (docs/auth.md, "Performance and caching").
 */
export const KEPT_READ_TTL_MS = 1_000;

export interface KeptReadsOptions {
  /**
   * How long an answer is kept at most: how late a change that another process makes is seen here.
   * 0 keeps nothing (every call reads).
   */
  ttlMs: number;
  /** Answers kept at most (least recently used go first). */
  max: number;
  /** The tables answers are read from: any write this process makes to one of them drops every answer (Db.writes). */
  tables?: { writes: TableWrites; names: readonly string[] };
}

/**
 * Answers of reads kept for a bounded time, so a hot path need not ask the database each time. An
 * answer is dropped after `ttlMs`, at once when this process writes one of its `tables`, and on
 * `forget`; a read that overlapped any of these is not kept. So within one process an answer is
 * never older than this process's own writes, and another process's writes show within `ttlMs`.
 */
export class KeptReads<K extends {}, V> {
  private readonly kept: LRUCache<K, { value: V; version: number }>;
  /** Reads in flight: callers missing the same key at the same version wait for one read. */
  private readonly reading = new Map<K, { version: number; value: Promise<V> }>();
  /** Moves on every `forget`, so that a read overlapping one is not kept. */
  private generation = 0;

  constructor(private readonly options: KeptReadsOptions) {
    this.kept = new LRUCache({ max: options.max, ttl: Math.max(1, options.ttlMs) });
  }

  private version(): number {
    const tables = this.options.tables;
    return this.generation + (tables ? tables.writes.version(tables.names) : 0);
  }

  /** The kept answer for `key`, else `read()`'s (kept, when `keep` allows, unless something changed meanwhile). */
  async get(key: K, read: () => Promise<V>, keep: (value: V) => boolean = () => true): Promise<V> {
    if (this.options.ttlMs <= 0) return read();
    const version = this.version();
    const hit = this.kept.get(key);
    if (hit !== undefined && hit.version === version) return hit.value;
    const inFlight = this.reading.get(key);
    if (inFlight !== undefined && inFlight.version === version) return inFlight.value;
    const value = read();
    this.reading.set(key, { version, value });
    try {
      const answer = await value;
      if (answer !== undefined && this.version() === version && keep(answer)) this.kept.set(key, { value: answer, version });
      return answer;
    } finally {
      if (this.reading.get(key)?.value === value) this.reading.delete(key);
    }
  }

  /** Drops the answer for `key`, or every answer for which `which` holds, or all of them. */
  forget(which?: K | ((key: K, value: V) => boolean)): void {
    this.generation++;
    if (which === undefined) this.kept.clear();
    else if (typeof which !== 'function') this.kept.delete(which);
    else for (const [key, entry] of this.kept.entries()) if ((which as (key: K, value: V) => boolean)(key, entry.value)) this.kept.delete(key);
  }
}
