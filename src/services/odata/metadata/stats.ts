import type { ColumnStatValue, DataFile } from '../../../core/catalog/index.ts';
import { IPV4, normalizeType } from '../../../core/engine/types.ts';

/**
 * Column statistics of a dataset version, aggregated over the per-file `column_stats` of its data
 * files: min of the minimums, max of the maximums, the sum of the null counts. Nothing is guessed:
 * a value is left out whenever the files cannot prove it.
 */
export interface ColumnStatistics {
  /** The smallest and largest value, written as in a $filter literal (strings without quotes). */
  min?: string;
  max?: string;
  nullCount?: number;
  distinctCount?: number;
  /** IPv4 columns: the narrowest whole-octet block that holds every address (see coveringCidr). */
  cidr?: string;
}

/** A statistics value made comparable: `key` orders values of one column type, `text` is how $metadata shows it. */
interface Scalar {
  key: bigint | number | string;
  text: string;
}

type Reader = (value: ColumnStatValue) => Scalar | undefined;

const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^([+-])?(\d+)(?:\.(\d+))?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIME = /^\d{2}:\d{2}:\d{2}(?:\.\d+)?$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:(Z)|([+-])(\d{2})(?::?(\d{2}))?)?$/;
const INTEGER_TYPES = ['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT'];
/** Fractional digits kept in decimal keys: more than any DECIMAL scale (at most 38). */
const KEY_SCALE = 40;

const readInteger: Reader = (value) => {
  if (typeof value === 'boolean' || !INTEGER.test(String(value))) return undefined;
  const key = BigInt(String(value));
  return { key, text: key.toString() };
};

const readDecimal: Reader = (value) => {
  const match = typeof value === 'boolean' ? null : DECIMAL.exec(String(value));
  if (!match) return undefined;
  const [, sign = '', whole, fraction = ''] = match;
  const negative = sign === '-' && /[1-9]/.test(whole + fraction);
  const key = BigInt(whole + fraction.padEnd(KEY_SCALE, '0').slice(0, KEY_SCALE)) * (negative ? -1n : 1n);
  const text = `${negative ? '-' : ''}${whole.replace(/^0+(?=\d)/, '')}${fraction ? `.${fraction}` : ''}`;
  return { key, text };
};

const readFloat: Reader = (value) => {
  if (typeof value === 'boolean') return undefined;
  const raw = String(value).trim();
  const infinite = /^([+-])?inf(inity)?$/i.exec(raw);
  const number = infinite ? (infinite[1] === '-' ? -Infinity : Infinity) : raw === '' ? NaN : Number(raw);
  if (Number.isNaN(number)) return undefined;
  // OData's literals for the infinities
  return { key: number, text: number === Infinity ? 'INF' : number === -Infinity ? '-INF' : String(number) };
};

const readBoolean: Reader = (value) => {
  const text = String(value).toLowerCase();
  const truth = text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : undefined;
  return truth === undefined ? undefined : { key: truth ? 1 : 0, text: String(truth) };
};

function patternReader(pattern: RegExp): Reader {
  return (value) => (typeof value === 'string' && pattern.test(value) ? { key: value, text: value } : undefined);
}

/** Any timestamp DuckDB writes, as microseconds since 1970 (UTC; a naive timestamp counts as UTC, as the rows do) and as ISO 8601. */
const readTimestamp: Reader = (value) => {
  const match = typeof value === 'string' ? TIMESTAMP.exec(value.trim()) : null;
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second, fraction = '', , sign, offsetHours = '0', offsetMinutes = '0'] = match;
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes));
  const date = new Date(0);
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day)); // not Date.UTC, which reads years 0-99 as 19xx
  date.setUTCHours(Number(hour), Number(minute) - offset, Number(second));
  const utcYear = date.getUTCFullYear();
  if (Number.isNaN(date.getTime()) || utcYear < 0 || utcYear > 9999) return undefined;
  const micros = fraction.padEnd(6, '0').slice(0, 6);
  const digits = micros.replace(/0+$/, '');
  const iso = `${date.toISOString().slice(0, 19)}${digits ? `.${digits}` : ''}Z`;
  return { key: BigInt(date.getTime()) * 1000n + BigInt(micros), text: iso };
};

const readText: Reader = (value) => (typeof value === 'string' ? { key: value, text: value } : undefined);

