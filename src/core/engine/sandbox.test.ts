import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.ts';
import { Sandbox, SandboxInterruptedError, SandboxQueryError, runRawForTests, type SandboxOptions, type SandboxView } from './sandbox.ts';
import { failure } from '../../../test/async.ts';
import { readParquet, writeParquet } from '../../../test/parquet.ts';

const dir = tempDir('lakeport-sandbox-test-');
const at = (...parts: string[]) => path.join(dir.dir, ...parts);
let free: DuckDBInstance;
let fc: DuckDBConnection;
const opened: Sandbox[] = [];

/** A never-ending query (minutes at least) to interrupt. */
const SLOW = 'SELECT sum(range) AS s FROM range(1000000000000)';

const ordersColumns = [
  { name: 'id', type: 'BIGINT' },
  { name: 'customer', type: 'VARCHAR' },
  { name: 'amount', type: 'DECIMAL(18,2)' },
  { name: 'note', type: 'VARCHAR' },
  { name: 'ip', type: 'IPV4' },
];
let orders: SandboxView;
let customers: SandboxView;
let otherFile: string;

const write = (sql: string, file: string) => writeParquet(fc, sql, file);
const read = (file: string) => readParquet(fc, file);

async function open(views: SandboxView[], options: SandboxOptions = {}): Promise<Sandbox> {
  const sandbox = await Sandbox.open(views, { threads: 1, memoryLimit: '256MB', ...options });
  opened.push(sandbox);
  return sandbox;
}

function result(name: string): string {
  fs.mkdirSync(at('results'), { recursive: true });
  return at('results', name);
}

beforeAll(async () => {
  free = await DuckDBInstance.create(':memory:');
  fc = await free.connect();
  // Result files are rewritten in place here; a cached footer would show an older one.
  await fc.run('SET enable_external_file_cache = false');
  // Two files of one snapshot; the later one gained a column. The second sits under a
  // hive-looking directory that must not override the customer column.
  const p0 = await write(`SELECT range AS id, 'c' || (range % 3) AS customer, (range * 1.25)::DECIMAL(18,2) AS amount, '10.0.0.' || range AS ip FROM range(5)`, at('lake', 'ws1', 'sales', 'orders', 'v1', 'p0.parquet'));
  const p1 = await write(`SELECT (range + 5)::INTEGER AS id, 'c' || (range % 3) AS customer, 2.5::DECIMAL(18,2) AS amount, 'late' AS note, '10.0.1.' || range AS ip FROM range(5)`, at('lake', 'ws1', 'sales', 'orders', 'customer=hacked', 'p1.parquet'));
  const c0 = await write(`SELECT * FROM (VALUES ('c0', 'north'), ('c1', 'south'), ('c2', 'east')) t(customer, region)`, at('lake', 'ws2', 'crm', 'customers', 'p0.parquet'));
  otherFile = await write(`SELECT 'top secret' AS secret`, at('lake', 'ws3', 'hr', 'salaries', 'p0.parquet'));
  orders = { name: ['ws1', 'sales', 'orders'], files: [p0, p1], columns: ordersColumns };
  customers = { name: ['ws2', 'crm', 'customers'], files: [c0], columns: [{ name: 'customer', type: 'VARCHAR' }, { name: 'region', type: 'VARCHAR' }] };
});

afterEach(() => {
  for (const sandbox of opened.splice(0)) sandbox.close();
});

afterAll(() => {
  fc.closeSync();
  free.closeSync();
  dir.remove();
  for (const f of ['/tmp/evil.csv', '/tmp/evil.parquet']) fs.rmSync(f, { force: true });
});

