import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_INSTANT,
  MICROS_PER_DAY,
  MIN_INSTANT,
  formatDate,
  formatInstant,
  parseDate,
  parseDateTime,
  parseDuration,
  parseTimeOfDay,
  shift,
  type Duration,
} from './temporal.ts';

const value = <T>(parsed: { ok: true; value: T } | { ok: false; message: string }): T => {
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.value;
};
const instant = (iso: string) => BigInt(Date.parse(iso)) * 1000n;
const at = (iso: string, duration: string) => {
  const moved = shift(instant(iso), value(parseDuration(duration)));
  return moved === undefined ? undefined : formatInstant(moved);
};

describe('temporal literals', () => {
  it('parses dates, including leap days and years below 100', () => {
    expect(formatDate(value(parseDate('2024-02-29')))).toBe('2024-02-29');
    expect(formatDate(value(parseDate('0001-01-01')))).toBe('0001-01-01');
    expect(formatDate(value(parseDate('0099-12-31')))).toBe('0099-12-31');
    expect(value(parseDate('1970-01-01'))).toBe(0);
    for (const bad of ['2023-02-29', '1900-02-29', '2024-04-31', '2024-00-01', '0000-01-01', '2024-1-01']) expect(parseDate(bad).ok).toBe(false);
    expect(parseDate('2000-02-29').ok).toBe(true);
  });

  it('parses datetimes with Z or an offset into UTC instants', () => {
    expect(formatInstant(value(parseDateTime('2024-01-31T10:00:00Z')))).toBe('2024-01-31 10:00:00');
    expect(formatInstant(value(parseDateTime('2024-01-01T01:30:00+02:00')))).toBe('2023-12-31 23:30:00');
    expect(formatInstant(value(parseDateTime('2024-01-31T23:00:00-05:00')))).toBe('2024-02-01 04:00:00');
    expect(formatInstant(value(parseDateTime('2024-01-31T10:00:00.123456Z')))).toBe('2024-01-31 10:00:00.123456');
    expect(formatInstant(value(parseDateTime('2024-01-31T10:00:00.1234560Z')))).toBe('2024-01-31 10:00:00.123456');
    expect(formatInstant(value(parseDateTime('2024-01-31T10:00Z')))).toBe('2024-01-31 10:00:00');
    expect(value(parseDateTime('9999-12-31T23:59:59.999999Z'))).toBe(MAX_INSTANT);
    expect(value(parseDateTime('0001-01-01T00:00:00Z'))).toBe(MIN_INSTANT);
    expect(parseDateTime('0001-01-01T00:00:00+01:00').ok).toBe(false);
    expect(parseDateTime('9999-12-31T23:59:59-01:00').ok).toBe(false);
    const missingZone = parseDateTime('2024-01-31T10:00:00');
    expect(!missingZone.ok && missingZone.message).toContain('write 2024-01-31T10:00:00Z for UTC');
    for (const bad of ['2024-01-31T24:00:00Z', '2024-01-31T10:60:00Z', '2024-01-31T10:00:60Z', '2024-01-31T10:00:00+24:00', '2024-01-31T10:00:00.0000001Z']) {
      expect([bad, parseDateTime(bad).ok]).toEqual([bad, false]);
    }
  });

  it('parses times of day', () => {
    expect(value(parseTimeOfDay('00:00'))).toBe(0n);
    expect(value(parseTimeOfDay('23:59:59.999999'))).toBe(MICROS_PER_DAY - 1n);
    expect(parseTimeOfDay('24:00').ok).toBe(false);
  });

  it('parses signed ISO 8601 durations', () => {
    const d = (text: string) => value(parseDuration(text));
    expect(d('P1Y2M')).toEqual({ months: 14, micros: 0n });
    expect(d('P1D')).toEqual({ months: 0, micros: MICROS_PER_DAY });
    expect(d('PT1H1M1.5S')).toEqual({ months: 0, micros: 3_661_500_000n });
    expect(d('-P1DT1S')).toEqual({ months: 0, micros: -(MICROS_PER_DAY + 1_000_000n) });
    expect(d('+P1M')).toEqual({ months: 1, micros: 0n });
    expect(d('PT0.000001S')).toEqual({ months: 0, micros: 1n });
    expect(d('P10000Y')).toEqual({ months: 120000, micros: 0n });
    for (const bad of ['P', 'PT', '1D', 'P1H', 'PT1D', 'P1.5D', 'P1W', 'P-1D', 'p1d', 'P1D ', 'PT1.0000001S', 'P10001Y', 'P99999999999999999999D']) {
      expect([bad, parseDuration(bad).ok]).toEqual([bad, false]);
    }
  });
});

