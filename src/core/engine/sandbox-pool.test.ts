import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.ts';
import { SandboxPool, type SandboxPoolOptions } from './sandbox-pool.ts';
import { SandboxInterruptedError, SandboxQueryError, runRawForTests, type Sandbox, type SandboxEngine, type SandboxView } from './sandbox.ts';
import { failure } from '../../../test/async.ts';
import { readParquet, writeParquet } from '../../../test/parquet.ts';

const dir = tempDir('lakeport-sandbox-pool-test-');
const at = (...parts: string[]) => path.join(dir.dir, ...parts);
let free: DuckDBInstance;
let fc: DuckDBConnection;
const pools: SandboxPool[] = [];

const SLOW = 'SELECT sum(range) AS s FROM range(1000000000000)';
const columns = [{ name: 'id', type: 'BIGINT' }, { name: 'who', type: 'VARCHAR' }];
let orders: SandboxView;
let ordersV2: SandboxView;
let customers: SandboxView;
let secret: string;

const write = (sql: string, file: string) => writeParquet(fc, sql, file);
const read = (file: string) => readParquet(fc, file);

function pool(options: Partial<Omit<SandboxPoolOptions, 'engine'>> = {}): SandboxPool {
  const p = new SandboxPool({ engine: { threads: 1, memoryLimit: '256MB', tempDirectory: at('spill') }, ...options });
  pools.push(p);
  return p;
}

const engineOf = (sandbox: Sandbox) => (sandbox as unknown as { engine: SandboxEngine }).engine;
const connectionOf = (sandbox: Sandbox) => (sandbox as unknown as { connection: DuckDBConnection }).connection;

let resultCounter = 0;
function out(): string {
  fs.mkdirSync(at('results'), { recursive: true });
  return at('results', `r${resultCounter++}.parquet`);
}

/** Runs one job on a pooled sandbox and gives it back; returns the engine it ran on and its rows. */
async function job(p: SandboxPool, identity: string, views: SandboxView[], sql: string) {
  const sandbox = await p.acquire(identity, views);
  const engine = engineOf(sandbox);
  try {
    const file = out();
    await sandbox.runToParquet(sql, {}, file);
    return { engine, rows: await read(file) };
  } finally {
    sandbox.close();
  }
}

beforeAll(async () => {
  free = await DuckDBInstance.create(':memory:');
  fc = await free.connect();
  await fc.run('SET enable_external_file_cache = false');
  const o1 = await write(`SELECT range AS id, 'v1' AS who FROM range(3)`, at('lake', 'ws1', 'sales', 'orders', 'a.parquet'));
  const o2 = await write(`SELECT range AS id, 'v2' AS who FROM range(5)`, at('lake', 'ws1', 'sales', 'orders', 'b.parquet'));
  const c1 = await write(`SELECT range AS id, 'c' AS who FROM range(2)`, at('lake', 'ws1', 'crm', 'customers', 'a.parquet'));
  secret = await write(`SELECT 'top secret' AS s`, at('lake', 'ws9', 'hr', 'salaries', 'a.parquet'));
  orders = { name: ['ws1', 'sales', 'orders'], files: [o1], columns };
  ordersV2 = { name: ['ws1', 'sales', 'orders'], files: [o1, o2], columns };
  customers = { name: ['ws1', 'crm', 'customers'], files: [c1], columns };
});

afterEach(async () => {
  for (const p of pools.splice(0)) await p.drain();
});

afterAll(() => {
  fc.closeSync();
  free.closeSync();
  dir.remove();
  for (const f of ['/tmp/evil-pool.csv']) fs.rmSync(f, { force: true });
});

