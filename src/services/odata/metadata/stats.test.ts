import { describe, expect, it } from 'vitest';
import type { ColumnStats } from '../../../core/catalog/index.ts';
import { columnStatistics, coveringCidr } from './stats.ts';
import { file } from './test-data.ts';

/** Files with stats for one column `c`: [rows, stats] pairs. */
const files = (...specs: [number, ColumnStats | undefined][]) =>
  specs.map(([rows, stats], i) => file(rows, stats ? { c: stats } : {}, { file_id: `file_${i}` }));
const s = (min: ColumnStats['min'], max: ColumnStats['max'], null_count = 0, distinct_count?: number): ColumnStats =>
  distinct_count === undefined ? { min, max, null_count } : { min, max, null_count, distinct_count };

describe('columnStatistics', () => {
  it('takes the min of the minimums, the max of the maximums and the sum of the null counts', () => {
    const stats = columnStatistics('c', 'BIGINT', files([10, s('9', '100', 1)], [10, s('10', '1000', 2)], [5, s(-3, 7, 0)]));
    expect(stats).toEqual({ min: '-3', max: '1000', nullCount: 3, distinctCount: undefined, cidr: undefined });
  });

  it('compares integers beyond 2^53 exactly', () => {
    const big = files([1, s('9007199254740993', '9007199254740993')], [1, s('9007199254740992', '18446744073709551615')]);
    expect(columnStatistics('c', 'UBIGINT', big)).toMatchObject({
      min: '9007199254740992',
      max: '18446744073709551615',
    });
    expect(columnStatistics('c', 'INTEGER', big)?.max).toEqual('18446744073709551615');
  });

  it('compares decimals by value, not as text', () => {
    const stats = columnStatistics('c', 'DECIMAL(10,3)', files([2, s('-1.5', '9.25')], [2, s('-10.125', '10.000')], [2, s('-0.000', '010.5')]));
    expect(stats?.min).toEqual('-10.125');
    expect(stats?.max).toEqual('10.5');
  });

  it('reads floats, including infinities', () => {
    expect(columnStatistics('c', 'DOUBLE', files([2, s('-inf', '2.5')], [2, s('1e3', 'Infinity')]))).toMatchObject({
      min: '-INF',
      max: 'INF',
    });
    expect(columnStatistics('c', 'FLOAT', files([2, s(0.5, 12)]))).toMatchObject({ min: '0.5', max: '12' });
  });

  it('normalises timestamps to UTC ISO 8601 and compares them as instants', () => {
    const stats = columnStatistics(
      'c',
      'TIMESTAMP WITH TIME ZONE',
      files([2, s('2024-01-01 10:00:00+02', '2024-01-01 23:30:00.250-01:30')], [2, s('2024-01-01T09:00:00Z', '2024-01-02 00:00:00')]),
    );
    expect(stats?.min).toEqual('2024-01-01T08:00:00Z');
    expect(stats?.max).toEqual('2024-01-02T01:00:00.25Z');
    expect(columnStatistics('c', 'TIMESTAMP', files([1, s('0050-03-01 00:00:00', '0050-03-01 00:00:00')]))?.min).toEqual('0050-03-01T00:00:00Z');
  });

  it('reads dates and times', () => {
    expect(columnStatistics('c', 'DATE', files([2, s('2024-03-01', '2024-03-09')], [2, s('2023-12-31', '2024-01-05')]))).toMatchObject({
      min: '2023-12-31',
      max: '2024-03-09',
    });
    expect(columnStatistics('c', 'TIME', files([2, s('08:00:00', '17:30:00.5')]))?.max).toEqual('17:30:00.5');
  });

  it('compares text by bytes, as DuckDB does', () => {
    const stats = columnStatistics('c', 'VARCHAR', files([2, s('b', 'z')], [2, s('B', '\u{1F600}')], [2, s('a', '\uFFFD')]));
    expect(stats?.min).toEqual('B');
    expect(stats?.max).toEqual('\u{1F600}');
  });

  it('counts distinct values only when exact', () => {
    expect(columnStatistics('c', 'BIGINT', files([10, s('1', '5', 0, 4)]))?.distinctCount).toBe(4);
    expect(columnStatistics('c', 'BIGINT', files([10, s('1', '5', 0, 4)], [10, s('1', '5', 0, 4)]))?.distinctCount).toBeUndefined();
    expect(columnStatistics('c', 'BIGINT', files([10, s('3', '3')], [10, s('3', '3')]))?.distinctCount).toBe(1);
    expect(columnStatistics('c', 'BIGINT', files([10, s(null, null, 10)], [4, s(null, null, 4)]))).toMatchObject({ distinctCount: 0, nullCount: 14 });
    expect(columnStatistics('c', 'BOOLEAN', files([3, s(false, false)], [3, s('true', 'true')]))).toMatchObject({
      min: 'false',
      max: 'true',
      distinctCount: 2,
    });
  });

  it('omits what the files cannot prove', () => {
    expect(columnStatistics('c', 'BIGINT', [])).toBeUndefined();
    // A file without statistics for the column: nothing is certain.
    expect(columnStatistics('c', 'BIGINT', files([10, s('1', '2')], [10, undefined]))).toBeUndefined();
    // Non-null values without bounds: the extremes are unknown, the null count is not.
    const unbounded = columnStatistics('c', 'VARCHAR', files([10, s('a', 'b')], [10, s(null, null, 3)]));
    expect(unbounded).toMatchObject({ min: undefined, max: undefined, nullCount: 3 });
    // Values the type cannot read, like DuckDB's infinite dates.
    expect(columnStatistics('c', 'DATE', files([10, s('-infinity', '2024-01-01')]))).toMatchObject({ min: undefined, max: undefined, nullCount: 0 });
    // Nested types show no extremes.
    expect(columnStatistics('c', 'INTEGER[]', files([10, s('[1]', '[2]')]))).toMatchObject({ min: undefined, max: undefined });
  });

  it('derives the CIDR block of an IPv4 column', () => {
    const stats = columnStatistics('c', 'IPV4', files([5, s('192.168.1.10', '192.168.1.9')], [5, s('192.168.1.100', '192.168.1.200', 1)]));
    expect(stats).toMatchObject({ min: '192.168.1.10', max: '192.168.1.9', cidr: '192.168.1.0/24' });
    expect(columnStatistics('c', 'VARCHAR', files([5, s('10.0.0.1', '10.0.0.2')]))?.cidr).toBeUndefined();
  });
});

