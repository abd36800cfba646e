import { IPV4 } from '../../../core/engine/index.ts';
import type { CompareOp, Expr, Literal } from './ast.ts';
import type { ColumnSet } from './columns.ts';
import { invalid, typeMismatch, type OptionContext } from './errors.ts';
import { isInstant, isNumeric, kindOf, kindWord, numberLiteralType, type Kind } from './kinds.ts';
import { negate, parseDate, parseDateTime, shift, type Duration } from './temporal.ts';

/** A type-checked expression. `type` is a Lakeport type name, or NULL / DURATION for those literals. */
export type Typed =
  | { node: 'column'; type: string; name: string }
  | { node: 'const'; type: string; value: Literal }
  | { node: 'call'; type: string; fn: ScalarFunction; args: Typed[] }
  /** A datetime moved by a duration; the result is a UTC TIMESTAMP. */
  | { node: 'shift'; type: 'TIMESTAMP'; operand: Typed; duration: Duration }
  | { node: 'compare'; type: 'BOOLEAN'; op: CompareOp; left: Typed; right: Typed }
  | { node: 'isnull'; type: 'BOOLEAN'; operand: Typed; negated: boolean }
  | { node: 'subnet'; type: 'BOOLEAN'; operand: Typed; low: number; high: number }
  | { node: 'logical'; type: 'BOOLEAN'; op: 'and' | 'or'; operands: Typed[] }
  | { node: 'not'; type: 'BOOLEAN'; operand: Typed };

export type ScalarFunction = 'year' | 'month' | 'day' | 'hour' | 'minute' | 'second' | 'date' | 'contains' | 'startswith' | 'endswith';

const LITERAL_TYPES: Record<Exclude<Literal['type'], 'number'>, string> = {
  null: 'NULL',
  boolean: 'BOOLEAN',
  string: 'VARCHAR',
  date: 'DATE',
  datetime: 'TIMESTAMP WITH TIME ZONE',
  time: 'TIME',
  duration: 'DURATION',
};

const SUPPORTED_FUNCTIONS = 'contains, startswith, endswith, in_subnet, now, year, month, day, hour, minute, second, date';
const REFUSED_FUNCTIONS: Record<string, string> = {
  time: 'time() is not supported: use hour(), minute() and second()',
  mindatetime: 'mindatetime() is not supported: write the datetime you mean, e.g. 0001-01-01T00:00:00Z',
  maxdatetime: 'maxdatetime() is not supported: write the datetime you mean, e.g. 9999-12-31T23:59:59Z',
};

/** Type-checks a $filter expression (or the inside of $apply's filter()) against the visible columns. */
export class Checker {
  constructor(
    private readonly columns: ColumnSet,
    /** now() for this query, in microseconds since the epoch. */
    private readonly now: bigint,
    private readonly ctx: OptionContext,
  ) {}

  /** A whole filter: it must be a condition. */
  condition(expr: Expr): Typed {
    return this.conditionOperand(expr, `${this.ctx.option === '$filter' ? '$filter' : 'filter()'} must be a condition (true or false)`);
  }

  check(expr: Expr): Typed {
    switch (expr.kind) {
      case 'literal':
        return this.literal(expr.literal);
      case 'column': {
        const column = this.columns.get(expr.name, expr.pos, this.ctx);
        return { node: 'column', type: column.type, name: column.name };
      }
      case 'call':
        return this.call(expr as Expr & { kind: 'call' });
      case 'compare':
        return this.compare(expr as Expr & { kind: 'compare' });
      case 'shift':
        return this.shift(expr as Expr & { kind: 'shift' });
      case 'logical': {
        const operands = expr.operands.map((o) => this.conditionOperand(o, `'${expr.op}' needs conditions on both sides`));
        return { node: 'logical', type: 'BOOLEAN', op: expr.op, operands };
      }
      case 'not': {
        const hint = "; to negate a comparison, put it in parentheses: not (price gt 5)";
        return { node: 'not', type: 'BOOLEAN', operand: this.conditionOperand(expr.operand, "'not' needs a condition", hint) };
      }
    }
  }