describe('views', () => {
  it('serves each granted dataset under its three-part name and joins across workspaces', async () => {
    const out = result('join.parquet');
    const sandbox = await open([orders, customers], { resultPaths: [out] });
    const r = await sandbox.runToParquet(
      `SELECT o.id, o.customer, c.region, o.amount, o.note, o.ip FROM ws1.sales.orders o JOIN "ws2"."crm"."customers" c USING (customer) ORDER BY o.id`,
      {},
      out,
    );
    expect(r.rowCount).toBe(10);
    expect(r.columns).toEqual([
      { name: 'id', type: 'BIGINT' },
      { name: 'customer', type: 'VARCHAR' },
      { name: 'region', type: 'VARCHAR' },
      { name: 'amount', type: 'DECIMAL(18,2)' },
      { name: 'note', type: 'VARCHAR' },
      { name: 'ip', type: 'VARCHAR' },
    ]);
    const rows = await read(out);
    expect(rows[0]).toEqual({ id: '0', customer: 'c0', region: 'north', amount: '0.00', note: null, ip: '10.0.0.0' });
    expect(rows[9]).toEqual({ id: '9', customer: 'c1', region: 'south', amount: '2.50', note: 'late', ip: '10.0.1.4' });
    // The hive-looking directory did not become the customer value.
    expect(rows.every((row) => row.customer !== 'hacked')).toBe(true);
  });

  it('gives an empty snapshot, and a column no file has yet, the declared shape', async () => {
    const out = result('empty.parquet');
    const empty: SandboxView = { name: ['ws1', 'sales', 'nothing'], files: [], columns: ordersColumns };
    const added: SandboxView = { ...customers, name: ['ws2', 'crm', 'customers2'], columns: [...customers.columns, { name: 'since', type: 'DATE' }] };
    const sandbox = await open([empty, added], { resultPaths: [out] });
    expect(await sandbox.describe('SELECT * FROM ws1.sales.nothing', {})).toEqual([
      { name: 'id', type: 'BIGINT' },
      { name: 'customer', type: 'VARCHAR' },
      { name: 'amount', type: 'DECIMAL(18,2)' },
      { name: 'note', type: 'VARCHAR' },
      { name: 'ip', type: 'VARCHAR' },
    ]);
    const r = await sandbox.runToParquet('SELECT * FROM ws1.sales.nothing', {}, out);
    expect(r.rowCount).toBe(0);
    expect(r.columns.map((c) => c.name)).toEqual(['id', 'customer', 'amount', 'note', 'ip']);
    const r2 = await sandbox.runToParquet('SELECT customer, since FROM ws2.crm.customers2 ORDER BY customer', {}, out);
    expect(r2.columns).toEqual([{ name: 'customer', type: 'VARCHAR' }, { name: 'since', type: 'DATE' }]);
    expect(await read(out)).toEqual([{ customer: 'c0', since: null }, { customer: 'c1', since: null }, { customer: 'c2', since: null }]);
  });

  it('does not expose file paths through the views (no filename column)', async () => {
    const sandbox = await open([orders]);
    await expect(sandbox.describe('SELECT filename FROM ws1.sales.orders', {})).rejects.toThrow(/Binder Error/);
  });

  it('refuses bad view specifications when opening', async () => {
    await expect(Sandbox.open([{ ...orders, name: ['main', 'a', 'b'] }])).rejects.toThrow(/cannot be a catalog name/);
    await expect(Sandbox.open([{ ...orders, columns: [{ name: 'id', type: "BIGINT); COPY x TO '/tmp/y" }] }])).rejects.toThrow(/Unsupported column type/);
    await expect(Sandbox.open([orders, { ...customers, name: ['WS1', 'Sales', 'ORDERS'] }])).rejects.toThrow(/Two sandbox views/);
    await expect(Sandbox.open([{ ...orders, files: [at('lake', 'missing.parquet')] }])).rejects.toThrow(/Could not open the sandbox/);
  });

  it('accepts a workspace named like the default catalog', async () => {
    const sandbox = await open([{ ...customers, name: ['memory', 'crm', 'customers'] }]);
    expect(await sandbox.describe('SELECT region FROM memory.crm.customers', {})).toEqual([{ name: 'region', type: 'VARCHAR' }]);
    // Every catalog is in memory: no database file anywhere.
    expect(await runRawForTests(sandbox, 'SELECT count(*)::INTEGER AS n, count(path)::INTEGER AS files FROM duckdb_databases() WHERE NOT internal')).toEqual([{ n: 1, files: 0 }]);
  });
});

