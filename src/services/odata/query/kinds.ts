/** How the query layer groups Lakeport column types (core/engine/types.ts) for type checking. */
export type Kind =
  | 'boolean'
  | 'integer'
  | 'decimal'
  | 'float'
  | 'string'
  | 'ipv4'
  | 'date'
  | 'time'
  | 'timestamp'
  | 'timestamptz'
  /** the null literal */
  | 'null'
  /** duration'…' literals, usable only with add and sub */
  | 'duration'
  /** a type this layer cannot filter on (it can still be selected) */
  | 'other';

/** Integer digits each integer type needs, for exact comparisons with decimals. */
const INTEGER_DIGITS: Record<string, number> = {
  TINYINT: 3,
  SMALLINT: 5,
  INTEGER: 10,
  BIGINT: 19,
  HUGEINT: 39,
  UTINYINT: 3,
  USMALLINT: 5,
  UINTEGER: 10,
  UBIGINT: 20,
};

const SIMPLE_KINDS: Record<string, Kind> = {
  BOOLEAN: 'boolean',
  FLOAT: 'float',
  DOUBLE: 'float',
  VARCHAR: 'string',
  IPV4: 'ipv4',
  DATE: 'date',
  TIME: 'time',
  TIMESTAMP: 'timestamp',
  'TIMESTAMP WITH TIME ZONE': 'timestamptz',
  NULL: 'null',
  DURATION: 'duration',
};

export function kindOf(type: string): Kind {
  if (Object.hasOwn(INTEGER_DIGITS, type)) return 'integer';
  if (/^DECIMAL\(\d+,\d+\)$/.test(type)) return 'decimal';
  return Object.hasOwn(SIMPLE_KINDS, type) ? SIMPLE_KINDS[type] : 'other';
}

export function isNumeric(kind: Kind): boolean {
  return kind === 'integer' || kind === 'decimal' || kind === 'float';
}

/** Temporal kinds that denote an instant (a naive TIMESTAMP is read as UTC). */
export function isInstant(kind: Kind): boolean {
  return kind === 'timestamp' || kind === 'timestamptz';
}

/** A numeric type's family, integer digits and scale. */
export interface NumericShape {
  family: 'integer' | 'decimal' | 'float';
  digits: number;
  scale: number;
}

export function numericShape(type: string): NumericShape {
  if (Object.hasOwn(INTEGER_DIGITS, type)) return { family: 'integer', digits: INTEGER_DIGITS[type], scale: 0 };
  const decimal = /^DECIMAL\((\d+),(\d+)\)$/.exec(type);
  if (decimal) return { family: 'decimal', digits: Number(decimal[1]) - Number(decimal[2]), scale: Number(decimal[2]) };
  return { family: 'float', digits: 0, scale: 0 };
}

/** A number literal's shape: an integer literal needs only its own digits (5 is 1 digit, not BIGINT's 19). */
export function numberLiteralShape(text: string): NumericShape {
  const type = numberLiteralType(text);
  if (type !== 'BIGINT' && type !== 'HUGEINT') return numericShape(type);
  return { family: 'integer', digits: Math.max(1, text.replace(/^-?0*/, '').length), scale: 0 };
}

/** The type of a number literal, chosen to hold it exactly: BIGINT, HUGEINT, DECIMAL(p,s), else DOUBLE. */
export function numberLiteralType(text: string): string {
  if (/[eE]/.test(text)) return 'DOUBLE';
  const [whole, fraction = ''] = text.replace(/^-/, '').split('.');
  if (!fraction) {
    const value = BigInt(text);
    if (value >= -(2n ** 63n) && value < 2n ** 63n) return 'BIGINT';
    if (value >= -(2n ** 127n) && value < 2n ** 127n) return 'HUGEINT';
    return 'DOUBLE';
  }
  const digits = whole.replace(/^0+/, '').length;
  const precision = Math.max(1, digits + fraction.length);
  return precision <= 38 ? `DECIMAL(${precision},${fraction.length})` : 'DOUBLE';
}

/** A short description of a type's kind for messages ("an integer", "a date", …). */
export function kindWord(kind: Kind): string {
  const words: Record<Kind, string> = {
    boolean: 'a boolean',
    integer: 'an integer',
    decimal: 'a decimal',
    float: 'a floating-point number',
    string: 'a string',
    ipv4: 'an IPv4 address',
    date: 'a date',
    time: 'a time of day',
    timestamp: 'a datetime',
    timestamptz: 'a datetime',
    null: 'null',
    duration: 'a duration',
    other: 'an unsupported type',
  };
  return words[kind];
}