  private literal(literal: Literal): Typed {
    const type = literal.type === 'number' ? numberLiteralType(literal.text) : LITERAL_TYPES[literal.type];
    return { node: 'const', type, value: literal };
  }

  private conditionOperand(expr: Expr, requirement: string, hint = ''): Typed {
    const typed = this.check(expr);
    if (typed.type === 'BOOLEAN') return typed;
    throw typeMismatch(this.ctx, expr.pos, `${requirement}, but ${describe(expr, typed)} is ${kindWord(kindOf(typed.type))}${hint}`);
  }

  private compare(expr: Expr & { kind: 'compare' }): Typed {
    const left = this.check(expr.left);
    const right = this.check(expr.right);
    const nullSide = [left, right].findIndex((t) => t.type === 'NULL');
    if (nullSide >= 0) return this.nullTest(expr, left, right, nullSide);
    for (const [typed, source] of [[left, expr.left], [right, expr.right]] as const) {
      if (typed.type === 'DURATION') throw typeMismatch(this.ctx, source.pos, `${source.text} can only be added to or subtracted from a datetime (now() sub ${source.text})`);
    }
    const problem = this.comparable(left, right);
    if (problem !== undefined) throw this.mismatch(expr, left, right, problem);
    return { node: 'compare', type: 'BOOLEAN', op: expr.op, left, right };
  }

  /** `x eq null` and `x ne null`; other comparisons with null are refused (they would never be true). */
  private nullTest(expr: Expr & { kind: 'compare' }, left: Typed, right: Typed, nullSide: number): Typed {
    const nullExpr = nullSide === 0 ? expr.left : expr.right;
    if (expr.op !== 'eq' && expr.op !== 'ne') {
      throw typeMismatch(this.ctx, nullExpr.pos, `null can only be compared with eq or ne (x eq null, x ne null), not with ${expr.op}`);
    }
    const operand = nullSide === 0 ? right : left;
    if (operand.type === 'DURATION') throw typeMismatch(this.ctx, expr.pos, 'a duration cannot be compared with null');
    return { node: 'isnull', type: 'BOOLEAN', operand, negated: expr.op === 'ne' };
  }

  /** Undefined when the two operands compare, else a hint for the message ('' for none). */
  private comparable(left: Typed, right: Typed): string | undefined {
    const [a, b] = [kindOf(left.type), kindOf(right.type)];
    if (isNumeric(a) && isNumeric(b)) return undefined;
    if (a === b && a !== 'other' && a !== 'ipv4') return undefined;
    if (isInstant(a) && isInstant(b)) return undefined;
    if (a === 'ipv4' || b === 'ipv4') return this.ipv4Comparable(a === 'ipv4' ? right : left);
    if ((a === 'date' && isInstant(b)) || (isInstant(a) && b === 'date')) {
      const date = a === 'date' ? left : right;
      if (date.node === 'const') return undefined; // a date literal means midnight UTC
      return '; a date compares with dates, a datetime with datetimes: date(…) gives the UTC date of a datetime, e.g. d ge date(now())';
    }
    const text = [left, right].find((t) => t.node === 'const' && t.value.type === 'string');
    const other = text === left ? b : a;
    if (text && (other === 'date' || isInstant(other)) && looksTemporal(text)) {
      return '; date and datetime literals are written without quotes, e.g. 2024-01-31 or 2024-01-31T10:00:00Z';
    }
    if (text && isNumeric(other) && /^-?\d+(\.\d+)?$/.test(text.node === 'const' && text.value.type === 'string' ? text.value.value : '')) {
      return '; numbers are written without quotes';
    }
    if ((a === 'string' && isNumeric(b)) || (isNumeric(a) && b === 'string')) return "; strings are written in single quotes, e.g. 'EU'";
    return '';
  }

  private ipv4Comparable(other: Typed): string | undefined {
    if (other.type === 'IPV4') return undefined;
    if (other.node === 'const' && other.value.type === 'string') {
      return IPV4.test(other.value.value) ? undefined : `; '${other.value.value}' is not an IPv4 address such as '10.0.0.1'`;
    }
    return "; an IPV4 column compares with another IPV4 column or an address written as a string, e.g. '10.0.0.1' (or use in_subnet())";
  }

