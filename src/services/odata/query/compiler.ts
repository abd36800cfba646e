import { quoteIdent } from '../../../core/engine/index.ts';
import type { CompareOp } from './ast.ts';
import { ipv4Number, type Typed } from './checker.ts';
import { kindOf, numberLiteralShape, numericShape } from './kinds.ts';
import type { SqlParams } from './params.ts';
import { MICROS_PER_DAY, formatDate, formatInstant, formatTimeOfDay } from './temporal.ts';

const OPERATORS: Record<CompareOp, string> = { eq: '=', ne: '<>', lt: '<', le: '<=', gt: '>', ge: '>=' };
const FUNCTIONS: Record<string, string> = { contains: 'contains', startswith: 'starts_with', endswith: 'ends_with' };

/**
 * The integer value of a dotted-quad VARCHAR (NULL if it is not one), for ordering and subnets.
 * DuckDB's inet extension is not available, so the four parts are read with split_part.
 */
export function ipv4NumberSql(sql: string): string {
  const part = (i: number) => `TRY_CAST(split_part(${sql}, '.', ${i}) AS BIGINT)`;
  return `(${part(1)} * 16777216 + ${part(2)} * 65536 + ${part(3)} * 256 + ${part(4)})`;
}

/**
 * Compiles typed expressions to DuckDB SQL. Every value from the query text is bound through
 * `params` inside a CAST to the type it must have; identifiers go through quoteIdent.
 *
 * Time zones: a TIMESTAMP (without zone) is read as UTC. Anything that depends on a calendar
 * (year(), date(), adding months) works on UTC wall-clock time, obtained from a TIMESTAMPTZ with
 * make_timestamp(epoch_us(x)) so that the session's TimeZone setting never matters.
 */
export class SqlCompiler {
  constructor(private readonly params: SqlParams) {}

  /** SQL for any typed expression, in its own type. */
  sql(t: Typed): string {
    switch (t.node) {
      case 'column':
        return quoteIdent(t.name);
      case 'const':
        return this.constant(t);
      case 'call':
        return this.call(t);
      case 'shift':
        return this.shift(t);
      case 'compare':
        return this.compare(t);
      case 'isnull':
        return `(${this.sql(t.operand)} IS ${t.negated ? 'NOT ' : ''}NULL)`;
      case 'subnet':
        return `(${ipv4NumberSql(this.sql(t.operand))} BETWEEN ${this.params.cast(String(t.low), 'BIGINT')} AND ${this.params.cast(String(t.high), 'BIGINT')})`;
      case 'logical':
        return `(${t.operands.map((o) => this.sql(o)).join(t.op === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${this.sql(t.operand)})`;
    }
  }

  private constant(t: Typed & { node: 'const' }): string {
    const value = t.value;
    switch (value.type) {
      case 'null':
        return 'NULL';
      case 'boolean':
        return this.params.cast(value.value, 'BOOLEAN');
      case 'number':
        return this.params.cast(value.text, t.type);
      case 'string':
        return this.params.cast(value.value, 'VARCHAR');
      case 'date':
        return this.params.cast(formatDate(value.days), 'DATE');
      case 'datetime':
        return this.instant(t, 'tz');
      case 'time':
        return this.params.cast(formatTimeOfDay(value.micros), 'TIME');
      case 'duration':
        throw new Error('a duration has no value of its own (the checker refuses it)');
    }
  }

  /** A date or datetime as an instant: a UTC TIMESTAMP ('naive') or a TIMESTAMPTZ ('tz'). */
  private instant(t: Typed, domain: 'naive' | 'tz'): string {
    if (t.node === 'const' && (t.value.type === 'datetime' || t.value.type === 'date')) {
      const micros = t.value.type === 'date' ? BigInt(t.value.days) * MICROS_PER_DAY : t.value.micros;
      const text = formatInstant(micros);
      return domain === 'tz' ? this.params.cast(`${text}+00`, 'TIMESTAMPTZ') : this.params.cast(text, 'TIMESTAMP');
    }
    return domain === 'naive' ? this.wallClock(t) : this.sql(t);
  }

