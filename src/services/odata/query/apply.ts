import { quoteIdent } from '../../../core/engine/index.ts';
import type { ODataColumn } from '../model.ts';
import type { Expr } from './ast.ts';
import { Checker } from './checker.ts';
import { ColumnSet } from './columns.ts';
import { SqlCompiler, ipv4NumberSql } from './compiler.ts';
import { APPLY, invalid } from './errors.ts';
import { isNumeric, kindOf, numericShape } from './kinds.ts';
import { describeToken, type Token } from './lexer.ts';
import type { SqlParams } from './params.ts';
import { ExpressionParser, TokenStream } from './parser.ts';

export type AggregateFunction = 'sum' | 'average' | 'min' | 'max';

interface Name {
  name: string;
  pos: number;
}

/** `$count as N` (no column) or `column with fn as Alias`. */
export interface AggregateSpec {
  fn: AggregateFunction | '$count';
  column?: Name;
  alias: Name;
}

export type ApplyStep =
  | { kind: 'filter'; expr: Expr }
  /** `aggregates` is empty for a groupby that only deduplicates. */
  | { kind: 'groupby'; columns: Name[]; aggregates: AggregateSpec[] }
  | { kind: 'aggregate'; aggregates: AggregateSpec[] };

/** One step of the plan: wraps the FROM item of the previous relation into a SELECT. */
export type Stage = (from: string) => string;

export interface ApplyPlan {
  stages: Stage[];
  /** The columns the last step yields. */
  columns: ODataColumn[];
}

const FUNCTIONS: AggregateFunction[] = ['sum', 'average', 'min', 'max'];
const OTHER_TRANSFORMATIONS = new Set(['compute', 'concat', 'identity', 'topcount', 'topsum', 'toppercent', 'bottomcount', 'bottomsum', 'bottompercent', 'search', 'expand', 'orderby', 'top', 'skip', 'nest', 'ancestors', 'descendants', 'traverse']);
const RESERVED_ALIASES = new Set(['null', 'true', 'false', 'not']);

/** Parses $apply: transformations separated by '/'. */
export function parseApply(text: string): ApplyStep[] {
  const stream = TokenStream.of(text, APPLY);
  const steps = [parseStep(stream)];
  while (stream.accept('/')) steps.push(parseStep(stream));
  const rest = stream.peek();
  if (rest.kind !== 'eof') throw stream.error(rest, `expected '/' before the next transformation or the end of $apply, found ${describeToken(rest)}`);
  return steps;
}

function parseStep(stream: TokenStream): ApplyStep {
  const name = stream.next();
  const usage = 'groupby((col1,col2), aggregate(…)), aggregate(…) or filter(…)';
  if (name.kind !== 'ident') throw stream.error(name, `expected a transformation — ${usage} — found ${describeToken(name)}`);
  if (!['filter', 'groupby', 'aggregate'].includes(name.text)) {
    const known = OTHER_TRANSFORMATIONS.has(name.text) ? `transformation ${name.text}() is not supported` : `unknown transformation '${name.text}'`;
    throw stream.error(name, `${known}; use ${usage}`);
  }
  stream.expect('(', `'(' after ${name.text}`);
  let step: ApplyStep;
  if (name.text === 'filter') {
    const parser = new ExpressionParser(stream);
    step = { kind: 'filter', expr: parser.parse() };
    if (stream.peek().kind !== ')') throw parser.unexpected(stream.peek(), "')' to close filter(");
  } else if (name.text === 'groupby') {
    step = parseGroupBy(stream);
  } else {
    step = { kind: 'aggregate', aggregates: parseAggregates(stream) };
  }
  stream.expect(')', `')' to close ${name.text}(`);
  return step;
}

function parseGroupBy(stream: TokenStream): ApplyStep {
  if (stream.peek().kind !== '(') {
    throw stream.error(stream.peek(), 'groupby takes its columns in parentheses: groupby((region), aggregate(amount with sum as Total))');
  }
  stream.next();
  const columns: Name[] = [];
  do {
    columns.push(name(stream.expect('ident', 'a column name to group by')));
  } while (stream.accept(','));
  stream.expect(')', "',' or ')' after the grouping columns");
  if (!stream.accept(',')) return { kind: 'groupby', columns, aggregates: [] };
  const next = stream.peek();
  if (next.kind !== 'ident' || next.text !== 'aggregate') {
    throw stream.error(next, `the second argument of groupby must be aggregate(…), found ${describeToken(next)}`);
  }
  stream.next();
  stream.expect('(', "'(' after aggregate");
  const aggregates = parseAggregates(stream);
  stream.expect(')', "')' to close aggregate(");
  return { kind: 'groupby', columns, aggregates };
}

function parseAggregates(stream: TokenStream): AggregateSpec[] {
  const aggregates: AggregateSpec[] = [];
  do {
    aggregates.push(parseAggregate(stream));
  } while (stream.accept(','));
  return aggregates;
}

function parseAggregate(stream: TokenStream): AggregateSpec {
  const example = "write 'amount with sum as Total' or '$count as Count'";
  const first = stream.next();
  if (first.kind !== 'ident') throw stream.error(first, `expected an aggregate — ${example} — found ${describeToken(first)}`);
  if (first.text === '$count') return { fn: '$count', alias: alias(stream) };
  if (stream.peek().kind === '(') {
    throw stream.error(first, `call forms such as ${first.text}(…) are not supported: write 'column with ${FUNCTIONS.includes(first.text as AggregateFunction) ? first.text : 'sum'} as Alias', e.g. amount with sum as Total`);
  }
  if (first.text.startsWith('$')) throw stream.error(first, `${first.text} is not an aggregate: ${example}`);
  stream.expect('ident', `'with' after the column name (${example})`, 'with');
  const fn = stream.expect('ident', "an aggregate function: sum, average, min or max");
  if (!FUNCTIONS.includes(fn.text as AggregateFunction)) {
    throw stream.error(fn, `aggregate function '${fn.text}' is not supported; use sum, average, min or max`);
  }
  return { fn: fn.text as AggregateFunction, column: name(first), alias: alias(stream) };
}