describe('what a job cannot do', () => {
  const sqlRefusals: [string, RegExp][] = [
    ["SELECT * FROM read_csv('/etc/passwd')", /Permission Error/],
    ["FROM '/etc/passwd'", /Catalog Error/],
    ["SELECT * FROM read_text('/etc/passwd')", /Permission Error/],
    ["SELECT * FROM read_blob('/etc/passwd')", /Permission Error/],
    ["SELECT * FROM glob('/*')", /Permission Error/],
    ['SET enable_external_access = true', /configuration has been locked/],
    ["SET allowed_paths = ['/etc/passwd']", /configuration has been locked/],
    ["SET allowed_directories = ['/']", /configuration has been locked/],
    ['RESET lock_configuration', /configuration has been locked/],
    ['SET lock_configuration = false', /configuration has been locked/],
    ["SET memory_limit = '100GB'", /configuration has been locked/],
    ['SET threads = 64', /configuration has been locked/],
    ["SET temp_directory = '/tmp'", /configuration has been locked/],
    ['PRAGMA threads = 8', /configuration has been locked/],
    ["ATTACH '/tmp/x.db'", /Permission Error/],
    ['INSTALL httpfs', /Permission Error/],
    ['LOAD httpfs', /Permission Error/],
    ["COPY (SELECT 1) TO '/tmp/evil.csv'", /Permission Error/],
    ["COPY (SELECT 1) TO '.tmp/evil.parquet' (FORMAT parquet)", /Permission Error/],
    ["EXPORT DATABASE '/tmp/lakeport-sandbox-export'", /Permission Error/],
  ];

  it.each(sqlRefusals)('DuckDB itself refuses %s', async (sql, expected) => {
    const sandbox = await open([orders]);
    const error = await failure(runRawForTests(sandbox, sql));
    expect(error).toBeInstanceOf(SandboxQueryError);
    expect(error.message).toMatch(expected);
    expect(fs.existsSync('/tmp/evil.csv')).toBe(false);
    expect(fs.existsSync('/tmp/x.db')).toBe(false);
  });

  it('cannot read another workspace\'s file, nor a dataset it has no grant on', async () => {
    const sandbox = await open([orders]);
    await expect(runRawForTests(sandbox, `SELECT * FROM read_parquet('${otherFile}')`)).rejects.toThrow(/Permission Error/);
    await expect(runRawForTests(sandbox, `SELECT * FROM read_parquet('${customers.files[0]}')`)).rejects.toThrow(/Permission Error/);
    await expect(runRawForTests(sandbox, `SELECT * FROM parquet_metadata('${otherFile}')`)).rejects.toThrow(/Permission Error/);
    await expect(runRawForTests(sandbox, `SELECT * FROM read_parquet('${path.dirname(otherFile)}/*.parquet')`)).rejects.toThrow(/Permission Error/);
    await expect(runRawForTests(sandbox, `SELECT * FROM read_parquet('${orders.files[0]}/../../../../ws3/hr/salaries/p0.parquet')`)).rejects.toThrow(/Permission Error/);
    await expect(runRawForTests(sandbox, `SELECT * FROM read_parquet('${orders.files[0]}.bak')`)).rejects.toThrow(/Permission Error/);
    await expect(runRawForTests(sandbox, 'SELECT * FROM ws2.crm.customers')).rejects.toThrow(/Catalog "ws2" does not exist/);
    // Its own granted files it may read directly: the views are not a security filter.
    expect(await runRawForTests(sandbox, `SELECT count(*)::INTEGER AS n FROM read_parquet('${orders.files[0]}')`)).toEqual([{ n: 5 }]);
  });

  it('can only write its result file, not even a sibling of it', async () => {
    const out = result('allowed.parquet');
    const sandbox = await open([orders], { resultPaths: [out] });
    await expect(runRawForTests(sandbox, `COPY (SELECT 1) TO '${result('sibling.parquet')}' (FORMAT parquet)`)).rejects.toThrow(/Permission Error/);
    expect(await runRawForTests(sandbox, `COPY (SELECT 1 AS x) TO '${out}' (FORMAT parquet, USE_TMP_FILE false)`)).toEqual([{ Count: '1' }]);
  });

  it('has no spill directory without tempDirectory, and a private one removed on close with it', async () => {
    const sort = 'SELECT md5(range::VARCHAR) || md5((range + 1)::VARCHAR) AS h FROM range(1000000) ORDER BY h';
    const out = result('spilled.parquet');
    const plain = await open([orders], { memoryLimit: '64MB' });
    expect(await runRawForTests(plain, "SELECT current_setting('temp_directory') AS t, current_setting('allowed_directories') AS d")).toEqual([{ t: '', d: [] }]);
    const oom = await failure(plain.runToParquet(sort, {}, out));
    expect(oom).toBeInstanceOf(SandboxQueryError);
    expect((oom as SandboxQueryError).errorType).toBe('Out of Memory');
    const base = at('spill');
    fs.mkdirSync(base, { recursive: true });
    const spilling = await Sandbox.open([orders], { threads: 1, memoryLimit: '64MB', tempDirectory: base });
    const [own] = fs.readdirSync(base);
    expect(own).toMatch(/^lakeport-sandbox-/);
    const settings = await runRawForTests(spilling, "SELECT current_setting('temp_directory') AS t");
    expect(settings).toEqual([{ t: path.join(base, own, 'spill') }]);
    // The same sort spills there and completes.
    expect((await spilling.runToParquet(sort, {}, out)).rowCount).toBe(1_000_000);
    spilling.close();
    expect(fs.readdirSync(base)).toEqual([]);
  });

  const statementRefusals = [
    "COPY (SELECT 1) TO '/tmp/evil.csv'",
    "ATTACH ':memory:' AS x",
    'INSTALL httpfs',
    'LOAD parquet',
    'PRAGMA database_list',
    "SET search_path = 'ws1.sales'",
    'CREATE TABLE t AS SELECT 1',
    'CALL pragma_version()',
    'EXPLAIN SELECT 1',
    'SELECT 1; SELECT 2',
    "SELECT 1; COPY (SELECT 1) TO '/tmp/evil.csv'",
    "PIVOT (SELECT 1 AS a) ON a",
    '',
    '-- nothing',
  ];

  it.each(statementRefusals)('runToParquet refuses %j', async (sql) => {
    const out = result('refused.parquet');
    const sandbox = await open([orders], { resultPaths: [out] });
    const error = await failure(sandbox.runToParquet(sql, {}, out));
    expect(error).toBeInstanceOf(SandboxQueryError);
    expect(fs.existsSync(out)).toBe(false);
    expect(fs.existsSync('/tmp/evil.csv')).toBe(false);
    await expect(sandbox.describe(sql, {})).rejects.toBeInstanceOf(SandboxQueryError);
  });

  it('contains attempts to break out of the COPY around the query', async () => {
    const out = result('breakout.parquet');
    const sandbox = await open([orders], { resultPaths: [out] });
    const attempts = [
      "SELECT 1) TO '/tmp/evil.csv' (FORMAT csv); --",
      "SELECT 1 AS x) TO '/tmp/evil.csv' (FORMAT csv) --",
      "SELECT 1 AS x) TO '/tmp/evil.csv' (FORMAT csv); COPY (SELECT 1",
      "SELECT 1 AS x /* ) TO '/tmp/evil.csv' (FORMAT csv) -- */",
      "SELECT 1 AS x --",
      "SELECT ')' AS x) TO '/tmp/evil.csv' (FORMAT csv) --",
      `SELECT 1 AS x) TO '${result('other.parquet')}' (FORMAT parquet); SELECT (1`,
    ];
    for (const sql of attempts) {
      const outcome = await sandbox.runToParquet(sql, {}, out).then(
        (r) => r,
        (e: Error) => e,
      );
      // Either refused, or a plain one-column result in our own file: never anything elsewhere.
      if (outcome instanceof Error) expect(outcome).toBeInstanceOf(SandboxQueryError);
      else expect(await read(out)).toEqual([{ x: 1 }]);
      expect(fs.existsSync('/tmp/evil.csv')).toBe(false);
      expect(fs.existsSync(result('other.parquet'))).toBe(false);
    }
    // A trailing semicolon and a trailing line comment are fine.
    expect((await sandbox.runToParquet('SELECT 2 AS y; ', {}, out)).rowCount).toBe(1);
    expect((await sandbox.runToParquet('SELECT 3 AS y -- the answer', {}, out)).rowCount).toBe(1);
    expect(await read(out)).toEqual([{ y: 3 }]);
  });

  it('writes to a result path chosen after opening through its private file, which DuckDB alone cannot', async () => {
    const later = result('chosen-later.parquet');
    const sandbox = await open([orders]);
    await expect(runRawForTests(sandbox, `COPY (SELECT 1) TO '${later}' (FORMAT parquet)`)).rejects.toThrow(/Permission Error/);
    const r = await sandbox.runToParquet('SELECT id FROM ws1.sales.orders WHERE id < 3 ORDER BY id', {}, later);
    expect(r).toEqual({ rowCount: 3, columns: [{ name: 'id', type: 'BIGINT' }] });
    expect(await read(later)).toEqual([{ id: '0' }, { id: '1' }, { id: '2' }]);
    // A failure leaves nothing at the path.
    await expect(sandbox.runToParquet('SELECT customer::INTEGER FROM ws1.sales.orders', {}, later)).rejects.toBeInstanceOf(SandboxQueryError);
    expect(fs.existsSync(later)).toBe(false);
  });
});