/** How a column type's statistics are read, or undefined for a type whose statistics $metadata does not show. */
function readerFor(lakeportType: string): Reader | undefined {
  const type = normalizeType(lakeportType);
  if (type === undefined) return undefined;
  if (type.startsWith('DECIMAL(')) return readDecimal;
  if (INTEGER_TYPES.includes(type)) return readInteger;
  if (type === 'FLOAT' || type === 'DOUBLE') return readFloat;
  if (type === 'BOOLEAN') return readBoolean;
  if (type === 'DATE') return patternReader(DATE);
  if (type === 'TIME') return patternReader(TIME);
  if (type.startsWith('TIMESTAMP')) return readTimestamp;
  return readText; // VARCHAR and IPV4 compare as text, as DuckDB and the files' statistics do
}

function compare(a: Scalar, b: Scalar): number {
  if (typeof a.key === 'string' && typeof b.key === 'string') return Buffer.compare(Buffer.from(a.key), Buffer.from(b.key));
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

interface Extremes {
  min?: Scalar;
  max?: Scalar;
}

/**
 * The smallest minimum and largest maximum over the files, or `{}` when some file holds non-null
 * values but no readable bound for them (then the true extremes are unknown).
 */
function extremes(read: Reader, files: { rows: number; nulls: number; min: ColumnStatValue | null; max: ColumnStatValue | null }[]): Extremes {
  let min: Scalar | undefined;
  let max: Scalar | undefined;
  for (const file of files) {
    if (file.rows - file.nulls <= 0) continue;
    const low = file.min === null ? undefined : read(file.min);
    const high = file.max === null ? undefined : read(file.max);
    if (!low || !high) return {};
    if (!min || compare(low, min) < 0) min = low;
    if (!max || compare(high, max) > 0) max = high;
  }
  return { min, max };
}

/** Statistics of one column over a version's files; undefined when there are no files or some file has none for it. */
export function columnStatistics(column: string, lakeportType: string, files: readonly DataFile[]): ColumnStatistics | undefined {
  if (files.length === 0) return undefined;
  const perFile = files.map((file) => ({ stats: file.column_stats?.[column], rows: Number(file.row_count) }));
  if (perFile.some(({ stats }) => !stats || !Number.isSafeInteger(Number(stats.null_count)))) return undefined;
  const summaries = perFile.map(({ stats, rows }) => ({ rows, nulls: Number(stats!.null_count), min: stats!.min, max: stats!.max }));
  const nullCount = summaries.reduce((sum, file) => sum + file.nulls, 0);
  const nonNull = summaries.reduce((sum, file) => sum + Math.max(file.rows - file.nulls, 0), 0);
  const read = readerFor(lakeportType);
  const { min, max } = read ? extremes(read, summaries) : {};
  const single = files.length === 1 ? Number(perFile[0].stats!.distinct_count) : undefined;
  return {
    min: min?.text,
    max: max?.text,
    nullCount,
    distinctCount: distinctCount(nonNull, min, max, single, lakeportType === 'BOOLEAN'),
    cidr: lakeportType === 'IPV4' && min && max ? coveringCidr(String(min.key), String(max.key)) : undefined,
  };
}

/**
 * The number of distinct non-null values, only when it is exact: none when every value is null, one
 * when the minimum equals the maximum, both booleans when false and true both occur, or the count a
 * single file reports. Counts of several files cannot be added (their values may overlap).
 */
function distinctCount(nonNull: number, min: Scalar | undefined, max: Scalar | undefined, singleFile: number | undefined, boolean: boolean): number | undefined {
  if (nonNull === 0) return 0;
  if (min && max) {
    if (compare(min, max) === 0) return 1;
    if (boolean) return 2;
  }
  return Number.isSafeInteger(singleFile) ? singleFile : undefined;
}

/**
 * The narrowest CIDR block provably holding every address between `min` and `max`. The files'
 * statistics order IPv4 addresses as text ('10.0.0.10' < '10.0.0.9'), and every string between two
 * bounds shares their common prefix, so the block is the whole octets of that prefix: /32 when the
 * bounds are equal, else /24, /16 or /8; undefined when not even the first octet is shared.
 */
export function coveringCidr(min: string, max: string): string | undefined {
  if (!IPV4.test(min) || !IPV4.test(max)) return undefined;
  if (min === max) return `${min}/32`;
  let shared = 0;
  while (shared < min.length && min[shared] === max[shared]) shared++;
  const octets = min.slice(0, shared).split('.').slice(0, -1);
  if (octets.length === 0) return undefined;
  return `${[...octets, '0', '0', '0'].slice(0, 4).join('.')}/${octets.length * 8}`;
}
