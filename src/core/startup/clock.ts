import { sql } from 'kysely';
import type { Db } from '../db/index.ts';
import { StartRefusal } from './refusal.ts';

/**
 * Refuses a start on a host whose clock is more than `maxSkewSeconds` from the metadata database's
 * (PostgreSQL; the embedded database shares this host's clock). Access tokens, refresh tokens, key
 * retirement and failed-attempt windows are stamped by one process's clock and judged by another's
 * (docs/deploy.md, "Clocks"). Returns the measured difference (database minus host), in milliseconds.
 */
export async function checkClock(db: Db, maxSkewSeconds: number): Promise<number> {
  if (db.driver !== 'postgres') return 0;
  const sent = Date.now();
  const { rows } = await sql<{ now: Date }>`SELECT clock_timestamp() AS now`.execute(db.kysely);
  const received = Date.now();
  const skew = new Date(rows[0].now).getTime() - (sent + received) / 2;
  // The round trip bounds how well the two can be compared: only what is beyond it counts.
  if (Math.abs(skew) - (received - sent) / 2 > maxSkewSeconds * 1000) {
    throw new StartRefusal(
      `this host's clock is ${Math.round(Math.abs(skew) / 1000)} s ${skew > 0 ? 'behind' : 'ahead of'} the metadata database's (at most ${maxSkewSeconds} s are allowed)`,
      'synchronise the clocks of every server, worker and the database host (NTP: chrony or systemd-timesyncd), or raise LAKEPORT_MAX_CLOCK_SKEW_SECONDS',
      'clocks',
    );
  }
  return skew;
}
