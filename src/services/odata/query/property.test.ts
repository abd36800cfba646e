/**
 * Random well-formed filters over the fixture table, compiled and run on DuckDB, must return exactly
 * the rows an independent evaluator (plain TypeScript, below) selects.
 *
 * The evaluator uses SQL's three-valued logic, which is what the compiled SQL does:
 * - a comparison, function or in_subnet with a NULL operand yields NULL (unknown);
 * - `x eq null` / `x ne null` are IS NULL / IS NOT NULL and always yield true or false;
 * - `and` is false if either side is false, else NULL if either is NULL, else true;
 *   `or` is true if either side is true, else NULL if either is NULL, else false;
 *   `not NULL` is NULL;
 * - a row is returned only when the whole filter is true (false and NULL rows are left out).
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileQuery } from './query.ts';
import { COLUMNS, NOW, ROWS, createDatabase, idsOf, type Row } from './test-fixture.ts';

type TV = boolean | null;

/** A generated filter: its text, its precedence (10 = needs no parentheses) and its meaning. */
interface Gen {
  text: string;
  prec: number;
  eval: (row: Row) => TV;
}

type Op = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge';
const OPS: Op[] = ['eq', 'ne', 'lt', 'le', 'gt', 'ge'];
const test = (op: Op, c: number) => ({ eq: c === 0, ne: c !== 0, lt: c < 0, le: c <= 0, gt: c > 0, ge: c >= 0 })[op];
const sign = (x: number | bigint) => (x > 0 ? 1 : x < 0 ? -1 : 0);

// ---- independent value semantics -------------------------------------------------------------

/** Numbers: exact (scaled by 10^6, with the original text) or floating point. */
type Num = { exact: bigint; text: string } | { float: number };
function exactNum(text: string): Num {
  const negative = text.startsWith('-');
  const [whole, fraction = ''] = text.replace('-', '').split('.');
  const scaled = BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0'));
  return { exact: negative ? -scaled : scaled, text };
}
const literalNum = (text: string): Num => (/e/i.test(text) ? { float: Number(text) } : exactNum(text));
const asFloat = (n: Num) => ('float' in n ? n.float : Number(n.text));
const compareNum = (a: Num, b: Num) => ('exact' in a && 'exact' in b ? sign(a.exact - b.exact) : sign(asFloat(a) - asFloat(b)));

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const ipNumber = (ip: string) => ip.split('.').reduce((n, p) => n * 256 + Number(p), 0);
const seconds = (time: string) => {
  const [h, m, s = '0'] = time.split(':');
  return Number(h) * 3600 + Number(m) * 60 + Number(s);
};
const ms = (iso: string) => Date.parse(iso);

interface Duration {
  text: string;
  months: number;
  millis: number;
}

/** Calendar months first (the day clamped to the month's length), then the fixed span. */
function addDuration(millis: number, d: Duration, direction: 1 | -1): number {
  const months = direction * d.months;
  let result = millis;
  if (months !== 0) {
    const t = new Date(millis);
    const first = new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + months, 1));
    const lastDay = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 0)).getUTCDate();
    result = Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), Math.min(t.getUTCDate(), lastDay), t.getUTCHours(), t.getUTCMinutes(), t.getUTCSeconds(), t.getUTCMilliseconds());
  }
  return result + direction * d.millis;
}

// ---- generators ----------------------------------------------------------------------------

const quote = (s: string) => `'${s.replace(/'/g, "''")}'`;

const durationArb: fc.Arbitrary<Duration> = fc
  .record({
    negative: fc.boolean(),
    years: fc.constantFrom(0, 0, 0, 1),
    months: fc.constantFrom(0, 0, 1, 2, 11, 13),
    days: fc.constantFrom(0, 0, 1, 29, 30),
    hours: fc.constantFrom(0, 0, 1, 12, 24),
    minutes: fc.constantFrom(0, 0, 30),
    secs: fc.constantFrom('0', '0', '1', '0.001', '59.999'),
  })
  .map((p) => {
    const date = `${p.years ? `${p.years}Y` : ''}${p.months ? `${p.months}M` : ''}${p.days ? `${p.days}D` : ''}`;
    let time = `${p.hours ? `${p.hours}H` : ''}${p.minutes ? `${p.minutes}M` : ''}${p.secs !== '0' ? `${p.secs}S` : ''}`;
    if (!date && !time) time = '0S';
    const text = `${p.negative ? '-' : ''}P${date}${time ? `T${time}` : ''}`;
    const millis = (((p.days * 24 + p.hours) * 60 + p.minutes) * 60 + Number(p.secs)) * 1000;
    const direction = p.negative ? -1 : 1;
    return { text, months: direction * (p.years * 12 + p.months), millis: Math.round(direction * millis) };
  });