describe('reuse', () => {
  it('lends a warm engine to the next job of the same identity over the same views, on a fresh connection', async () => {
    const p = pool();
    const first = await p.acquire('alice', [orders]);
    const firstEngine = engineOf(first);
    const firstConnection = connectionOf(first);
    await first.runToParquet('SELECT count(*) AS n FROM ws1.sales.orders', {}, out());
    first.close();
    const second = await p.acquire('alice', [orders]);
    expect(engineOf(second)).toBe(firstEngine);
    expect(connectionOf(second)).not.toBe(firstConnection);
    const file = out();
    await second.runToParquet('SELECT count(*) AS n FROM ws1.sales.orders', {}, file);
    second.close();
    expect(await read(file)).toEqual([{ n: '3' }]);
    expect(p.stats()).toMatchObject({ acquired: 2, hits: 1, misses: 1, idle: 1, leased: 0 });
  });

  it('never lends one engine to two jobs at once', async () => {
    const p = pool();
    const a = await p.acquire('alice', [orders]);
    const b = await p.acquire('alice', [orders]);
    expect(engineOf(a)).not.toBe(engineOf(b));
    a.close();
    b.close();
    expect(p.stats()).toMatchObject({ misses: 2, idle: 2 });
  });

  it('leaves no result file on the engine for the next job', async () => {
    const p = pool();
    const first = await p.acquire('alice', [orders]);
    const engine = engineOf(first);
    const target = out();
    await first.runToParquet("SELECT 'first job' AS x", {}, target);
    first.close();
    expect(fs.existsSync(engine.privateResult)).toBe(false);
    const second = await p.acquire('alice', [orders]);
    expect(engineOf(second)).toBe(engine);
    // The previous result is not where DuckDB could read it.
    // (A missing file makes DuckDB try it as a glob, which the lock-down refuses.)
    await expect(runRawForTests(second, `SELECT * FROM read_parquet('${engine.privateResult}')`)).rejects.toThrow(/No files found|Permission Error/);
    await expect(runRawForTests(second, `SELECT * FROM read_parquet('${target}')`)).rejects.toThrow(/Permission Error/);
    second.close();
  });
});

