/**
 * Warm sandbox engines for successive jobs, so a job does not pay for a new DuckDB instance
 * (~12–17 ms of CPU to create and lock down, ~3 ms to close, on the event loop) every time.
 *
 * The rules (see sandbox.ts for the engine itself):
 * - An engine is keyed by the caller's identity AND the exact views it holds: their names, column
 *   lists and snapshot files (in order). A job gets a pooled engine only when its own plan asks
 *   for exactly that key, so it sees exactly the datasets its planner just authorised, over exactly
 *   its snapshot's files, and allowed_paths names exactly those files plus the engine's private
 *   result file. Another identity, another dataset set, a new snapshot (other files) or a changed
 *   schema is another key: a new engine. A changed grant changes the plan (a revoked dataset is
 *   refused by the planner before any engine is touched; a new one changes the view set), so it
 *   never reaches an engine built for the old grants; those engines are no longer asked for and
 *   leave by the idle TTL or the count limit (or at once through evictIdentity).
 * - One job at a time per engine (so the memory and thread limits stay per job), each on a fresh
 *   connection, closed when the job ends: connection state (temp objects, variables, search path,
 *   prepared statements) goes with it. The sandbox only runs statements that prepare as a single
 *   SELECT, and a SELECT cannot create catalog entries, attach databases or change the (locked,
 *   instance-wide) settings, so the next job finds the engine as it was built.
 * - An engine is not lent again after an interrupt (cancel, timeout, close during a query), an
 *   error DuckDB does not report as a plain query error (Out of Memory, Permission, Internal…),
 *   raw SQL (tests), or `maxUses` jobs.
 * - Idle engines leave after `idleTtlMs`, beyond `maxIdle` (least recently used first), when their
 *   DuckDB memory is above `maxEngineIdleMemoryBytes` or all idle engines together hold more than
 *   `maxIdleMemoryBytes` (checked every `sweepMs`), when a job of the same identity brings a
 *   view of the same name over other files or columns (a newer snapshot: `superseded`), and on
 *   evictIdentity / drain.
 * - DuckDB closes an instance only synchronously (duckdb_close; the node API has no async close),
 *   so evicted engines are closed one per macrotask after the current work (setImmediate), never on
 *   a job's path.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Sandbox, SandboxEngine, type SandboxEngineOptions, type SandboxRelease, type SandboxView } from './sandbox.ts';
import { silentLogger, type Logger } from '../logger.ts';

export interface SandboxPoolOptions {
  /** The engines' DuckDB limits and spill directory (fixed per pool; pooled engines declare no result paths). */
  engine: Omit<SandboxEngineOptions, 'resultPaths' | 'readPaths'>;
  /** Idle engines kept at most, over all keys (0: no pooling, every engine is closed after its job). */
  maxIdle: number;
  /** An idle engine is closed after this long unused. */
  idleTtlMs: number;
  /** An engine is closed after serving this many jobs. */
  maxUses: number;
  /** An idle engine holding more DuckDB memory than this is closed at the next sweep. */
  maxEngineIdleMemoryBytes: number;
  /** All idle engines together: beyond this, the least recently used are closed at the next sweep. */
  maxIdleMemoryBytes: number;
  /** Where engines that cannot report their memory or be closed are reported. */
  log: Logger;
  /** How often TTL and memory are checked. */
  sweepMs: number;
}

export const DEFAULT_SANDBOX_POOL_OPTIONS: Omit<SandboxPoolOptions, 'engine'> = {
  maxIdle: 16,
  idleTtlMs: 60_000,
  maxUses: 1_000,
  maxEngineIdleMemoryBytes: 64 * 1024 * 1024,
  maxIdleMemoryBytes: 256 * 1024 * 1024,
  sweepMs: 10_000,
  log: silentLogger,
};

export type EvictionReason = 'ttl' | 'count' | 'memory' | 'superseded' | 'identity' | 'uses' | 'discarded' | 'drained';

export interface SandboxPoolStats {
  /** Jobs that got a sandbox: hits + misses. */
  acquired: number;
  /** Served by a warm engine. */
  hits: number;
  /** Needed a new engine. */
  misses: number;
  /** Engines closed, by reason (`discarded`: not reusable after its job). */
  evicted: Record<EvictionReason, number>;
  idle: number;
  leased: number;
}

