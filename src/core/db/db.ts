import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { TableWrites } from './writes.ts';

/** A connection used to run migration scripts (multi-statement SQL) inside one transaction. */
export interface ScriptTransaction {
  exec(sql: string): Promise<void>;
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
}

export interface Db {
  readonly kysely: Kysely<Database>;
  readonly driver: 'pglite' | 'postgres';
  /** Runs `fn` in one transaction on a single connection, for scripts that Kysely's prepared statements cannot carry. */
  scriptTransaction<T>(fn: (tx: ScriptTransaction) => Promise<T>): Promise<T>;
  /**
   * For a database that only this process writes (embedded PGlite): a count that moves before every
   * statement that may change data is sent, so what was read while it stood still is still true.
   * Undefined where other processes may write (PostgreSQL).
   */
  readonly changes?: () => number;
  /**
   * The connections this process holds (PostgreSQL: pg.Pool's; PGlite: its one session) and the
   * queries waiting for one, for GET /metrics.
   */
  connections(): { total: number; idle: number; waiting: number };
  /** This process's writes per table, for caches that must never outlive them (core/kept.ts). */
  readonly writes: TableWrites;
  /**
   * Runs `fn` in a transaction whose COMMIT does not wait for the write-ahead log to reach the disk
   * (PostgreSQL's `synchronous_commit = off`): what it wrote is visible to every session at once, and
   * durable within a fraction of a second (PostgreSQL's WAL writer) — a database crash in between
   * loses it. Only for writes whose loss fails closed. PGlite runs `fn` as one plain statement would.
   */
  relaxedCommit<T>(fn: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Runs `fn` between BEGIN and COMMIT on `session` (one connection), and rolls back when it throws. */
export async function inTransaction<T>(session: ScriptTransaction, fn: (tx: ScriptTransaction) => Promise<T>): Promise<T> {
  await session.exec('BEGIN');
  try {
    const result = await fn(session);
    await session.exec('COMMIT');
    return result;
  } catch (error) {
    // The statement's failure is the one to report; a connection that cannot roll back fails its next use as well.
    await session.exec('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