const instants = ['2024-03-31T12:00:00.000Z', '2024-02-29T12:00:00.000Z', '2024-02-29T11:59:59.999Z', '2024-01-31T10:00:00.000Z', '2023-12-31T23:59:59.999Z', '2024-01-01T00:00:00.000Z', '2024-03-30T12:00:00.001Z', '2025-02-28T00:00:00.000Z', '2023-03-31T12:00:00.000Z'];

/** A datetime literal at (near) an interesting instant, written with a random offset; its value by Date.parse. */
const datetimeArb = fc
  .record({ base: fc.constantFrom(...instants), nudge: fc.constantFrom(0, 0, 1, -1, 3_600_000), offset: fc.constantFrom(0, 0, 60, -300, 330, 840, -570) })
  .map(({ base, nudge, offset }) => {
    const local = new Date(ms(base) + nudge + offset * 60_000).toISOString().slice(0, 23);
    const zone = offset === 0 ? 'Z' : `${offset < 0 ? '-' : '+'}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`;
    const text = `${local}${zone}`;
    return { text, value: ms(text) };
  });

const dateArb = fc.constantFrom('2024-01-31', '2024-02-29', '2024-03-01', '2023-12-31', '2024-03-31', '2025-02-28', '2000-02-29', '1999-12-31', '2024-04-30', '2024-01-01', '2024-02-28', '2024-03-30');

interface Literal<T> {
  text: string;
  value: T;
}
interface ColumnSpec<T> {
  name: keyof Row;
  value: (row: Row) => T | null;
  compare: (a: T, b: T) => number;
  literal: fc.Arbitrary<Literal<T>>;
  ordered?: boolean;
}

const numbers = (texts: string[]): fc.Arbitrary<Literal<Num>> => fc.constantFrom(...texts).map((text) => ({ text, value: literalNum(text) }));
const numColumn = (name: keyof Row, texts: string[], float = false): ColumnSpec<Num> => ({
  name,
  value: (row) => {
    const v = row[name];
    if (v === null) return null;
    return float ? { float: Number(v) } : exactNum(String(v));
  },
  compare: compareNum,
  literal: numbers(texts),
});

const instantLiteral: fc.Arbitrary<Literal<number>> = fc.oneof(
  datetimeArb,
  dateArb.map((d) => ({ text: d, value: ms(`${d}T00:00:00Z`) })),
  durationArb.chain((d) => fc.constantFrom<1 | -1>(1, -1).map((dir) => ({ text: `now() ${dir === 1 ? 'add' : 'sub'} duration'${d.text}'`, value: addDuration(NOW.getTime(), d, dir) }))),
  fc.constant({ text: 'now()', value: NOW.getTime() }),
);

