// `npm run bench -- jobs`: the query job service on a dataset of 10 million rows (BENCH_ROWS overrides),
// loaded through the upload API as Parquet.
//  (a) fixed overhead: submit → status?wait → first results page of `SELECT 1` (median and p95 of 50
//      sequential runs), and jobs per second with 8 concurrent clients submitting `SELECT 1`-class jobs;
//  (b) an aggregate query (group-by over the whole dataset) through the service vs the same query in a
//      raw DuckDB (threads=2) over the very files the commit published, in the same run.
// Also printed: which metadata database the server used (DATABASE_URL set → PostgreSQL, else PGlite),
// the server's CPU time per job (whole process, and its main thread alone: the figures that hold up
// best on a shared, noisy machine), and how many jobs ran on a warm pooled sandbox engine (counted
// from the engines' work directories appearing under <data dir>/tmp/scratch/spill).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { makeOrdersParquet, median, percentile, setUp, uploadParquet, type Api } from './lib/lake.ts';
import { closeConnections, requestJson } from './lib/http.ts';
import { startServer } from './lib/server.ts';
import { submitJob, waitForJob, type JobStatus } from './lib/jobs.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const CLIENTS = 8;
const LATENCY_RUNS = 50;
const LATENCY_WARMUP = 5;
const THROUGHPUT_SECONDS = 10;
const AGGREGATE_RUNS = 5;
const TARGET = { overheadMs: 15, jobsPerSecond: 200, ratio: 1.3 };
const AGGREGATE = 'SELECT category, count(*), sum(amount), avg(amount) FROM bench.orders.daily GROUP BY category';
const RAW_AGGREGATE = (files: string[]) => `SELECT category, count(*), sum(amount), avg(amount) FROM read_parquet([${files.map((f) => `'${f.replace(/'/g, "''")}'`).join(', ')}]) GROUP BY category`;

const mb = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : `${(bytes / 1e6).toFixed(0)} MB`);
const ms = (n: number) => `${n.toFixed(1)} ms`;
const verdict = (ok: boolean) => (ok ? 'ok' : 'MISSED');

