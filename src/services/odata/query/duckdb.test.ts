import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DuckDBConnection, DuckDBInstance, DuckDBValue } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ODataColumn } from '../model.ts';
import { compileQuery, type ODataQueryOptions } from './query.ts';
import { COLUMNS, NOW, countOf, createDatabase, idsOf, rowsOf } from './test-fixture.ts';

let instance: DuckDBInstance;
let db: DuckDBConnection;

beforeAll(async () => {
  ({ instance, connection: db } = await createDatabase());
});
afterAll(() => {
  db.closeSync();
  instance.closeSync();
});

const compile = (options: ODataQueryOptions, columns: ODataColumn[] = COLUMNS, now = NOW) => compileQuery(options, columns, now);
const ids = (filter: string, now = NOW) => idsOf(db, compile({ filter }, COLUMNS, now));
const rows = (options: ODataQueryOptions, totalOrder = false) => rowsOf(db, compile(options), { totalOrder });

describe('$filter on DuckDB', () => {
  it.each([
    ['qty gt 5', [6, 8, 9, 11, 5].sort((a, b) => a - b)],
    ['qty eq 5 or qty eq -3', [1, 2, 7]],
    ['qty ge 5 and qty le 7', [1, 6, 7, 9]],
    ['tiny lt 0', [2]],
    ['tiny le 127 and tiny ge -128', [1, 2, 4]],
    ['tiny gt 300', []],
    ['big eq 9007199254740993', [1]],
    ['big eq 9007199254740992', []],
    ['big gt 4611686018427387903', [5]],
    ['big lt 4611686018427387904 and big gt 9007199254740992', [1]],
    ['ubig eq 18446744073709551615', [1]],
    ['ubig gt -1', [1, 2, 4]],
    ['huge eq 170141183460469231731687303715884105727', [1]],
    ['huge lt 0', [2]],
    ['huge gt 1.5', [1]],
    ['amount eq 12.5', [1, 6]],
    ['amount eq 12.50', [1, 6]],
    ['amount gt 12.505', [5, 8, 11]],
    ['amount lt 0', [2]],
    ['amount eq -0.01', [2]],
    ['amount gt 100000000000000000000000000000', []],
    ['amount lt 100000000000000000000000000000', [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12]],
    ['amount gt 1e2', [5]],
    ['amount ge qty', [1, 2, 4, 5, 6, 8, 9, 10, 11]],
    ['price eq 1.5', [1, 12]],
    ['price gt 1e9', [5]],
    ['price lt amount', [1, 2, 6, 8, 11, 12]], // 10: 1.1 (DOUBLE) equals 1.10
    ['f eq 0.5', [1]],
    ['f lt 0', [2]],
    ['price eq 1.1', [10]],
    ["name eq 'Alice'", [1, 11]],
    ["name eq 'O''Brien'", [5]],
    ["name eq ''", [4]],
    ["name gt 'a'", [2, 7, 10, 12]],
    ["name lt 'B'", [1, 4, 6, 8, 11]],
    ['name eq region', []],
    ['active', [1, 4, 6, 10, 12]],
    ['active eq true', [1, 4, 6, 10, 12]],
    ['active eq false', [2, 5, 8]],
    ['not active', [2, 5, 8]],
    ['active ne true', [2, 5, 8]],
    ['active gt false', [1, 4, 6, 10, 12]],
    ['true', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]],
    ['false', []],
    ['d eq 2024-02-29', [2]],
    ['d lt 2000-01-01', [9]],
    ['d ge 2024-03-01 and d le 2024-04-30', [4, 6, 10]],
    ['ts eq 2024-02-29T12:00:00Z', [2]],
    ['ts eq 2024-02-29T13:30:00+01:30', [2]],
    ['ts eq 2024-02-29T07:00:00-05:00', [2]],
    ['ts lt 2024-02-29T12:00:00Z and ts ge 2024-02-29T11:59:59.999Z', [4]],
    ['ts ge 2024-03-31', [1, 7, 9]],
    ['tstz eq 2024-01-01', [5]],
    ['tstz eq 2024-03-30T12:00:00.001Z', [6]],
    ['tstz gt 2024-03-30T12:00:00Z and tstz lt 2024-03-30T12:00:00.002Z', [6]],
    ['tstz eq ts', [1, 2, 4, 8, 9, 10, 12]],
    ['tstz gt ts', [5, 6, 11]],
    ['t eq 10:00:00', [1, 12]],
    ['t eq 10:00', [1, 12]],
    ['t gt 12:30:15', [2, 5]],
    ['t eq 12:30:15.5', [5]],
    ['t lt 06:15', [4]],
  ])('%s', async (filter, expected) => {
    expect(await ids(filter)).toEqual(expected);
  });

  it('compiles eq null / ne null to IS NULL / IS NOT NULL', async () => {
    const compiled = compile({ filter: 'qty eq null' });
    expect(compiled.sql('data')).toContain('("qty" IS NULL)');
    expect(compiled.params.values).toEqual([]);
    expect(await ids('qty eq null')).toEqual([3, 12]);
    expect(await ids('null eq qty')).toEqual([3, 12]);
    expect(await ids('ip ne null and ts ne null and active eq null')).toEqual([7, 9, 11]);
    expect(await ids('null eq null')).toHaveLength(12);
  });

  it('uses SQL three-valued logic: a comparison with NULL is unknown, and unknown rows are not returned', async () => {
    expect(await ids('qty ne 5')).toEqual([2, 4, 5, 6, 8, 9, 10, 11]); // 3 and 12 (qty NULL) are neither = nor <> 5
    expect(await ids('not (qty eq 5)')).toEqual([2, 4, 5, 6, 8, 9, 10, 11]);
    expect(await ids('not (active eq true)')).toEqual([2, 5, 8]);
    expect(await ids('active or qty eq 12')).toEqual([1, 4, 6, 8, 10, 11, 12]); // NULL or TRUE is TRUE
    expect(await ids('not (active and qty eq 12)')).toEqual([1, 2, 4, 5, 6, 7, 8, 9, 10]); // NOT (NULL AND FALSE) is TRUE
    expect(await ids('qty eq null or not (qty eq 5)')).toEqual([2, 3, 4, 5, 6, 8, 9, 10, 11, 12]);
  });

  it('binds every value as a parameter, never in the SQL text', () => {
    const compiled = compile({ filter: "name eq 'x''); DROP TABLE data; --' or amount gt 1.25 or d eq 2024-01-01 or ts gt now()" });
    const sql = compiled.sql('data');
    expect(sql).not.toContain('DROP');
    expect(sql).not.toContain('1.25');
    expect(sql).not.toContain('2024');
    expect(compiled.params.values).toEqual(["x'); DROP TABLE data; --", '1.25', '2024-01-01', '2024-03-31 12:00:00']);
  });

  it('quotes identifiers', async () => {
    const columns: ODataColumn[] = [{ name: 'Weird_Ñame', type: 'INTEGER', nullable: false }];
    const compiled = compile({ filter: 'Weird_Ñame eq 1', select: 'Weird_Ñame', orderby: 'Weird_Ñame desc' }, columns);
    expect(compiled.sql('t')).toBe('SELECT "Weird_Ñame" FROM t AS _source WHERE ("Weird_Ñame" = CAST($1 AS BIGINT)) ORDER BY "Weird_Ñame" DESC NULLS LAST');
  });

  it('matches strings with contains, startswith and endswith, case-sensitively', async () => {
    expect(await ids("contains(name, 'lic')")).toEqual([1, 7, 11]);
    expect(await ids("startswith(name, 'Al')")).toEqual([1, 6, 11]);
    expect(await ids("endswith(name, 'E')")).toEqual([8]);
    expect(await ids("contains(name, '''')")).toEqual([5]);
    expect(await ids("startswith(name, '')")).toEqual([1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(await ids("contains('Alice and Bob', name)")).toEqual([1, 4, 6, 9, 11]);
    expect(await ids("contains(name, region)")).toEqual([]);
    expect(await ids("contains(name, 'lic') eq false")).toEqual([2, 4, 5, 6, 8, 9, 10, 12]);
    expect(await ids("not contains(name, 'lic')")).toEqual([2, 4, 5, 6, 8, 9, 10, 12]);
    expect(await ids("startswith(ip, '10.')")).toEqual([1, 2, 10, 12]);
  });

  it('tests IPv4 columns with in_subnet as integer ranges', async () => {
    expect(await ids("in_subnet(ip, '0.0.0.0/0')")).toEqual([1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(await ids("in_subnet(ip, '10.0.0.0/8')")).toEqual([1, 2, 10, 12]);
    expect(await ids("in_subnet(ip, '10.1.2.3/8')")).toEqual([1, 2, 10, 12]); // host bits are ignored
    expect(await ids("in_subnet(ip, '10.0.0.1/32')")).toEqual([1]);
    expect(await ids("in_subnet(ip, '10.0.0.0/31')")).toEqual([1, 10]);
    expect(await ids("in_subnet(ip, '255.255.255.255/32')")).toEqual([8]);
    expect(await ids("in_subnet(ip, '0.0.0.0/32')")).toEqual([7]);
    expect(await ids("in_subnet(ip, '192.168.1.0/24')")).toEqual([5, 6]);
    expect(await ids("in_subnet(ip, '172.16.0.0/12')")).toEqual([11]);
    expect(await ids("not in_subnet(ip, '10.0.0.0/8')")).toEqual([4, 5, 6, 7, 8, 9, 11]);
  });

  it('compares IPv4 addresses by value: equality as text, order as numbers', async () => {
    expect(await ids("ip eq '10.0.0.1'")).toEqual([1]);
    expect(await ids("ip ne '10.0.0.1'")).toEqual([2, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(await ids("ip lt '10.0.0.0'")).toEqual([7, 9]); // '9.255.255.255' < '10.0.0.0' as addresses, not as text
    expect(await ids("ip gt '192.168.1.9'")).toEqual([5, 8]); // 192.168.1.10 > 192.168.1.9
    expect(await ids("'192.168.1.9' le ip")).toEqual([5, 6, 8]);
    expect(await ids('ip eq ip')).toEqual([1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it('extracts date and time parts in UTC', async () => {
    expect(await ids('year(d) eq 2024')).toEqual([1, 2, 4, 6, 10, 11, 12]);
    expect(await ids('month(d) eq 2 and day(d) eq 29')).toEqual([2, 8]);
    expect(await ids('year(ts) lt 2024')).toEqual([5, 12]);
    expect(await ids('year(tstz) lt 2024')).toEqual([12]); // row 5 is 2024-01-01T00:00Z
    expect(await ids('hour(tstz) eq 22')).toEqual([11]);
    expect(await ids('minute(ts) eq 59 and second(ts) eq 59')).toEqual([4, 5, 11]);
    expect(await ids('hour(t) eq 12 and minute(t) eq 30 and second(t) eq 15')).toEqual([5]);
    expect(await ids('date(tstz) eq 2024-03-30')).toEqual([6, 11]);
    expect(await ids('date(ts) eq d')).toEqual([2, 5, 7]);
    expect(await ids('year(now()) eq 2024 and month(now()) eq 3 and day(now()) eq 31 and hour(now()) eq 12')).toHaveLength(12);
    expect(await ids('date(now()) eq 2024-03-31')).toHaveLength(12);
    expect(await ids('year(2024-02-29) eq 2024')).toHaveLength(12);
    expect(await ids('date(now() sub duration\'P1D\') eq 2024-03-30')).toHaveLength(12);
  });

  it('gives the same answers whatever the session time zone', async () => {
    const filters = [
      'year(tstz) lt 2024',
      'date(tstz) eq 2024-01-01',
      'hour(tstz) eq 22',
      "tstz add duration'P1M' ge 2024-03-01T00:00:00Z",
      'tstz eq ts',
      'tstz gt ts',
      'ts ge 2024-03-31',
      "tstz ge now() sub duration'P1D'",
      'date(tstz) eq date(ts)',
    ];
    const inUtc = await Promise.all(filters.map((f) => ids(f)));
    for (const zone of ['America/New_York', 'Asia/Kolkata', 'Pacific/Kiritimati']) {
      const connection = await instance.connect();
      try {
        await connection.run(`SET TimeZone = '${zone}'`);
        for (const [i, filter] of filters.entries()) expect([zone, filter, await idsOf(connection, compile({ filter }))]).toEqual([zone, filter, inUtc[i]]);
      } finally {
        connection.closeSync();
      }
    }
    expect(inUtc[1]).toEqual([5]);
  });
});

describe('rolling windows with now() and durations', () => {
  it.each([
    ["ts ge now() sub duration'P1M'", [1, 2, 6, 7, 9, 11]], // 2024-02-29T12:00 (Mar 31 − 1 month, clamped)
    ["ts ge now() sub duration'P1D'", [1, 6, 7, 9]], // 2024-03-30T12:00
    ["ts ge now() sub duration'PT24H'", [1, 6, 7, 9]],
    ["ts ge now() sub duration'PT1H'", [1, 7, 9]], // 11:00
    ["ts gt now() sub duration'-PT1H'", [7]], // 13:00
    ["ts ge now() add duration'-PT30M'", [1, 7, 9]],
    ["ts ge now() sub duration'PT30M1S'", [1, 7, 9]],
    ["ts ge now() sub duration'PT0.001S'", [7, 9]],
    ["ts ge now() sub duration'P1Y1M'", [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12]], // 2023-02-28T12:00
    ["ts lt now() sub duration'P1Y'", []], // 2023-03-31T12:00, not before row 12
    ["ts le now() sub duration'P1Y'", [12]],
    ["ts ge now() sub duration'P2M' and ts lt now() sub duration'P1M'", [4, 10]], // [Jan 31 12:00, Feb 29 12:00)
    ["ts gt now() add duration'P10M27D'", [7]], // 2025-01-31T12:00 + 27 days = 2025-02-27T12:00
    ["ts gt now() add duration'P10M28D'", []], // 2025-02-28T12:00
    ["tstz ge now() sub duration'P1D'", [1, 6, 7, 9, 11]],
    ["tstz ge now() sub duration'P1DT0.001S' and tstz lt now() sub duration'P1D'", []],
  ])('%s', async (filter, expected) => {
    expect(await ids(filter)).toEqual(expected);
  });

  it('binds now() ± duration as one instant computed once', () => {
    const compiled = compile({ filter: "ts ge now() sub duration'P1M' and tstz lt now()" });
    expect(compiled.params.values).toEqual(['2024-02-29 12:00:00', '2024-03-31 12:00:00+00']);
  });

  it('is calendar-aware for months and years, fixed for days and times', async () => {
    const at = (iso: string) => new Date(iso);
    const threshold = (filter: string, now: Date) => compile({ filter }, COLUMNS, now).params.values[0];
    expect(threshold("ts ge now() add duration'P1M'", at('2024-01-31T10:00:00Z'))).toBe('2024-02-29 10:00:00');
    expect(threshold("ts ge now() add duration'P1M'", at('2023-01-31T10:00:00Z'))).toBe('2023-02-28 10:00:00');
    expect(threshold("ts ge now() add duration'P1Y'", at('2024-02-29T00:00:00Z'))).toBe('2025-02-28 00:00:00');
    expect(threshold("ts ge now() sub duration'P1M'", at('2024-05-31T23:59:59.999Z'))).toBe('2024-04-30 23:59:59.999000');
    expect(threshold("ts ge now() add duration'P1M1D'", at('2024-01-31T00:00:00Z'))).toBe('2024-03-01 00:00:00');
    expect(threshold("ts ge now() add duration'P1D'", at('2024-03-09T12:00:00Z'))).toBe('2024-03-10 12:00:00'); // across a US DST change: still 24 h
    expect(threshold("ts ge now() add duration'PT36H'", at('2024-12-31T00:00:00Z'))).toBe('2025-01-01 12:00:00');
    expect(threshold("ts ge now() sub duration'P12M'", at('2024-02-29T00:00:00Z'))).toBe('2023-02-28 00:00:00');
  });

  it('shifts datetime columns by durations in SQL, with the same calendar rules', async () => {
    expect(await ids("ts add duration'P1M' eq 2024-02-29T10:00:00Z")).toEqual([8]); // Jan 31 + 1 month
    expect(await ids("ts add duration'P1Y' eq 2025-02-28T12:00:00Z")).toEqual([2, 10]); // Feb 29 and Feb 28 + 1 year
    expect(await ids("ts sub duration'P1M' eq 2024-02-29T12:00:00Z")).toEqual([6, 9]); // Mar 30 and Mar 31 − 1 month
    expect(await ids("ts add duration'P1D' eq 2024-03-01T12:00:00Z")).toEqual([2]);
    expect(await ids("tstz add duration'PT1H' eq 2024-03-31T12:30:00Z")).toEqual([1]);
    expect(await ids("tstz sub duration'-P1M' sub duration'PT1H' eq 2024-04-30T11:00:00Z")).toEqual([9]);
    expect(await ids("ts add duration'P1M' ge now()")).toEqual([1, 6, 7, 9, 11]);
    expect(await ids("tstz add duration'P1D' gt ts add duration'P1D'")).toEqual([5, 6, 11]);
    // A UTC calendar, whatever the session zone: the same instant in New York.
    const connection = await instance.connect();
    try {
      await connection.run(`SET TimeZone = 'America/New_York'`);
      const compiled = compile({ filter: "tstz add duration'P1M' eq 2024-02-29T10:00:00Z" });
      expect(await idsOf(connection, compiled)).toEqual([8]);
    } finally {
      connection.closeSync();
    }
  });

  it('adds fixed 24-hour days to TIMESTAMPTZ across a DST change', async () => {
    const columns: ODataColumn[] = [
      { name: 'id', type: 'INTEGER', nullable: false },
      { name: 'x', type: 'TIMESTAMP WITH TIME ZONE', nullable: false },
    ];
    const source = "SELECT * FROM (VALUES (1, TIMESTAMPTZ '2024-03-09 12:00:00+00'), (2, TIMESTAMPTZ '2024-11-02 12:00:00+00')) t(id, x)";
    const connection = await instance.connect();
    try {
      await connection.run(`SET TimeZone = 'America/New_York'`);
      const compiled = compileQuery({ filter: "x add duration'P1D' eq 2024-03-10T12:00:00Z or x add duration'P1D' eq 2024-11-03T12:00:00Z" }, columns, NOW);
      const result = await connection.runAndReadAll(compiled.sql(source), compiled.params.values as DuckDBValue[]);
      expect(result.getRowObjectsJson().map((r) => r.id)).toEqual([1, 2]);
    } finally {
      connection.closeSync();
    }
  });
});

describe('$select and $orderby', () => {
  it('selects the named columns in order, once each; * means all', async () => {
    expect(compile({ select: 'name,qty,name' }).columns.map((c) => c.name)).toEqual(['name', 'qty']);
    expect(compile({ select: 'qty, *' }).columns).toEqual(COLUMNS);
    const result = await rows({ select: 'name, id', filter: 'id eq 5' });
    expect(result).toEqual([{ name: "O'Brien", id: 5 }]);
  });

  it('orders ascending by default, nulls first ascending and last descending', async () => {
    const ordered = async (orderby: string, select = 'id') => (await rows({ orderby, select })).map((r) => r.id);
    expect(await ordered('qty')).toEqual([3, 12, 2, 4, 10, 1, 7, 6, 9, 8, 11, 5]);
    expect(await ordered('qty desc, id desc')).toEqual([5, 11, 8, 9, 6, 7, 1, 10, 4, 2, 12, 3]);
    expect(await ordered('qty asc, id desc')).toEqual([12, 3, 2, 4, 10, 7, 1, 9, 6, 11, 8, 5]);
    expect(await ordered('ip')).toEqual([3, 7, 9, 10, 1, 12, 2, 4, 11, 6, 5, 8]); // as addresses, not as text
    expect(compile({ orderby: 'qty desc, name' }).orderBy).toEqual([
      { column: 'qty', direction: 'desc' },
      { column: 'name', direction: 'asc' },
    ]);
  });

  it('orders by columns that $select leaves out', async () => {
    const result = await rows({ select: 'name', orderby: 'amount desc, id', filter: 'amount gt 12' });
    expect(result).toEqual([{ name: "O'Brien" }, { name: 'ALICE' }, { name: 'Alice' }, { name: 'Alice' }, { name: 'Al' }, { name: 'eve' }]);
  });

  it('makes the order total on request, with every other column as a tiebreak', async () => {
    const compiled = compile({ orderby: 'region desc', select: 'region,qty' });
    expect(compiled.sql('data')).toBe('SELECT "region", "qty" FROM data AS _source ORDER BY "region" DESC NULLS LAST');
    const total = compiled.sql('data', { totalOrder: true });
    expect(total).toMatch(/^SELECT "region", "qty" FROM data AS _source ORDER BY "region" DESC NULLS LAST, "id" ASC NULLS FIRST, "qty" ASC NULLS FIRST, .*"ip"/);
    const first = await rows({ orderby: 'region desc', select: 'id' }, true);
    expect(first.map((r) => r.id)).toEqual([2, 6, 9, 12, 1, 4, 8, 11, 5, 10, 3, 7]);
    expect(compile({}).sql('data', { totalOrder: true })).toContain('ORDER BY "id" ASC NULLS FIRST');
  });
});

describe('$apply on DuckDB', () => {
  it('groups and aggregates with sum, average, min, max and $count', async () => {
    const result = await rows({ apply: 'groupby((region), aggregate(amount with sum as total, amount with average as mean, qty with min as low, qty with max as high, $count as n))', orderby: 'region' });
    expect(result).toEqual([
      { region: null, total: '3.33', mean: 3.33, low: 5, high: 5, n: '2' },
      { region: 'APAC', total: '100001.09', mean: 50000.545, low: 1, high: 100, n: '2' },
      { region: 'EU', total: '125.01', mean: 31.2525, low: 0, high: 12, n: '4' },
      { region: 'US', total: '31.98', mean: 7.995, low: -3, high: 7, n: '4' },
    ]);
  });

  it('declares the output types DuckDB produces', async () => {
    const compiled = compile({ apply: 'groupby((region, d), aggregate(qty with sum as s1, big with sum as s2, amount with sum as s3, price with sum as s4, f with sum as s5, qty with average as a1, amount with average as a2, ip with max as m1, tstz with min as m2, $count as n))' });
    expect(compiled.columns).toEqual([
      { name: 'region', type: 'VARCHAR', nullable: true },
      { name: 'd', type: 'DATE', nullable: true },
      { name: 's1', type: 'HUGEINT', nullable: true },
      { name: 's2', type: 'HUGEINT', nullable: true },
      { name: 's3', type: 'DECIMAL(38,2)', nullable: true },
      { name: 's4', type: 'DOUBLE', nullable: true },
      { name: 's5', type: 'DOUBLE', nullable: true },
      { name: 'a1', type: 'DOUBLE', nullable: true },
      { name: 'a2', type: 'DOUBLE', nullable: true },
      { name: 'm1', type: 'IPV4', nullable: true },
      { name: 'm2', type: 'TIMESTAMP WITH TIME ZONE', nullable: true },
      { name: 'n', type: 'BIGINT', nullable: false },
    ]);
    const described = await db.runAndReadAll(`DESCRIBE ${compiled.sql('data')}`, compiled.params.values as DuckDBValue[]);
    const types = described.getRowObjectsJson().map((r) => r.column_type);
    expect(types).toEqual(compiled.columns.map((c) => (c.type === 'IPV4' ? 'VARCHAR' : c.type)));
    // Non-null columns stay non-null in groups; a whole-input aggregate may be NULL (no rows).
    expect(compile({ apply: 'groupby((id), aggregate(id with max as m))' }).columns[1].nullable).toBe(false);
    expect(compile({ apply: 'aggregate(id with max as m)' }).columns[0].nullable).toBe(true);
  });

  it('orders IPv4 addresses as addresses in min and max', async () => {
    const result = await rows({ apply: "filter(in_subnet(ip, '0.0.0.0/1'))/aggregate(ip with min as low, ip with max as high)" });
    expect(result).toEqual([{ low: '0.0.0.0', high: '11.0.0.0' }]);
  });

  it('deduplicates with a groupby that has no aggregate', async () => {
    const compiled = compile({ apply: 'groupby((region, active))', orderby: 'region, active' });
    expect(compiled.sql('data')).toContain('SELECT DISTINCT "region", "active"');
    const result = await rowsOf(db, compiled);
    expect(result).toEqual([
      { region: null, active: null },
      { region: 'APAC', active: false },
      { region: 'APAC', active: true },
      { region: 'EU', active: null },
      { region: 'EU', active: false },
      { region: 'EU', active: true },
      { region: 'US', active: null },
      { region: 'US', active: false },
      { region: 'US', active: true },
    ]);
    expect(await countOf(db, compiled)).toBe(9);
  });

  it('chains transformations, each seeing the columns of the one before', async () => {
    const compiled = compile({
      apply: "filter(amount gt 5)/groupby((region),aggregate(amount with sum as total, $count as n))/filter(n ge 2)/groupby((n),aggregate(total with max as best))",
      orderby: 'n',
    });
    expect(compiled.columns.map((c) => `${c.name}:${c.type}`)).toEqual(['n:BIGINT', 'best:DECIMAL(38,2)']);
    expect(await rowsOf(db, compiled)).toEqual([{ n: '3', best: '125.01' }]);
  });

  it('applies $filter, $orderby and $select after $apply', async () => {
    const compiled = compile({
      apply: 'groupby((region),aggregate(qty with sum as total, $count as n))',
      filter: 'total gt 10 and region ne null',
      orderby: 'total desc',
      select: 'region',
    });
    expect(compiled.columns).toEqual([{ name: 'region', type: 'VARCHAR', nullable: true }]);
    expect(await rowsOf(db, compiled)).toEqual([{ region: 'APAC' }, { region: 'EU' }, { region: 'US' }]);
    expect(await countOf(db, compiled)).toBe(3);
  });

  it('aggregates the whole input with a bare aggregate, also when it is empty', async () => {
    expect(await rows({ apply: 'aggregate($count as n, amount with sum as total, price with average as mean)' })).toEqual([{ n: '12', total: '100161.41', mean: (1e10 + 15.85) / 9 }]);
    expect(await rows({ apply: 'filter(false)/aggregate($count as n, amount with sum as total)' })).toEqual([{ n: '0', total: null }]);
  });

  it('compiles rolling windows and functions inside filter()', async () => {
    const result = await rows({ apply: "filter(ts ge now() sub duration'P1M' and in_subnet(ip, '10.0.0.0/8'))/groupby((ip))" });
    expect(result.map((r) => r.ip).sort()).toEqual(['10.0.0.1', '10.255.255.255']);
  });
});

describe('the SQL a route runs', () => {
  it('counts what sql() returns, with the same parameters', async () => {
    for (const options of [
      {},
      { filter: 'qty gt 5' },
      { filter: "name eq 'Alice' or ts ge now() sub duration'P1D'", select: 'id', orderby: 'id desc' },
      { apply: "filter(amount gt 1)/groupby((region),aggregate($count as n))", filter: 'n gt 1' },
      { apply: 'aggregate($count as n)' },
    ] satisfies ODataQueryOptions[]) {
      const compiled = compile(options);
      expect(await countOf(db, compiled)).toBe((await rowsOf(db, compiled)).length);
    }
  });

  it('reads from a table name, a bare SELECT or read_parquet', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'odata-query-'));
    try {
      const file = path.join(dir, 'data.parquet');
      await db.run(`COPY data TO '${file}' (FORMAT parquet)`);
      const compiled = compile({ filter: "qty gt 5 and ts ge now() sub duration'P1M'", select: 'id', orderby: 'id' });
      for (const source of ['data', 'SELECT * FROM data', '  select id, qty, ts from data', `read_parquet(['${file}'])`, '(SELECT * FROM data)']) {
        const result = await db.runAndReadAll(compiled.sql(source), compiled.params.values as DuckDBValue[]);
        expect(result.getRowObjectsJson()).toEqual([{ id: 6 }, { id: 9 }, { id: 11 }]);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('accepts LIMIT and OFFSET appended to sql()', async () => {
    const compiled = compile({ orderby: 'qty desc', select: 'id' });
    const result = await db.runAndReadAll(`${compiled.sql('data', { totalOrder: true })} LIMIT 3 OFFSET 2`, compiled.params.values as DuckDBValue[]);
    expect(result.getRowObjectsJson()).toEqual([{ id: 11 }, { id: 6 }, { id: 9 }]); // 5, 8, 11 (12s by id), 6, 9 (7s), 1, 7, …
  });
});
