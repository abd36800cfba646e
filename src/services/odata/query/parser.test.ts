import { describe, expect, it } from 'vitest';
import { AppError } from '../../../core/errors/index.ts';
import type { Expr, Literal } from './ast.ts';
import { FILTER, MAX_DEPTH, MAX_OPTION_LENGTH } from './errors.ts';
import { tokenize } from './lexer.ts';
import { parseFilter } from './parser.ts';

function literal(l: Literal): string {
  switch (l.type) {
    case 'null':
      return 'null';
    case 'boolean':
      return String(l.value);
    case 'number':
      return l.text;
    case 'string':
      return JSON.stringify(l.value);
    case 'date':
      return `date:${l.days}`;
    case 'datetime':
      return `datetime:${l.micros}`;
    case 'time':
      return `time:${l.micros}`;
    case 'duration':
      return `duration:${l.duration.months}m${l.duration.micros}us`;
  }
}

/** The tree as an S-expression, to check structure and precedence at a glance. */
function show(e: Expr): string {
  switch (e.kind) {
    case 'literal':
      return literal(e.literal);
    case 'column':
      return e.name;
    case 'call':
      return `${e.name}(${e.args.map(show).join(' ')})`;
    case 'compare':
    case 'shift':
      return `(${e.op} ${show(e.left)} ${show(e.right)})`;
    case 'logical':
      return `(${e.op} ${e.operands.map(show).join(' ')})`;
    case 'not':
      return `(not ${show(e.operand)})`;
  }
}

const parse = (text: string) => show(parseFilter(text, FILTER));

