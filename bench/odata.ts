// `npm run bench -- odata`: the OData rows endpoint on a dataset of 1 million rows (BENCH_ROWS
// overrides), uploaded through the API, next to raw DuckDB writing the same rows with its own JSON
// writer (`COPY (…) TO … (FORMAT json)`) in the same run:
//  (a) full pages ($top=25000) of a filter and a select, following @odata.nextLink to the end;
//  (b) an $apply groupby with aggregates vs the same GROUP BY written to JSON by DuckDB.
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { PageReader, type Client } from './lib/page-reader.ts';
import { startServer } from './lib/server.ts';
import { median, setUp, uploadParquet, type Api } from './lib/lake.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const RUNS = 5;
/** Reads before the measured ones: a server answers BI refreshes warm (JIT, caches, PGlite's WebAssembly tiered up). */
const WARM_UP_READS = 2;
const TARGET_RATIO = 0.5;
const FILTER = 'amount gt 500 and category ne \'cat_07\'';
const SELECT = 'id,category,amount,ts';
const ROW_START = '{"id":';
const APPLY = 'groupby((category),aggregate(amount with sum as total,amount with average as mean,$count as n))';
const RAW_FILTERED = `SELECT id, category, amount, strftime(ts, '%Y-%m-%dT%H:%M:%S.%fZ') AS ts FROM src WHERE amount > 500 AND category <> 'cat_07'`;
const RAW_GROUPED = 'SELECT category, sum(amount) AS total, avg(amount) AS mean, count(*) AS n FROM src GROUP BY category ORDER BY category';

async function makeParquet(file: string) {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run(`COPY (
      SELECT i AS id, 'cat_' || lpad(CAST(i % 100 AS VARCHAR), 2, '0') AS category,
             round(random() * 1000, 2) AS amount, TIMESTAMP '2024-01-01' + to_seconds(i) AS ts
      FROM range(${ROWS}) t(i)) TO '${file}' (FORMAT parquet)`);
  c.closeSync();
  db.closeSync();
}

/**
 * How pages are fetched (BENCH_CLIENT). The client shares the machine's two cores with the server:
 * - `http` (default): Node's http.request over a keep-alive agent (bench/lib/http.ts);
 * - `fetch`: fetch(), as a script would (about twice the client's CPU).
 */
const CLIENT = (process.env.BENCH_CLIENT ?? 'http') as Client;
if (!['http', 'fetch'].includes(CLIENT)) throw new Error(`BENCH_CLIENT must be http or fetch, not ${CLIENT}`);

const rowsUrl = (api: Api, query: string) => `${api.url}/odata/api/v4/bench/orders/daily?${query}`;

async function rawDuckDb(file: string, dir: string) {
  const db = await DuckDBInstance.create(':memory:', { threads: '2' });
  const c = await db.connect();
  await c.run(`CREATE VIEW src AS SELECT * FROM read_parquet('${file}')`);
  return {
    async write(sql: string): Promise<{ rows: number; seconds: number }> {
      const out = path.join(dir, `raw-${crypto.randomUUID()}.json`);
      const start = performance.now();
      const reader = await c.runAndReadAll(`COPY (${sql}) TO '${out}' (FORMAT json)`);
      const seconds = (performance.now() - start) / 1000;
      await fsp.rm(out);
      return { rows: Number(reader.getRows()[0][0]), seconds };
    },
    close() {
      c.closeSync();
      db.closeSync();
    },
  };
}