const SPECS: ColumnSpec<any>[] = [
  numColumn('qty', ['-3', '0', '5', '7', '12', '100', '101', '4.99', '5.0', '1e2', '-1e0']),
  numColumn('tiny', ['-128', '127', '0', '1', '200', '-129']),
  numColumn('big', ['-5', '0', '9007199254740992', '9007199254740993', '4611686018427387904', '4611686018427387903']),
  numColumn('ubig', ['0', '1', '-1', '18446744073709551615', '18446744073709551614', '18446744073709551616']),
  numColumn('huge', ['-1', '0', '170141183460469231731687303715884105727', '170141183460469231731687303715884105726', '0.5']),
  numColumn('amount', ['12.5', '12.50', '12.505', '-0.01', '0', '99999.99', '3.33', '100000', '12', '1e2', '1.1', '123456789012345678901234567890']),
  numColumn('price', ['1.5', '-2.25', '0', '1e10', '2', '-0.5', '12.5', '1.1', '12'], true),
  numColumn('f', ['0.5', '-1.25', '0', '3', '2.5', '1e0'], true),
  ...(['name', 'region'] as const).map((name): ColumnSpec<string> => ({
    name,
    value: (row) => row[name],
    compare: compareText,
    literal: fc.constantFrom('Alice', 'alice', 'Al', '', "O'Brien", 'bob', 'Bob', 'zed', 'EU', 'US', 'APAC', 'A', 'a', "'").map((s) => ({ text: quote(s), value: s })),
  })),
  { name: 'active', value: (row) => row.active, compare: (a: boolean, b: boolean) => Number(a) - Number(b), literal: fc.boolean().map((b) => ({ text: String(b), value: b })) },
  { name: 'd', value: (row) => row.d, compare: compareText, literal: dateArb.map((d) => ({ text: d, value: d })) },
  { name: 'ts', value: (row) => (row.ts === null ? null : ms(row.ts)), compare: (a: number, b: number) => sign(a - b), literal: instantLiteral },
  { name: 'tstz', value: (row) => (row.tstz === null ? null : ms(row.tstz)), compare: (a: number, b: number) => sign(a - b), literal: instantLiteral },
  {
    name: 't',
    value: (row) => (row.t === null ? null : seconds(row.t)),
    compare: (a: number, b: number) => sign(a - b),
    literal: fc.constantFrom('00:00', '06:15:00', '10:00:00', '10:00:00.000', '12:30:15.5', '12:30:15', '23:59:59', '11:00').map((t) => ({ text: t, value: seconds(t) })),
  },
];

const ipLiteral = fc.constantFrom('10.0.0.1', '10.0.0.0', '10.0.0.2', '9.255.255.255', '192.168.1.9', '192.168.1.10', '0.0.0.0', '255.255.255.255', '172.16.0.1', '11.0.0.0');

const bool = (value: TV) => value;
const leaf = (text: string, evaluate: (row: Row) => TV, prec = 3): Gen => ({ text, prec, eval: evaluate });

/** column op literal (or literal op column). */
const comparison: fc.Arbitrary<Gen> = fc
  .tuple(fc.constantFrom(...SPECS), fc.constantFrom(...OPS), fc.boolean())
  .chain(([spec, op, swapped]) =>
    spec.literal.map((lit: Literal<unknown>) => {
      const text = swapped ? `${lit.text} ${op} ${spec.name}` : `${spec.name} ${op} ${lit.text}`;
      return leaf(text, (row) => {
        const v = spec.value(row);
        if (v === null) return null;
        return test(op, swapped ? spec.compare(lit.value, v) : spec.compare(v, lit.value));
      });
    }),
  );

const nullTest: fc.Arbitrary<Gen> = fc.tuple(fc.constantFrom(...COLUMNS.map((c) => c.name as keyof Row)), fc.constantFrom('eq', 'ne')).map(([name, op]) =>
  leaf(`${name} ${op} null`, (row) => (row[name] === null) === (op === 'eq')),
);

/** Two columns of comparable types. */
const columnPairs: [keyof Row, keyof Row, (row: Row, a: keyof Row, b: keyof Row) => number | null][] = [
  ['qty', 'big', (r) => (r.qty === null || r.big === null ? null : sign(BigInt(r.qty) - r.big))],
  ['qty', 'amount', (r) => (r.qty === null || r.amount === null ? null : compareNum(exactNum(String(r.qty)), exactNum(r.amount)))],
  ['amount', 'price', (r) => (r.amount === null || r.price === null ? null : sign(Number(r.amount) - r.price))],
  ['tiny', 'qty', (r) => (r.tiny === null || r.qty === null ? null : sign(r.tiny - r.qty))],
  ['ubig', 'big', (r) => (r.ubig === null || r.big === null ? null : sign(r.ubig - r.big))],
  ['name', 'region', (r) => (r.name === null || r.region === null ? null : compareText(r.name, r.region))],
  ['ts', 'tstz', (r) => (r.ts === null || r.tstz === null ? null : sign(ms(r.ts) - ms(r.tstz)))],
  ['ip', 'ip', (r) => (r.ip === null ? null : 0)],
];
const columnComparison: fc.Arbitrary<Gen> = fc.tuple(fc.constantFrom(...columnPairs), fc.constantFrom(...OPS)).map(([[a, b, compare], op]) =>
  leaf(`${a} ${op} ${b}`, (row) => {
    const c = compare(row, a, b);
    return c === null ? null : test(op, c);
  }),
);

