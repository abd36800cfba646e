/**
 * Dates, instants, times of day and durations as exact integers, all in UTC:
 * a date is a day number since 1970-01-01, an instant or a time of day a count of microseconds
 * (bigint, DuckDB's precision). Parsers return a value or a message saying what is wrong.
 */

export const MICROS_PER_SECOND = 1_000_000n;
export const MICROS_PER_DAY = 86_400n * MICROS_PER_SECOND;
const MS_PER_DAY = 86_400_000;

/** A signed ISO 8601 duration: calendar months (years × 12 + months), then a fixed span. */
export interface Duration {
  months: number;
  micros: bigint;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = <T>(message: string): Parsed<T> => ({ ok: false, message });

/** The range DuckDB and OData clients both handle: years 1 to 9999. */
export const MIN_INSTANT = 0n - 62_135_596_800n * MICROS_PER_SECOND; // 0001-01-01T00:00:00Z
export const MAX_INSTANT = 253_402_300_800n * MICROS_PER_SECOND - 1n; // 9999-12-31T23:59:59.999999Z

/** Longest duration accepted in either direction (10 000 years), so every shift stays in range. */
const MAX_DURATION_MONTHS = 120_000;
const MAX_DURATION_MICROS = 10_000n * 366n * MICROS_PER_DAY;

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** Day number of a calendar date (setUTCFullYear, unlike Date.UTC, keeps years below 100 as they are). */
export function dayNumber(year: number, month: number, day: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return Math.round(date.getTime() / MS_PER_DAY);
}

export function calendarDate(days: number): { year: number; month: number; day: number } {
  const date = new Date(days * MS_PER_DAY);
  return { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() };
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b < 0n ? q - 1n : q;
}

function pad(value: number | bigint, width: number): string {
  return String(value).padStart(width, '0');
}

/** Microseconds of `digits` read as a fraction of a second; undefined if finer than a microsecond. */
function fractionMicros(digits: string | undefined): bigint | undefined {
  if (!digits) return 0n;
  if (/[1-9]/.test(digits.slice(6))) return undefined;
  return BigInt(digits.slice(0, 6).padEnd(6, '0'));
}

function checkDate(year: number, month: number, day: number): string | undefined {
  if (year < 1) return 'the year must be between 0001 and 9999';
  if (month < 1 || month > 12) return 'the month must be between 01 and 12';
  if (day < 1 || day > daysInMonth(year, month)) return `${pad(year, 4)}-${pad(month, 2)} has no day ${pad(day, 2)}`;
  return undefined;
}

function timeMicros(hour: number, minute: number, second: number, fraction: string | undefined): Parsed<bigint> {
  if (hour > 23) return fail('the hour must be between 00 and 23');
  if (minute > 59) return fail('the minute must be between 00 and 59');
  if (second > 59) return fail('the second must be between 00 and 59');
  const micros = fractionMicros(fraction);
  if (micros === undefined) return fail('fractions finer than a microsecond (6 digits) are not supported');
  return ok(BigInt((hour * 60 + minute) * 60 + second) * MICROS_PER_SECOND + micros);
}

/** `2024-01-31` → day number. */
export function parseDate(text: string): Parsed<number> {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return fail('a date is written YYYY-MM-DD');
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const problem = checkDate(year, month, day);
  return problem ? fail(problem) : ok(dayNumber(year, month, day));
}

/** `10:30`, `10:30:15`, `10:30:15.25` → microseconds since midnight. */
export function parseTimeOfDay(text: string): Parsed<bigint> {
  const m = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?$/.exec(text);
  if (!m) return fail('a time of day is written hh:mm, hh:mm:ss or hh:mm:ss.ffffff');
  return timeMicros(Number(m[1]), Number(m[2]), Number(m[3] ?? 0), m[4]);
}

/** `2024-01-31T10:00:00Z`, `…+02:00`, `…10:00:00.5-05:30` (seconds optional, zone required) → instant. */
export function parseDateTime(text: string): Parsed<bigint> {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?$/.exec(text);
  if (!m) return fail('a datetime is written YYYY-MM-DDThh:mm:ssZ (or with an offset such as +02:00)');
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const problem = checkDate(year, month, day);
  if (problem) return fail(problem);
  const time = timeMicros(Number(m[4]), Number(m[5]), Number(m[6] ?? 0), m[7]);
  if (!time.ok) return time;
  const zone = m[8];
  if (!zone) return fail(`a datetime needs a time zone: write ${text}Z for UTC, or an offset such as ${text}+02:00`);
  let offsetMinutes = 0;
  if (zone !== 'Z') {
    const [hours, minutes] = [Number(zone.slice(1, 3)), Number(zone.slice(4, 6))];
    if (hours > 23 || minutes > 59) return fail(`${zone} is not a valid offset`);
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (hours * 60 + minutes);
  }
  const instant =
    BigInt(dayNumber(year, month, day)) * MICROS_PER_DAY + time.value - BigInt(offsetMinutes) * 60n * MICROS_PER_SECOND;
  return inRange(instant) ? ok(instant) : fail('the datetime is outside the supported range (years 0001 to 9999 in UTC)');
}

/** `P1Y2M3DT4H5M6.5S`, optionally signed (`-PT1H`) → months and a fixed span, both carrying the sign. */
export function parseDuration(text: string): Parsed<Duration> {
  const m = /^([+-])?P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d+))?S)?)?$/.exec(text);
  const form = "a duration is written [-]PnYnMnDTnHnMnS, e.g. duration'P1D', duration'PT1H30M' or duration'-P1M'";
  if (!m || text.endsWith('P') || text.endsWith('T')) return fail(form);
  const [, sign, years, months, days, hours, minutes, seconds, fraction] = m;
  const number = (digits: string | undefined) => BigInt(digits ?? '0');
  const totalMonths = number(years) * 12n + number(months);
  const fractionPart = fractionMicros(fraction);
  if (fractionPart === undefined) return fail('fractions finer than a microsecond (6 digits) are not supported');
  const span =
    ((number(days) * 24n + number(hours)) * 60n + number(minutes)) * 60n * MICROS_PER_SECOND +
    number(seconds) * MICROS_PER_SECOND +
    fractionPart;
  if (totalMonths > BigInt(MAX_DURATION_MONTHS) || span > MAX_DURATION_MICROS) {
    return fail('durations longer than 10000 years are not supported');
  }
  const direction = sign === '-' ? -1n : 1n;
  return ok({ months: Number(direction * totalMonths), micros: direction * span });
}

