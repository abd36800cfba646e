import type { ColumnStatValue } from '../../core/catalog/index.ts';

/**
 * Lower and upper bounds of a column in a data file in Iceberg's binary single-value serialization
 * (spec, Appendix D), from the catalog's column statistics (DuckDB's rendering of the Parquet
 * min/max: `42`, `1.5`, `12.34`, `2024-01-02`, `2024-01-02 03:04:05.678901`, `…+00`). A value that
 * cannot be read exactly gives no bound: a missing bound only costs pruning, a wrong one loses rows.
 */

/** Strings: a lower bound is cut to this many code points (a prefix is never greater); a longer string gives no upper bound. */
const STRING_BOUND_CHARS = 16;
const DAY_MICROS = 86_400_000_000n;

const int32 = (n: bigint) => {
  const b = Buffer.alloc(4);
  b.writeInt32LE(Number(n));
  return b;
};
const int64 = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(n);
  return b;
};

function integer(value: ColumnStatValue, min: bigint, max: bigint): bigint | undefined {
  const text = String(value).trim();
  if (!/^-?\d+$/.test(text)) return undefined;
  const n = BigInt(text);
  return n >= min && n <= max ? n : undefined;
}

/** Days from 1970-01-01 of `YYYY-MM-DD` (proleptic Gregorian, as DuckDB renders it). */
function epochDay(text: string): bigint | undefined {
  const m = /^(\d{4,})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return undefined;
  // Built in a leap year, then moved to its own (Date.UTC would read years 0–99 as 1900–1999).
  const shifted = new Date(Date.UTC(2000, Number(m[2]) - 1, Number(m[3])));
  shifted.setUTCFullYear(Number(m[1]));
  if (shifted.getUTCMonth() !== Number(m[2]) - 1 || shifted.getUTCDate() !== Number(m[3])) return undefined;
  return BigInt(Math.round(shifted.getTime() / 86_400_000));
}

/** Microseconds from midnight of `HH:MM:SS[.ffffff]`. */
function timeMicros(text: string): bigint | undefined {
  const m = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(text);
  if (!m || Number(m[1]) > 24 || Number(m[2]) > 59 || Number(m[3]) > 59) return undefined;
  const fraction = BigInt((m[4] ?? '').padEnd(6, '0'));
  return ((BigInt(m[1]) * 60n + BigInt(m[2])) * 60n + BigInt(m[3])) * 1_000_000n + fraction;
}

/** Microseconds from the epoch of `YYYY-MM-DD HH:MM:SS[.ffffff][±HH[:MM]]`; a zone is required exactly when `zoned`. */
function timestampMicros(text: string, zoned: boolean): bigint | undefined {
  const m = /^(\d{4,}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)([+-]\d{2}(?::?\d{2})?)?$/.exec(text);
  if (!m || (m[3] !== undefined) !== zoned) return undefined;
  const day = epochDay(m[1]);
  const time = timeMicros(m[2]);
  if (day === undefined || time === undefined) return undefined;
  let micros = day * DAY_MICROS + time;
  if (m[3]) {
    const z = /^([+-])(\d{2}):?(\d{2})?$/.exec(m[3])!;
    const offset = (BigInt(z[2]) * 60n + BigInt(z[3] ?? '0')) * 60_000_000n;
    micros += z[1] === '+' ? -offset : offset;
  }
  return micros;
}

/** A decimal's unscaled value as the shortest two's-complement big-endian bytes. */
function decimalBytes(text: string, scale: number): Buffer | undefined {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m || (m[3] ?? '').length > scale) return undefined;
  let n = BigInt(`${m[2]}${(m[3] ?? '').padEnd(scale, '0')}`);
  if (m[1] === '-') n = -n;
  let bytes = 1;
  while (n < -(1n << BigInt(8 * bytes - 1)) || n >= 1n << BigInt(8 * bytes - 1)) bytes++;
  const out = Buffer.alloc(bytes);
  let v = BigInt.asUintN(8 * bytes, n);
  for (let i = bytes - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/** A float or double bound; NaN gives none, and a zero bound covers both zeros (-0.0 below, +0.0 above). */
function floating(value: ColumnStatValue, bytes: 4 | 8, side: 'lower' | 'upper'): Buffer | undefined {
  const text = String(value).trim();
  const n = /^(-?inf(inity)?)$/i.test(text) ? (text.startsWith('-') ? -Infinity : Infinity) : Number(text);
  if (Number.isNaN(n) || text === '') return undefined;
  const v = n === 0 ? (side === 'lower' ? -0 : 0) : n;
  const b = Buffer.alloc(bytes);
  if (bytes === 4) b.writeFloatLE(v);
  else b.writeDoubleLE(v);
  return b;
}

function stringBound(value: ColumnStatValue, side: 'lower' | 'upper'): Buffer | undefined {
  const chars = [...String(value)];
  if (chars.length <= STRING_BOUND_CHARS) return Buffer.from(String(value), 'utf8');
  return side === 'lower' ? Buffer.from(chars.slice(0, STRING_BOUND_CHARS).join(''), 'utf8') : undefined;
}

/** The bound of `value` for a column of Iceberg primitive `type`, or undefined when there is none to give. */
export function boundBytes(type: string, value: ColumnStatValue | null | undefined, side: 'lower' | 'upper'): Buffer | undefined {
  if (value === null || value === undefined) return undefined;
  const text = String(value).trim();
  switch (type) {
    case 'boolean':
      return text === 'true' || text === 'false' ? Buffer.from([text === 'true' ? 1 : 0]) : undefined;
    case 'int': {
      const n = integer(value, -(2n ** 31n), 2n ** 31n - 1n);
      return n === undefined ? undefined : int32(n);
    }
    case 'long': {
      const n = integer(value, -(2n ** 63n), 2n ** 63n - 1n);
      return n === undefined ? undefined : int64(n);
    }
    case 'float':
      return floating(value, 4, side);
    case 'double':
      return floating(value, 8, side);
    case 'date': {
      const n = epochDay(text);
      return n === undefined ? undefined : int32(n);
    }
    case 'time': {
      const n = timeMicros(text);
      return n === undefined ? undefined : int64(n);
    }
    case 'timestamp':
    case 'timestamptz': {
      const n = timestampMicros(text, type === 'timestamptz');
      return n === undefined ? undefined : int64(n);
    }
    case 'string':
      return stringBound(value, side);
    default: {
      const decimal = /^decimal\((\d+),(\d+)\)$/.exec(type);
      // uuid and binary: DuckDB's rendering of the bytes is not exact enough to serialize back.
      return decimal ? decimalBytes(text, Number(decimal[2])) : undefined;
    }
  }
}
