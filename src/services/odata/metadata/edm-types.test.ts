import { describe, expect, it } from 'vitest';
import { edmType, lakeportType } from './edm-types.ts';

describe('edmType', () => {
  it.each([
    ['BOOLEAN', { type: 'Edm.Boolean' }],
    ['TINYINT', { type: 'Edm.SByte' }],
    ['SMALLINT', { type: 'Edm.Int16' }],
    ['INTEGER', { type: 'Edm.Int32' }],
    ['BIGINT', { type: 'Edm.Int64' }],
    ['UTINYINT', { type: 'Edm.Int16' }],
    ['USMALLINT', { type: 'Edm.Int32' }],
    ['UINTEGER', { type: 'Edm.Int64' }],
    ['UBIGINT', { type: 'Edm.Decimal', precision: 20, scale: 0 }],
    ['HUGEINT', { type: 'Edm.Decimal', precision: 39, scale: 0 }],
    ['FLOAT', { type: 'Edm.Single' }],
    ['DOUBLE', { type: 'Edm.Double' }],
    ['DECIMAL(18,2)', { type: 'Edm.Decimal', precision: 18, scale: 2 }],
    ['VARCHAR', { type: 'Edm.String' }],
    ['IPV4', { type: 'Edm.String', maxLength: 15 }],
    ['DATE', { type: 'Edm.Date' }],
    ['TIME', { type: 'Edm.TimeOfDay', precision: 6 }],
    ['TIMESTAMP', { type: 'Edm.DateTimeOffset', precision: 6 }],
    ['TIMESTAMP WITH TIME ZONE', { type: 'Edm.DateTimeOffset', precision: 6 }],
  ])('maps %s', (lakeport, edm) => {
    expect(edmType(lakeport)).toEqual(edm);
  });

  it('accepts the aliases and spellings core/engine/types normalises', () => {
    expect(edmType('int8')).toEqual({ type: 'Edm.Int64' });
    expect(edmType('timestamptz')).toEqual({ type: 'Edm.DateTimeOffset', precision: 6 });
    expect(edmType('numeric(10, 4)')).toEqual({ type: 'Edm.Decimal', precision: 10, scale: 4 });
    expect(edmType('DECIMAL')).toEqual({ type: 'Edm.Decimal', precision: 18, scale: 3 });
    expect(edmType('text')).toEqual({ type: 'Edm.String' });
  });

  it('delivers nested types as their JSON text and unknown types as their SQL text', () => {
    expect(edmType('INTEGER[]')).toEqual({ type: 'Edm.String', text: 'json' });
    expect(edmType('STRUCT(a INTEGER, b VARCHAR)')).toEqual({ type: 'Edm.String', text: 'json' });
    expect(edmType('MAP(VARCHAR, INTEGER)')).toEqual({ type: 'Edm.String', text: 'json' });
    expect(edmType('UUID')).toEqual({ type: 'Edm.String', text: 'cast' });
  });

  it('returns a fresh object each time', () => {
    const a = edmType('BIGINT');
    a.precision = 1;
    expect(edmType('BIGINT')).toEqual({ type: 'Edm.Int64' });
  });
});

describe('lakeportType', () => {
  it('reads the IPv4 label the catalog puts on a VARCHAR', () => {
    expect(lakeportType({ type: 'VARCHAR', logical_type: 'ipv4' })).toBe('IPV4');
    expect(lakeportType({ type: 'VARCHAR', logical_type: 'IPv4' })).toBe('IPV4');
    expect(lakeportType({ type: 'VARCHAR' })).toBe('VARCHAR');
  });

  it('normalises SQL spellings and keeps unknown types', () => {
    expect(lakeportType({ type: 'int' })).toBe('INTEGER');
    expect(lakeportType({ type: 'decimal(10,2)' })).toBe('DECIMAL(10,2)');
    expect(lakeportType({ type: ' uuid ' })).toBe('UUID');
  });
});