  private mismatch(expr: Expr & { kind: 'compare' }, left: Typed, right: Typed, hint: string): Error {
    const swap = left.node === 'const' && right.node !== 'const';
    const [subject, subjectExpr, object, objectExpr] = swap
      ? [right, expr.right, left, expr.left]
      : [left, expr.left, right, expr.right];
    const what = subject.node === 'column' ? `column '${subject.name}' is ${subject.type}` : `${describe(subjectExpr, subject)} is ${kindWord(kindOf(subject.type))}`;
    return typeMismatch(this.ctx, objectExpr.pos, `${what}, cannot compare it with ${describe(objectExpr, object)}${hint}`);
  }

  private shift(expr: Expr & { kind: 'shift' }): Typed {
    const left = this.check(expr.left);
    const right = this.check(expr.right);
    if (right.node !== 'const' || right.value.type !== 'duration') {
      const hint = left.type === 'DURATION' ? ': write the datetime first, e.g. now() sub duration\'P1D\'' : ", e.g. now() sub duration'P7D'";
      throw typeMismatch(this.ctx, expr.right.pos, `${expr.op} takes a datetime on its left and a duration'…' on its right${hint}`);
    }
    const duration = expr.op === 'sub' ? negate(right.value.duration) : right.value.duration;
    if (left.node === 'const' && left.value.type === 'datetime') {
      const moved = shift(left.value.micros, duration);
      if (moved === undefined) throw invalid(this.ctx, expr.opPos, `${expr.text} falls outside the supported years 0001 to 9999`);
      return { node: 'const', type: LITERAL_TYPES.datetime, value: { type: 'datetime', micros: moved } };
    }
    if (!isInstant(kindOf(left.type))) {
      const hint = kindOf(left.type) === 'date' ? ' (add and sub work on datetimes, not dates)' : '';
      throw typeMismatch(this.ctx, expr.left.pos, `${expr.op} needs a datetime on its left, but ${describe(expr.left, left)} is ${kindWord(kindOf(left.type))}${hint}`);
    }
    return { node: 'shift', type: 'TIMESTAMP', operand: left, duration };
  }

  private call(expr: Expr & { kind: 'call' }): Typed {
    const name = expr.name;
    if (Object.hasOwn(REFUSED_FUNCTIONS, name)) throw invalid(this.ctx, expr.pos, REFUSED_FUNCTIONS[name]);
    switch (name) {
      case 'now':
        this.arity(expr, 0);
        return { node: 'const', type: LITERAL_TYPES.datetime, value: { type: 'datetime', micros: this.now } };
      case 'year':
      case 'month':
      case 'day':
        return this.temporalPart(expr, name, ['date', 'timestamp', 'timestamptz'], 'BIGINT');
      case 'hour':
      case 'minute':
      case 'second':
        return this.temporalPart(expr, name, ['time', 'timestamp', 'timestamptz'], 'BIGINT');
      case 'date':
        return this.temporalPart(expr, name, ['date', 'timestamp', 'timestamptz'], 'DATE');
      case 'contains':
      case 'startswith':
      case 'endswith': {
        this.arity(expr, 2);
        const args = expr.args.map((arg) => this.stringArgument(expr.name, arg));
        return { node: 'call', type: 'BOOLEAN', fn: name, args };
      }
      case 'in_subnet':
        return this.inSubnet(expr);
    }
    const lower = name.toLowerCase();
    if (lower !== name && (SUPPORTED_FUNCTIONS.split(', ').includes(lower) || Object.hasOwn(REFUSED_FUNCTIONS, lower))) {
      throw invalid(this.ctx, expr.pos, `function names are lowercase: write ${lower}() instead of ${name}()`);
    }
    throw invalid(this.ctx, expr.pos, `function ${name}() is not supported; the functions are ${SUPPORTED_FUNCTIONS}`);
  }

  private arity(expr: Expr & { kind: 'call' }, count: number): void {
    if (expr.args.length === count) return;
    const wanted = count === 0 ? 'no arguments' : count === 1 ? '1 argument' : `${count} arguments`;
    throw invalid(this.ctx, expr.pos, `${expr.name}() takes ${wanted}, not ${expr.args.length}`);
  }

