/**
 * Column types as Lakeport stores them: a DuckDB SQL type, plus IPV4 (a VARCHAR of dotted quads,
 * labelled so OData can filter it with in_subnet). Everything else is normalised to these spellings.
 */
const SIMPLE = [
  'BOOLEAN',
  'TINYINT',
  'SMALLINT',
  'INTEGER',
  'BIGINT',
  'HUGEINT',
  'UTINYINT',
  'USMALLINT',
  'UINTEGER',
  'UBIGINT',
  'FLOAT',
  'DOUBLE',
  'VARCHAR',
  'DATE',
  'TIME',
  'TIMESTAMP',
  'TIMESTAMP WITH TIME ZONE',
  'IPV4',
] as const;

const ALIASES: Record<string, string> = {
  BOOL: 'BOOLEAN',
  INT1: 'TINYINT',
  INT2: 'SMALLINT',
  SHORT: 'SMALLINT',
  INT: 'INTEGER',
  INT4: 'INTEGER',
  SIGNED: 'INTEGER',
  INT8: 'BIGINT',
  LONG: 'BIGINT',
  REAL: 'FLOAT',
  FLOAT4: 'FLOAT',
  FLOAT8: 'DOUBLE',
  'DOUBLE PRECISION': 'DOUBLE',
  TEXT: 'VARCHAR',
  STRING: 'VARCHAR',
  CHAR: 'VARCHAR',
  BPCHAR: 'VARCHAR',
  DATETIME: 'TIMESTAMP',
  'TIMESTAMP WITHOUT TIME ZONE': 'TIMESTAMP',
  TIMESTAMPTZ: 'TIMESTAMP WITH TIME ZONE',
  INET: 'IPV4',
  NUMERIC: 'DECIMAL(18,3)',
  DECIMAL: 'DECIMAL(18,3)',
};

const NESTED = /^(STRUCT|MAP|UNION)\b|\[\]$|\[\d+\]$|^LIST\b|^JSON$/;

/** normalizeType's answers by type text: a catalog names few types, and listings normalise them per column. */
const normalized = new Map<string, string | undefined>();

/** A normalised type name, or undefined for a type Lakeport cannot store. */
export function normalizeType(raw: string): string | undefined {
  if (normalized.has(raw)) return normalized.get(raw);
  const type = normalize(raw);
  if (normalized.size < 10_000) normalized.set(raw, type);
  return type;
}

function normalize(raw: string): string | undefined {
  const upper = raw.trim().toUpperCase().replace(/\s+/g, ' ');
  const aliased = ALIASES[upper] ?? upper;
  if ((SIMPLE as readonly string[]).includes(aliased)) return aliased;
  const decimal = /^(?:DECIMAL|NUMERIC)\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$/.exec(aliased);
  if (decimal) {
    const precision = Number(decimal[1]);
    const scale = Number(decimal[2] ?? 0);
    if (precision >= 1 && precision <= 38 && scale <= precision) return `DECIMAL(${precision},${scale})`;
  }
  return undefined;
}

export function isNestedType(raw: string): boolean {
  return NESTED.test(raw.trim().toUpperCase());
}

/** The DuckDB type a column is physically stored as. */
export function physicalType(type: string): string {
  return type === 'IPV4' ? 'VARCHAR' : type;
}

const INTEGER_RANK = ['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT'];

/** [precision, scale] of a normalised DECIMAL(p,s); undefined for any other type. */
export function decimalParts(type: string): [number, number] | undefined {
  const m = /^DECIMAL\((\d+),(\d+)\)$/.exec(type);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** Iceberg's type promotions: int→bigint (and smaller ints up), float→double, decimal precision up at the same scale. */
export function isWidening(from: string, to: string): boolean {
  const a = INTEGER_RANK.indexOf(from);
  const b = INTEGER_RANK.indexOf(to);
  if (a >= 0 && b >= 0) return a < b;
  if (from === 'FLOAT' && to === 'DOUBLE') return true;
  const df = decimalParts(from);
  const dt = decimalParts(to);
  return df !== undefined && dt !== undefined && df[1] === dt[1] && df[0] < dt[0];
}

/** The narrowest type both values fit without loss, or undefined when they do not meet (then VARCHAR is the only common ground). */
export function commonType(a: string, b: string): string | undefined {
  if (a === b) return a;
  if (isWidening(a, b)) return b;
  if (isWidening(b, a)) return a;
  const decimal = decimalMeet(a, b);
  if (decimal) return decimal;
  const numeric = [...INTEGER_RANK, 'FLOAT', 'DOUBLE'];
  const isNumeric = (t: string) => numeric.includes(t) || decimalParts(t) !== undefined;
  if (isNumeric(a) && isNumeric(b)) return 'DOUBLE';
  if ((a === 'TIMESTAMP' && b === 'DATE') || (a === 'DATE' && b === 'TIMESTAMP')) return 'TIMESTAMP';
  return undefined;
}

const INTEGER_DIGITS: Record<string, number> = { TINYINT: 3, SMALLINT: 5, INTEGER: 10, BIGINT: 19 };

/** The narrowest DECIMAL holding two decimals (or a decimal and a whole number) exactly; undefined past 38 digits. */
function decimalMeet(a: string, b: string): string | undefined {
  const parts = (t: string): [number, number] | undefined => decimalParts(t) ?? (t in INTEGER_DIGITS ? [INTEGER_DIGITS[t], 0] : undefined);
  const pa = parts(a);
  const pb = parts(b);
  if (!pa || !pb || (!decimalParts(a) && !decimalParts(b))) return undefined;
  const scale = Math.max(pa[1], pb[1]);
  const whole = Math.max(pa[0] - pa[1], pb[0] - pb[1]);
  return whole + scale <= 38 ? `DECIMAL(${whole + scale},${scale})` : undefined;
}

const IPV4_PART = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
export const IPV4_REGEX = `^${IPV4_PART}\\.${IPV4_PART}\\.${IPV4_PART}\\.${IPV4_PART}$`;
export const IPV4 = new RegExp(IPV4_REGEX);
