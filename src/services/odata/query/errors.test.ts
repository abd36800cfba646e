import { describe, expect, it } from 'vitest';
import { AppError } from '../../../core/errors/index.ts';
import { compileQuery, type ODataQueryOptions } from './query.ts';
import { COLUMNS, NOW } from './test-fixture.ts';

function refusal(options: ODataQueryOptions): AppError {
  try {
    compileQuery(options, COLUMNS, NOW);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error(`expected ${JSON.stringify(options)} to be refused`);
}

type Case = [text: string, code: string, position: number, message: string];

function expectRefused(option: keyof ODataQueryOptions, [text, code, position, message]: Case) {
  const error = refusal({ [option]: text });
  expect(error.status).toBe(400);
  expect({ code: error.code, position: error.extra.position }).toEqual({ code, position });
  expect(error.message).toContain(`$${option}: at ${position}: `);
  expect(error.message).toContain(message);
  expect(error.extra.option).toBe(`$${option}`);
}

describe('$filter type checking', () => {
  it.each<Case>([
    ["amount eq '12'", 'FILTER_TYPE_MISMATCH', 10, "column 'amount' is DECIMAL(18,2), cannot compare it with the string '12'; numbers are written without quotes"],
    ["'12' eq amount", 'FILTER_TYPE_MISMATCH', 0, "column 'amount' is DECIMAL(18,2), cannot compare it with the string '12'"],
    ['name eq 12', 'FILTER_TYPE_MISMATCH', 8, "column 'name' is VARCHAR, cannot compare it with the number 12; strings are written in single quotes"],
    ["d eq '2024-01-31'", 'FILTER_TYPE_MISMATCH', 5, 'date and datetime literals are written without quotes'],
    ["ts gt '2024-01-31T10:00:00Z'", 'FILTER_TYPE_MISMATCH', 6, 'without quotes'],
    ["tstz ge '2024-01-31'", 'FILTER_TYPE_MISMATCH', 8, 'without quotes'],
    ['d eq 2024-01-31T00:00:00Z', 'FILTER_TYPE_MISMATCH', 5, "column 'd' is DATE, cannot compare it with the datetime"],
    ['d ge now()', 'FILTER_TYPE_MISMATCH', 5, 'date(…) gives the UTC date of a datetime'],
    ['d eq ts', 'FILTER_TYPE_MISMATCH', 5, "cannot compare it with column 'ts' (TIMESTAMP)"],
    ['active eq 1', 'FILTER_TYPE_MISMATCH', 10, "column 'active' is BOOLEAN, cannot compare it with the number 1"],
    ['t eq 2024-01-01', 'FILTER_TYPE_MISMATCH', 5, "column 't' is TIME"],
    ["ip eq 'x'", 'FILTER_TYPE_MISMATCH', 6, "'x' is not an IPv4 address"],
    ["ip eq '10.0.0.01'", 'FILTER_TYPE_MISMATCH', 6, 'is not an IPv4 address'],
    ['ip eq name', 'FILTER_TYPE_MISMATCH', 6, 'an IPV4 column compares with another IPV4 column'],
    ['ip gt 5', 'FILTER_TYPE_MISMATCH', 6, "column 'ip' is IPV4"],
    ['amount lt null', 'FILTER_TYPE_MISMATCH', 10, 'null can only be compared with eq or ne'],
    ["ts eq duration'P1D'", 'FILTER_TYPE_MISMATCH', 6, 'can only be added to or subtracted from a datetime'],
    ['amount', 'FILTER_TYPE_MISMATCH', 0, "$filter must be a condition (true or false), but column 'amount' (DECIMAL(18,2)) is a decimal"],
    ['null', 'FILTER_TYPE_MISMATCH', 0, 'must be a condition'],
    ['year(d)', 'FILTER_TYPE_MISMATCH', 0, 'year(d) is an integer'],
    ['not amount gt 5', 'FILTER_TYPE_MISMATCH', 4, 'put it in parentheses: not (price gt 5)'],
    ['active and qty', 'FILTER_TYPE_MISMATCH', 11, "'and' needs conditions on both sides"],
    ['qty eq 1 or 2', 'FILTER_TYPE_MISMATCH', 12, "'or' needs conditions"],
    ["d add duration'P1D' gt 2024-01-01", 'FILTER_TYPE_MISMATCH', 0, 'add and sub work on datetimes, not dates'],
    ["qty add duration'P1D' gt 1", 'FILTER_TYPE_MISMATCH', 0, 'add needs a datetime on its left'],
    ['ts add 1 gt now()', 'FILTER_TYPE_MISMATCH', 7, "add takes a datetime on its left and a duration'…' on its right"],
    ["duration'P1D' add now() gt ts", 'FILTER_TYPE_MISMATCH', 18, 'write the datetime first'],
    ['ts sub ts gt now()', 'FILTER_TYPE_MISMATCH', 7, "a duration'…' on its right"],
    ["contains(qty, '1')", 'FILTER_TYPE_MISMATCH', 9, "contains() needs strings, but column 'qty' (INTEGER) is an integer"],
    ['startswith(name, 1)', 'FILTER_TYPE_MISMATCH', 17, "write strings in single quotes: '1'"],
    ['endswith(name, null)', 'FILTER_TYPE_MISMATCH', 15, 'endswith() needs strings'],
    ["in_subnet(name, '10.0.0.0/8')", 'FILTER_TYPE_MISMATCH', 10, "in_subnet() needs an IPV4 column as its first argument, but column 'name' (VARCHAR) is VARCHAR"],
    ['in_subnet(ip, name)', 'FILTER_TYPE_MISMATCH', 14, 'needs a CIDR block written as a string'],
    ["in_subnet(ip, '10.0.0.0/33')", 'INVALID_FILTER', 14, 'is not a CIDR block'],
    ["in_subnet(ip, '10.0.0/8')", 'INVALID_FILTER', 14, 'is not a CIDR block'],
    ["in_subnet(ip, '10.0.0.0')", 'INVALID_FILTER', 14, 'is not a CIDR block'],
    ['year(name) eq 1', 'FILTER_TYPE_MISMATCH', 5, 'year() needs a date or a datetime'],
    ['hour(d) eq 1', 'FILTER_TYPE_MISMATCH', 5, 'hour() needs a datetime or a time of day'],
    ['date(qty) eq 2024-01-01', 'FILTER_TYPE_MISMATCH', 5, 'date() needs a date or a datetime'],
  ])('%j → %s at %i', (...c) => expectRefused('filter', c));
});

describe('$filter references and functions', () => {
  it.each<Case>([
    ['amout gt 1', 'INVALID_FILTER', 0, "unknown column 'amout'; did you mean 'amount'?"],
    ['Amount gt 1', 'INVALID_FILTER', 0, "did you mean 'amount'? (column names are case-sensitive)"],
    ['qty gt 1 and zzzzzz eq 1', 'INVALID_FILTER', 13, "unknown column 'zzzzzz'; the columns are id, qty"],
    ['time(ts) eq 1', 'INVALID_FILTER', 0, 'time() is not supported'],
    ['ts gt mindatetime()', 'INVALID_FILTER', 6, 'mindatetime() is not supported'],
    ['ts lt maxdatetime()', 'INVALID_FILTER', 6, 'maxdatetime() is not supported'],
    ['Year(d) eq 2024', 'INVALID_FILTER', 0, 'function names are lowercase: write year() instead of Year()'],
    ["tolower(name) eq 'a'", 'INVALID_FILTER', 0, 'function tolower() is not supported; the functions are contains'],
    ['now(1) gt ts', 'INVALID_FILTER', 0, 'now() takes no arguments, not 1'],
    ['year(d, d) eq 1', 'INVALID_FILTER', 0, 'year() takes 1 argument, not 2'],
    ["contains(name) eq true", 'INVALID_FILTER', 0, 'contains() takes 2 arguments, not 1'],
    ["ts gt 9999-12-31T00:00:00Z add duration'P1D'", 'INVALID_FILTER', 27, 'falls outside the supported years'],
    ["ts gt now() sub duration'P9000Y'", 'INVALID_FILTER', 12, 'falls outside the supported years'],
  ])('%j → %s at %i', (...c) => expectRefused('filter', c));
});

describe('$apply errors', () => {
  it.each<Case>([
    ['aggregate(sum(amount) as X)', 'INVALID_APPLY', 10, "call forms such as sum(…) are not supported: write 'column with sum as Alias'"],
    ['groupby((region), aggregate(max(amount) as X))', 'INVALID_APPLY', 28, "column with max as Alias"],
    ['aggregate(amount with countdistinct as X)', 'INVALID_APPLY', 22, "aggregate function 'countdistinct' is not supported; use sum, average, min or max"],
    ['aggregate(amount with Sum as X)', 'INVALID_APPLY', 22, "'Sum' is not supported"],
    ['aggregate(amount with avg as X)', 'INVALID_APPLY', 22, "'avg' is not supported"],
    ['aggregate(amount sum as X)', 'INVALID_APPLY', 17, "expected 'with' after the column name"],
    ['aggregate(amount with sum)', 'INVALID_APPLY', 25, "expected 'as' and a name for the result"],
    ['aggregate(amount with sum as)', 'INVALID_APPLY', 28, 'expected a name for the result'],
    ['aggregate(amount with sum as $x)', 'INVALID_APPLY', 29, "'$x' cannot name a result"],
    ['aggregate(amount with sum as null)', 'INVALID_APPLY', 29, "'null' cannot name a result"],
    ['aggregate($count as n, amount with sum as N)', 'INVALID_APPLY', 42, "'N' clashes with the output column 'n'"],
    ['groupby((region), aggregate(amount with sum as region))', 'INVALID_APPLY', 47, "'region' clashes with the output column 'region'"],
    ['groupby((region, region))', 'INVALID_APPLY', 17, "column 'region' is listed twice"],
    ['aggregate(name with sum as s)', 'INVALID_APPLY', 10, "sum needs a numeric column, but column 'name' is VARCHAR"],
    ['aggregate(d with average as s)', 'INVALID_APPLY', 10, 'average needs a numeric column'],
    ['aggregate(nope with max as s)', 'INVALID_APPLY', 10, "unknown column 'nope'"],
    ['groupby((regoin))', 'INVALID_APPLY', 9, "unknown column 'regoin'; did you mean 'region'?"],
    ['groupby(region)', 'INVALID_APPLY', 8, 'groupby takes its columns in parentheses'],
    ['groupby((region), filter(qty gt 1))', 'INVALID_APPLY', 18, 'the second argument of groupby must be aggregate(…)'],
    ['groupby((region)', 'INVALID_APPLY', 16, "expected ')' to close groupby("],
    ['groupby(())', 'INVALID_APPLY', 9, 'expected a column name to group by'],
    ['groupby((region))/groupby((qty))', 'INVALID_APPLY', 27, "unknown column 'qty'"],
    ['groupby((region),aggregate($count as n))/filter(qty gt 1)', 'INVALID_APPLY', 48, "unknown column 'qty'"],
    ['groupby((region),aggregate($count as n))/filter(n gt 1)/filter(m gt 1)', 'INVALID_APPLY', 63, "unknown column 'm'"],
    ["filter(amount eq '1')", 'FILTER_TYPE_MISMATCH', 17, "column 'amount' is DECIMAL(18,2)"],
    ['filter(amount)', 'FILTER_TYPE_MISMATCH', 7, 'filter() must be a condition'],
    ['filter(amount gt 1', 'INVALID_APPLY', 18, "expected ')' to close filter(, found the end of the text"],
    ['filter(amount gt 1 x)', 'INVALID_APPLY', 19, "expected ')' to close filter(, found 'x'"],
    ['filter(time(ts) eq 1)', 'INVALID_APPLY', 7, 'time() is not supported'],
    ['compute(amount mul 2 as x)', 'INVALID_APPLY', 0, 'transformation compute() is not supported'],
    ['topcount(2, amount)', 'INVALID_APPLY', 0, 'transformation topcount() is not supported'],
    ['Groupby((region))', 'INVALID_APPLY', 0, "unknown transformation 'Groupby'"],
    ['groupby((region))/', 'INVALID_APPLY', 18, 'expected a transformation'],
    ['/groupby((region))', 'INVALID_APPLY', 0, 'expected a transformation'],
    ['groupby((region)) groupby((qty))', 'INVALID_APPLY', 18, "expected '/' before the next transformation"],
    ['aggregate()', 'INVALID_APPLY', 10, 'expected an aggregate'],
    ['aggregate($count)', 'INVALID_APPLY', 16, "expected 'as'"],
    ['aggregate($it with sum as x)', 'INVALID_APPLY', 10, '$it is not an aggregate'],
    ['filter', 'INVALID_APPLY', 6, "expected '(' after filter"],
  ])('%j → %s at %i', (...c) => expectRefused('apply', c));
});

describe('$select and $orderby errors', () => {
  it.each<Case>([
    ['qty,nme', 'INVALID_SELECT', 4, "unknown column 'nme'; did you mean 'name'?"],
    ['qty,', 'INVALID_SELECT', 4, 'expected a column name or *, found the end of the text'],
    [',qty', 'INVALID_SELECT', 0, "found ','"],
    ['qty name', 'INVALID_SELECT', 4, "expected ',' between column names, found 'name'"],
    ['qty/x', 'INVALID_SELECT', 3, 'plain column names'],
    ['year(d)', 'INVALID_SELECT', 4, 'plain column names'],
    ["'qty'", 'INVALID_SELECT', 0, "expected a column name or *, found ''qty''"],
  ])('$select %j → %s at %i', (...c) => expectRefused('select', c));

  it.each<Case>([
    ['qty DESC', 'INVALID_ORDERBY', 4, "write 'desc' in lowercase"],
    ['qty descending', 'INVALID_ORDERBY', 4, 'expected asc, desc or'],
    ['qty asc desc', 'INVALID_ORDERBY', 8, "expected ',' before the next column"],
    ['qty, qty desc', 'INVALID_ORDERBY', 5, "column 'qty' is listed twice"],
    ['qyt', 'INVALID_ORDERBY', 0, "did you mean 'qty'?"],
    ['year(d) desc', 'INVALID_ORDERBY', 4, 'plain column names'],
    ['qty,', 'INVALID_ORDERBY', 4, 'expected a column name'],
  ])('$orderby %j → %s at %i', (...c) => expectRefused('orderby', c));

  it('checks $orderby and $select against the columns $apply yields', () => {
    const orderby = refusal({ apply: 'groupby((region))', orderby: 'qty' });
    expect([orderby.code, orderby.extra.position, orderby.message]).toEqual(['INVALID_ORDERBY', 0, "$orderby: at 0: unknown column 'qty'; the columns are region"]);
    const select = refusal({ apply: 'groupby((region))', select: 'qty' });
    expect([select.code, select.extra.position]).toEqual(['INVALID_SELECT', 0]);
  });
});

describe('option handling', () => {
  it('treats absent, empty and blank options as not given', () => {
    for (const blank of [undefined, '', '   ']) {
      const compiled = compileQuery({ filter: blank, select: blank, orderby: blank, apply: blank }, COLUMNS, NOW);
      expect(compiled.columns).toEqual(COLUMNS);
      expect(compiled.orderBy).toEqual([]);
      expect(compiled.params.values).toEqual([]);
    }
  });

  it('reports $apply errors before $filter errors, then $orderby, then $select', () => {
    expect(refusal({ apply: 'x', filter: 'y', orderby: 'z', select: 'w' }).code).toBe('INVALID_APPLY');
    expect(refusal({ filter: 'y', orderby: 'z', select: 'w' }).code).toBe('INVALID_FILTER');
    expect(refusal({ orderby: 'z', select: 'w' }).code).toBe('INVALID_ORDERBY');
  });

  it('caps every option at 8 KB', () => {
    for (const option of ['filter', 'select', 'orderby', 'apply'] as const) {
      const error = refusal({ [option]: 'x'.repeat(9000) });
      expect(error.code).toBe({ filter: 'INVALID_FILTER', select: 'INVALID_SELECT', orderby: 'INVALID_ORDERBY', apply: 'INVALID_APPLY' }[option]);
      expect(error.message).toContain('longer than 8192 characters');
    }
  });

  it('refuses an invalid now', () => {
    expect(() => compileQuery({}, COLUMNS, new Date(Number.NaN))).toThrow(/now\(\) must be a valid date/);
  });
});
