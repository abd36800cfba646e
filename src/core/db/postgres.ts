import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { appError } from '../errors/index.ts';
import { inTransaction, type Db } from './db.ts';
import type { Database } from './schema.ts';
import { TableWrites, trackWrites } from './writes.ts';

// COUNT(*) and other int8 results: parse as numbers (row counts stay far below 2^53).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/** What the pg driver says when a connection ends under it (its own messages, not the server's). */
const CONNECTION_LOST = /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable)/;
/** The socket's own errors, which the driver passes on as they are. */
const SOCKET_ERRORS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * `503 METADATA_UNAVAILABLE` for a failure to reach PostgreSQL or a connection lost under a
 * statement (a restart, a network cut): the server's own connection-class errors (SQLSTATE 08…,
 * 57P01–57P03) and the driver's; undefined for anything else (a constraint, a syntax error…).
 */
function metadataUnavailable(error: unknown, connecting: boolean): Error | undefined {
  const e = error as { message?: string; code?: string; severity?: string } | undefined;
  if (!e || typeof e !== 'object') return undefined;
  const serverSide = typeof e.severity === 'string' && typeof e.code === 'string';
  const lost = serverSide ? /^(08|57P0[1-3])/.test(e.code!) : connecting || CONNECTION_LOST.test(e.message ?? '') || SOCKET_ERRORS.has(e.code ?? '');
  if (!lost) return undefined;
  return Object.assign(appError('METADATA_UNAVAILABLE', 'The metadata database cannot be reached right now: retry shortly', { headers: { 'retry-after': '1' } }), { cause: error });
}

/** The pool as Kysely and scripts see it: connection failures come out as METADATA_UNAVAILABLE. */
function reportingPool(pool: pg.Pool): { connect(): Promise<pg.PoolClient>; end(): Promise<void> } {
  return {
    async connect() {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw metadataUnavailable(error, true) ?? error;
      }
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      // Promise-returning calls only; a cursor (Kysely's stream) is passed through as it is.
      (client as { query: unknown }).query = (...args: unknown[]) => {
        const result = query(...args);
        return result instanceof Promise ? result.catch((error: unknown) => Promise.reject(metadataUnavailable(error, false) ?? error)) : result;
      };
      return client;
    },
    end: () => pool.end(),
  };
}

export async function openPostgres(connectionString: string): Promise<Db> {
  const pool = new pg.Pool({ connectionString, max: 10 });
  pool.on('error', () => {
    /* idle client errors surface on the next query */
  });
  // A connection lost while checked out (between the statements of a transaction) emits 'error' with
  // no pool listener on it, which would end the process: the statement under way fails instead, and
  // the pool drops the broken client when it is released, so the next checkout connects afresh.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  const connections = reportingPool(pool);
  const writes = new TableWrites();
  const kysely = new Kysely<Database>({ dialect: trackWrites(new PostgresDialect({ pool: connections }), writes) });
  return {
    kysely,
    driver: 'postgres',
    writes,
    relaxedCommit: (fn) =>
      kysely.transaction().execute(async (trx) => {
        await sql`SELECT set_config('synchronous_commit', 'off', true)`.execute(trx);
        return fn(trx);
      }),
    async scriptTransaction(fn) {
      const client = await connections.connect();
      // A script may write anything: every table's count moves before and after.
      writes.note(['*']);
      try {
        const session = {
          exec: async (sql: string) => void (await client.query(sql)),
          query: async <R>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as R[],
        };
        return await inTransaction(session, fn);
      } finally {
        writes.note(['*']);
        client.release();
      }
    },
    connections: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async close() {
      await kysely.destroy();
    },
  };
}