describe('isolation', () => {
  it('never runs a job of one identity on an engine of another', async () => {
    const p = pool();
    const a = await job(p, 'alice', [orders], 'SELECT count(*) AS n FROM ws1.sales.orders');
    const b = await job(p, 'bob', [orders], 'SELECT count(*) AS n FROM ws1.sales.orders');
    expect(b.engine).not.toBe(a.engine);
    // Both stay idle; each identity gets its own back.
    expect((await job(p, 'alice', [orders], 'SELECT 1 AS x')).engine).toBe(a.engine);
    expect((await job(p, 'bob', [orders], 'SELECT 1 AS x')).engine).toBe(b.engine);
    // Names that would collide if joined naively are still two identities.
    const c = await job(p, 'alice\u0000x', [orders], 'SELECT 1 AS x');
    expect([a.engine, b.engine]).not.toContain(c.engine);
    expect(p.stats()).toMatchObject({ hits: 2, misses: 3 });
  });

  it('gives a job whose views differ (another grant) a fresh engine holding only its views', async () => {
    const p = pool();
    const narrow = await job(p, 'alice', [orders], 'SELECT 1 AS x');
    const wide = await job(p, 'alice', [orders, customers], 'SELECT count(*) AS n FROM ws1.crm.customers');
    expect(wide.engine).not.toBe(narrow.engine);
    expect(wide.rows).toEqual([{ n: '2' }]);
    // The narrow engine still has no customers view, nor access to its file.
    const again = await p.acquire('alice', [orders]);
    expect(engineOf(again)).toBe(narrow.engine);
    await expect(again.describe('SELECT * FROM ws1.crm.customers', {})).rejects.toThrow(/does not exist/);
    await expect(runRawForTests(again, `SELECT * FROM read_parquet('${customers.files[0]}')`)).rejects.toThrow(/Permission Error/);
    again.close();
    // The order of the views does not matter.
    expect((await job(p, 'alice', [customers, orders], 'SELECT 1 AS x')).engine).toBe(wide.engine);
  });

  it('gives a new snapshot (other files) a fresh engine and evicts the superseded one', async () => {
    const p = pool();
    const v1 = await job(p, 'alice', [orders], 'SELECT count(*) AS n FROM ws1.sales.orders');
    expect(v1.rows).toEqual([{ n: '3' }]);
    const v2 = await job(p, 'alice', [ordersV2], 'SELECT count(*) AS n FROM ws1.sales.orders');
    expect(v2.engine).not.toBe(v1.engine);
    expect(v2.rows).toEqual([{ n: '8' }]);
    expect(p.stats().evicted.superseded).toBe(1);
    expect(p.stats().idle).toBe(1);
    // Another identity's engines are not touched by alice's new snapshot.
    const bob = await job(p, 'bob', [orders], 'SELECT 1 AS x');
    await job(p, 'alice', [orders, customers], 'SELECT 1 AS x');
    expect((await job(p, 'bob', [orders], 'SELECT 1 AS x')).engine).toBe(bob.engine);
    // A changed column list is a new engine too.
    const renamed = await job(p, 'alice', [{ ...ordersV2, columns: [...columns, { name: 'extra', type: 'INTEGER' }] }], 'SELECT extra FROM ws1.sales.orders LIMIT 1');
    expect(renamed.engine).not.toBe(v2.engine);
  });

  it('still refuses files, settings and writes on a reused engine', async () => {
    const p = pool();
    for (const [sql, expected] of [
      ["SELECT * FROM read_csv('/etc/passwd')", /Permission Error/],
      ["SELECT * FROM read_text('/etc/passwd')", /Permission Error/],
      [`SELECT * FROM read_parquet('${secret}')`, /Permission Error/],
      ['SET enable_external_access = true', /configuration has been locked/],
      ["SET allowed_paths = ['/etc/passwd']", /configuration has been locked/],
      ['SET lock_configuration = false', /configuration has been locked/],
      ["SET memory_limit = '100GB'", /configuration has been locked/],
      ["COPY (SELECT 1) TO '/tmp/evil-pool.csv'", /Permission Error/],
      ["ATTACH '/tmp/evil-pool.db'", /Permission Error/],
    ] as [string, RegExp][]) {
      // An engine that has served a job; the refusal is tried on a later job's fresh connection.
      const warm = await job(p, 'alice', [orders], 'SELECT count(*) AS n FROM ws1.sales.orders');
      const sandbox = await p.acquire('alice', [orders]);
      expect(engineOf(sandbox)).toBe(warm.engine);
      const error = await failure(runRawForTests(sandbox, sql));
      expect(error, sql).toBeInstanceOf(SandboxQueryError);
      expect(error.message, sql).toMatch(expected);
      sandbox.close();
    }
    expect(fs.existsSync('/tmp/evil-pool.csv')).toBe(false);
    expect(fs.existsSync('/tmp/evil-pool.db')).toBe(false);
    // Through the job path, SET and file reads are refused as well, and the engine stays usable.
    const sandbox = await p.acquire('alice', [orders]);
    const engine = engineOf(sandbox);
    await expect(sandbox.runToParquet('SET threads = 8', {}, out())).rejects.toBeInstanceOf(SandboxQueryError);
    await expect(sandbox.runToParquet("SELECT * FROM read_csv('/etc/passwd')", {}, out())).rejects.toThrow(/Permission Error/);
    sandbox.close();
    // A Permission error retires the engine: the next job gets a new one, which works.
    const next = await job(p, 'alice', [orders], 'SELECT count(*) AS n FROM ws1.sales.orders');
    expect(next.engine).not.toBe(engine);
    expect(next.rows).toEqual([{ n: '3' }]);
  });

  it('has the lock-down on every connection of a reused engine', async () => {
    const p = pool();
    await job(p, 'alice', [orders], 'SELECT 1 AS x');
    const sandbox = await p.acquire('alice', [orders]);
    expect(p.stats().hits).toBe(1);
    const settings = await runRawForTests(
      sandbox,
      "SELECT current_setting('enable_external_access') AS e, current_setting('lock_configuration') AS l, current_setting('allowed_paths') AS p, current_setting('allowed_directories') AS d",
    );
    const engine = engineOf(sandbox);
    const [row] = settings as { e: boolean; l: boolean; p: string[]; d: string[] }[];
    expect({ ...row, p: [...row.p].sort() }).toEqual({ e: false, l: true, p: [...orders.files, engine.privateResult].sort(), d: [`${path.join(engine.workDirectory, 'spill')}/`] });
    sandbox.close();
  });
});

