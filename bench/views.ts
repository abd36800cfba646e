// `npm run bench -- views`: materialized views over a dataset of 10 million rows (BENCH_ROWS overrides),
// loaded through the upload API as Parquet.
//  (a) a query over a materialized view of an aggregate versus the same query over the base dataset,
//      through the job service (submit -> succeeded), median of several runs;
//  (b) REFRESH MATERIALIZED VIEW (submit -> refresh job succeeded: plan, run, Parquet, statistics,
//      store, commit) versus raw DuckDB's `COPY (<select>) TO … (FORMAT parquet)` over the same
//      committed files with the same thread count, alternating, in the same run; the ratio (target <= 1.3x).
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { makeOrdersParquet, median, setUp, uploadParquet, type Api } from './lib/lake.ts';
import { closeConnections, requestJson } from './lib/http.ts';
import { startServer } from './lib/server.ts';
import { submitJob, waitForJob, type JobStatus } from './lib/jobs.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const THREADS = Number(process.env.BENCH_THREADS ?? 2);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const TARGET_RATIO = 1.3;
const DEFINITION = (from: string) => `SELECT category, count(*) AS n, sum(amount) AS total, avg(amount) AS mean, max(ts) AS last_at FROM ${from} GROUP BY category`;
const QUERY_MV = 'SELECT category, total FROM bench.agg.by_category WHERE n > 0 ORDER BY total DESC LIMIT 10';
const QUERY_BASE = 'SELECT category, sum(amount) AS total FROM bench.orders.daily GROUP BY category HAVING count(*) > 0 ORDER BY total DESC LIMIT 10';

const ms = (n: number) => `${n.toFixed(1)} ms`;
const list = (values: number[]) => values.map((v) => v.toFixed(0)).join(', ');

/** submit -> succeeded, in ms, with the job's status. */
async function timed(api: Api, sql: string): Promise<{ ms: number; status: JobStatus }> {
  const start = performance.now();
  const status = await waitForJob(api, await submitJob(api, sql));
  return { ms: performance.now() - start, status };
}

