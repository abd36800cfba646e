/**
 * Malformed and pathological query options: compileQuery either throws an AppError 400 with one of
 * the documented codes and a position inside the offending option, or compiles SQL that DuckDB runs
 * without error. Never another exception, never a hang.
 */
import type { DuckDBConnection, DuckDBInstance, DuckDBValue } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../core/errors/index.ts';
import { compileQuery, type ODataQueryOptions } from './query.ts';
import { COLUMNS, NOW, createDatabase } from './test-fixture.ts';

const CODES = ['INVALID_FILTER', 'FILTER_TYPE_MISMATCH', 'INVALID_SELECT', 'INVALID_ORDERBY', 'INVALID_APPLY'];

let instance: DuckDBInstance;
let db: DuckDBConnection;
let compiledCount = 0;
let refusedCount = 0;

beforeAll(async () => {
  ({ instance, connection: db } = await createDatabase());
});
afterAll(() => {
  db.closeSync();
  instance.closeSync();
});

/** Compiles; on success runs both statements on DuckDB. Fails the test on anything but a clean 400. */
async function check(options: ODataQueryOptions): Promise<void> {
  const started = performance.now();
  let compiled;
  try {
    compiled = compileQuery(options, COLUMNS, NOW);
  } catch (error) {
    if (!(error instanceof AppError)) throw new Error(`${JSON.stringify(options)} threw ${String(error)}`);
    expect(error.status).toBe(400);
    expect(CODES).toContain(error.code);
    const option = error.extra.option as string;
    const text = options[option.slice(1) as keyof ODataQueryOptions] ?? '';
    const position = error.extra.position as number;
    expect(Number.isInteger(position) && position >= 0 && position <= text.length).toBe(true);
    expect(error.message.startsWith(`${option}: at ${position}: `)).toBe(true);
    refusedCount++;
    return;
  } finally {
    expect(performance.now() - started).toBeLessThan(2000);
  }
  compiledCount++;
  const values = compiled.params.values as DuckDBValue[];
  await db.runAndReadAll(compiled.sql('data', { totalOrder: true }), values);
  await db.runAndReadAll(compiled.countSql('data'), values);
}

const VALID_FILTERS = [
  "qty gt 5 and name eq 'Alice'",
  "not (contains(name, 'a') or startswith(region, 'E')) and endswith(name, 'e')",
  "ts ge now() sub duration'P1M' and tstz lt now() add duration'-PT1H30M'",
  "in_subnet(ip, '10.0.0.0/8') or ip gt '192.168.1.9'",
  'year(d) eq 2024 and month(ts) le 2 and day(tstz) ge 29 and hour(t) lt 12',
  'date(tstz) eq 2024-03-30 or d lt 2000-01-01',
  'amount gt 12.505 or price lt 1e3 or big eq 9007199254740993',
  'active and qty ne null or t eq 10:00:00',
  "ts add duration'P1Y2M3DT4H5M6.5S' gt 2024-01-31T10:00:00+05:30",
  '(qty eq 1 or qty eq 2) and (amount ge qty)',
];
const VALID_APPLIES = [
  'groupby((region), aggregate(amount with sum as total, $count as n))',
  'filter(amount gt 5)/groupby((region),aggregate(amount with average as mean))/filter(mean gt 10)',
  'groupby((region, active))',
  "aggregate(qty with min as low, qty with max as high, ip with max as top)",
  "filter(in_subnet(ip, '0.0.0.0/0'))/groupby((ip))/aggregate($count as n)",
];
const VALID_ORDERBYS = ['qty desc, name', 'ip', 'region asc,amount desc,id'];
const VALID_SELECTS = ['qty,name', '*', 'id, ip ,ts'];