function failure(text: string): AppError {
  try {
    parseFilter(text, FILTER);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error(`expected ${text} to be refused`);
}

describe('$filter parser', () => {
  it('follows OData precedence: not > add/sub > relational > equality > and > or', () => {
    expect(parse('a eq 1 or b eq 2 and c eq 3')).toBe('(or (eq a 1) (and (eq b 2) (eq c 3)))');
    expect(parse('(a eq 1 or b eq 2) and c eq 3')).toBe('(and (or (eq a 1) (eq b 2)) (eq c 3))');
    expect(parse('not a eq true')).toBe('(eq (not a) true)');
    expect(parse('not (a eq 1) and b')).toBe('(and (not (eq a 1)) b)');
    expect(parse('a gt 1 eq true')).toBe('(eq (gt a 1) true)');
    expect(parse("ts add duration'P1D' gt now()")).toBe('(gt (add ts duration:0m86400000000us) now())');
    expect(parse("now() sub duration'P1M' sub duration'PT1H'")).toBe('(sub (sub now() duration:1m0us) duration:0m3600000000us)');
  });

  it('flattens chains of the same logical operator', () => {
    expect(parse('a and b and (c and d)')).toBe('(and a b c d)');
    expect(parse('a or b or c')).toBe('(or a b c)');
    const chain = Array.from({ length: 500 }, (_, i) => `a eq ${i}`).join(' or ');
    expect(parseFilter(chain, FILTER).depth).toBe(3);
  });

  it('reads every kind of literal', () => {
    expect(parse("s eq 'it''s'")).toBe('(eq s "it\'s")');
    expect(parse("s eq ''")).toBe('(eq s "")');
    expect(parse('x eq -2')).toBe('(eq x -2)');
    expect(parse('x eq 1.5')).toBe('(eq x 1.5)');
    expect(parse('x eq 1e3')).toBe('(eq x 1e3)');
    expect(parse('x eq -2.5E-3')).toBe('(eq x -2.5E-3)');
    expect(parse('x eq null and y eq true and z ne false')).toBe('(and (eq x null) (eq y true) (ne z false))');
    expect(parse('d eq 1970-01-02')).toBe('(eq d date:1)');
    expect(parse('ts eq 1970-01-01T00:00:01Z')).toBe('(eq ts datetime:1000000)');
    expect(parse('ts eq 1970-01-01T01:00:00+01:00')).toBe('(eq ts datetime:0)');
    expect(parse('ts eq 1970-01-01T00:00:00.25-00:30')).toBe('(eq ts datetime:1800250000)');
    expect(parse('ts eq 1970-01-01T00:01Z')).toBe('(eq ts datetime:60000000)');
    expect(parse('t eq 00:00:01.5')).toBe('(eq t time:1500000)');
    expect(parse("x eq duration'-P1Y2M3DT4H5M6.5S'")).toBe('(eq x duration:-14m-273906500000us)');
    expect(parse("x eq duration'+PT0S'")).toBe('(eq x duration:0m0us)');
  });

  it('parses function calls, with or without arguments', () => {
    expect(parse("contains(name, 'x') and year(d) eq 2024")).toBe('(and contains(name "x") (eq year(d) 2024))');
    expect(parse('now() gt ts')).toBe('(gt now() ts)');
    expect(parse("in_subnet(ip,'10.0.0.0/8')")).toBe('in_subnet(ip "10.0.0.0/8")');
  });

  it('treats operator words as column names where an operand is expected', () => {
    expect(parse('eq eq 1 and and eq 2')).toBe('(and (eq eq 1) (eq and 2))');
  });

  it('keeps positions and source text of nodes', () => {
    const e = parseFilter("  amount  eq '12'", FILTER);
    expect(e.kind === 'compare' && [e.pos, e.opPos, e.left.pos, e.right.pos, e.right.text]).toEqual([2, 10, 2, 13, "'12'"]);
    const p = parseFilter('(a eq 1)', FILTER);
    expect([p.pos, p.text]).toEqual([0, '(a eq 1)']);
  });

  it.each([
    ['a eq', 4, 'ends too early'],
    ['a eq 1 and', 10, 'ends too early'],
    ['(a eq 1', 0, "'(' is never closed"],
    ['a eq 1)', 6, "')' has no matching '('"],
    ['a eq 1 b', 7, "found 'b'"],
    ['a EQ 1', 2, "write 'eq' instead of 'EQ'"],
    ['a eq 1 AND b', 7, "write 'and'"],
    ["a in ('x')", 2, "operator 'in' is not supported"],
    ['a mul 2 gt 3', 2, "operator 'mul' is not supported"],
    ["a eq 'x", 5, 'never closed'],
    ['a eq 1.', 5, "'1.' is not a valid number"],
    ['a eq .5', 5, "unexpected character '.'"],
    ['a eq 12abc', 5, "'12abc' is not a valid number"],
    ['a eq 2024-02-30', 5, '2024-02 has no day 30'],
    ['a eq 2024-13-01', 5, 'month must be between 01 and 12'],
    ['a eq 2024-01-31T10:00:00', 5, 'needs a time zone'],
    ['a eq 2024-01-31T25:00:00Z', 5, 'hour must be between'],
    ['a eq 2024-01-31T10:00:00.1234567Z', 5, 'finer than a microsecond'],
    ['a eq 2024-01-31T10', 5, 'not a valid number, date or time'],
    ["a eq duration'P1W'", 5, 'a duration is written'],
    ["a eq duration'P'", 5, 'a duration is written'],
    ["a eq duration'PT'", 5, 'a duration is written'],
    ["a eq duration'P20000Y'", 5, 'longer than 10000 years'],
    ["a eq datetime'2024-01-01T00:00:00'", 5, 'write dates and datetimes without quotes'],
    ["a eq guid'x'", 5, "the only typed literal is duration'…'"],
    ['a eq 1e999', 5, 'out of range'],
    ['a eq #', 5, "unexpected character '#'"],
    ['contains(a, ', 12, 'ends too early'],
    ["contains(a 'x')", 11, "',' or ')' in the arguments of contains()"],
    ['contains(a', 8, 'contains( is never closed'],
    ['a/b eq 1', 1, "found '/'"],
    ['', 0, 'ends too early'],
    [',', 0, "found ','"],
  ])('refuses %j at %i', (text, position, message) => {
    const error = failure(text);
    expect(error.status).toBe(400);
    expect(error.code).toBe('INVALID_FILTER');
    expect(error.extra.position).toBe(position);
    expect(error.message).toContain(`$filter: at ${position}: `);
    expect(error.message).toContain(message);
  });

  it('refuses input over the length cap', () => {
    const error = failure(`a eq '${'x'.repeat(MAX_OPTION_LENGTH)}'`);
    expect(error.extra.position).toBe(MAX_OPTION_LENGTH);
    expect(error.message).toContain(`longer than ${MAX_OPTION_LENGTH} characters`);
    expect(() => parseFilter(`a eq '${'x'.repeat(MAX_OPTION_LENGTH - 7)}'`, FILTER)).not.toThrow();
  });

  it('refuses nesting beyond the depth cap, whatever makes it deep', () => {
    const ok = `${'('.repeat(MAX_DEPTH - 1)}a${')'.repeat(MAX_DEPTH - 1)}`;
    expect(parse(ok)).toBe('a');
    for (const deep of [
      `${'('.repeat(MAX_DEPTH + 1)}a${')'.repeat(MAX_DEPTH + 1)}`,
      `${'not '.repeat(2000)}a`,
      `${'year('.repeat(1000)}a${')'.repeat(1000)}`,
      Array.from({ length: 1500 }, () => 'a').join(' eq '),
      `now()${" add duration'P1D'".repeat(400)}`,
      `${'('.repeat(4000)}`,
    ]) {
      const error = failure(deep);
      expect(error.code).toBe('INVALID_FILTER');
      expect(error.message).toContain(`nested more than ${MAX_DEPTH} levels deep`);
    }
  });

  it('lexes $apply punctuation and $count', () => {
    const kinds = tokenize('groupby((a),aggregate($count as n))/filter(n gt 1)', FILTER).map((t) => (t.kind === 'ident' ? t.text : t.kind));
    expect(kinds).toEqual(['groupby', '(', '(', 'a', ')', ',', 'aggregate', '(', '$count', 'as', 'n', ')', ')', '/', 'filter', '(', 'n', 'gt', 'literal', ')', 'eof']);
  });
});