export async function run(): Promise<void> {
  const loadBefore = os.loadavg()[0];
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'lakeport-odata-bench-'));
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  const reader = new PageReader();
  try {
    const file = path.join(dir, 'orders.parquet');
    process.stderr.write(`generating ${ROWS.toLocaleString()} rows of Parquet...\n`);
    await makeParquet(file);
    server = await startServer({ env: { LAKEPORT_ACCESS_TOKEN_TTL_SECONDS: '7200' } });
    const api = await setUp(server.url, server.adminToken);
    const loaded = await uploadParquet(api, file, 'bench.orders.daily');
    if (loaded.rows !== ROWS) throw new Error(`committed ${loaded.rows} rows, expected ${ROWS}`);
    const raw = await rawDuckDb(file, dir);

    const pagesQuery = new URLSearchParams({ $filter: FILTER, $select: SELECT, $top: '25000' }).toString();
    const applyQuery = new URLSearchParams({ $apply: APPLY, $top: '25000' }).toString();
    // The first read checks that the service returns exactly the rows DuckDB writes.
    const checked = await reader.read({ url: rowsUrl(api, pagesQuery), headers: api.auth, client: CLIENT, rowStart: ROW_START });
    const written = (await raw.write(RAW_FILTERED)).rows;
    if (checked.rows !== written) throw new Error(`service returned ${checked.rows} rows, DuckDB wrote ${written}`);
    const cold = written / checked.seconds;
    for (let i = 1; i < WARM_UP_READS; i++) await reader.read({ url: rowsUrl(api, pagesQuery), headers: api.auth, client: CLIENT });

    // Service and DuckDB alternate, so load drift hits both alike.
    const service: number[] = [];
    const duck: number[] = [];
    const clientCpu: number[] = [];
    let served = { pages: 0, bytes: 0 };
    for (let i = 0; i < RUNS; i++) {
      const s = await reader.read({ url: rowsUrl(api, pagesQuery), headers: api.auth, client: CLIENT });
      const d = await raw.write(RAW_FILTERED);
      if (s.bytes !== checked.bytes || d.rows !== written) throw new Error(`run ${i + 1} read ${s.bytes} bytes (checked: ${checked.bytes}), DuckDB wrote ${d.rows} rows`);
      served = s;
      service.push(written / s.seconds);
      duck.push(d.rows / d.seconds);
      clientCpu.push(s.clientCpuMs);
    }
    const applyService: number[] = [];
    const applyDuck: number[] = [];
    for (let i = 0; i < RUNS + 1; i++) {
      const s = await reader.read({ url: rowsUrl(api, applyQuery), headers: api.auth, client: CLIENT, rowStart: '{"category":' });
      const d = await raw.write(RAW_GROUPED);
      if (s.rows !== d.rows) throw new Error(`$apply returned ${s.rows} groups, DuckDB wrote ${d.rows}`);
      if (i > 0) {
        applyService.push(s.seconds * 1000);
        applyDuck.push(d.seconds * 1000);
      }
    }
    raw.close();

    const rps = median(service);
    const rawRps = median(duck);
    const ratio = rps / rawRps;
    const out = [
      `OData rows (client: ${CLIENT}): ${ROWS.toLocaleString()}-row dataset, $filter=${FILTER}, $select=${SELECT}, $top=25000 (median of ${RUNS})`,
      `  service (all ${served.pages} pages via nextLink, ${written.toLocaleString()} rows, ${(served.bytes / 1e6).toFixed(0)} MB JSON): ${Math.round(rps).toLocaleString()} rows/s (client CPU ${median(clientCpu).toFixed(0)} ms a read)`,
      `  raw DuckDB COPY … TO json (same rows):                  ${Math.round(rawRps).toLocaleString()} rows/s`,
      `  ratio service / DuckDB: ${ratio.toFixed(2)}x (target >= ${TARGET_RATIO}x) ${ratio >= TARGET_RATIO ? 'ok' : 'MISSED'}; runs ${service.map((s, i) => (s / duck[i]).toFixed(2)).join(' ')}`,
      `  the first (cold) read after the upload, not counted: ${Math.round(cold).toLocaleString()} rows/s (${(cold / rawRps).toFixed(2)}x)`,
      `OData $apply: ${APPLY} (median of ${RUNS})`,
      `  service ${median(applyService).toFixed(1)} ms, raw DuckDB GROUP BY → json ${median(applyDuck).toFixed(1)} ms, ratio ${(median(applyService) / median(applyDuck)).toFixed(2)}x`,
      `  peak server memory ${((await server.peakRssBytes()) ?? 0) / 1e6 | 0} MB; 1-min load average ${loadBefore.toFixed(2)} before, ${os.loadavg()[0].toFixed(2)} after`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await reader.close();
    await server?.stop();
    await fsp.rm(dir, { recursive: true, force: true });
  }
}