const VOCABULARY = [
  ...COLUMNS.map((c) => c.name), 'Qty', 'nope', '$count', '$it', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'and', 'or', 'not', 'add', 'sub', 'mul', 'in', 'has',
  'null', 'true', 'false', 'now()', 'now', 'contains', 'startswith', 'endswith', 'in_subnet', 'year', 'month', 'day', 'hour', 'minute', 'second', 'date', 'time',
  'mindatetime()', 'groupby', 'aggregate', 'filter', 'with', 'as', 'sum', 'average', 'min', 'max', 'countdistinct', 'asc', 'desc',
  '(', ')', '((', '))', ',', '/', '*', "'", "''", "'x'", "'10.0.0.0/8'", "'2024-01-31'", '0', '-1', '12.5', '1e3', '1e999', '99999999999999999999999999999999999999999',
  '2024-01-31', '2024-02-30', '2024-01-31T10:00:00Z', '2024-01-31T10:00:00', '2024-01-31T10:00:00+14:00', '10:00', "duration'P1D'", "duration'-PT1H'", "duration'P1W'", "datetime'x'",
  '.', ':', '-', '$', '"', '\\', '\u0000', '\ud800', 'é', '😀', '\t', '\n',
];

const tokenSoup = fc.array(fc.constantFrom(...VOCABULARY), { maxLength: 30 }).chain((tokens) =>
  fc.array(fc.constantFrom('', ' ', ' ', '  '), { minLength: tokens.length, maxLength: tokens.length }).map((spaces) => tokens.map((t, i) => t + spaces[i]).join('')),
);

const randomText = fc.oneof(
  fc.string({ maxLength: 120 }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 40 }),
);

/** One random edit of a valid text: delete, insert, duplicate, swap or truncate. */
function mutated(valid: string[]): fc.Arbitrary<string> {
  const edit = fc.tuple(fc.nat(), fc.nat(), fc.constantFrom(...VOCABULARY), fc.constantFrom('delete', 'insert', 'duplicate', 'swap', 'truncate'));
  return fc.tuple(fc.constantFrom(...valid), fc.array(edit, { minLength: 1, maxLength: 4 })).map(([text, edits]) =>
    edits.reduce((s, [a, b, token, kind]) => {
      const i = s.length === 0 ? 0 : a % s.length;
      const j = Math.min(s.length, i + (b % 8) + 1);
      switch (kind) {
        case 'delete':
          return s.slice(0, i) + s.slice(j);
        case 'insert':
          return s.slice(0, i) + token + s.slice(i);
        case 'duplicate':
          return s.slice(0, j) + s.slice(i, j) + s.slice(j);
        case 'swap':
          return s.slice(0, i) + s.slice(i, j).split('').reverse().join('') + s.slice(j);
        default:
          return s.slice(0, i);
      }
    }, text),
  );
}

/** Nesting and repetition up to and past the limits. */
const deep = fc.tuple(
  fc.constantFrom(
    (n: number) => `${'('.repeat(n)}qty eq 1${')'.repeat(n)}`,
    (n: number) => `${'not '.repeat(n)}active`,
    (n: number) => `${'year('.repeat(n)}d${')'.repeat(n)}`,
    (n: number) => Array.from({ length: n + 1 }, () => 'active').join(' eq '),
    (n: number) => Array.from({ length: n + 1 }, (_, i) => `qty eq ${i}`).join(' or '),
    (n: number) => Array.from({ length: n + 1 }, (_, i) => `qty ne ${i}`).join(' and '),
    (n: number) => `ts gt now()${" sub duration'PT1S'".repeat(n)}`,
    (n: number) => `ts${" add duration'P1M'".repeat(n)} gt now()`,
    (n: number) => `${'('.repeat(n)}`,
    (n: number) => `${')'.repeat(n)}`,
    (n: number) => `'${"''".repeat(n)}`,
    (n: number) => `contains(name,${" 'a',".repeat(n)} 'b')`,
  ),
  fc.oneof(fc.integer({ min: 0, max: 70 }), fc.integer({ min: 60, max: 3000 })),
).map(([make, n]) => make(n));

