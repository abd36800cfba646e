import crypto from 'node:crypto';
import net from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Db } from '../../core/db/index.ts';
import { isAppError, type AppError } from '../../core/errors/index.ts';
import { ADMIN_TOKEN_HEADER, IDENTITY_REGEX, type AdminToken } from '../../core/http/index.ts';
import { authError } from './errors.ts';

export interface ThrottleOptions {
  /** Failures one (client_id, source) — or one source, for the admin token — may have per window. */
  sourceLimit: number;
  /** Failures one client_id may have per window over every source before unknown sources are held back. */
  clientCeiling: number;
  windowSeconds: number;
  /** A source that authenticated as a client within this many days is "known" to it. */
  knownSourceDays: number;
  /** How long a verdict that let a success through is kept for the source's next successes (0: never). */
  keepMs: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = { sourceLimit: 10, clientCeiling: 100, windowSeconds: 60, knownSourceDays: 30, keepMs: 1_000 };

/** What is being guessed: a client_id's secret from one source, or the admin token from one source. */
export type ThrottleKey = { kind: 'client'; clientId: string; source: string } | { kind: 'admin'; source: string };

export interface ThrottleVerdict {
  /** Seconds until the source may try again; 0 when it may try now. */
  retryAfter: number;
  /** Client keys: the source authenticated as this client within `knownSourceDays`. */
  known: boolean;
  /** Client keys: that success was recorded within the last day (so it need not be recorded again). */
  knownRecently: boolean;
}

/** Share of failures that also drop closed windows (rows remembering a recent success stay). */
const PURGE_PROBABILITY = 0.05;
const ALL_SOURCES = '*';

function expandIpv6(ip: string): number[] | undefined {
  let text = ip;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const groups = [...head, ...Array<string>(Math.max(0, fill)).fill('0'), ...tail].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * The source address a counter is kept for: an IPv4 address as is (IPv4-mapped IPv6 too), an IPv6
 * address as its /64 — one subscriber's usual allocation, so rotating inside it does not help.
 */
export function sourceKey(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const address = ip.replace(/%.*$/, '');
  if (net.isIPv4(address)) return address;
  if (net.isIPv6(address)) {
    const g = expandIpv6(address);
    if (!g) return address.toLowerCase();
    if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return `${g[6] >> 8}.${g[6] & 0xff}.${g[7] >> 8}.${g[7] & 0xff}`;
    return `${g.slice(0, 4).map((x) => x.toString(16)).join(':')}::/64`;
  }
  return address.slice(0, 100);
}

/** The subject column for a client_id: itself when well-formed, else a digest (no NULs or megabytes in the table). */
function clientSubject(clientId: string): string {
  return IDENTITY_REGEX.test(clientId) ? clientId : `#${crypto.createHash('sha256').update(clientId).digest('hex')}`;
}

/** 429 with Retry-After; `oauth` adds RFC 6749's `error` fields for the OAuth endpoints. */
export function tooManyAttempts(retryAfter: number, what: string, oauth: boolean): AppError {
  const detail = `Too many failed ${what} from this address; retry in ${retryAfter} s`;
  return authError('TOO_MANY_REQUESTS', detail, {
    headers: { 'retry-after': String(retryAfter), 'cache-control': 'no-store' },
    extra: oauth ? { error: 'slow_down', error_description: detail } : {},
  });
}

interface CounterRow {
  source: string;
  failures: number;
  current: boolean;
  retry_after: number;
  known: boolean;
  known_recently: boolean;
}

/**
 * Failed-attempt throttling kept in the metadata database, so it holds across every server.
 *
 * - A (client_id, source address) pair may fail `sourceLimit` times per window; then that pair is
 *   refused (429) until the window ends — even with the right secret, so it learns nothing more.
 *   Another source is not affected, so an attacker cannot lock a client out.
 * - A client_id may fail `clientCeiling` times per window over every source; past that, sources
 *   that have not authenticated as that client within `knownSourceDays` are refused too (a spray
 *   from many addresses), while known sources keep working.
 * - The admin token: `sourceLimit` bad tokens per source address per window.
 *
 * Atomicity without a write on success: `check` before evaluating refuses a blocked source cheaply
 * (a read). A failure is counted after evaluation by one atomic `INSERT … ON CONFLICT DO UPDATE …
 * RETURNING`, and answered 401 only when the returned count is within the limit (429 otherwise);
 * a success is accepted only when a second `check` after evaluation still finds the source within
 * its limit. So however many guesses race, at most `sourceLimit` of them get a verdict (401, or a
 * 200 that a guess counted after the limit can never get), and the success path only reads — it
 * writes once a day per (client, source), to remember the source as known.
 *
 * Successes do not even read, mostly: the verdict that let one through (`confirm`) is kept for the
 * source for `keepMs`, and its next successes are judged by it. A failure drops it at once, before
 * it is counted, so on this server the next attempt of the source reads the counters again; a
 * failure counted by another server is seen here within `keepMs`.
 */
export class FailedAttemptThrottle {
  /** Clean verdicts that let a success through, by key: the source's next successes within keepMs need no read. */
  private readonly kept: LRUCache<string, ThrottleVerdict>;

  constructor(
    private readonly db: Db,
    private readonly options: ThrottleOptions = DEFAULT_THROTTLE,
  ) {
    this.kept = new LRUCache({ max: 10_000, ttl: Math.max(1, options.keepMs) });
  }

  private keptKey(key: ThrottleKey): string {
    return JSON.stringify(key.kind === 'client' ? [key.kind, key.clientId, key.source] : [key.kind, key.source]);
  }

  private keyOf(key: ThrottleKey) {
    return key.kind === 'client'
      ? { kind: key.kind, subject: clientSubject(key.clientId), source: key.source }
      : { kind: key.kind, subject: '', source: key.source };
  }

  private verdict(key: ThrottleKey, rows: CounterRow[], counted: boolean): ThrottleVerdict {
    // After counting, the count includes this attempt: the limit-th failure is still answered.
    const over = (failures: number, limit: number) => (counted ? failures > limit : failures >= limit);
    const pair = rows.find((r) => r.source !== ALL_SOURCES && r.current);
    const total = rows.find((r) => r.source === ALL_SOURCES && r.current);
    const paired = rows.find((r) => r.source !== ALL_SOURCES);
    const known = key.kind === 'client' && paired?.known === true;
    let retryAfter = 0;
    if (pair && over(pair.failures, this.options.sourceLimit)) retryAfter = pair.retry_after;
    else if (key.kind === 'client' && !known && total && over(total.failures, this.options.clientCeiling)) retryAfter = total.retry_after;
    return { retryAfter, known, knownRecently: known && paired?.known_recently === true };
  }

  private columns() {
    const { windowSeconds, knownSourceDays } = this.options;
    // Never more than the window: on PostgreSQL this statement's now() (its transaction's start) can
    // be a moment before the window_start another transaction wrote and this one already sees.
    return sql<CounterRow>`source, failures,
      window_start > now() - make_interval(secs => ${windowSeconds}) AS current,
      GREATEST(1, LEAST(${windowSeconds}, CEIL(EXTRACT(EPOCH FROM (window_start + make_interval(secs => ${windowSeconds}) - now())))))::int AS retry_after,
      COALESCE(last_success_at > now() - make_interval(days => ${knownSourceDays}), false) AS known,
      COALESCE(last_success_at > now() - interval '1 day', false) AS known_recently`;
  }

  /** Whether the source may try now (a read only, unless a verdict is kept for it). */
  async check(key: ThrottleKey): Promise<ThrottleVerdict> {
    return this.kept.get(this.keptKey(key)) ?? this.read(key);
  }

  /**
   * `check` for an attempt that succeeded, after its secret was verified: the verdict it gets is
   * kept for the source's next successes (while it lets them through).
   */
  async confirm(key: ThrottleKey): Promise<ThrottleVerdict> {
    const keptKey = this.keptKey(key);
    const kept = this.kept.get(keptKey);
    if (kept) return kept;
    const verdict = await this.read(key);
    if (verdict.retryAfter === 0 && this.options.keepMs > 0) this.kept.set(keptKey, verdict);
    return verdict;
  }

  private async read(key: ThrottleKey): Promise<ThrottleVerdict> {
    const k = this.keyOf(key);
    const sources = key.kind === 'client' ? [k.source, ALL_SOURCES] : [k.source];
    const { rows } = await sql<CounterRow>`SELECT ${this.columns()} FROM auth_failures
      WHERE kind = ${k.kind} AND subject = ${k.subject} AND source IN (${sql.join(sources)})`.execute(this.db.kysely);
    return this.verdict(key, rows.map(normalize), false);
  }

  /**
   * Counts a failure atomically and says whether the attempt may still be answered on its merits
   * (`retryAfter` 0) or must get a 429. For a client, one statement counts the (client, source)
   * pair and — only while the pair is within its limit — the client_id's total, so a source racing
   * past its own limit cannot push the client over the ceiling on its own.
   */
  async recordFailure(key: ThrottleKey): Promise<ThrottleVerdict> {
    this.kept.delete(this.keptKey(key));
    const k = this.keyOf(key);
    const { windowSeconds, knownSourceDays, sourceLimit } = this.options;
    const stale = sql`f.window_start <= now() - make_interval(secs => ${windowSeconds})`;
    const onConflict = sql`ON CONFLICT (kind, subject, source) DO UPDATE SET
        failures = CASE WHEN ${stale} THEN 1 ELSE f.failures + 1 END,
        window_start = CASE WHEN ${stale} THEN now() ELSE f.window_start END
      RETURNING f.*`;
    const pair = sql`INSERT INTO auth_failures AS f (kind, subject, source, window_start, failures)
      VALUES (${k.kind}, ${k.subject}, ${k.source}, now(), 1) ${onConflict}`;
    const { rows } =
      key.kind === 'client'
        ? await sql<CounterRow>`WITH pair AS (${pair}),
            total AS (INSERT INTO auth_failures AS f (kind, subject, source, window_start, failures)
              SELECT kind, subject, ${ALL_SOURCES}, now(), 1 FROM pair WHERE failures <= ${sourceLimit} ${onConflict})
            SELECT ${this.columns()} FROM pair UNION ALL SELECT ${this.columns()} FROM total`.execute(this.db.kysely)
        : await sql<CounterRow>`WITH pair AS (${pair}) SELECT ${this.columns()} FROM pair`.execute(this.db.kysely);
    // Counters for made-up client_ids and addresses must not pile up: now and then, drop closed windows.
    if (Math.random() < PURGE_PROBABILITY) {
      await sql`DELETE FROM auth_failures WHERE window_start < now() - make_interval(secs => ${windowSeconds})
        AND (last_success_at IS NULL OR last_success_at < now() - make_interval(days => ${knownSourceDays}))`.execute(this.db.kysely);
    }
    return this.verdict(key, rows.map(normalize), true);
  }

  /** Remembers that the source authenticated as the client (call only when `knownRecently` is false). */
  async recordSuccess(key: Extract<ThrottleKey, { kind: 'client' }>): Promise<void> {
    const keptKey = this.keptKey(key);
    const kept = this.kept.get(keptKey);
    if (kept) this.kept.set(keptKey, { ...kept, known: true, knownRecently: true });
    const k = this.keyOf(key);
    await sql`INSERT INTO auth_failures AS f (kind, subject, source, window_start, failures, last_success_at)
      VALUES (${k.kind}, ${k.subject}, ${k.source}, now(), 0, now())
      ON CONFLICT (kind, subject, source) DO UPDATE SET last_success_at = now()`.execute(this.db.kysely);
  }
}

/**
 * An onRequest hook for the whole app that throttles the admin token per source address: a request
 * carrying `x-admin-token` from a source with `sourceLimit` bad ones in the window gets 429 — even
 * with the right token, so the source learns nothing more — while the admin elsewhere is unaffected.
 * A bad token is counted whatever the route; the route itself still answers it 401.
 */
export function adminTokenThrottle(adminToken: AdminToken, throttle: FailedAttemptThrottle) {
  const what = 'attempts with the admin token';
  return async function throttleAdminToken(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    if (request.headers[ADMIN_TOKEN_HEADER] === undefined) return;
    const key = { kind: 'admin', source: sourceKey(request.ip) } as const;
    const gate = await throttle.check(key);
    if (gate.retryAfter > 0) throw tooManyAttempts(gate.retryAfter, what, false);
    let valid: boolean;
    try {
      valid = adminToken.presentIn(request);
    } catch (error) {
      if (!isAppError(error, 'INVALID_ADMIN_TOKEN')) throw error;
      valid = false;
    }
    if (!valid) {
      const counted = await throttle.recordFailure(key);
      if (counted.retryAfter > 0) throw tooManyAttempts(counted.retryAfter, what, false);
      return;
    }
    const after = await throttle.confirm(key);
    if (after.retryAfter > 0) throw tooManyAttempts(after.retryAfter, what, false);
  };
}

/** Drivers differ in how they return booleans and integers. */
function normalize(row: CounterRow): CounterRow {
  return {
    source: row.source,
    failures: Number(row.failures),
    current: row.current === true || (row.current as unknown) === 't',
    retry_after: Number(row.retry_after),
    known: row.known === true || (row.known as unknown) === 't',
    known_recently: row.known_recently === true || (row.known_recently as unknown) === 't',
  };
}
