import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  CompiledQuery,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SelectQueryNode,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import { inTransaction, type Db } from './db.ts';
import { StartRefusal } from '../startup/refusal.ts';
import { LOCK_STALE_MS, lockDirectory, type LockHolder } from './dir-lock.ts';
import { Mutex } from './mutex.ts';
import type { Database } from './schema.ts';
import { TableWrites, trackWrites } from './writes.ts';

type Reply = { id: number; result?: { rows: unknown[]; affectedRows?: number }; error?: Record<string, unknown> & { message: string } };

/**
 * The PGlite instance on its own thread (pglite-worker.js): statements go over as messages and rows
 * come back structured-cloned (dates, bigints, bytes and parsed JSON survive). The thread keeps
 * the process alive only while a statement is pending.
 */
class PgliteThread {
  /** Moves before every statement that may write (see Db.changes). */
  changes = 0;
  private readonly pending = new Map<number, { resolve(reply: Reply): void; reject(error: Error): void }>();
  private next = 0;
  private exited?: Error;
  private opened = false;
  private closing = false;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (reply: Reply) => this.settle(reply.id, (p) => p.resolve(reply)));
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', (code) => this.fail(new Error(`the metadata database thread stopped (exit code ${code})`)));
  }

  static async start(dataDir: string | undefined, template?: Blob): Promise<PgliteThread> {
    const worker = new Worker(new URL('./pglite-worker.js', import.meta.url), {
      workerData: { dataDir, template: template ? new Uint8Array(await template.arrayBuffer()) : undefined },
    });
    const thread = new PgliteThread(worker);
    await thread.send('open');
    thread.opened = true;
    return thread;
  }

  /** A statement; unless it `readsOnly`, `changes` moves before it is sent. */
  async query(sql: string, params: readonly unknown[] = [], readsOnly = false): Promise<{ rows: unknown[]; affectedRows?: number }> {
    if (!readsOnly) this.changes++;
    return (await this.send('query', sql, params)).result!;
  }

  /** Statements (a script), taken to write. */
  async exec(sql: string): Promise<void> {
    this.changes++;
    await this.send('exec', sql);
  }

  async close(): Promise<void> {
    if (this.exited) return;
    this.closing = true;
    await this.send('close');
    await this.worker.terminate();
  }

  private send(op: 'open' | 'query' | 'exec' | 'close', sql?: string, params?: readonly unknown[]): Promise<Reply> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.next++;
    if (this.pending.size === 0) this.worker.ref();
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, op, sql, params });
    }).then((reply) => {
      if (reply.error) throw Object.assign(new Error(reply.error.message), reply.error);
      return reply;
    });
  }

  private settle(id: number, how: (p: { resolve(reply: Reply): void; reject(error: Error): void }) => void): void {
    const waiting = this.pending.get(id);
    if (!waiting) return;
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker.unref();
    how(waiting);
  }

  private fail(error: Error): void {
    this.exited ??= error;
    for (const id of [...this.pending.keys()]) this.settle(id, (p) => p.reject(error));
    // Without its metadata database a server can only fail every request: stop the process, as a
    // PGlite failure on the main thread would have, so that whatever supervises it starts it again.
    if (this.opened && !this.closing) {
      setImmediate(() => {
        throw error;
      });
    }
  }
}

/** A SELECT without a WITH clause (which could hold an INSERT, UPDATE or DELETE) reads only. */
function readsOnly(compiled: CompiledQuery): boolean {
  return SelectQueryNode.is(compiled.query) && compiled.query.with === undefined;
}

class ThreadConnection implements DatabaseConnection {
  constructor(
    private readonly thread: PgliteThread,
    readonly release: () => void,
  ) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const { rows, affectedRows } = await this.thread.query(compiled.sql, compiled.parameters, readsOnly(compiled));
    return { rows: rows as R[], ...(affectedRows === undefined ? {} : { numAffectedRows: BigInt(affectedRows) }) };
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite does not stream results');
  }
}

