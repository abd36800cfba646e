import type { SqlToken } from '../../../core/engine/index.ts';
import type { JobsErrorCode } from '../errors.ts';
import type { Span } from './errors.ts';

/**
 * Intervals in Lakeport's statements (EXPIRE SNAPSHOTS … OLDER THAN, REFRESH EVERY), in milliseconds:
 *
 *   INTERVAL '7 days'   '7 days'   7 DAYS   INTERVAL 7 DAYS   '1 day 12 hours'
 *
 * Units: SECOND(S), MINUTE(S), HOUR(S), DAY(S), WEEK(S), case-insensitive; amounts are whole or
 * decimal numbers ≥ 0. Anything else is 400 INVALID_INTERVAL at the interval's place.
 */

const UNIT_MS: Record<string, number> = {
  SECOND: 1_000,
  MINUTE: 60_000,
  HOUR: 3_600_000,
  DAY: 86_400_000,
  WEEK: 604_800_000,
};

/** At most about a hundred years. */
const MAX_MS = 100 * 365 * 86_400_000;

export const INTERVAL_HINT = "write an interval as INTERVAL '7 days', '7 days' or 7 DAYS (units: SECONDS, MINUTES, HOURS, DAYS, WEEKS)";

/** The milliseconds of a unit word (singular or plural), or undefined. */
export function unitMs(word: string): number | undefined {
  const upper = word.toUpperCase();
  return UNIT_MS[upper] ?? (upper.endsWith('S') ? UNIT_MS[upper.slice(0, -1)] : undefined);
}

/** `'7 days'`, `'1 day 12 hours'`: the milliseconds, or undefined when the text is not an interval. */
export function parseIntervalText(text: string): number | undefined {
  const parts = text.trim().split(/\s+/);
  if (parts.length === 0 || parts.length % 2 !== 0) return undefined;
  let total = 0;
  for (let i = 0; i < parts.length; i += 2) {
    if (!/^\d+(\.\d+)?$/.test(parts[i])) return undefined;
    const unit = unitMs(parts[i + 1]);
    if (unit === undefined) return undefined;
    total += Number(parts[i]) * unit;
  }
  return total <= MAX_MS ? Math.round(total) : undefined;
}

/** What readInterval needs of a parser: its tokens, string decoding and positioned errors. */
export interface IntervalSource {
  peek(offset?: number): SqlToken | undefined;
  next(): SqlToken | undefined;
  decodeString(t: SqlToken): string;
  fail(code: JobsErrorCode, message: string, span?: Span): never;
}

/** Reads an interval at the parser's position: its milliseconds and its span. */
export function readInterval(p: IntervalSource): { value: number } & Span {
  const first = p.peek();
  if (!first) p.fail('INVALID_INTERVAL', `Expected an interval: ${INTERVAL_HINT}`);
  const start = first.start;
  if (first.kind === 'word' && first.text.toUpperCase() === 'INTERVAL') p.next();
  const t = p.peek();
  if (t?.kind === 'string') {
    p.next();
    const ms = parseIntervalText(p.decodeString(t));
    if (ms === undefined) p.fail('INVALID_INTERVAL', `Not an interval: ${INTERVAL_HINT}`, { start, end: t.end });
    return { value: ms, start, end: t.end };
  }
  const unit = p.peek(1);
  if (t?.kind === 'number' && unit?.kind === 'word') {
    const ms = parseIntervalText(`${t.text} ${unit.text}`);
    if (ms === undefined) p.fail('INVALID_INTERVAL', `Not an interval: ${INTERVAL_HINT}`, { start, end: unit.end });
    p.next();
    p.next();
    return { value: ms, start, end: unit.end };
  }
  const at = t ?? first;
  p.fail('INVALID_INTERVAL', `Expected an interval: ${INTERVAL_HINT}`, { start: at.start, end: (unit ?? at).end });
}
