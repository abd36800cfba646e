/** A small table with every column type, in DuckDB and as plain TypeScript rows (for independent evaluators). */
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { quoteString } from '../../../core/engine/index.ts';
import type { ODataColumn } from '../model.ts';
import type { CompiledQuery } from './query.ts';

export interface Row {
  id: number;
  qty: number | null;
  tiny: number | null;
  big: bigint | null;
  ubig: bigint | null;
  huge: bigint | null;
  amount: string | null;
  price: number | null;
  f: number | null;
  name: string | null;
  region: string | null;
  active: boolean | null;
  d: string | null;
  /** TIMESTAMP and TIMESTAMP WITH TIME ZONE values, as UTC ISO strings with milliseconds. */
  ts: string | null;
  tstz: string | null;
  t: string | null;
  ip: string | null;
}

export const COLUMNS: ODataColumn[] = [
  { name: 'id', type: 'INTEGER', nullable: false },
  { name: 'qty', type: 'INTEGER', nullable: true },
  { name: 'tiny', type: 'TINYINT', nullable: true },
  { name: 'big', type: 'BIGINT', nullable: true },
  { name: 'ubig', type: 'UBIGINT', nullable: true },
  { name: 'huge', type: 'HUGEINT', nullable: true },
  { name: 'amount', type: 'DECIMAL(18,2)', nullable: true },
  { name: 'price', type: 'DOUBLE', nullable: true },
  { name: 'f', type: 'FLOAT', nullable: true },
  { name: 'name', type: 'VARCHAR', nullable: true },
  { name: 'region', type: 'VARCHAR', nullable: true },
  { name: 'active', type: 'BOOLEAN', nullable: true },
  { name: 'd', type: 'DATE', nullable: true },
  { name: 'ts', type: 'TIMESTAMP', nullable: true },
  { name: 'tstz', type: 'TIMESTAMP WITH TIME ZONE', nullable: true },
  { name: 't', type: 'TIME', nullable: true },
  { name: 'ip', type: 'IPV4', nullable: true },
];

/** now() in the tests: the end of a month, so month arithmetic has to clamp. */
export const NOW = new Date('2024-03-31T12:00:00.000Z');

const EMPTY: Omit<Row, 'id'> = {
  qty: null, tiny: null, big: null, ubig: null, huge: null, amount: null, price: null, f: null, name: null,
  region: null, active: null, d: null, ts: null, tstz: null, t: null, ip: null,
};

const row = (id: number, values: Partial<Row>): Row => ({ ...EMPTY, id, ...values });