export async function run(): Promise<void> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'lakeport-views-bench-'));
  const dataDir = path.join(dir, 'server');
  await fsp.mkdir(dataDir);
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  const raw = await DuckDBInstance.create(':memory:', { threads: String(THREADS) });
  const rawConnection = await raw.connect();
  try {
    const file = path.join(dir, 'orders.parquet');
    process.stderr.write(`generating ${ROWS.toLocaleString()} rows of Parquet...\n`);
    await makeOrdersParquet(file, ROWS);
    const size = (await fsp.stat(file)).size;
    server = await startServer({
      env: {
        LAKEPORT_DATA_DIR: dataDir,
        LAKEPORT_JOB_WORKERS: '2',
        LAKEPORT_JOB_THREADS: String(THREADS),
        LAKEPORT_JOB_ISOLATION: process.env.BENCH_JOB_ISOLATION ?? 'process',
        LAKEPORT_ACCESS_TOKEN_TTL_SECONDS: '7200',
      },
    });
    const api = await setUp(server.url, server.adminToken);
    process.stderr.write(`uploading ${(size / 1e6).toFixed(0)} MB of Parquet through the upload API...\n`);
    const loaded = await uploadParquet(api, file, 'bench.orders.daily');
    if (loaded.rows !== ROWS) throw new Error(`committed ${loaded.rows} rows, expected ${ROWS}`);
    const staging = path.join(dataDir, 'lake', '_staging', loaded.contractId);
    const files = (await fsp.readdir(staging)).filter((f) => f.endsWith('.parquet')).map((f) => path.join(staging, f));
    if (files.length === 0) throw new Error(`no committed Parquet files under ${staging}`);

    process.stderr.write('creating the materialized view (its first refresh is the warm-up)...\n');
    const created = await timed(api, `CREATE MATERIALIZED VIEW bench.agg.by_category AS ${DEFINITION('bench.orders.daily')}`);
    const first = /job (job_\S+)$/.exec(await firstCell(api, created.status.execution_id))![1];
    await waitForJob(api, first);

    // (b) refresh vs raw COPY, alternating so load drift hits both alike (one warm-up each).
    process.stderr.write(`(b) REFRESH vs raw COPY: 1 warm-up + ${RUNS} runs each...\n`);
    const readFiles = `read_parquet([${files.map((f) => `'${f.replace(/'/g, "''")}'`).join(', ')}])`;
    const refreshMs: number[] = [];
    const refreshRunningMs: number[] = [];
    const refreshQueuedMs: number[] = [];
    const rawMs: number[] = [];
    for (let i = 0; i <= RUNS; i++) {
      const refresh = await timed(api, 'REFRESH MATERIALIZED VIEW bench.agg.by_category');
      const target = path.join(dir, `raw-${i}.parquet`);
      const start = performance.now();
      await rawConnection.run(`COPY (${DEFINITION(readFiles)}) TO '${target}' (FORMAT parquet)`);
      const r = performance.now() - start;
      await fsp.rm(target, { force: true });
      if (i === 0) continue;
      refreshMs.push(refresh.ms);
      refreshRunningMs.push(refresh.status.timings.running_ms ?? NaN);
      refreshQueuedMs.push(refresh.status.timings.queued_ms ?? NaN);
      rawMs.push(r);
    }

    // (a) query over the view vs over the base dataset
    process.stderr.write(`(a) query over the view vs the base dataset: 1 warm-up + ${RUNS} runs each...\n`);
    const viewMs: number[] = [];
    const baseMs: number[] = [];
    for (let i = 0; i <= RUNS; i++) {
      const v = await timed(api, QUERY_MV);
      const b = await timed(api, QUERY_BASE);
      if (v.status.row_count !== 10 || b.status.row_count !== 10) throw new Error(`expected 10 rows, got ${v.status.row_count} and ${b.status.row_count}`);
      if (i === 0) continue;
      viewMs.push(v.ms);
      baseMs.push(b.ms);
    }

    const refresh = median(refreshMs);
    const rawMedian = median(rawMs);
    const ratio = refresh / rawMedian;
    process.stdout.write(
      `\nLakeport materialized views benchmark: ${ROWS.toLocaleString()} rows (${(size / 1e6).toFixed(1)} MB Parquet, ${files.length} committed file(s)), ` +
        `jobs on ${THREADS} DuckDB threads (node ${process.version}, ${os.cpus().length} cores), metadata: ${server.database}\n` +
        `view: ${DEFINITION('bench.orders.daily')}\n` +
        `(a) ${QUERY_MV}\n` +
        `    over the materialized view: median ${ms(median(viewMs))}; runs ${list(viewMs)}\n` +
        `    over the base dataset (${QUERY_BASE}): median ${ms(median(baseMs))}; runs ${list(baseMs)}\n` +
        `    speed-up: ${(median(baseMs) / median(viewMs)).toFixed(1)}x\n` +
        `(b) REFRESH MATERIALIZED VIEW submit -> refresh job succeeded: median ${ms(refresh)} (queued_ms median ${ms(median(refreshQueuedMs))}, running_ms median ${ms(median(refreshRunningMs))}); runs ${list(refreshMs)}\n` +
        `    raw DuckDB COPY (<select>) TO … (FORMAT parquet), threads=${THREADS}, same files: median ${ms(rawMedian)}; runs ${list(rawMs)}\n` +
        `    ratio refresh/raw: ${ratio.toFixed(2)}x — target <= ${TARGET_RATIO}x: ${ratio <= TARGET_RATIO ? 'ok' : 'MISSED'} ` +
        `(fastest runs: ${(Math.min(...refreshMs) / Math.min(...rawMs)).toFixed(2)}x; 1-min load ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} cores)\n`,
    );
  } finally {
    rawConnection.closeSync();
    raw.closeSync();
    closeConnections();
    await server?.stop();
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

/** The first cell of a job's result (a statement's status line). */
async function firstCell(api: Api, id: string): Promise<string> {
  const page = await requestJson<{ data: unknown[][] }>(`${api.url}/jobs/api/v1/jobs/${id}/results?num_rows=1`, { headers: api.auth });
  return String(page.data[0][0]);
}