  private temporalPart(expr: Expr & { kind: 'call' }, fn: ScalarFunction, accepted: Kind[], type: string): Typed {
    this.arity(expr, 1);
    const arg = this.check(expr.args[0]);
    const kind = kindOf(arg.type);
    if (!accepted.includes(kind)) {
      const wanted = accepted.includes('time') ? 'a datetime or a time of day' : 'a date or a datetime';
      throw typeMismatch(this.ctx, expr.args[0].pos, `${fn}() needs ${wanted}, but ${describe(expr.args[0], arg)} is ${kindWord(kind)}`);
    }
    return { node: 'call', type, fn, args: [arg] };
  }

  private stringArgument(fn: string, arg: Expr): Typed {
    const typed = this.check(arg);
    const kind = kindOf(typed.type);
    if (kind === 'string' || kind === 'ipv4') return typed;
    const hint = isNumeric(kind) && arg.kind === 'literal' ? ` (write strings in single quotes: '${arg.text}')` : '';
    throw typeMismatch(this.ctx, arg.pos, `${fn}() needs strings, but ${describe(arg, typed)} is ${kindWord(kind)}${hint}`);
  }

  private inSubnet(expr: Expr & { kind: 'call' }): Typed {
    this.arity(expr, 2);
    const [column, cidr] = expr.args;
    const operand = this.check(column);
    if (operand.node !== 'column' || operand.type !== 'IPV4') {
      throw typeMismatch(this.ctx, column.pos, `in_subnet() needs an IPV4 column as its first argument, but ${describe(column, operand)} is ${operand.node === 'column' ? operand.type : kindWord(kindOf(operand.type))}`);
    }
    if (cidr.kind !== 'literal' || cidr.literal.type !== 'string') {
      throw typeMismatch(this.ctx, cidr.pos, `in_subnet() needs a CIDR block written as a string as its second argument, e.g. '10.0.0.0/8', not ${cidr.text}`);
    }
    const range = subnetRange(cidr.literal.value);
    if (!range) throw invalid(this.ctx, cidr.pos, `${cidr.text} is not a CIDR block: write an IPv4 address and a prefix length from 0 to 32, e.g. '10.0.0.0/8'`);
    return { node: 'subnet', type: 'BOOLEAN', operand, ...range };
  }
}

/** An IPv4 address as a number from 0 to 2^32 − 1, or undefined. */
export function ipv4Number(text: string): number | undefined {
  if (!IPV4.test(text)) return undefined;
  return text.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/** The first and last address of `a.b.c.d/n` (host bits are ignored: 10.1.2.3/8 is 10.0.0.0/8). */
export function subnetRange(cidr: string): { low: number; high: number } | undefined {
  const match = /^([0-9.]+)\/(\d{1,2})$/.exec(cidr);
  const address = match ? ipv4Number(match[1]) : undefined;
  const prefix = match ? Number(match[2]) : NaN;
  if (address === undefined || !(prefix >= 0 && prefix <= 32)) return undefined;
  const size = 2 ** (32 - prefix);
  const low = Math.floor(address / size) * size;
  return { low, high: low + size - 1 };
}

function looksTemporal(text: Typed): boolean {
  const value = text.node === 'const' && text.value.type === 'string' ? text.value.value : '';
  return parseDate(value).ok || parseDateTime(value).ok || /^\d{4}-\d{2}-\d{2}/.test(value);
}

/** How a message names an operand: column 'x' (TYPE), the string '12', the number 5, now(), year(d)… */
function describe(expr: Expr, typed: Typed): string {
  const text = expr.text.length > 60 ? `${expr.text.slice(0, 60)}…` : expr.text;
  if (typed.node === 'column') return `column '${typed.name}' (${typed.type})`;
  if (expr.kind !== 'literal') return text;
  const nouns: Partial<Record<Literal['type'], string>> = { string: 'the string', number: 'the number', date: 'the date', datetime: 'the datetime', time: 'the time' };
  const noun = nouns[expr.literal.type];
  return noun ? `${noun} ${text}` : text;
}
