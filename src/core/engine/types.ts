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

/** A normalised type name, or undefined for a type Lakeport cannot store. */
export function normalizeType(raw: string): string | undefined {
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

function decimalParts(type: string): [number, number] | undefined {
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
  const numeric = [...INTEGER_RANK, 'FLOAT', 'DOUBLE'];
  if (numeric.includes(a) && numeric.includes(b)) return 'DOUBLE';
  if ((a === 'TIMESTAMP' && b === 'DATE') || (a === 'DATE' && b === 'TIMESTAMP')) return 'TIMESTAMP';
  return undefined;
}

const IPV4_PART = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
export const IPV4_REGEX = `^${IPV4_PART}\\.${IPV4_PART}\\.${IPV4_PART}\\.${IPV4_PART}$`;
export const IPV4 = new RegExp(IPV4_REGEX);