const stringFunction: fc.Arbitrary<Gen> = fc
  .tuple(fc.constantFrom('contains', 'startswith', 'endswith'), fc.constantFrom<'name' | 'region'>('name', 'region'), fc.constantFrom('A', 'a', 'lic', '', "'", 'E', 'US', 'Alice', 'b'))
  .map(([fn, column, needle]) =>
    leaf(
      `${fn}(${column}, ${quote(needle)})`,
      (row) => {
        const s = row[column];
        if (s === null) return null;
        return fn === 'contains' ? s.includes(needle) : fn === 'startswith' ? s.startsWith(needle) : s.endsWith(needle);
      },
      10,
    ),
  );

type Part = 'year' | 'month' | 'day' | 'hour' | 'minute' | 'second';
function partOf(part: Part, column: 'd' | 'ts' | 'tstz' | 't', row: Row): number | null {
  const value = row[column];
  if (value === null) return null;
  if (column === 't') {
    const [h, m, s] = value.split(':').map(Number);
    return { hour: h, minute: m, second: Math.floor(s) }[part as 'hour'];
  }
  const t = new Date(column === 'd' ? `${value}T00:00:00Z` : value);
  return { year: t.getUTCFullYear(), month: t.getUTCMonth() + 1, day: t.getUTCDate(), hour: t.getUTCHours(), minute: t.getUTCMinutes(), second: t.getUTCSeconds() }[part];
}
const partFunction: fc.Arbitrary<Gen> = fc
  .oneof(
    fc.tuple(fc.constantFrom<Part>('year', 'month', 'day'), fc.constantFrom<'d' | 'ts' | 'tstz'>('d', 'ts', 'tstz')),
    fc.tuple(fc.constantFrom<Part>('hour', 'minute', 'second'), fc.constantFrom<'ts' | 'tstz' | 't'>('ts', 'tstz', 't')),
  )
  .chain(([part, column]) =>
    fc.tuple(fc.constantFrom(...OPS), fc.constantFrom(0, 1, 2, 3, 10, 11, 12, 15, 22, 23, 29, 30, 31, 59, 1999, 2023, 2024, 2025)).map(([op, n]) =>
      leaf(`${part}(${column}) ${op} ${n}`, (row) => {
        const v = partOf(part, column, row);
        return v === null ? null : test(op, sign(v - n));
      }),
    ),
  );

const dateFunction: fc.Arbitrary<Gen> = fc.tuple(fc.constantFrom<'ts' | 'tstz'>('ts', 'tstz'), fc.constantFrom(...OPS), dateArb).map(([column, op, date]) =>
  leaf(`date(${column}) ${op} ${date}`, (row) => {
    const v = row[column];
    return v === null ? null : test(op, compareText(v.slice(0, 10), date));
  }),
);

const ipComparison: fc.Arbitrary<Gen> = fc.tuple(fc.constantFrom(...OPS), ipLiteral).map(([op, ip]) =>
  leaf(`ip ${op} '${ip}'`, (row) => (row.ip === null ? null : test(op, sign(ipNumber(row.ip) - ipNumber(ip))))),
);

const subnet: fc.Arbitrary<Gen> = fc
  .tuple(fc.oneof(ipLiteral, fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join('.'))), fc.integer({ min: 0, max: 32 }))
  .map(([ip, prefix]) =>
    leaf(
      `in_subnet(ip, '${ip}/${prefix}')`,
      (row) => {
        if (row.ip === null) return null;
        return prefix === 0 || ipNumber(row.ip) >>> (32 - prefix) === ipNumber(ip) >>> (32 - prefix);
      },
      10,
    ),
  );