describe('coveringCidr', () => {
  it.each([
    ['10.1.2.3', '10.1.2.3', '10.1.2.3/32'],
    ['10.1.2.3', '10.1.2.30', '10.1.2.0/24'],
    ['192.168.1.5', '192.168.10.1', '192.168.0.0/16'],
    ['10.0.0.1', '10.200.0.1', '10.0.0.0/8'],
    ['10.0.0.1', '11.0.0.1', undefined],
    ['1.2.3.4', '100.2.3.4', undefined],
    ['not an ip', '10.0.0.1', undefined],
  ])('%s .. %s → %s', (min, max, cidr) => {
    expect(coveringCidr(min, max)).toBe(cidr);
  });

  it('holds every address that sorts between the bounds as text', () => {
    const inBlock = (ip: string, cidr: string) => {
      const [base, bits] = cidr.split('/');
      const n = (a: string) => a.split('.').reduce((v, o) => v * 256 + Number(o), 0);
      const size = 2 ** (32 - Number(bits));
      return Math.floor(n(ip) / size) === Math.floor(n(base) / size);
    };
    const addresses = ['10.0.0.1', '10.0.0.10', '10.0.0.100', '10.0.0.2', '10.0.0.255', '10.0.1.0', '10.0.10.3', '10.0.2.9', '10.1.0.0'];
    for (const min of addresses) {
      for (const max of addresses.filter((a) => a >= min)) {
        const cidr = coveringCidr(min, max);
        if (cidr) for (const ip of addresses.filter((a) => a >= min && a <= max)) expect(inBlock(ip, cidr)).toBe(true);
      }
    }
  });
});