const huge = fc.tuple(fc.constantFrom('qty eq 1 or ', 'a', ' ', "'", '(', 'x,', 'groupby((region))/'), fc.integer({ min: 7000, max: 20000 })).map(([unit, length]) =>
  unit.repeat(Math.ceil(length / unit.length)).slice(0, length),
);

describe('fuzzing the query options', () => {
  it('$filter: random text, token soup, mutations, deep nesting, huge input', async () => {
    const input = fc.oneof(randomText, tokenSoup, mutated(VALID_FILTERS), mutated(VALID_FILTERS), deep, huge);
    await fc.assert(fc.asyncProperty(input, (filter) => check({ filter })), { numRuns: 2500 });
  });

  it('$apply', async () => {
    const input = fc.oneof(randomText, tokenSoup, mutated(VALID_APPLIES), mutated(VALID_APPLIES), deep.map((f) => `filter(${f})`), huge);
    await fc.assert(fc.asyncProperty(input, (apply) => check({ apply })), { numRuns: 1500 });
  });

  it('$orderby and $select', async () => {
    const orderby = fc.oneof(randomText, tokenSoup, mutated(VALID_ORDERBYS), huge);
    const select = fc.oneof(randomText, tokenSoup, mutated(VALID_SELECTS), huge);
    await fc.assert(fc.asyncProperty(orderby, select, async (o, s) => {
      await check({ orderby: o });
      await check({ select: s });
    }), { numRuns: 1500 });
  });

  it('all options at once, mutated from valid ones', async () => {
    const options = fc.record({
      apply: fc.option(mutated(VALID_APPLIES), { nil: undefined }),
      filter: fc.option(fc.oneof(mutated(VALID_FILTERS), fc.constantFrom('n gt 1', 'total gt 10', 'region ne null', 'mean lt 1e9', 'top eq \'10.0.0.1\'')), { nil: undefined }),
      orderby: fc.option(fc.oneof(mutated(VALID_ORDERBYS), fc.constantFrom('region', 'n desc', 'total')), { nil: undefined }),
      select: fc.option(fc.oneof(mutated(VALID_SELECTS), fc.constantFrom('region', 'n', '*')), { nil: undefined }),
    });
    await fc.assert(fc.asyncProperty(options, check), { numRuns: 1500 });
  });

  it('a NUL at any position of a valid option, and nesting far past the limits', async () => {
    const withNulAt = (valid: string[]) => fc.tuple(fc.constantFrom(...valid), fc.nat()).map(([text, at]) => `${text.slice(0, at % (text.length + 1))}\u0000${text.slice(at % (text.length + 1))}`);
    const farDeep = fc.tuple(fc.constantFrom('(', 'not (', 'year(', 'contains(name, '), fc.integer({ min: 3000, max: 100_000 })).map(([open, n]) => `${open.repeat(n)}qty eq 1${')'.repeat(n)}`);
    const options = fc.oneof(
      withNulAt(VALID_FILTERS).map((filter) => ({ filter })),
      withNulAt(VALID_APPLIES).map((apply) => ({ apply })),
      withNulAt(VALID_ORDERBYS).map((orderby) => ({ orderby })),
      withNulAt(VALID_SELECTS).map((select) => ({ select })),
      farDeep.map((filter) => ({ filter })),
      farDeep.map((f) => ({ apply: `filter(${f})` })),
    );
    await fc.assert(fc.asyncProperty(options, check), { numRuns: 500 });
  });

  // The generators' fair share, over all the fuzz tests above: checked once every one of them has run
  // (in whatever order), not as a test of its own that would lean on the others having run first.
  let fuzzed = 0;
  afterEach(() => {
    fuzzed++;
  });
  afterAll(() => {
    if (fuzzed < 5) return; // some were filtered out (-t): their counts are missing
    expect(compiledCount, 'compiled a fair share of the inputs').toBeGreaterThan(300);
    expect(refusedCount, 'refused a fair share of the inputs').toBeGreaterThan(3000);
  });
});