/** A datetime column moved by a duration, compared with a datetime literal. */
const shiftedColumn: fc.Arbitrary<Gen> = fc
  .tuple(fc.constantFrom<'ts' | 'tstz'>('ts', 'tstz'), fc.constantFrom<1 | -1>(1, -1), durationArb, fc.constantFrom(...OPS), datetimeArb)
  .map(([column, direction, duration, op, lit]) =>
    leaf(`${column} ${direction === 1 ? 'add' : 'sub'} duration'${duration.text}' ${op} ${lit.text}`, (row) => {
      const v = row[column];
      return v === null ? null : test(op, sign(addDuration(ms(v), duration, direction) - lit.value));
    }),
  );

const booleanColumn: fc.Arbitrary<Gen> = fc.constant(leaf('active', (row) => bool(row.active), 10));

const atom = fc.oneof(
  { arbitrary: comparison, weight: 6 },
  { arbitrary: nullTest, weight: 1 },
  { arbitrary: columnComparison, weight: 2 },
  { arbitrary: stringFunction, weight: 2 },
  { arbitrary: partFunction, weight: 2 },
  { arbitrary: dateFunction, weight: 1 },
  { arbitrary: ipComparison, weight: 1 },
  { arbitrary: subnet, weight: 2 },
  { arbitrary: shiftedColumn, weight: 2 },
  { arbitrary: booleanColumn, weight: 1 },
);

const and = (a: TV, b: TV): TV => (a === false || b === false ? false : a === null || b === null ? null : true);
const or = (a: TV, b: TV): TV => (a === true || b === true ? true : a === null || b === null ? null : false);
const not = (a: TV): TV => (a === null ? null : !a);

/** Parenthesises a child that binds looser than its parent, and sometimes one that does not. */
const wrap = (child: Gen, parentPrec: number, extra: boolean) => (child.prec < parentPrec || extra ? `(${child.text})` : child.text);

const { filter } = fc.letrec<{ filter: Gen }>((tie) => ({
  filter: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { arbitrary: atom, weight: 3 },
    {
      arbitrary: fc.tuple(tie('filter'), tie('filter'), fc.constantFrom<'and' | 'or'>('and', 'or'), fc.boolean(), fc.boolean()).map(([a, b, op, pa, pb]) => {
        const prec = op === 'and' ? 2 : 1;
        const combine = op === 'and' ? and : or;
        return { text: `${wrap(a, prec, pa)} ${op} ${wrap(b, prec, pb)}`, prec, eval: (row: Row) => combine(a.eval(row), b.eval(row)) };
      }),
      weight: 2,
    },
    {
      arbitrary: tie('filter').map((a) => ({ text: `not ${a.prec === 10 ? a.text : `(${a.text})`}`, prec: 6, eval: (row: Row) => not(a.eval(row)) })),
      weight: 1,
    },
  ),
}));

// ---- the property -------------------------------------------------------------------------

let instance: DuckDBInstance;
let utc: DuckDBConnection;
let nepal: DuckDBConnection;

beforeAll(async () => {
  ({ instance, connection: utc } = await createDatabase());
  nepal = await instance.connect();
  await nepal.run(`SET TimeZone = 'Asia/Kathmandu'`); // +05:45: the session zone must not matter
});
afterAll(() => {
  utc.closeSync();
  nepal.closeSync();
  instance.closeSync();
});

describe('compiled filters agree with an independent evaluator', () => {
  it('on random well-formed filters', async () => {
    await fc.assert(
      fc.asyncProperty(filter, async (generated) => {
        const expected = ROWS.filter((row) => generated.eval(row) === true).map((row) => row.id);
        const compiled = compileQuery({ filter: generated.text }, COLUMNS, NOW);
        expect(await idsOf(utc, compiled)).toEqual(expected);
        expect(await idsOf(nepal, compiled)).toEqual(expected);
      }),
      { numRuns: 700 },
    );
  });

  it('inside $apply filter(), before a groupby', async () => {
    await fc.assert(
      fc.asyncProperty(filter, async (generated) => {
        const expected = ROWS.filter((row) => generated.eval(row) === true).length;
        const compiled = compileQuery({ apply: `filter(${generated.text})/aggregate($count as n)` }, COLUMNS, NOW);
        const result = await utc.runAndReadAll(compiled.sql('data'), compiled.params.values as never);
        expect(Number(result.getRows()[0][0])).toBe(expected);
      }),
      { numRuns: 150 },
    );
  });
});
