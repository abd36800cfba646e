import { sql } from 'kysely';
import type { Db } from '../../core/db/index.ts';

export interface ThrottleOptions {
  maxFailures: number;
  windowSeconds: number;
}

/**
 * Counts failed token requests per client_id in a fixed window kept in the metadata database, so
 * the limit holds across every server behind a load balancer.
 */
export class FailedAttemptThrottle {
  constructor(
    private readonly db: Db,
    private readonly options: ThrottleOptions = { maxFailures: 10, windowSeconds: 60 },
  ) {}

  /** Seconds until the client_id may try again, or 0 when it may try now. */
  async retryAfter(clientId: string): Promise<number> {
    const row = await this.db.kysely.selectFrom('token_failures').selectAll().where('client_id', '=', clientId).executeTakeFirst();
    if (!row || row.failures < this.options.maxFailures) return 0;
    const remainingMs = row.window_start.getTime() + this.options.windowSeconds * 1000 - Date.now();
    return remainingMs > 0 ? Math.ceil(remainingMs / 1000) : 0;
  }

  async recordFailure(clientId: string): Promise<void> {
    const windowStart = new Date(Date.now() - this.options.windowSeconds * 1000);
    await this.db.kysely
      .insertInto('token_failures')
      .values({ client_id: clientId, window_start: new Date(), failures: 1 })
      .onConflict((oc) =>
        oc.column('client_id').doUpdateSet({
          failures: sql<number>`CASE WHEN token_failures.window_start < ${windowStart} THEN 1 ELSE token_failures.failures + 1 END`,
          window_start: sql<Date>`CASE WHEN token_failures.window_start < ${windowStart} THEN excluded.window_start ELSE token_failures.window_start END`,
        }),
      )
      .execute();
    // Failures for made-up client_ids must not pile up: now and then, drop windows long closed.
    if (Math.random() < 0.05) {
      await this.db.kysely.deleteFrom('token_failures').where('window_start', '<', windowStart).execute();
    }
  }
}