describe('interrupted and failed jobs', () => {
  it('retires an engine whose job timed out; the next job gets a fresh one that works', async () => {
    const p = pool();
    const sandbox = await p.acquire('alice', [orders], { timeoutMs: 300 });
    const engine = engineOf(sandbox);
    const error = await failure(sandbox.runToParquet(SLOW, {}, out()));
    expect(error).toBeInstanceOf(SandboxInterruptedError);
    expect((error as SandboxInterruptedError).reason).toBe('timeout');
    sandbox.close();
    expect(p.stats()).toMatchObject({ idle: 0, evicted: { discarded: 1 } });
    const next = await job(p, 'alice', [orders], 'SELECT count(*) AS n FROM ws1.sales.orders');
    expect(next.engine).not.toBe(engine);
    expect(next.rows).toEqual([{ n: '3' }]);
    await p.drain();
    expect(engine.isClosed).toBe(true);
  });

  it('retires an engine whose job was cancelled, also when closed while the query runs', async () => {
    const p = pool();
    const cancelled = await p.acquire('alice', [orders]);
    const running = cancelled.runToParquet(SLOW, {}, out());
    setTimeout(() => cancelled.interrupt(), 150);
    expect(await failure(running)).toBeInstanceOf(SandboxInterruptedError);
    cancelled.close();
    const closing = await p.acquire('alice', [orders]);
    const closingRun = closing.runToParquet(SLOW, {}, out());
    await new Promise((r) => setTimeout(r, 150));
    closing.close();
    expect(await failure(closingRun)).toBeInstanceOf(SandboxInterruptedError);
    expect(p.stats()).toMatchObject({ misses: 2, hits: 0, idle: 0, evicted: { discarded: 2 } });
    expect((await job(p, 'alice', [orders], 'SELECT 41 + 1 AS x')).rows).toEqual([{ x: 42 }]);
  });

  it('keeps an engine after a plain query error', async () => {
    const p = pool();
    const sandbox = await p.acquire('alice', [orders]);
    const engine = engineOf(sandbox);
    await expect(sandbox.runToParquet('SELECT nope FROM ws1.sales.orders', {}, out())).rejects.toThrow(/Binder Error/);
    await expect(sandbox.runToParquet('SELECT 1; SELECT 2', {}, out())).rejects.toBeInstanceOf(SandboxQueryError);
    sandbox.close();
    expect((await job(p, 'alice', [orders], 'SELECT 1 AS x')).engine).toBe(engine);
  });

  it('retires an engine that ran raw SQL (tests only) and after maxUses jobs', async () => {
    const p = pool({ maxUses: 2 });
    const sandbox = await p.acquire('alice', [orders]);
    await runRawForTests(sandbox, 'SELECT 1');
    sandbox.close();
    expect(p.stats().evicted.discarded).toBe(1);
    const a = await job(p, 'alice', [orders], 'SELECT 1 AS x');
    const b = await job(p, 'alice', [orders], 'SELECT 1 AS x');
    expect(b.engine).toBe(a.engine);
    expect(p.stats().evicted.uses).toBe(1);
    expect((await job(p, 'alice', [orders], 'SELECT 1 AS x')).engine).not.toBe(a.engine);
  });
});