export const ROWS: Row[] = [
  row(1, { qty: 5, tiny: 1, big: 9007199254740993n, ubig: 18446744073709551615n, huge: 170141183460469231731687303715884105727n, amount: '12.50', price: 1.5, f: 0.5, name: 'Alice', region: 'EU', active: true, d: '2024-01-31', ts: '2024-03-31T11:30:00.000Z', tstz: '2024-03-31T11:30:00.000Z', t: '10:00:00', ip: '10.0.0.1' }),
  row(2, { qty: -3, tiny: -128, big: -5n, ubig: 0n, huge: -1n, amount: '-0.01', price: -2.25, f: -1.25, name: 'bob', region: 'US', active: false, d: '2024-02-29', ts: '2024-02-29T12:00:00.000Z', tstz: '2024-02-29T12:00:00.000Z', t: '23:59:59', ip: '10.255.255.255' }),
  row(3, {}),
  row(4, { qty: 0, tiny: 127, big: 0n, ubig: 1n, huge: 0n, amount: '0.00', price: 0, f: 0, name: '', region: 'EU', active: true, d: '2024-03-01', ts: '2024-02-29T11:59:59.999Z', tstz: '2024-02-29T11:59:59.999Z', t: '00:00:00', ip: '11.0.0.0' }),
  row(5, { qty: 100, big: 4611686018427387904n, amount: '99999.99', price: 1e10, f: 3, name: "O'Brien", region: 'APAC', active: false, d: '2023-12-31', ts: '2023-12-31T23:59:59.999Z', tstz: '2024-01-01T00:00:00.000Z', t: '12:30:15.500', ip: '192.168.1.10' }),
  row(6, { qty: 7, amount: '12.50', price: 2, name: 'Al', region: 'US', active: true, d: '2024-03-31', ts: '2024-03-30T12:00:00.000Z', tstz: '2024-03-30T12:00:00.001Z', ip: '192.168.1.9' }),
  row(7, { qty: 5, amount: '3.33', name: 'alice', d: '2025-02-28', ts: '2025-02-28T00:00:00.000Z', tstz: '2024-03-31T11:00:00.000Z', t: '11:00:00', ip: '0.0.0.0' }),
  row(8, { qty: 12, amount: '100.00', price: -0.5, name: 'ALICE', region: 'EU', active: false, d: '2000-02-29', ts: '2024-01-31T10:00:00.000Z', tstz: '2024-01-31T10:00:00.000Z', ip: '255.255.255.255' }),
  row(9, { qty: 7, amount: '7.00', name: 'Bob', region: 'US', d: '1999-12-31', ts: '2024-03-31T12:00:00.000Z', tstz: '2024-03-31T12:00:00.000Z', ip: '9.255.255.255' }),
  row(10, { qty: 1, amount: '1.10', price: 1.1, name: 'zed', region: 'APAC', active: true, d: '2024-04-30', ts: '2024-02-28T12:00:00.000Z', tstz: '2024-02-28T12:00:00.000Z', t: '06:15:00', ip: '10.0.0.0' }),
  row(11, { qty: 12, amount: '12.51', price: 12.5, name: 'Alice', region: 'EU', active: null, d: '2024-01-01', ts: '2024-03-30T11:59:59.999Z', tstz: '2024-03-30T22:00:00.000Z', ip: '172.16.0.1' }),
  row(12, { qty: null, amount: '12.49', price: 1.5, name: 'eve', region: 'US', active: true, d: '2024-02-28', ts: '2023-03-31T12:00:00.000Z', tstz: '2023-03-31T12:00:00.000Z', t: '10:00:00', ip: '10.1.2.3' }),
];

function sqlLiteral(column: ODataColumn, value: unknown): string {
  if (value === null) return 'NULL';
  if (typeof value === 'string') {
    if (column.type === 'TIMESTAMP') return quoteString(value.replace('T', ' ').replace('Z', ''));
    if (column.type === 'TIMESTAMP WITH TIME ZONE') return quoteString(value.replace('T', ' ').replace('Z', '+00'));
    return quoteString(value);
  }
  return String(value);
}

/** An in-memory DuckDB with the rows in table `data` (IPV4 stored as VARCHAR, as Lakeport does). */
export async function createDatabase(): Promise<{ instance: DuckDBInstance; connection: DuckDBConnection }> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const definition = COLUMNS.map((c) => `"${c.name}" ${c.type === 'IPV4' ? 'VARCHAR' : c.type}`).join(', ');
  await connection.run(`CREATE TABLE data (${definition})`);
  const values = ROWS.map((r) => `(${COLUMNS.map((c) => sqlLiteral(c, r[c.name as keyof Row])).join(', ')})`);
  await connection.run(`INSERT INTO data VALUES ${values.join(', ')}`);
  return { instance, connection };
}

/** Runs a compiled query over `data` and returns its rows as JSON-friendly objects. */
export async function rowsOf(connection: DuckDBConnection, compiled: CompiledQuery, options: { totalOrder?: boolean } = {}): Promise<Record<string, unknown>[]> {
  const reader = await connection.runAndReadAll(compiled.sql('data', options), compiled.params.values as DuckDBValue[]);
  return reader.getRowObjectsJson() as Record<string, unknown>[];
}

/** The ids a compiled query returns, sorted. */
export async function idsOf(connection: DuckDBConnection, compiled: CompiledQuery): Promise<number[]> {
  const rows = await rowsOf(connection, compiled);
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}

export async function countOf(connection: DuckDBConnection, compiled: CompiledQuery): Promise<number> {
  const reader = await connection.runAndReadAll(compiled.countSql('data'), compiled.params.values as DuckDBValue[]);
  return Number(reader.getRows()[0][0]);
}