describe('shift', () => {
  it('adds months on the calendar, clamping the day, then a fixed span', () => {
    expect(at('2024-01-31T10:00:00Z', 'P1M')).toBe('2024-02-29 10:00:00');
    expect(at('2023-01-31T10:00:00Z', 'P1M')).toBe('2023-02-28 10:00:00');
    expect(at('2024-03-31T00:00:00Z', '-P1M')).toBe('2024-02-29 00:00:00');
    expect(at('2024-02-29T00:00:00Z', 'P1Y')).toBe('2025-02-28 00:00:00');
    expect(at('2024-02-29T00:00:00Z', 'P4Y')).toBe('2028-02-29 00:00:00');
    expect(at('2024-12-31T23:59:59Z', 'PT1S')).toBe('2025-01-01 00:00:00');
    expect(at('2024-01-31T00:00:00Z', 'P1M1D')).toBe('2024-03-01 00:00:00'); // Feb 29 + 1 day
    expect(at('2024-03-01T00:00:00Z', '-P1M1D')).toBe('2024-01-31 00:00:00'); // Feb 1 − 1 day
    expect(at('2024-03-09T12:00:00Z', 'P1D')).toBe('2024-03-10 12:00:00');
    expect(at('1969-12-31T23:59:59.999Z', 'PT0.001S')).toBe('1970-01-01 00:00:00');
    expect(at('0001-01-01T00:00:00Z', '-PT1S')).toBeUndefined();
    expect(at('9999-12-01T00:00:00Z', 'P1M')).toBeUndefined();
  });

  it('agrees with DuckDB adding to_months and to_microseconds to a TIMESTAMP', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      const monthEnds = ['2024-01-31', '2024-02-29', '2023-02-28', '2024-03-31', '2024-04-30', '2000-02-29', '1900-02-28', '2100-12-31'];
      const cases = fc.sample(
        fc.record({
          base: fc.oneof(
            fc.bigInt({ min: instant('1800-01-01T00:00:00Z'), max: instant('2200-01-01T00:00:00Z') }),
            fc.tuple(fc.constantFrom(...monthEnds), fc.bigInt({ min: 0n, max: MICROS_PER_DAY - 1n })).map(([d, time]) => instant(`${d}T00:00:00Z`) + time),
          ),
          duration: fc.record({ months: fc.integer({ min: -40, max: 40 }), micros: fc.bigInt({ min: -100n * MICROS_PER_DAY, max: 100n * MICROS_PER_DAY }) }),
        }),
        { numRuns: 600, seed: 42 },
      );
      const rows = cases.map(({ base, duration }, i) => `(${i}, TIMESTAMP '${formatInstant(base)}', ${duration.months}, ${duration.micros})`);
      const result = await connection.runAndReadAll(
        `SELECT i, CAST(x + to_months(m) + to_microseconds(u) AS VARCHAR) AS moved FROM (VALUES ${rows.join(', ')}) t(i, x, m, u) ORDER BY i`,
      );
      const fromDuckDb = result.getRowObjectsJson().map((r) => r.moved);
      const normalise = (text: string) => text.replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '');
      const fromTs = cases.map(({ base, duration }) => formatInstant(shift(base, duration as Duration)!));
      expect(fromTs.map(normalise)).toEqual(fromDuckDb.map((t) => normalise(String(t))));
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });
});
