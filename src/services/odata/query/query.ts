import { quoteIdent } from '../../../core/engine/index.ts';
import type { ODataColumn } from '../model.ts';
import { parseApply, planApply, type Stage } from './apply.ts';
import { Checker } from './checker.ts';
import { ColumnSet } from './columns.ts';
import { SqlCompiler, ipv4NumberSql } from './compiler.ts';
import { FILTER } from './errors.ts';
import { parseOrderBy, type OrderKey } from './orderby.ts';
import { SqlParams } from './params.ts';
import { parseFilter } from './parser.ts';
import { parseSelect } from './select.ts';
import { inRange, instantFromDate } from './temporal.ts';

/** The expression options of a rows request, as sent (absent, empty or blank means not given). */
export interface ODataQueryOptions {
  filter?: string;
  select?: string;
  orderby?: string;
  apply?: string;
}

export interface CompiledQuery {
  /**
   * A SELECT of the result rows from `source` — $apply, then $filter, $orderby and $select —
   * ending with its ORDER BY (if any), so LIMIT/OFFSET can be appended. `source` is a relation
   * usable in FROM (a table name, `read_parquet([…])`) or a bare SELECT (it is parenthesised).
   * With `totalOrder`, every column not in $orderby is appended ascending as a tiebreak, so the
   * order is total (rows equal in every column are interchangeable) and pages never overlap.
   */
  sql(source: string, options?: { totalOrder?: boolean }): string;
  /** `SELECT count(*) AS "count" …`: how many rows `sql` yields (for $count). Same parameters. */
  countSql(source: string): string;
  /** The output columns, in order (after $apply and $select). */
  columns: ODataColumn[];
  /** Bind `params.values` to both sql() and countSql(): they use every one of them. */
  params: SqlParams;
  /** The $orderby keys. They may name columns that $select leaves out of `columns`. */
  orderBy: OrderKey[];
}

function given(text: string | undefined): text is string {
  return text !== undefined && text.trim() !== '';
}

/**
 * Parses, type-checks and compiles the options against the dataset's columns. Throws AppError 400
 * (INVALID_FILTER, FILTER_TYPE_MISMATCH, INVALID_SELECT, INVALID_ORDERBY, INVALID_APPLY) with the
 * position in the offending option. `now` is the value of now() for the whole query.
 */
export function compileQuery(options: ODataQueryOptions, columns: readonly ODataColumn[], now: Date): CompiledQuery {
  const nowMicros = Number.isFinite(now.getTime()) ? instantFromDate(now) : undefined;
  if (nowMicros === undefined || !inRange(nowMicros)) throw new Error(`now() must be a valid date between years 1 and 9999, not ${String(now)}`);
  const params = new SqlParams();
  const applied = given(options.apply) ? planApply(parseApply(options.apply), columns, nowMicros, params) : { stages: [], columns: [...columns] };
  const visible = new ColumnSet(applied.columns);
  const where = given(options.filter)
    ? new SqlCompiler(params).sql(new Checker(visible, nowMicros, FILTER).condition(parseFilter(options.filter, FILTER)))
    : undefined;
  const orderBy = given(options.orderby) ? parseOrderBy(options.orderby, visible) : [];
  const output = given(options.select) ? parseSelect(options.select, visible) : applied.columns;

  const from = (source: string) => relation(source, applied.stages) + (where ? ` WHERE ${where}` : '');
  const projection = output.map((c) => quoteIdent(c.name)).join(', ');
  return {
    sql: (source, { totalOrder = false } = {}) => `SELECT ${projection} FROM ${from(source)}${orderClause(orderBy, applied.columns, totalOrder)}`,
    countSql: (source) => `SELECT count(*) AS "count" FROM ${from(source)}`,
    columns: output,
    params,
    orderBy,
  };
}

/** The FROM item after the $apply stages: each stage wraps the previous one in a subquery. */
function relation(source: string, stages: Stage[]): string {
  const item = /^\s*(SELECT|WITH|FROM|VALUES)\b/i.test(source) ? `(${source})` : source;
  return stages.reduce((from, stage, i) => `(${stage(from)}) AS _apply${i + 1}`, `${item} AS _source`);
}

/** ORDER BY with OData's null placement (first when ascending, last when descending); IPV4 orders as addresses. */
function orderClause(keys: OrderKey[], columns: ODataColumn[], totalOrder: boolean): string {
  const all = totalOrder ? [...keys, ...columns.filter((c) => !keys.some((k) => k.column === c.name)).map((c) => ({ column: c.name, direction: 'asc' as const }))] : keys;
  if (all.length === 0) return '';
  const types = new Map(columns.map((c) => [c.name, c.type]));
  const terms = all.map(({ column, direction }) => {
    const sql = types.get(column) === 'IPV4' ? ipv4NumberSql(quoteIdent(column)) : quoteIdent(column);
    return `${sql} ${direction === 'asc' ? 'ASC NULLS FIRST' : 'DESC NULLS LAST'}`;
  });
  return ` ORDER BY ${terms.join(', ')}`;
}