/** The pid of the server process (our child running `lakeport.cjs serve`). */
function serverPid(): number | undefined {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('lakeport.cjs')) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** Pids of the processes whose parent is `pid` (the server's query host). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** CPU time (user + system, ms) of the server with its query host process, and of its main thread, from /proc. */
function cpuMs(pid: number | undefined): { process: number; main: number } | undefined {
  if (pid === undefined) return undefined;
  const ticks = (file: string) => {
    const stat = fs.readFileSync(file, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  };
  try {
    const hz = 100; // USER_HZ on Linux
    const children = childrenOf(pid).reduce((sum, child) => sum + ticks(`/proc/${child}/stat`), 0);
    return { process: ((ticks(`/proc/${pid}/stat`) + children) * 1000) / hz, main: (ticks(`/proc/${pid}/task/${pid}/stat`) * 1000) / hz };
  } catch {
    return undefined;
  }
}

/** Server CPU per job between two cpuMs() readings. */
function cpuPerJob(before: ReturnType<typeof cpuMs>, after: ReturnType<typeof cpuMs>, jobs: number): string {
  if (!before || !after || jobs === 0) return 'server CPU n/a';
  return `server CPU per job ${((after.process - before.process) / jobs).toFixed(1)} ms (main thread ${((after.main - before.main) / jobs).toFixed(1)} ms)`;
}

/**
 * Counts sandbox engines the server creates: each has its own `lakeport-sandbox-*` work directory
 * under the spill directory. Jobs minus engines created = jobs served by a warm pooled engine.
 */
function watchEngines(spillDir: string) {
  fs.mkdirSync(spillDir, { recursive: true });
  const names = new Set<string>();
  const watchers: fs.FSWatcher[] = [];
  // Engines are made in the spill directory itself, or (jobs in a query host process) in its `<pid>/` directory.
  const watch = (dir: string) =>
    watchers.push(
      fs.watch(dir, (_event, name) => {
        const entry = String(name ?? '');
        if (entry.startsWith('lakeport-sandbox-')) names.add(path.join(dir, entry));
        else if (/^\d+$/.test(entry) && dir === spillDir && fs.existsSync(path.join(dir, entry))) watch(path.join(dir, entry));
      }),
    );
  watch(spillDir);
  return {
    created: () => names.size,
    close: () => watchers.forEach((w) => w.close()),
  };
}

function hitRate(jobs: number, created: number): string {
  if (jobs === 0) return 'n/a';
  const hits = Math.max(0, jobs - created);
  return `${((100 * hits) / jobs).toFixed(1)}% (${hits} of ${jobs} jobs on a warm engine, ${created} engine(s) created)`;
}

/** submit → succeeded → first page, in ms; checks the page holds the expected first row. */
async function roundTrip(api: Api, sql: string, expectFirst?: unknown[]): Promise<number> {
  const start = performance.now();
  const id = await submitJob(api, sql);
  await waitForJob(api, id);
  const page = await requestJson<{ data: unknown[][] }>(`${api.url}/jobs/api/v1/jobs/${id}/results?num_rows=100`, { headers: api.auth });
  const elapsed = performance.now() - start;
  if (expectFirst && JSON.stringify(page.data[0]) !== JSON.stringify(expectFirst)) throw new Error(`job ${id}: first row ${JSON.stringify(page.data[0])}, expected ${JSON.stringify(expectFirst)}`);
  return elapsed;
}

/** `clients` loops, each submitting a job and long-polling it to success, for `seconds`. */
async function throughput(api: Api, clients: number, seconds: number) {
  const deadline = performance.now() + seconds * 1000;
  const start = performance.now();
  const cpu = process.cpuUsage();
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let n = 0; performance.now() < deadline; n++) {
        const t = performance.now();
        await waitForJob(api, await submitJob(api, `SELECT ${client * 1_000_000 + n} AS n`));
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  const clientCpuMs = (used.user + used.system) / 1000 / latencies.length;
  return { jobs: latencies.length, elapsed, perSecond: latencies.length / elapsed, median: median(latencies), p95: percentile(latencies, 0.95), clientCpuMs };
}

async function rawDuckDb(files: string[]) {
  const db = await DuckDBInstance.create(':memory:', { threads: '2' });
  const c = await db.connect();
  return {
    async run(): Promise<{ ms: number; rows: number }> {
      const start = performance.now();
      const reader = await c.runAndReadAll(RAW_AGGREGATE(files));
      return { ms: performance.now() - start, rows: reader.currentRowCount };
    },
    close() {
      c.closeSync();
      db.closeSync();
    },
  };
}

export async function run(): Promise<void> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'lakeport-jobs-bench-'));
  // Our own data dir, so the committed files can be found (startServer's env is applied last).
  const dataDir = path.join(dir, 'server');
  await fsp.mkdir(dataDir);
  const loadBefore = os.loadavg();
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let engines: ReturnType<typeof watchEngines> | undefined;
  try {
    const file = path.join(dir, 'orders.parquet');
    process.stderr.write(`generating ${ROWS.toLocaleString()} rows of Parquet...\n`);
    await makeOrdersParquet(file, ROWS);
    const size = (await fsp.stat(file)).size;

    server = await startServer({
      env: {
        LAKEPORT_DATA_DIR: dataDir,
        LAKEPORT_JOB_WORKERS: String(CLIENTS),
        // One identity's clients: let them use every slot, as before per-identity shares.
        LAKEPORT_JOBS_PER_IDENTITY: String(CLIENTS),
        LAKEPORT_JOB_ISOLATION: process.env.BENCH_JOB_ISOLATION ?? 'process',
        LAKEPORT_ACCESS_TOKEN_TTL_SECONDS: '7200',
      },
    });
    engines = watchEngines(path.join(dataDir, 'tmp', 'scratch', 'spill'));
    const pid = serverPid();
    const peakAtStart = await server.peakRssBytes();
    const api = await setUp(server.url, server.adminToken);
    process.stderr.write(`uploading ${(size / 1e6).toFixed(0)} MB of Parquet through the upload API...\n`);
    const loaded = await uploadParquet(api, file, 'bench.orders.daily');
    if (loaded.rows !== ROWS) throw new Error(`committed ${loaded.rows} rows, expected ${ROWS}`);
    const staging = path.join(dataDir, 'lake', '_staging', loaded.contractId);
    const files = (await fsp.readdir(staging)).filter((f) => f.endsWith('.parquet')).map((f) => path.join(staging, f));
    if (files.length === 0) throw new Error(`no committed Parquet files under ${staging}`);
    const peakAfterUpload = await server.peakRssBytes();

    // (a) fixed overhead
    process.stderr.write(`(a) SELECT 1 latency: ${LATENCY_WARMUP} warm-up + ${LATENCY_RUNS} runs...\n`);
    for (let i = 0; i < LATENCY_WARMUP; i++) await roundTrip(api, 'SELECT 1', [1]);
    const latencies: number[] = [];
    const enginesBeforeLatency = engines.created();
    const cpuBeforeLatency = cpuMs(pid);
    for (let i = 0; i < LATENCY_RUNS; i++) latencies.push(await roundTrip(api, 'SELECT 1', [1]));
    const cpuAfterLatency = cpuMs(pid);
    const enginesLatency = engines.created() - enginesBeforeLatency;
    // The same through a view over the dataset's files (the sandbox opens them), for comparison.
    const datasetLatencies: number[] = [];
    for (let i = 0; i < 20 + 2; i++) {
      const t = await roundTrip(api, 'SELECT id FROM bench.orders.daily WHERE id = 0');
      if (i >= 2) datasetLatencies.push(t);
    }
    process.stderr.write(`(a) throughput: ${CLIENTS} clients for ${THROUGHPUT_SECONDS} s...\n`);
    const loadAtThroughput = os.loadavg()[0];
    const enginesBeforeThroughput = engines.created();
    const cpuBeforeThroughput = cpuMs(pid);
    const tp = await throughput(api, CLIENTS, THROUGHPUT_SECONDS);
    const cpuAfterThroughput = cpuMs(pid);
    const enginesThroughput = engines.created() - enginesBeforeThroughput;
    const peakAfterOverhead = await server.peakRssBytes();

    // (b) aggregate: service vs raw DuckDB on the same files, alternating so load drift hits both alike
    process.stderr.write(`(b) aggregate: 1 warm-up + ${AGGREGATE_RUNS} runs each, service and raw DuckDB alternating...\n`);
    const raw = await rawDuckDb(files);
    const enginesBeforeAggregate = engines.created();
    const serviceMs: number[] = [];
    const serviceRunningMs: number[] = [];
    const rawMs: number[] = [];
    try {
      for (let i = 0; i <= AGGREGATE_RUNS; i++) {
        const start = performance.now();
        const status = await waitForJob(api, await submitJob(api, AGGREGATE));
        const s = performance.now() - start;
        if (status.row_count !== 100) throw new Error(`aggregate returned ${status.row_count} rows, expected 100`);
        const r = await raw.run();
        if (r.rows !== 100) throw new Error(`raw aggregate returned ${r.rows} rows, expected 100`);
        if (i === 0) continue;
        serviceMs.push(s);
        serviceRunningMs.push(status.timings.running_ms ?? NaN);
        rawMs.push(r.ms);
      }
    } finally {
      raw.close();
    }
    const enginesAggregate = engines.created() - enginesBeforeAggregate;
    const peak = await server.peakRssBytes();
    const loadAfter = os.loadavg();

    const overhead = median(latencies);
    const service = median(serviceMs);
    const rawMedian = median(rawMs);
    const ratio = service / rawMedian;
    process.stdout.write(
      `\nLakeport jobs benchmark: ${ROWS.toLocaleString()} rows (${(size / 1e6).toFixed(1)} MB Parquet, ${files.length} committed file(s)), ` +
        `${CLIENTS} job workers, queries ${process.env.BENCH_JOB_ISOLATION === 'inline' ? 'in the server process' : 'in a query host process (BENCH_JOB_ISOLATION=inline: in the server)'} (node ${process.version}, ${os.cpus().length} cores)\n` +
        `metadata database: ${server.database}${server.database === 'PGlite' ? '' : ' (a fresh database beside the one DATABASE_URL names, dropped afterwards)'}\n` +
        `load average 1/5/15 min: ${loadBefore.map((l) => l.toFixed(2)).join(' ')} before, ${loadAfter.map((l) => l.toFixed(2)).join(' ')} after\n` +
        `upload (footer negotiate + accept + data + commit): ${loaded.seconds.toFixed(1)} s\n` +
        `(a) SELECT 1 submit -> succeeded -> first page: median ${ms(overhead)}, p95 ${ms(percentile(latencies, 0.95))}, min ${ms(Math.min(...latencies))} ` +
        `(${LATENCY_RUNS} runs) — target <= ${TARGET.overheadMs} ms: ${verdict(overhead <= TARGET.overheadMs)}\n` +
        `    ${cpuPerJob(cpuBeforeLatency, cpuAfterLatency, LATENCY_RUNS)}; sandbox pool hit rate ${hitRate(LATENCY_RUNS, enginesLatency)}\n` +
        `    point lookup on the dataset (SELECT id … WHERE id = 0), same round trip: median ${ms(median(datasetLatencies))}, p95 ${ms(percentile(datasetLatencies, 0.95))} (20 runs)\n` +
        `(a) ${CLIENTS} concurrent clients, SELECT <n>: ${tp.jobs} jobs in ${tp.elapsed.toFixed(1)} s = ${tp.perSecond.toFixed(1)} jobs/s ` +
        `(per job median ${ms(tp.median)}, p95 ${ms(tp.p95)}; 1-min load ${loadAtThroughput.toFixed(2)} at start) — target >= ${TARGET.jobsPerSecond} jobs/s: ${verdict(tp.perSecond >= TARGET.jobsPerSecond)}\n` +
        `    ${cpuPerJob(cpuBeforeThroughput, cpuAfterThroughput, tp.jobs)}; client CPU per job ${ms(tp.clientCpuMs)}; sandbox pool hit rate ${hitRate(tp.jobs, enginesThroughput)}\n` +
        `(b) ${AGGREGATE}\n` +
        `    service submit -> succeeded: median ${ms(service)} (worker running_ms median ${ms(median(serviceRunningMs))}); runs ${serviceMs.map((v) => v.toFixed(0)).join(', ')}\n` +
        `    raw DuckDB (threads=2, read_parquet of the same files): median ${ms(rawMedian)}; runs ${rawMs.map((v) => v.toFixed(0)).join(', ')}\n` +
        `    ratio service/raw: ${ratio.toFixed(2)}x — target <= ${TARGET.ratio}x: ${verdict(ratio <= TARGET.ratio)}; sandbox pool hit rate ${hitRate(AGGREGATE_RUNS + 1, enginesAggregate)}\n` +
        `peak server memory (VmHWM): ${mb(peak)} (${mb(peakAtStart)} once started, ${mb(peakAfterUpload)} after the upload, ${mb(peakAfterOverhead)} after (a))\n`,
    );
  } finally {
    closeConnections();
    engines?.close();
    await server?.stop();
    await fsp.rm(dir, { recursive: true, force: true });
  }
}