interface Entry {
  readonly engine: SandboxEngine;
  readonly key: string;
  readonly identity: string;
  /** Lower-cased view name → what it is over (files, columns), to spot a superseded snapshot. */
  readonly signatures: ReadonlyMap<string, string>;
  uses: number;
  lastUsed: number;
}

interface Spec {
  key: string;
  signatures: Map<string, string>;
}

function specOf(identity: string, views: SandboxView[]): Spec {
  const signatures = new Map<string, string>();
  const canonical = views
    .map((v) => {
      const body = JSON.stringify([v.files.map((f) => path.resolve(f)), v.columns.map((c) => [c.name, c.type]), v.sql ?? null]);
      signatures.set(v.name.join('\u0000').toLowerCase(), body);
      return [v.name, body] as const;
    })
    .sort((a, b) => (a[0].join('\u0000') < b[0].join('\u0000') ? -1 : a[0].join('\u0000') > b[0].join('\u0000') ? 1 : 0));
  const key = crypto.createHash('sha256').update(JSON.stringify([identity, canonical])).digest('base64url');
  return { key, signatures };
}

export class SandboxPool {
  private readonly options: SandboxPoolOptions;
  /** Idle engines, least recently used first (re-inserted when returned). */
  private readonly idle = new Map<SandboxEngine, Entry>();
  /** Idle engines by key, most recently used last. */
  private readonly byKey = new Map<string, Entry[]>();
  private readonly leased = new Set<Entry>();
  private readonly toClose: SandboxEngine[] = [];
  private closing: Promise<void> | undefined;
  private closingDone: (() => void) | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping = false;
  private spillReady = false;
  /** Set by drain(): engines given back are closed, not kept (until the next acquire). */
  private draining = false;
  private readonly counters = { hits: 0, misses: 0 };
  private readonly evictions: Record<EvictionReason, number> = { ttl: 0, count: 0, memory: 0, superseded: 0, identity: 0, uses: 0, discarded: 0, drained: 0 };

  constructor(options: Partial<SandboxPoolOptions> & { engine: SandboxPoolOptions['engine'] }) {
    this.options = { ...DEFAULT_SANDBOX_POOL_OPTIONS, ...options };
  }

  /**
   * A sandbox for one job of `identity` over exactly `views`: a warm engine with that key when one
   * is idle, else a new one. close() on the sandbox gives the engine back (or closes it).
   */
  async acquire(identity: string, views: SandboxView[], options: { timeoutMs?: number } = {}): Promise<Sandbox> {
    this.draining = false;
    const spec = specOf(identity, views);
    this.evictSuperseded(identity, spec);
    let entry = this.takeIdle(spec.key);
    if (entry) {
      this.counters.hits++;
    } else {
      this.counters.misses++;
      if (this.options.engine.tempDirectory && !this.spillReady) {
        await fs.promises.mkdir(this.options.engine.tempDirectory, { recursive: true });
        this.spillReady = true;
      }
      const engine = await SandboxEngine.create(views, this.options.engine);
      entry = { engine, key: spec.key, identity, signatures: spec.signatures, uses: 0, lastUsed: Date.now() };
    }
    entry.uses++;
    this.leased.add(entry);
    const leased = entry;
    try {
      return await Sandbox.lease(leased.engine, options, (_engine, release) => this.giveBack(leased, release));
    } catch (error) {
      this.leased.delete(leased);
      this.retire(leased, 'discarded');
      throw error;
    }
  }

  /** Closes the idle engines of one identity (e.g. after its grants changed); returns how many. */
  evictIdentity(identity: string): number {
    const gone = [...this.idle.values()].filter((e) => e.identity === identity);
    for (const entry of gone) this.retire(entry, 'identity');
    return gone.length;
  }

  /**
   * Closes every idle engine and waits for the closes; engines still in use are closed when their
   * job gives them back (unless a new acquire came meanwhile: the pool stays usable).
   */
  async drain(): Promise<void> {
    this.draining = true;
    for (const entry of [...this.idle.values()]) this.retire(entry, 'drained');
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    await this.closing;
  }

  stats(): SandboxPoolStats {
    return { acquired: this.counters.hits + this.counters.misses, ...this.counters, evicted: { ...this.evictions }, idle: this.idle.size, leased: this.leased.size };
  }

