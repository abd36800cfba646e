import { describe, expect, it } from 'vitest';
import { boundBytes } from './bounds.ts';
import { icebergSchema, parseDuckType } from './schema.ts';

const col = (name: string, type: string, extra: Record<string, unknown> = {}) => ({ name, type, nullable: true, ...extra });

describe('the Iceberg schema of a dataset', () => {
  it('maps each DuckDB type to what a reader reads from the Parquet column DuckDB writes', () => {
    const types = [
      'BOOLEAN', 'TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'HUGEINT', 'FLOAT', 'DOUBLE', 'DECIMAL(38,10)', 'NUMERIC',
      'VARCHAR', 'TEXT', 'JSON', 'BLOB', 'UUID', 'DATE', 'TIME', 'TIMESTAMP', 'TIMESTAMP_MS', 'TIMESTAMPTZ', 'TIMESTAMP WITH TIME ZONE', "ENUM('a', 'b')",
    ];
    const schema = icebergSchema(types.map((t, i) => col(`c${i}`, t)), 3);
    expect(schema.json.fields.map((f) => f.type)).toEqual([
      'boolean', 'int', 'int', 'int', 'long', 'int', 'int', 'long', 'double', 'float', 'double', 'decimal(38,10)', 'decimal(18,3)',
      'string', 'string', 'string', 'binary', 'uuid', 'date', 'time', 'timestamp', 'timestamp', 'timestamptz', 'timestamptz', 'string',
    ]);
    expect(schema.json['schema-id']).toBe(3);
    expect(schema.omitted).toEqual([]);
  });

  it('leaves out what has no Iceberg reading, and says so', () => {
    const schema = icebergSchema([col('a', 'BIGINT'), col('u', 'UBIGINT'), col('n', 'TIMESTAMP_NS'), col('i', 'INTERVAL'), col('l', 'INTERVAL[]'), col('b', 'VARCHAR')], 1);
    expect(schema.json.fields.map((f) => [f.id, f.name])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
    expect(schema.omitted).toEqual(['u', 'n', 'i', 'l']);
  });

  it('gives nested types ids after the top-level columns, and a name mapping for Parquet files without ids', () => {
    const schema = icebergSchema(
      [col('id', 'BIGINT', { nullable: false }), col('tags', 'VARCHAR[]'), col('point', 'STRUCT(x DOUBLE, "y value" DOUBLE[])'), col('attrs', 'MAP(VARCHAR, INTEGER)')],
      1,
    );
    expect(schema.json.fields).toEqual([
      { id: 1, name: 'id', required: true, type: 'long' },
      { id: 2, name: 'tags', required: false, type: { type: 'list', 'element-id': 5, element: 'string', 'element-required': false } },
      {
        id: 3,
        name: 'point',
        required: false,
        type: {
          type: 'struct',
          fields: [
            { id: 6, name: 'x', required: false, type: 'double' },
            { id: 7, name: 'y value', required: false, type: { type: 'list', 'element-id': 8, element: 'double', 'element-required': false } },
          ],
        },
      },
      { id: 4, name: 'attrs', required: false, type: { type: 'map', 'key-id': 9, key: 'string', 'value-id': 10, value: 'int', 'value-required': false } },
    ]);
    expect(schema.lastColumnId).toBe(10);
    expect(schema.nameMapping).toEqual([
      { 'field-id': 1, names: ['id'] },
      { 'field-id': 2, names: ['tags'], fields: [{ 'field-id': 5, names: ['element'] }] },
      { 'field-id': 3, names: ['point'], fields: [{ 'field-id': 6, names: ['x'] }, { 'field-id': 7, names: ['y value'], fields: [{ 'field-id': 8, names: ['element'] }] }] },
      { 'field-id': 4, names: ['attrs'], fields: [{ 'field-id': 9, names: ['key'] }, { 'field-id': 10, names: ['value'] }] },
    ]);
    // Metrics are kept for top-level primitive columns only.
    expect(schema.columns.map((c) => c.primitive)).toEqual(['long', undefined, undefined, undefined]);
  });

  it('marks an IPv4 column: a string with a doc, and the logical type as a property', () => {
    const schema = icebergSchema([col('ip', 'VARCHAR', { logical_type: 'ipv4' }), col('note', 'VARCHAR', { description: 'Free text' })], 1);
    expect(schema.json.fields).toEqual([
      { id: 1, name: 'ip', required: false, type: 'string', doc: expect.stringContaining('IPv4') },
      { id: 2, name: 'note', required: false, type: 'string', doc: 'Free text' },
    ]);
    expect(schema.logicalTypes).toEqual({ ip: 'ipv4' });
  });

  it('parses DuckDB type text', () => {
    expect(parseDuckType('INTEGER[][]')).toEqual({ kind: 'list', element: { kind: 'list', element: { kind: 'primitive', name: 'INTEGER' } } });
    expect(parseDuckType('STRUCT(a DECIMAL(10, 2), b MAP(VARCHAR, BIGINT))')).toEqual({
      kind: 'struct',
      fields: [
        { name: 'a', type: { kind: 'primitive', name: 'DECIMAL(10,2)' } },
        { name: 'b', type: { kind: 'map', key: { kind: 'primitive', name: 'VARCHAR' }, value: { kind: 'primitive', name: 'BIGINT' } } },
      ],
    });
    expect(parseDuckType('STRUCT("a,b" INTEGER)')).toEqual({ kind: 'struct', fields: [{ name: 'a,b', type: { kind: 'primitive', name: 'INTEGER' } }] });
  });
});

describe('bounds in the binary single-value serialization', () => {
  const hex = (b: Buffer | undefined) => b?.toString('hex');
  it('writes numbers little-endian, decimals as big-endian unscaled two’s complement', () => {
    expect(hex(boundBytes('int', '1', 'lower'))).toBe('01000000');
    expect(hex(boundBytes('int', -2, 'lower'))).toBe('feffffff');
    expect(hex(boundBytes('long', '9007199254740993', 'upper'))).toBe('0100000000002000');
    expect(hex(boundBytes('double', '1.5', 'lower'))).toBe('000000000000f83f');
    expect(hex(boundBytes('float', '1.5', 'upper'))).toBe('0000c03f');
    expect(hex(boundBytes('decimal(18,2)', '12.34', 'lower'))).toBe('04d2');
    expect(hex(boundBytes('decimal(18,2)', '-1.00', 'lower'))).toBe('9c');
    expect(hex(boundBytes('decimal(38,4)', '1.1', 'lower'))).toBe('2af8');
    expect(hex(boundBytes('boolean', 'true', 'upper'))).toBe('01');
  });

  it('covers both zeros and gives no bound for NaN or values it cannot read exactly', () => {
    expect(Object.is(boundBytes('double', '0', 'lower')!.readDoubleLE(0), -0)).toBe(true);
    expect(Object.is(boundBytes('double', '-0.0', 'upper')!.readDoubleLE(0), 0)).toBe(true);
    expect(boundBytes('double', 'nan', 'lower')).toBeUndefined();
    expect(boundBytes('int', '3000000000', 'lower')).toBeUndefined();
    expect(boundBytes('decimal(10,1)', '1.25', 'lower')).toBeUndefined();
    expect(boundBytes('uuid', '236cc900-1736-4621-af97-f328494328ab', 'lower')).toBeUndefined();
    expect(boundBytes('date', '2024-02-30', 'lower')).toBeUndefined();
    expect(boundBytes('long', null, 'lower')).toBeUndefined();
  });

  it('writes dates as days and times and timestamps as microseconds, zones applied', () => {
    expect(boundBytes('date', '1970-01-02', 'lower')!.readInt32LE(0)).toBe(1);
    expect(boundBytes('date', '1969-12-31', 'lower')!.readInt32LE(0)).toBe(-1);
    // (Python: date(50, 1, 1).toordinal() - date(1970, 1, 1).toordinal())
    expect(boundBytes('date', '0050-01-01', 'lower')!.readInt32LE(0)).toBe(-701_265);
    expect(boundBytes('time', '00:00:01.5', 'lower')!.readBigInt64LE(0)).toBe(1_500_000n);
    expect(boundBytes('timestamp', '2024-01-02 03:04:05.678901', 'lower')!.readBigInt64LE(0)).toBe(BigInt(Date.UTC(2024, 0, 2, 3, 4, 5)) * 1000n + 678_901n);
    expect(boundBytes('timestamptz', '2024-01-02 03:04:05.5+02', 'lower')!.readBigInt64LE(0)).toBe(BigInt(Date.UTC(2024, 0, 2, 1, 4, 5)) * 1000n + 500_000n);
    expect(boundBytes('timestamptz', '2024-01-02 03:04:05', 'lower')).toBeUndefined();
    expect(boundBytes('timestamp', '2024-01-02 03:04:05+00', 'lower')).toBeUndefined();
  });

  it('keeps string bounds correct: a long lower bound is cut, a long upper bound left out', () => {
    expect(boundBytes('string', 'Zürich', 'upper')!.toString('utf8')).toBe('Zürich');
    expect(boundBytes('string', 'x'.repeat(40), 'lower')!.toString('utf8')).toBe('x'.repeat(16));
    expect(boundBytes('string', 'x'.repeat(40), 'upper')).toBeUndefined();
  });
});