function alias(stream: TokenStream): Name {
  stream.expect('ident', "'as' and a name for the result", 'as');
  const token = stream.expect('ident', 'a name for the result');
  if (token.text.startsWith('$') || RESERVED_ALIASES.has(token.text)) throw stream.error(token, `'${token.text}' cannot name a result: choose another name`);
  return name(token);
}

function name(token: Token): Name {
  return { name: token.text, pos: token.pos };
}

/** Checks the steps against the columns each one sees and compiles them to SQL stages. */
export function planApply(steps: ApplyStep[], columns: readonly ODataColumn[], now: bigint, params: SqlParams): ApplyPlan {
  const compiler = new SqlCompiler(params);
  let current: readonly ODataColumn[] = columns;
  const stages: Stage[] = [];
  for (const step of steps) {
    const visible = new ColumnSet(current);
    if (step.kind === 'filter') {
      const where = compiler.sql(new Checker(visible, now, APPLY).condition(step.expr));
      stages.push((from) => `SELECT * FROM ${from} WHERE ${where}`);
      continue;
    }
    const groups = step.kind === 'groupby' ? groupColumns(step.columns, visible) : [];
    const aggregates = step.aggregates.map((spec) => aggregate(spec, visible, step.kind === 'aggregate'));
    checkNames([...(step.kind === 'groupby' ? step.columns : []), ...step.aggregates.map((a) => a.alias)]);
    const keys = groups.map((g) => quoteIdent(g.name)).join(', ');
    const select = [keys, ...aggregates.map((a) => a.sql)].filter((s) => s !== '').join(', ');
    if (step.kind === 'aggregate') stages.push((from) => `SELECT ${select} FROM ${from}`);
    else if (aggregates.length === 0) stages.push((from) => `SELECT DISTINCT ${select} FROM ${from}`);
    else stages.push((from) => `SELECT ${select} FROM ${from} GROUP BY ${keys}`);
    current = [...groups, ...aggregates.map((a) => a.column)];
  }
  return { stages, columns: [...current] };
}

function groupColumns(names: Name[], visible: ColumnSet): ODataColumn[] {
  const seen = new Set<string>();
  return names.map((n) => {
    const column = visible.get(n.name, n.pos, APPLY);
    if (seen.has(column.name)) throw invalid(APPLY, n.pos, `column '${n.name}' is listed twice in groupby`);
    seen.add(column.name);
    return column;
  });
}

/** Result names must differ from each other and from the grouping columns (DuckDB ignores case). */
function checkNames(names: Name[]): void {
  const seen = new Map<string, string>();
  for (const n of names) {
    const key = n.name.toLowerCase();
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      throw invalid(APPLY, n.pos, `'${n.name}' clashes with the output column '${earlier}' (names are compared ignoring case): choose another alias`);
    }
    seen.set(key, n.name);
  }
}

/**
 * One aggregate's SQL and output column. Result types are cast explicitly so `columns` is exact:
 * $count → BIGINT; sum of integers → HUGEINT, of DECIMAL(p,s) → DECIMAL(38,s), of floats → DOUBLE;
 * average → DOUBLE; min and max keep the column's type (IPV4 is ordered as addresses, not text).
 */
function aggregate(spec: AggregateSpec, visible: ColumnSet, overWholeInput: boolean): { sql: string; column: ODataColumn } {
  const as = quoteIdent(spec.alias.name);
  if (spec.fn === '$count') return { sql: `count(*) AS ${as}`, column: { name: spec.alias.name, type: 'BIGINT', nullable: false } };
  const source = visible.get(spec.column!.name, spec.column!.pos, APPLY);
  const kind = kindOf(source.type);
  const column = quoteIdent(source.name);
  // Groups are never empty, so only a whole-input aggregate (over possibly no rows) or a nullable column yields NULL.
  const nullable = source.nullable || overWholeInput;
  if (spec.fn === 'sum' || spec.fn === 'average') {
    if (!isNumeric(kind)) throw invalid(APPLY, spec.column!.pos, `${spec.fn} needs a numeric column, but column '${source.name}' is ${source.type}`);
    const type = spec.fn === 'average' ? 'DOUBLE' : sumType(source.type);
    const sql = `CAST(${spec.fn === 'sum' ? 'sum' : 'avg'}(${column}) AS ${type}) AS ${as}`;
    return { sql, column: { name: spec.alias.name, type, nullable } };
  }
  if (kind === 'other') throw invalid(APPLY, spec.column!.pos, `${spec.fn} cannot order column '${source.name}' of type ${source.type}`);
  const sql = kind === 'ipv4' ? `arg_${spec.fn}(${column}, ${ipv4NumberSql(column)}) AS ${as}` : `${spec.fn}(${column}) AS ${as}`;
  return { sql, column: { name: spec.alias.name, type: source.type, nullable } };
}

function sumType(type: string): string {
  const shape = numericShape(type);
  if (shape.family === 'integer') return 'HUGEINT';
  if (shape.family === 'decimal') return `DECIMAL(38,${shape.scale})`;
  return 'DOUBLE';
}