export function negate(duration: Duration): Duration {
  return { months: 0 - duration.months, micros: -duration.micros };
}

export function inRange(instant: bigint): boolean {
  return instant >= MIN_INSTANT && instant <= MAX_INSTANT;
}

/**
 * Adds a duration to an instant the way DuckDB adds `to_months(m) + to_microseconds(u)` to a TIMESTAMP:
 * first the months on the calendar (the day of month is clamped: Jan 31 + 1 month = Feb 28/29), keeping
 * the time of day, then the fixed span. Undefined if the result leaves years 1 to 9999.
 */
export function shift(instant: bigint, duration: Duration): bigint | undefined {
  const days = floorDiv(instant, MICROS_PER_DAY);
  const timeOfDay = instant - days * MICROS_PER_DAY;
  const { year, month, day } = calendarDate(Number(days));
  const monthIndex = year * 12 + (month - 1) + duration.months;
  const newYear = Math.floor(monthIndex / 12);
  const newMonth = monthIndex - newYear * 12 + 1;
  if (newYear < 1 || newYear > 9999) return undefined;
  const newDay = Math.min(day, daysInMonth(newYear, newMonth));
  const result = BigInt(dayNumber(newYear, newMonth, newDay)) * MICROS_PER_DAY + timeOfDay + duration.micros;
  return inRange(result) ? result : undefined;
}

/** The day an instant falls on, in UTC. */
export function instantDay(instant: bigint): number {
  return Number(floorDiv(instant, MICROS_PER_DAY));
}

export function formatDate(days: number): string {
  const { year, month, day } = calendarDate(days);
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
}

export function formatTimeOfDay(micros: bigint): string {
  const seconds = micros / MICROS_PER_SECOND;
  const fraction = micros % MICROS_PER_SECOND;
  const clock = `${pad(seconds / 3600n, 2)}:${pad((seconds / 60n) % 60n, 2)}:${pad(seconds % 60n, 2)}`;
  return fraction === 0n ? clock : `${clock}.${pad(fraction, 6)}`;
}

/** `YYYY-MM-DD hh:mm:ss[.ffffff]` in UTC, the text DuckDB casts to TIMESTAMP (add `+00` for TIMESTAMPTZ). */
export function formatInstant(instant: bigint): string {
  const days = floorDiv(instant, MICROS_PER_DAY);
  return `${formatDate(Number(days))} ${formatTimeOfDay(instant - days * MICROS_PER_DAY)}`;
}

export function instantFromDate(date: Date): bigint {
  return BigInt(date.getTime()) * 1000n;
}