describe('parameters and errors', () => {
  it('binds named parameters, including values that look like SQL', async () => {
    const out = result('params.parquet');
    const sandbox = await open([orders], { resultPaths: [out] });
    const evil = "c1' OR '1'='1'; DROP VIEW ws1.sales.orders; --";
    const r = await sandbox.runToParquet('SELECT count(*) AS n FROM ws1.sales.orders WHERE customer = $who', { who: evil, unused: 1 }, out);
    expect(r.rowCount).toBe(1);
    expect(await read(out)).toEqual([{ n: '0' }]);
    await sandbox.runToParquet('SELECT id, $s AS s, $b AS b, $f AS f, $z AS z FROM ws1.sales.orders WHERE customer = $who AND id >= $min ORDER BY id', { who: 'c1', min: 4, s: evil, b: true, f: 1.5, z: null }, out);
    expect(await read(out)).toEqual([
      { id: '4', s: evil, b: true, f: 1.5, z: null },
      { id: '6', s: evil, b: true, f: 1.5, z: null },
      { id: '9', s: evil, b: true, f: 1.5, z: null },
    ]);
    expect(await sandbox.describe('SELECT $s AS s, $n AS n, id FROM ws1.sales.orders', { s: 'x', n: 2.5 })).toEqual([
      { name: 's', type: 'VARCHAR' },
      { name: 'n', type: 'DOUBLE' },
      { name: 'id', type: 'BIGINT' },
    ]);
    const missing = await failure(sandbox.runToParquet('SELECT $nope AS v', {}, out));
    expect(missing).toBeInstanceOf(SandboxQueryError);
    expect(missing.message).toMatch(/\$nope/);
    await expect(sandbox.runToParquet('SELECT $v AS v', { v: { a: 1 } }, out)).rejects.toBeInstanceOf(SandboxQueryError);
  });

  it('reports DuckDB errors with their position in the caller\'s SQL', async () => {
    const out = result('errors.parquet');
    const sandbox = await open([orders], { resultPaths: [out] });
    const cases: [string, RegExp, string | undefined][] = [
      ['SELECT nope FROM ws1.sales.orders', /^Binder Error: Referenced column "nope" not found/, 'nope'],
      ['SELECT 1,\n  nope\nFROM ws1.sales.orders', /^Binder Error/, 'nope'],
      ["SELECT 'ä€😀中文' AS x, nope", /^Binder Error/, 'nope'],
      ['SELECT * FROM ws1.sales.missing', /^Catalog Error: Table with name missing does not exist/, 'ws1.sales.missing'],
      ['SELECT 1 FORM x', /^Parser Error: syntax error at or near "x"/, 'x'],
      ["SELECT customer::INTEGER FROM ws1.sales.orders", /^Conversion Error/, undefined],
      ["SELECT error('boom')", /^Invalid Input Error: boom$/, undefined],
    ];
    for (const [sql, message, at] of cases) {
      const error = await failure(sandbox.runToParquet(sql, {}, out));
      expect(error, sql).toBeInstanceOf(SandboxQueryError);
      expect(error.message, sql).toMatch(message);
      if (at !== undefined) expect((error as SandboxQueryError).position, sql).toBe(sql.lastIndexOf(at));
      expect(fs.existsSync(out)).toBe(false);
    }
  });

  it('describes a query without running it', async () => {
    const sandbox = await open([orders, customers], { timeoutMs: 2000 });
    const started = Date.now();
    expect(await sandbox.describe('SELECT sum(range) AS s, 1 AS one FROM range(1000000000000)', {})).toEqual([{ name: 's', type: 'HUGEINT' }, { name: 'one', type: 'INTEGER' }]);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(await sandbox.describe('SELECT o.amount * 2 AS a, c.region, o.id AS x, c.customer AS x FROM ws1.sales.orders o, ws2.crm.customers c', {})).toEqual([
      { name: 'a', type: 'DECIMAL(18,2)' },
      { name: 'region', type: 'VARCHAR' },
      { name: 'x', type: 'BIGINT' },
      { name: 'x_1', type: 'VARCHAR' },
    ]);
  });
});

