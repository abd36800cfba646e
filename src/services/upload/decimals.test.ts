/**
 * Fixed-point numbers (money): a CSV column whose sampled values all have the same number of
 * decimals is inferred as DECIMAL, so sums are exact; and no DECIMAL column silently rounds a value
 * with more decimals than it keeps. Real app, real DuckDB, real committed Parquet.
 */
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, tempDir, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';

let t: TestApp;
let alice: TestUser;
let duck: DuckDBInstance;
let db: DuckDBConnection;
const fixtures = tempDir('lakeport-decimals-');

beforeAll(async () => {
  t = await createTestApp();
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'money');
  duck = await DuckDBInstance.create(':memory:');
  db = await duck.connect();
});
afterAll(async () => {
  db?.closeSync();
  duck?.closeSync();
  await t?.close();
  fixtures.remove();
});

type Sample = { name: string; content: string | Buffer };

async function negotiate(contract: unknown, samples: Sample[]) {
  const body = await multipartBody({ contract, samples });
  const res = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

async function accept(c: { contract_id: string; schema_fingerprint: string; state: string }) {
  if (c.state !== 'proposed') return;
  const res = await alice.request('PUT', `/upload/v2/contracts/${c.contract_id}/accept`, { schema_fingerprint: c.schema_fingerprint });
  expect(res.statusCode, res.body).toBe(200);
}

async function write(id: string, name: string, content: string | Buffer, type = 'text/csv') {
  return t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${id}/data`, headers: { authorization: `Bearer ${alice.token}`, 'content-type': type, 'x-file-name': name }, payload: content });
}

async function commit(id: string) {
  const res = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${id}/commit`, headers: { authorization: `Bearer ${alice.token}` } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** One query over the committed Parquet files of a snapshot. */
async function committed(snapshotId: number, select: string) {
  const files = await t.app.lakeport.catalog.snapshotFiles(snapshotId);
  const paths = await Promise.all(files.map((f) => t.deps.blobs.localPath(f.path)));
  const list = paths.map((p) => `'${p.replace(/'/g, "''")}'`).join(', ');
  return (await db.runAndReadAll(`SELECT ${select} FROM read_parquet([${list}])`)).getRowObjectsJson()[0];
}

const planOf = (c: { plan: { column: string; target_type: string }[] }, column: string) => c.plan.find((p) => p.column === column)?.target_type;
const inferred = (dataset: string, content: string, name = 'prices.csv') => negotiate({ destination: `money.c.${dataset}`, schema: { mode: 'infer' } }, [{ name, content }]);

/** Money values whose sum as DOUBLE is not the exact sum. */
function moneyRows(count: number): { csv: string; exact: string } {
  const lines = ['id,price'];
  let cents = 0n;
  for (let i = 1; i <= count; i++) {
    const c = BigInt((i * 7919) % 1_000_000) + 10n;
    cents += c;
    lines.push(`${i},${c / 100n}.${String(c % 100n).padStart(2, '0')}`);
  }
  return { csv: `${lines.join('\n')}\n`, exact: `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}` };
}

describe('inferring DECIMAL from fixed-point text', () => {
  it('money values are negotiated as DECIMAL(18,2), committed, and sum exactly', async () => {
    const { csv, exact } = moneyRows(3000);
    // The premise: summed as DOUBLE, these values drift.
    const file = path.join(fixtures.dir, 'money.csv');
    fs.writeFileSync(file, csv);
    const asDouble = (await db.runAndReadAll(`SELECT sum(price::DOUBLE)::VARCHAR AS s, typeof(any_value(price)) AS t FROM read_csv('${file}')`)).getRowObjectsJson()[0];
    expect(asDouble.t).toBe('DOUBLE');
    expect(asDouble.s).not.toBe(exact);

    const c = await inferred('exact', csv);
    expect(planOf(c, 'price')).toBe('DECIMAL(18,2)');
    expect(planOf(c, 'id')).toBe('BIGINT');
    expect(c.issues).toContainEqual({
      severity: 'warning',
      code: 'INFERRED_DECIMAL',
      column: 'price',
      file: null,
      message:
        'Column "price" holds fixed-point numbers with 2 decimals in every sampled value; inferred DECIMAL(18,2) so sums are exact (PATCH {"columns": {"price": {"type": "DOUBLE"}}} or --column price=DOUBLE for floating point)',
    });
    await accept(c);
    const w = await write(c.contract_id, 'prices.csv', csv);
    expect(w.statusCode, w.body).toBe(200);
    const done = await commit(c.contract_id);
    const dataset = await t.app.lakeport.catalog.getDataset({ workspace: 'money', collection: 'c', dataset: 'exact' });
    expect(dataset.columns.find((col) => col.name === 'price')?.type).toBe('DECIMAL(18,2)');
    expect(await committed(done.snapshot.snapshot_id, 'sum(price)::VARCHAR AS s, typeof(any_value(price)) AS t, count(*)::INT AS n')).toEqual({ s: exact, t: 'DECIMAL(18,2)', n: 3000 });
  });

  it('mixed scales stay DOUBLE, without an issue', async () => {
    const c = await inferred('mixed', 'id,price\n1,3.5\n2,12.50\n3,7.25\n');
    expect(planOf(c, 'price')).toBe('DOUBLE');
    expect(c.issues.filter((i: { code: string }) => i.code === 'INFERRED_DECIMAL')).toEqual([]);
  });

  it('exponents, bare points and padding are not plain fixed-point: DOUBLE stays', async () => {
    expect(planOf(await inferred('exp', 'id,price\n1,1.25e2\n2,12.50\n'), 'price')).not.toMatch(/DECIMAL/);
    expect(planOf(await inferred('exp2', 'id,price\n1,1e5\n2,12.50\n'), 'price')).not.toMatch(/DECIMAL/);
    expect(planOf(await inferred('point', 'id,price\n1,.25\n2,12.50\n'), 'price')).toBe('DOUBLE');
    expect(planOf(await inferred('trail', 'id,price\n1,5.\n2,12.50\n'), 'price')).toBe('DOUBLE');
    expect(planOf(await inferred('pad', 'id,price\n1, 1.25\n2,12.50\n'), 'price')).toBe('DOUBLE');
    expect(planOf(await inferred('minus', 'id,price\n1,-1.25\n2,12.50\n'), 'price')).toBe('DECIMAL(18,2)');
  });

  it('whole numbers among fixed-point ones are allowed; whole numbers alone stay integers', async () => {
    expect(planOf(await inferred('wholes', 'id,price\n1,12\n2,3.50\n3,\n'), 'price')).toBe('DECIMAL(18,2)');
    expect(planOf(await inferred('ints', 'id,price\n1,12\n2,3\n'), 'price')).toBe('BIGINT');
  });

  it('more decimals than 9 stay DOUBLE', async () => {
    expect(planOf(await inferred('fine9', 'id,x\n1,0.123456789\n'), 'x')).toBe('DECIMAL(18,9)');
    expect(planOf(await inferred('fine10', 'id,x\n1,0.1234567891\n'), 'x')).toBe('DOUBLE');
  });

  it('integer parts too long for DECIMAL(18,s) take DECIMAL(38,s), and longer ones stay DOUBLE', async () => {
    const c = await inferred('wide', 'id,price\n1,12345678901234567.25\n2,0.10\n');
    expect(planOf(c, 'price')).toBe('DECIMAL(38,2)');
    await accept(c);
    expect((await write(c.contract_id, 'prices.csv', 'id,price\n1,12345678901234567.25\n2,0.10\n')).statusCode).toBe(200);
    const done = await commit(c.contract_id);
    expect(await committed(done.snapshot.snapshot_id, 'max(price)::VARCHAR AS m')).toEqual({ m: '12345678901234567.25' });

    expect(planOf(await inferred('huge', `id,price\n1,${'9'.repeat(37)}.25\n`), 'price')).toBe('DOUBLE');
  });

  it('JSONL numbers stay DOUBLE (JSON has no fixed-point numbers)', async () => {
    expect(planOf(await inferred('json', '{"id":1,"price":12.50}\n{"id":2,"price":3.25}\n', 'prices.jsonl'), 'price')).toBe('DOUBLE');
  });

  it('files meet at a DECIMAL holding both, or at DOUBLE when one file is not fixed-point', async () => {
    const both = await negotiate({ destination: 'money.c.files1', schema: { mode: 'infer' } }, [
      { name: 'a.csv', content: 'id,price\n1,12.50\n' },
      { name: 'b.csv', content: 'id,price\n1,3.125\n' },
    ]);
    expect(planOf(both, 'price')).toBe('DECIMAL(19,3)');
    expect(both.issues.map((i: { code: string }) => i.code)).toEqual(['INFERRED_DECIMAL']);
    expect(both.issues[0].message).toContain('with up to 3 decimals in every sampled value; inferred DECIMAL(19,3)');

    const mixed = await negotiate({ destination: 'money.c.files2', schema: { mode: 'infer' } }, [
      { name: 'a.csv', content: 'id,price\n1,12.50\n' },
      { name: 'b.csv', content: 'id,price\n1,3.5\n2,1.25\n' },
    ]);
    expect(planOf(mixed, 'price')).toBe('DOUBLE');
    expect(mixed.issues).toEqual([]);
  });

  it('PATCH back to DOUBLE drops the issue', async () => {
    const c = await inferred('patched', 'id,price\n1,12.50\n');
    const res = await alice.request('PATCH', `/upload/v2/contracts/${c.contract_id}`, { columns: { price: { type: 'DOUBLE' } } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().plan.find((p: { column: string }) => p.column === 'price')).toMatchObject({ action: 'keep', source_type: 'DOUBLE', target_type: 'DOUBLE' });
    expect(res.json().issues).toEqual([]);
  });

  it('a dataset that declares DOUBLE keeps it, with no cast and no issue', async () => {
    await t.app.lakeport.catalog.createDataset(
      { workspace: 'money', collection: 'c', dataset: 'floats' },
      { columns: [{ name: 'id', type: 'BIGINT', nullable: true }, { name: 'price', type: 'DOUBLE', nullable: true }] },
      'alice',
    );
    const c = await negotiate({ destination: 'money.c.floats', schema: { mode: 'dataset' } }, [{ name: 'prices.csv', content: 'id,price\n1,12.50\n' }]);
    expect(c.plan.find((p: { column: string }) => p.column === 'price')).toMatchObject({ action: 'keep', source_type: 'DOUBLE', target_type: 'DOUBLE' });
    expect(c.issues).toEqual([]);
  });
});

describe('DECIMAL columns never round silently', () => {
  it('a value with more decimals than an inferred DECIMAL(18,2) keeps is 409 VALUE_NOT_STORABLE naming it', async () => {
    const c = await inferred('excess', 'id,price\n1,12.50\n2,3.25\n');
    await accept(c);
    const body = `id,price\n1,12.50\n2,3.25\n3,12.500\n4,12.505\n5,1.00\n`;
    const res = await write(c.contract_id, 'prices.csv', body);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'price', row: 5, value: '12.505', type: 'DECIMAL(18,2)' });
    expect(res.json().detail).toContain('"12.505" has more than 2 decimals');
  });

  it('a declared DECIMAL(10,2) refuses excess decimals, takes trailing zeros, and still refuses what does not fit', async () => {
    const columns = [
      { name: 'id', type: 'BIGINT' },
      { name: 'amount', type: 'DECIMAL(10,2)' },
    ];
    const c = await negotiate({ destination: 'money.c.declared', schema: { mode: 'declared', columns } }, [{ name: 'a.csv', content: 'id,amount\n1,1.5\n' }]);
    const bad = await write(c.contract_id, 'a.csv', 'id,amount\n1,1.5\n2,0.001\n');
    expect(bad.statusCode, bad.body).toBe(409);
    expect(bad.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'amount', row: 3, value: '0.001', type: 'DECIMAL(10,2)' });
    expect(bad.json().detail).toContain('"0.001" has more than 2 decimals');

    const huge = await write(c.contract_id, 'a.csv', 'id,amount\n1,1.5\n2,123456789.5\n');
    expect(huge.statusCode, huge.body).toBe(409);
    expect(huge.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'amount', row: 3, value: '123456789.5' });

    const text = await write(c.contract_id, 'a.csv', 'id,amount\n1,1.5\n2,abc\n');
    expect(text.statusCode, text.body).toBe(409);
    expect(text.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'amount', row: 3, value: 'abc' });

    const good = await write(c.contract_id, 'a.csv', 'id,amount\n1,1.5\n2,12.500\n3,-0.10\n4,\n5,1.5e2\n');
    expect(good.statusCode, good.body).toBe(200);
    const done = await commit(c.contract_id);
    expect(await committed(done.snapshot.snapshot_id, 'sum(amount)::VARCHAR AS s, count(amount)::INT AS n')).toEqual({ s: '163.90', n: 4 });
  });

  it('values with an exponent are judged by their value', async () => {
    const columns = [
      { name: 'id', type: 'BIGINT' },
      { name: 'rate', type: 'DECIMAL(18,5)' },
    ];
    const c = await negotiate({ destination: 'money.c.exponents', schema: { mode: 'declared', columns } }, [{ name: 'r.csv', content: 'id,rate\n1,0.5\n' }]);
    for (const bad of ['1e-10', '2.5e-6', '1.2345678E1']) {
      const res = await write(c.contract_id, 'r.csv', `id,rate\n1,0.5\n2,${bad}\n`);
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'rate', row: 3, value: bad });
      expect(res.json().detail).toContain(`"${bad}" has more than 5 decimals`);
    }
    const good = await write(c.contract_id, 'r.csv', 'id,rate\n1,1e-5\n2,1.5E2\n3,1.23456e1\n4,0.100000\n');
    expect(good.statusCode, good.body).toBe(200);
    const done = await commit(c.contract_id);
    expect(await committed(done.snapshot.snapshot_id, 'sum(rate)::VARCHAR AS s')).toEqual({ s: '162.44561' });
  });

  it('a Parquet DOUBLE or wider DECIMAL with excess decimals is refused; narrower decimals go through', async () => {
    const file = path.join(fixtures.dir, 'p.parquet');
    await db.run(`COPY (SELECT * FROM (VALUES (1, 1.5::DOUBLE, 1.25::DECIMAL(10,2), 1.5::DECIMAL(10,3)), (2, 12.505::DOUBLE, 2.5::DECIMAL(10,2), 2.125::DECIMAL(10,3))) t(id, d, n, w)) TO '${file}' (FORMAT parquet)`);
    const bytes = fs.readFileSync(file);
    const footer = bytes.subarray(bytes.length - 8 - bytes.readUInt32LE(bytes.length - 8));
    const declare = (columns: { name: string; type: string }[], dataset: string) =>
      negotiate({ destination: `money.c.${dataset}`, schema: { mode: 'declared', columns: [{ name: 'id', type: 'INTEGER' }, ...columns] } }, [{ name: 'p.parquet', content: footer }]);
    const parquet = 'application/vnd.apache.parquet';

    for (const [column, value] of [['d', '12.505'], ['w', '2.125']]) {
      const c = await declare([{ name: column, type: 'DECIMAL(18,2)' }], `pq_${column}`);
      const res = await write(c.contract_id, 'p.parquet', bytes, parquet);
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column, row: 2, value });
      expect(res.json().detail).toContain('has more than 2 decimals');
    }
    const c = await declare([{ name: 'n', type: 'DECIMAL(18,2)' }], 'pq_n');
    expect((await write(c.contract_id, 'p.parquet', bytes, parquet)).statusCode).toBe(200);
  });

  it('a JSONL value with excess decimals is refused too', async () => {
    const columns = [
      { name: 'id', type: 'BIGINT' },
      { name: 'amount', type: 'DECIMAL(18,2)' },
    ];
    const c = await negotiate({ destination: 'money.c.json', schema: { mode: 'declared', columns } }, [{ name: 'a.jsonl', content: '{"id":1,"amount":1.5}\n' }]);
    const res = await write(c.contract_id, 'a.jsonl', '{"id":1,"amount":1.5}\n{"id":2,"amount":2.125}\n', 'application/x-ndjson');
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'amount', row: 2, value: '2.125' });
  });
});