describe('eviction', () => {
  it('closes idle engines after the TTL', async () => {
    const p = pool({ idleTtlMs: 1_000 });
    const a = await job(p, 'alice', [orders], 'SELECT 1 AS x');
    await p.sweep(Date.now() + 500);
    expect(p.stats().idle).toBe(1);
    await p.sweep(Date.now() + 1_500);
    expect(p.stats()).toMatchObject({ idle: 0, evicted: { ttl: 1 } });
    await p.drain();
    expect(a.engine.isClosed).toBe(true);
    expect(fs.existsSync(a.engine.workDirectory)).toBe(false);
    expect((await job(p, 'alice', [orders], 'SELECT 1 AS x')).engine).not.toBe(a.engine);
  });

  it('keeps at most maxIdle idle engines, closing the least recently used', async () => {
    const p = pool({ maxIdle: 2 });
    const a = await job(p, 'a', [orders], 'SELECT 1 AS x');
    const b = await job(p, 'b', [orders], 'SELECT 1 AS x');
    await job(p, 'a', [orders], 'SELECT 1 AS x'); // a is now the most recently used
    const c = await job(p, 'c', [orders], 'SELECT 1 AS x');
    expect(p.stats()).toMatchObject({ idle: 2, evicted: { count: 1 } });
    await p.drain();
    expect(b.engine.isClosed).toBe(true);
    expect(a.engine.isClosed).toBe(true); // drained
    expect(c.engine.isClosed).toBe(true);
  });

  it('closes idle engines over the memory limits at the next sweep', async () => {
    // An idle engine with only views holds (about) no DuckDB memory: a negative limit is one it is over.
    const perEngine = pool({ maxEngineIdleMemoryBytes: -1 });
    await job(perEngine, 'alice', [orders], 'SELECT 1 AS x');
    await perEngine.sweep();
    expect(perEngine.stats()).toMatchObject({ idle: 0, evicted: { memory: 1 } });
    const total = pool({ maxIdleMemoryBytes: -1 });
    await job(total, 'a', [orders], 'SELECT 1 AS x');
    await job(total, 'b', [orders], 'SELECT 1 AS x');
    await total.sweep();
    expect(total.stats().idle).toBe(0);
    const roomy = pool();
    await job(roomy, 'a', [orders], 'SELECT 1 AS x');
    await roomy.sweep();
    expect(roomy.stats().idle).toBe(1);
  });

  it('closes an identity’s idle engines on request, and every idle engine on drain', async () => {
    const p = pool();
    await job(p, 'alice', [orders], 'SELECT 1 AS x');
    await job(p, 'alice', [customers], 'SELECT 1 AS x');
    const bob = await job(p, 'bob', [orders], 'SELECT 1 AS x');
    expect(p.evictIdentity('alice')).toBe(2);
    expect(p.stats()).toMatchObject({ idle: 1, evicted: { identity: 2 } });
    // An engine in use when drained is closed when its job gives it back.
    const inUse = await p.acquire('carol', [orders]);
    await p.drain();
    expect(bob.engine.isClosed).toBe(true);
    expect(engineOf(inUse).isClosed).toBe(false);
    await inUse.runToParquet('SELECT 1 AS x', {}, out());
    inUse.close();
    expect(p.stats().idle).toBe(0);
    await p.drain();
    expect(engineOf(inUse).isClosed).toBe(true);
    // The pool still works after a drain.
    const after = await job(p, 'carol', [orders], 'SELECT 1 AS x');
    expect((await job(p, 'carol', [orders], 'SELECT 1 AS x')).engine).toBe(after.engine);
  });

  it('with maxIdle 0 closes every engine after its job', async () => {
    const p = pool({ maxIdle: 0 });
    const a = await job(p, 'alice', [orders], 'SELECT 1 AS x');
    const b = await job(p, 'alice', [orders], 'SELECT 1 AS x');
    expect(b.engine).not.toBe(a.engine);
    expect(p.stats()).toMatchObject({ hits: 0, misses: 2, idle: 0 });
  });
});