describe('result columns', () => {
  it('reports exactly the columns a reader of the Parquet result gets, with or without describing the file', async () => {
    const out = result('types.parquet');
    const sandbox = await open([orders], { resultPaths: [out] });
    const expressions = [
      'true', '1::TINYINT', '1::SMALLINT', '1', '1::BIGINT', '1::HUGEINT', '1::UTINYINT', '1::USMALLINT', '1::UINTEGER', '1::UBIGINT', '1::UHUGEINT',
      '1::FLOAT', '1::DOUBLE', "'x'", "DATE '2020-01-01'", "TIMESTAMP '2020-01-01'", "TIMESTAMPTZ '2020-01-01'", "'2020-01-01'::TIMESTAMP_NS",
      "'2020-01-01'::TIMESTAMP_MS", "'2020-01-01'::TIMESTAMP_S", "TIME '01:02:03'", "'01:02:03+00'::TIMETZ", 'INTERVAL 1 DAY', "'a'::BLOB",
      "'00000000-0000-0000-0000-000000000001'::UUID", '1.5::DECIMAL(18,2)', '1.5::DECIMAL(4,1)', '1.5::DECIMAL(38,10)', '[1, 2]', "{'a': 1}",
      "MAP {'a': 1}", "'a'::ENUM('a', 'b')", '[1, 2]::INTEGER[2]', "'101'::BIT", "'{}'::JSON", 'NULL', "'1'::BIGNUM",
    ];
    const queries = [
      ...expressions.map((e) => `SELECT ${e} AS "c"`),
      'SELECT 1',
      'SELECT 1 AS x, 2 AS X',
      'SELECT 1 AS "we.ird ""name""", \'é\' AS "ünï"',
      'SELECT id, amount, ip FROM ws1.sales.orders',
      'SELECT customer, count(*), sum(amount), avg(id) FROM ws1.sales.orders GROUP BY customer',
      'SELECT $v AS v',
    ];
    for (const sql of queries) {
      const r = await sandbox.runToParquet(sql, { v: 1.5 }, out);
      const described = (await fc.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${out}')`)).getRowObjectsJson() as { column_name: string; column_type: string }[];
      expect(r.columns, sql).toEqual(described.map((d) => ({ name: d.column_name, type: d.column_type })));
    }
  });
});

describe('timeouts and cancel', () => {
  it('interrupts a query that runs past timeoutMs', async () => {
    const out = result('slow.parquet');
    const sandbox = await open([orders], { timeoutMs: 300, resultPaths: [out] });
    const started = Date.now();
    const error = await failure(sandbox.runToParquet(SLOW, {}, out));
    expect(error).toBeInstanceOf(SandboxInterruptedError);
    expect((error as SandboxInterruptedError).reason).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1300);
    expect(fs.existsSync(out)).toBe(false);
    // A timeout ends that query only.
    expect((await sandbox.runToParquet('SELECT 1 AS x', {}, out)).rowCount).toBe(1);
  });

  it('cancels from elsewhere, and stays cancelled', async () => {
    const out = result('cancel.parquet');
    const sandbox = await open([orders], { resultPaths: [out] });
    const running = sandbox.runToParquet('SELECT count(*) FROM ws1.sales.orders a, range(1000000000000) b', {}, out);
    const started = Date.now();
    setTimeout(() => sandbox.interrupt(), 200);
    const error = await failure(running);
    expect(error).toBeInstanceOf(SandboxInterruptedError);
    expect((error as SandboxInterruptedError).reason).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(1200);
    await expect(sandbox.runToParquet('SELECT 1', {}, out)).rejects.toBeInstanceOf(SandboxInterruptedError);
  });

  it('stops queries that were still waiting for a thread when their time ran out', async () => {
    // More sandboxes than libuv has threads (4 by default): some queries start only after their
    // first interrupt was sent, which DuckDB would forget; the sandbox keeps interrupting.
    const outs = Array.from({ length: 6 }, (_, i) => result(`queued-${i}.parquet`));
    const sandboxes = await Promise.all(outs.map((out) => open([orders], { timeoutMs: 400, resultPaths: [out] })));
    const started = Date.now();
    const errors = await Promise.all(sandboxes.map((s, i) => failure(s.runToParquet(SLOW, {}, outs[i]))));
    for (const error of errors) {
      expect(error).toBeInstanceOf(SandboxInterruptedError);
      expect((error as SandboxInterruptedError).reason).toBe('timeout');
    }
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('close() during a query interrupts it and releases the instance afterwards', async () => {
    const out = result('closing.parquet');
    const sandbox = await Sandbox.open([orders], { threads: 1, resultPaths: [out] });
    const running = sandbox.runToParquet(SLOW, {}, out);
    await new Promise((r) => setTimeout(r, 100));
    sandbox.close();
    const error = await failure(running);
    expect(error).toBeInstanceOf(SandboxInterruptedError);
    await expect(sandbox.describe('SELECT 1', {})).rejects.toThrow(/closed/);
  });
});

describe('results at scale', () => {
  it('streams a 2M-row result to Parquet within a small memory limit', async () => {
    const out = result('big.parquet');
    const sandbox = await open([orders], { memoryLimit: '128MB', threads: 2, resultPaths: [out] });
    const r = await sandbox.runToParquet(
      "SELECT range AS n, md5(range::VARCHAR) AS h, o.customer FROM range(2000000) JOIN ws1.sales.orders o ON o.id = range % 10 WHERE o.id < 10",
      {},
      out,
    );
    expect(r.rowCount).toBe(2_000_000);
    expect(r.columns).toEqual([{ name: 'n', type: 'BIGINT' }, { name: 'h', type: 'VARCHAR' }, { name: 'customer', type: 'VARCHAR' }]);
    const check = (await fc.runAndReadAll(`SELECT count(*)::INTEGER AS n, count(DISTINCT h)::INTEGER AS d FROM read_parquet('${out}')`)).getRowObjectsJson();
    expect(check).toEqual([{ n: 2_000_000, d: 2_000_000 }]);
  });

  it('runs 10 sandboxes at once without them seeing each other', async () => {
    const views = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const file = await write(`SELECT ${i} AS owner, range AS n FROM range(${1000 * (i + 1)})`, at('lake', `tenant${i}`, 'c', 'd', 'p0.parquet'));
        return { name: [`tenant${i}`, 'c', 'd'], files: [file], columns: [{ name: 'owner', type: 'INTEGER' }, { name: 'n', type: 'BIGINT' }] } satisfies SandboxView;
      }),
    );
    const outcomes = await Promise.all(
      views.map(async (view, i) => {
        const out = result(`tenant${i}.parquet`);
        const sandbox = await open([view], { resultPaths: [out] });
        const r = await sandbox.runToParquet(`SELECT owner, count(*) AS rows, sum(n) AS total FROM tenant${i}.c.d GROUP BY owner`, {}, out);
        const other = (i + 1) % 10;
        const foreign = await failure(sandbox.describe(`SELECT * FROM tenant${other}.c.d`, {}));
        const foreignFile = await failure(runRawForTests(sandbox, `SELECT * FROM read_parquet('${views[other].files[0]}')`));
        return { i, r, rows: await read(out), foreign, foreignFile };
      }),
    );
    for (const { i, r, rows, foreign, foreignFile } of outcomes) {
      const count = 1000 * (i + 1);
      expect(r.rowCount).toBe(1);
      // sum() is a HUGEINT, which Parquet stores as DOUBLE.
      expect(r.columns).toEqual([{ name: 'owner', type: 'INTEGER' }, { name: 'rows', type: 'BIGINT' }, { name: 'total', type: 'DOUBLE' }]);
      expect(rows).toEqual([{ owner: i, rows: String(count), total: (count * (count - 1)) / 2 }]);
      expect(foreign.message).toMatch(/does not exist/);
      expect(foreignFile.message).toMatch(/Permission Error/);
    }
  });
});