  /** UTC wall-clock time of a temporal expression (a TIMESTAMPTZ is converted; others are already). */
  private wallClock(t: Typed): string {
    if (t.node === 'const' && t.value.type === 'datetime') return this.instant(t, 'naive');
    if (kindOf(t.type) === 'timestamptz') return `make_timestamp(epoch_us(${this.sql(t)}))`;
    return this.sql(t);
  }

  private call(t: Typed & { node: 'call' }): string {
    const args = t.args;
    switch (t.fn) {
      case 'date':
        return `CAST(${this.wallClock(args[0])} AS DATE)`;
      case 'contains':
      case 'startswith':
      case 'endswith':
        return `${FUNCTIONS[t.fn]}(${this.sql(args[0])}, ${this.sql(args[1])})`;
      default:
        return `${t.fn}(${this.wallClock(args[0])})`;
    }
  }

  /** x + months, then + the fixed span: the order temporal.shift() uses for constants. */
  private shift(t: Typed & { node: 'shift' }): string {
    let sql = this.wallClock(t.operand);
    if (t.duration.months !== 0) sql += ` + to_months(${this.params.cast(String(t.duration.months), 'INTEGER')})`;
    if (t.duration.micros !== 0n) sql += ` + to_microseconds(${this.params.cast(String(t.duration.micros), 'BIGINT')})`;
    return `(${sql})`;
  }

  private compare(t: Typed & { node: 'compare' }): string {
    const [left, right] = this.operands(t);
    return `(${left} ${OPERATORS[t.op]} ${right})`;
  }

  /** Both sides of a comparison, converted to one comparable domain. */
  private operands(t: Typed & { node: 'compare' }): [string, string] {
    const { left, right } = t;
    const kinds = [kindOf(left.type), kindOf(right.type)];
    if (kinds.includes('ipv4') && t.op !== 'eq' && t.op !== 'ne') return [this.ipv4Number(left), this.ipv4Number(right)];
    if (kinds.every((k) => k === 'integer' || k === 'decimal' || k === 'float')) return this.numeric(left, right);
    if (kinds.some((k) => k === 'timestamp' || k === 'timestamptz')) {
      // Compare as TIMESTAMPTZ unless a side is a UTC TIMESTAMP column or shifted datetime.
      const naive = [left, right].some((s) => s.node !== 'const' && kindOf(s.type) === 'timestamp');
      const domain = naive ? 'naive' : 'tz';
      return [this.instant(left, domain), this.instant(right, domain)];
    }
    return [this.sql(left), this.sql(right)];
  }

  private ipv4Number(t: Typed): string {
    if (t.node === 'const' && t.value.type === 'string') return this.params.cast(String(ipv4Number(t.value.value)), 'BIGINT');
    return ipv4NumberSql(this.sql(t));
  }

  /**
   * Integers with integers and anything with a float compare as DuckDB casts them. A decimal
   * comparison is cast explicitly to a DECIMAL wide enough for both sides (DuckDB's own choice,
   * DECIMAL(38,s), overflows on large integers), or to DOUBLE past 38 digits.
   */
  private numeric(left: Typed, right: Typed): [string, string] {
    const shape = (t: Typed) => (t.node === 'const' && t.value.type === 'number' ? numberLiteralShape(t.value.text) : numericShape(t.type));
    const [a, b] = [shape(left), shape(right)];
    if (a.family === 'float' || b.family === 'float' || (a.family === 'integer' && b.family === 'integer')) {
      return [this.sql(left), this.sql(right)];
    }
    const scale = Math.max(a.scale, b.scale);
    const digits = Math.max(a.digits, b.digits);
    const target = digits + scale <= 38 ? `DECIMAL(${digits + scale},${scale})` : 'DOUBLE';
    return [this.numericAs(left, target), this.numericAs(right, target)];
  }

  private numericAs(t: Typed, target: string): string {
    if (t.type === target) return this.sql(t);
    if (t.node === 'const' && t.value.type === 'number') return this.params.cast(t.value.text, target);
    return `CAST(${this.sql(t)} AS ${target})`;
  }
}