/** PGlite has one session: each Kysely connection (and so each transaction) holds it alone, in turn. */
class ThreadDriver implements Driver {
  constructor(
    private readonly thread: PgliteThread,
    private readonly mutex: Mutex,
  ) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new ThreadConnection(this.thread, await this.mutex.acquire());
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('BEGIN'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('COMMIT'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('ROLLBACK'));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as ThreadConnection).release();
  }

  async destroy(): Promise<void> {
    await this.thread.close();
  }
}

/** Runs initdb for a directory without a cluster in a child process (pglite-init.js), which takes initdb's memory with it. */
async function createCluster(dataDir: string): Promise<void> {
  if (fs.existsSync(path.join(dataDir, 'PG_VERSION'))) return;
  const child = spawn(process.execPath, [fileURLToPath(new URL('./pglite-init.js', import.meta.url)), dataDir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('exit', resolve));
  if (code !== 0) throw new Error(`creating the embedded database in ${dataDir} failed (exit code ${code}): ${stderr.trim().split('\n').at(-1) ?? ''}`);
}

/** Why the embedded database cannot be opened: another process has it, here or on another host sharing the directory. */
function lockRefusal(dataDir: string, holder: LockHolder): Error {
  if (!holder.elsewhere) {
    return new Error(`the embedded database in ${dataDir} is open in process ${holder.pid}: stop that process first, or set DATABASE_URL so that several processes share PostgreSQL`);
  }
  return new StartRefusal(
    `the embedded database in ${dataDir} is open in process ${holder.pid} on host ${holder.host}, and an embedded (PGlite) data directory belongs to one host`,
    `give each server its own LAKEPORT_DATA_DIR, or set DATABASE_URL so that servers on several hosts share PostgreSQL (if host ${holder.host} is gone for good, its lock ${dataDir}.lock is taken over ${LOCK_STALE_MS / 1000} s after it stopped)`,
    'pglite-one-host',
  );
}

/**
 * Embedded PostgreSQL, on a thread of its own. `dataDir` undefined keeps everything in memory;
 * `template` (a data-directory dump) skips initdb, which tests use to start a fresh database in
 * about a second.
 */
export async function openPglite(dataDir: string | undefined, template?: Blob): Promise<Db> {
  // One process only: two would corrupt the cluster, and Db.changes counts this process's writes.
  const unlock = dataDir ? lockDirectory(dataDir, (holder) => lockRefusal(dataDir, holder)) : () => undefined;
  let thread: PgliteThread;
  try {
    if (dataDir) {
      fs.mkdirSync(dataDir, { recursive: true });
      if (!template) await createCluster(dataDir);
    }
    thread = await PgliteThread.start(dataDir, template);
  } catch (error) {
    unlock();
    throw error;
  }
  const mutex = new Mutex();
  const writes = new TableWrites();
  const dialect = {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new ThreadDriver(thread, mutex),
    createIntrospector: (db: Kysely<unknown>) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  };
  const kysely = new Kysely<Database>({ dialect: trackWrites(dialect, writes) });
  return {
    kysely,
    driver: 'pglite',
    writes,
    // PGlite's commits do not wait for an fsync to begin with (its files are written as it goes).
    relaxedCommit: (fn) => fn(kysely),
    async scriptTransaction(fn) {
      const release = await mutex.acquire();
      writes.note(['*']);
      try {
        const session = {
          exec: (sql: string) => thread.exec(sql),
          query: async <R>(sql: string, params: unknown[] = []) => (await thread.query(sql, params)).rows as R[],
        };
        return await inTransaction(session, fn);
      } finally {
        writes.note(['*']);
        release();
      }
    },
    changes: () => thread.changes,
    connections: () => ({ total: 1, idle: mutex.holders === 0 ? 1 : 0, waiting: Math.max(0, mutex.holders - 1) }),
    async close() {
      try {
        await kysely.destroy();
      } finally {
        unlock();
      }
    },
  };
}
