import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.ts';
import { FileShapeError, Ingestor, ValueNotStorableError, type TargetColumn } from './index.ts';

let ingestor: Ingestor;
const dir = tempDir('lakeport-ingest-');
const file = (name: string, content: string | Buffer) => {
  const p = path.join(dir.dir, name);
  fs.writeFileSync(p, content);
  return p;
};
beforeAll(async () => {
  ingestor = await Ingestor.create();
});
afterAll(() => {
  ingestor.close();
  dir.remove();
});

describe('inspect', () => {
  it('reads types and a real value per column from a messy CSV', async () => {
    const p = file('messy.csv', '\uFEFFid;note;amount;at;ip\n1;"two\nlines";12.50;2024-03-01 10:00:00+02;10.0.0.1\n2;"";;2024-03-02 11:00:00+02;192.168.1.20\n');
    const schema = await ingestor.inspect(p, 'csv', { delimiter: ';' });
    expect(schema.columns.map((c) => [c.name, c.type])).toEqual([
      ['id', 'BIGINT'],
      ['note', 'VARCHAR'],
      ['amount', 'DOUBLE'],
      ['at', 'TIMESTAMP WITH TIME ZONE'],
      ['ip', 'IPV4'],
    ]);
    expect(schema.values.note).toBe('two\nlines');
    expect(schema.values.ip).toBe('10.0.0.1');
  });

  it('marks nested JSON types unsupported and tolerates missing keys', async () => {
    const p = file('a.jsonl', '{"a":1,"b":"x"}\n{"b":"y","c":{"q":1}}\n');
    const schema = await ingestor.inspect(p, 'jsonl', {});
    expect(schema.columns.find((c) => c.name === 'c')).toMatchObject({ type: undefined, sourceType: 'STRUCT(q BIGINT)' });
    expect(schema.columns.find((c) => c.name === 'a')?.type).toBe('BIGINT');
  });
});

describe('convert', () => {
  const target: TargetColumn[] = [
    { name: 'id', type: 'BIGINT', nullable: false, source: 'id' },
    { name: 'amount', type: 'DECIMAL(18,2)', nullable: true, source: 'amount' },
  ];

  it('writes Parquet with the target types and statistics', async () => {
    const p = file('ok.csv', 'id,amount\n1,10.50\n2,\n3,7.25\n');
    const out = path.join(dir.dir, 'ok.parquet');
    const result = await ingestor.convert({
      path: p,
      format: 'csv',
      options: {},
      fileColumns: [{ name: 'id', type: 'BIGINT', sourceType: 'BIGINT' }, { name: 'amount', type: 'DOUBLE', sourceType: 'DOUBLE' }],
      target,
      destination: out,
    });
    expect(result.rows).toBe(3);
    expect(result.bytes).toBeGreaterThan(0);
    expect(result.stats.amount).toMatchObject({ min: '7.25', max: '10.50', null_count: 1 });
    expect(result.stats.id).toMatchObject({ min: '1', max: '3', null_count: 0 });
  });

  it('names the column, line and value of a bad value at row 100 000', async () => {
    const lines = ['id,amount'];
    for (let i = 1; i <= 120_000; i++) lines.push(`${i},${i}.5`);
    lines[100_000] = '100000,abc';
    const p = file('bad.csv', `${lines.join('\n')}\n`);
    const out = path.join(dir.dir, 'bad.parquet');
    const error = await ingestor
      .convert({ path: p, format: 'csv', options: {}, fileColumns: [{ name: 'id', type: 'BIGINT', sourceType: 'BIGINT' }, { name: 'amount', type: 'DOUBLE', sourceType: 'DOUBLE' }], target, destination: out })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValueNotStorableError);
    expect(error).toMatchObject({ column: 'amount', row: 100_001, value: 'abc' });
    expect(fs.existsSync(out)).toBe(false);
  });

  it('finds bad JSONL values and NULLs in NOT NULL columns by record number', async () => {
    const p = file('b.jsonl', '{"id":1,"amount":1}\n{"amount":2}\n');
    const error = await ingestor
      .convert({ path: p, format: 'jsonl', options: {}, fileColumns: [{ name: 'id', type: 'BIGINT', sourceType: 'BIGINT' }, { name: 'amount', type: 'BIGINT', sourceType: 'BIGINT' }], target, destination: path.join(dir.dir, 'b.parquet') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValueNotStorableError);
    expect(error).toMatchObject({ column: 'id', row: 2, value: null });
  });

  it('refuses a value that is not an IPv4 address in an IPV4 column', async () => {
    const p = file('ip.csv', 'ip\n10.0.0.1\n300.1.1.1\n');
    const error = await ingestor
      .convert({ path: p, format: 'csv', options: {}, fileColumns: [{ name: 'ip', type: 'IPV4', sourceType: 'VARCHAR' }], target: [{ name: 'ip', type: 'IPV4', nullable: true, source: 'ip' }], destination: path.join(dir.dir, 'ip.parquet') })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ column: 'ip', row: 3, value: '300.1.1.1' });
  });

  it('reports a file whose columns differ from its sample', async () => {
    const p = file('shape.csv', 'a,b,c\n1,2,3\n');
    const error = await ingestor
      .convert({ path: p, format: 'csv', options: {}, fileColumns: [{ name: 'id', type: 'BIGINT', sourceType: 'BIGINT' }], target: [target[0]], destination: path.join(dir.dir, 's.parquet') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(TypeError);
    void FileShapeError;
  });
});