  /** TTL and memory limits; runs every `sweepMs` while engines are idle (also callable directly). */
  async sweep(now = Date.now()): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      for (const entry of [...this.idle.values()]) {
        if (now - entry.lastUsed >= this.options.idleTtlMs) this.retire(entry, 'ttl');
      }
      const usage = new Map<Entry, number>();
      for (const entry of [...this.idle.values()]) {
        // An engine that cannot say how much memory it holds is retired.
        const bytes = await entry.engine.memoryUsage().catch((error: unknown) => {
          this.options.log.warn({ err: error }, 'an idle query engine could not report its memory; it is closed');
          return Number.POSITIVE_INFINITY;
        });
        // It may have been lent (or evicted) while we asked; only idle engines count.
        if (!this.idle.has(entry.engine)) continue;
        if (bytes > this.options.maxEngineIdleMemoryBytes) this.retire(entry, 'memory');
        else usage.set(entry, bytes);
      }
      let total = [...usage.values()].reduce((a, b) => a + b, 0);
      for (const entry of [...this.idle.values()]) {
        if (total <= this.options.maxIdleMemoryBytes) break;
        total -= usage.get(entry) ?? 0;
        this.retire(entry, 'memory');
      }
    } finally {
      this.sweeping = false;
      if (this.idle.size === 0) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
      }
    }
  }

  private takeIdle(key: string): Entry | undefined {
    const stack = this.byKey.get(key);
    const entry = stack?.pop();
    if (!entry) return undefined;
    if (stack!.length === 0) this.byKey.delete(key);
    this.idle.delete(entry.engine);
    return entry;
  }

  /** A job of `identity` brings a view whose name an idle engine of it has over other files or columns: that engine is stale. */
  private evictSuperseded(identity: string, spec: Spec): void {
    for (const entry of [...this.idle.values()]) {
      if (entry.identity !== identity || entry.key === spec.key) continue;
      for (const [name, signature] of entry.signatures) {
        const now = spec.signatures.get(name);
        if (now !== undefined && now !== signature) {
          this.retire(entry, 'superseded');
          break;
        }
      }
    }
  }

  private giveBack(entry: Entry, release: SandboxRelease): void {
    this.leased.delete(entry);
    entry.lastUsed = Date.now();
    // The job moved its result out (or it was removed); never leave one for the next job.
    fs.rmSync(entry.engine.privateResult, { force: true });
    if (!release.reusable) return this.retire(entry, 'discarded');
    if (this.draining) return this.retire(entry, 'drained');
    if (entry.uses >= this.options.maxUses) return this.retire(entry, 'uses');
    if (this.options.maxIdle <= 0) return this.retire(entry, 'count');
    this.idle.set(entry.engine, entry);
    const stack = this.byKey.get(entry.key);
    if (stack) stack.push(entry);
    else this.byKey.set(entry.key, [entry]);
    while (this.idle.size > this.options.maxIdle) this.retire(this.idle.values().next().value!, 'count');
    if (!this.sweeper) {
      this.sweeper = setInterval(() => void this.sweep(), this.options.sweepMs);
      this.sweeper.unref();
    }
  }

  /** Takes an engine out of the pool (idle or just returned) and closes it soon, off the job's path. */
  private retire(entry: Entry, reason: EvictionReason): void {
    if (this.idle.delete(entry.engine)) {
      const stack = this.byKey.get(entry.key);
      const at = stack?.indexOf(entry) ?? -1;
      if (stack && at >= 0) stack.splice(at, 1);
      if (stack && stack.length === 0) this.byKey.delete(entry.key);
    }
    this.evictions[reason]++;
    this.toClose.push(entry.engine);
    if (!this.closing) {
      this.closing = new Promise<void>((resolve) => (this.closingDone = resolve));
      setImmediate(() => this.closeNext());
    }
  }

  /** One close per macrotask: each blocks the thread for a few ms. */
  private closeNext(): void {
    const engine = this.toClose.shift();
    if (engine) {
      try {
        engine.close();
      } catch (error) {
        // Nothing more to do with it than to say so.
        this.options.log.warn({ err: error }, 'a retired query engine could not be closed');
      }
    }
    if (this.toClose.length > 0) {
      setImmediate(() => this.closeNext());
      return;
    }
    const done = this.closingDone;
    this.closing = undefined;
    this.closingDone = undefined;
    done?.();
  }
}
