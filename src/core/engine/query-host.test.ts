import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QueryEngineCrashedError } from './query-engine.ts';
import { ProcessQueryEngine } from './query-host.ts';
import { SandboxInterruptedError, SandboxQueryError } from './sandbox.ts';

let dir: string;
const engines: ProcessQueryEngine[] = [];

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-host-'));
});
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function engine(budgetBytes = 2 * 2 ** 30, concurrency = 2): ProcessQueryEngine {
  const e = new ProcessQueryEngine({ engine: { threads: 1, memoryLimit: '256MB', tempDirectory: path.join(dir, 'spill') }, memoryBudgetBytes: budgetBytes, concurrency });
  engines.push(e);
  return e;
}

let n = 0;
const request = (sql: string, extra: Record<string, unknown> = {}) => ({ identity: 'alice', views: [], sql, params: {}, resultPath: path.join(dir, `r${n++}.parquet`), ...extra });

/** Peak resident memory of a process, from /proc (bytes). */
function peakRss(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmHWM:'))!;
  return Number(line.split(/\s+/)[1]) * 1024;
}

describe('job queries in a child process', () => {
  it('runs a query and writes its result where it was asked', async () => {
    const e = engine();
    const req = request('SELECT range AS n FROM range(1000)');
    const result = await e.run(req).done;
    expect(result.rowCount).toBe(1000);
    expect(fs.statSync(req.resultPath).size).toBeGreaterThan(0);
    expect(e.pid).not.toBe(process.pid);
  });

  it('reports its sandboxes and resident memory, without starting a process to do so', async () => {
    const e = engine();
    expect(await e.stats()).toEqual({ idle: 0, leased: 0, processResidentBytes: 0 });
    expect(e.pid).toBeUndefined();
    await e.run(request('SELECT 1 AS one')).done;
    const stats = await e.stats();
    // The query's engine went back to the child's pool, warm.
    expect(stats).toMatchObject({ idle: 1, leased: 0 });
    expect(stats.processResidentBytes).toBeGreaterThan(10 * 2 ** 20);
  });

  it('builds logical views (SandboxView.sql) in the child, and reports one that no longer binds as a query error naming it', async () => {
    const e = engine();
    const views = [
      { name: ['ws', 'c', 'v'], columns: [{ name: 'n', type: 'BIGINT' }], files: [], sql: 'SELECT range AS n FROM range(5)', label: 'ws.c.v' },
      { name: ['ws', 'c', 'w'], columns: [{ name: 'n', type: 'BIGINT' }], files: [], sql: 'SELECT n * 2 AS n FROM ws.c.v', label: 'ws.c.w' },
    ];
    const ok = await e.run(request('SELECT sum(n) AS s FROM ws.c.w', { views })).done;
    expect(ok.rowCount).toBe(1);
    const broken = [{ name: ['ws', 'c', 'v'], columns: [{ name: 'gone', type: 'BIGINT' }], files: [], sql: 'SELECT 1 AS n', label: 'ws.c.v' }];
    const failed = e.run(request('SELECT * FROM ws.c.v', { views: broken })).done;
    await expect(failed).rejects.toBeInstanceOf(SandboxQueryError);
    await expect(failed).rejects.toThrow(/^View ws\.c\.v: .*gone/);
  });

  it('survives a query that crashes DuckDB natively, and the next query runs in a new process', async () => {
    const e = engine();
    await e.run(request('SELECT 1')).done;
    const first = e.pid;
    // JSON nested 100 000 levels deep, built at run time so no text limit sees it: SIGSEGV in DuckDB.
    const crash = e.run(request("SELECT json_structure(repeat('[', 100000) || repeat(']', 100000)) AS s"));
    await expect(crash.done).rejects.toBeInstanceOf(QueryEngineCrashedError);
    const after = await e.run(request('SELECT 42 AS answer')).done;
    expect(after.rowCount).toBe(1);
    expect(e.pid).not.toBe(first);
    expect(e.starts).toBe(2);
  });

  it('keeps all queries together within the memory budget: an allocation past it fails as Out of Memory', async () => {
    const budget = 1.5 * 2 ** 30;
    const e = engine(budget);
    await e.run(request('SELECT 1')).done;
    const pid = e.pid!;
    // DuckDB's memory_limit does not count this 2 GB string; the process limit does.
    const big = e.run(request("SELECT length(repeat('x', 2000000000)) AS n"));
    await expect(big.done).rejects.toSatisfy((error: unknown) => error instanceof SandboxQueryError && /memory/i.test(error.message));
    expect(e.pid).toBe(pid); // refused, not crashed
    expect(peakRss(pid)).toBeLessThan(budget);
  });

  it('interrupts a never-ending query with the reason given', async () => {
    const e = engine();
    const run = e.run(request('SELECT count(*) FROM range(1000000000000) a'));
    setTimeout(() => run.interrupt('timeout'), 300);
    await expect(run.done).rejects.toSatisfy((error: unknown) => error instanceof SandboxInterruptedError && error.reason === 'timeout');
  });

  it('stops a query whose result grows past its size limit', async () => {
    const e = engine();
    const run = e.run(request("SELECT range AS n, md5(range::VARCHAR) AS h FROM range(50000000)", { maxResultBytes: 2_000_000 }));
    await expect(run.done).rejects.toSatisfy((error: unknown) => error instanceof SandboxInterruptedError && error.reason === 'too_large');
  });

  it('gives the child none of the server environment but what Node needs', async () => {
    process.env.LAKEPORT_TEST_SECRET = 'do-not-pass';
    try {
      const e = engine();
      await e.run(request('SELECT 1')).done;
      const environ = fs.readFileSync(`/proc/${e.pid}/environ`, 'utf8').split('\0').filter(Boolean);
      const names = environ.map((v) => v.split('=')[0]);
      expect(names).toContain('UV_THREADPOOL_SIZE');
      // Node's own IPC variables and the shell's PWD besides; nothing of the server's configuration.
      expect(names.filter((name) => !['HOME', 'PATH', 'TMPDIR', 'UV_THREADPOOL_SIZE', 'PWD'].includes(name) && !name.startsWith('NODE_CHANNEL_'))).toEqual([]);
    } finally {
      delete process.env.LAKEPORT_TEST_SECRET;
    }
  });

  it('removes the spill directory of a child that died', async () => {
    const e = engine();
    await e.run(request('SELECT 1')).done;
    const pid = e.pid!;
    fs.mkdirSync(path.join(dir, 'spill', String(pid)), { recursive: true });
    process.kill(pid, 'SIGKILL');
    await expect.poll(() => fs.existsSync(path.join(dir, 'spill', String(pid)))).toBe(false);
  });
});
