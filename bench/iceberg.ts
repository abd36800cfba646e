// `npm run bench -- iceberg`: the Iceberg REST catalog (docs/iceberg.md).
//  (a) Python (pyarrow + fastavro, bench/iceberg_scan.py) scanning a dataset of 10 million rows
//      (BENCH_ROWS overrides), loaded through the upload API as Parquet, through the catalog: a token
//      from /auth/token, GET config, load the table, the metadata JSON, the Avro manifest list and
//      manifests, then every data file over the file route with Range requests. Next to it, in the
//      same process and run: pyarrow reading the same files by the same URLs and token without the
//      catalog steps (the peer of the target), and from the local files. Target: direct/catalog >= 0.9.
//      Row counts, the sum of `id` and the sum of `amount` must agree between all three. BENCH_PY_RUNS
//      rounds (7) after a warm-up; which HTTP reader goes first alternates.
//  (a') icebird (hyparam's reader over hyparquet) through the catalog, next to hyparquet reading the same
//      files over the same route and locally: icebird's own per-row cost, with the catalog calls' share.
//  (b) loading the table metadata of a dataset with 1 000 snapshots (BENCH_SNAPSHOTS), cold (built and
//      written) and warm (kept), over REST.
// icebird and hyparquet read in chunks of BENCH_CHUNK_ROWS (1 000 000), pyarrow a row group at a time,
// so memory stays bounded.
import { spawn } from 'node:child_process';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { asyncBufferFromFile, asyncBufferFromUrl, cachedAsyncBuffer, parquetMetadataAsync, parquetReadObjects, type AsyncBuffer } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { icebergManifests, icebergRead } from 'icebird';
import { json, makeOrdersParquet, median, setUp, uploadCsv, uploadParquet } from './lib/lake.ts';
import { closeConnections, requestJson } from './lib/http.ts';
import { startServer } from './lib/server.ts';
import { lakeportPython } from '../test/python.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const SNAPSHOTS = Number(process.env.BENCH_SNAPSHOTS ?? 1_000);
const CHUNK = Number(process.env.BENCH_CHUNK_ROWS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 2);
const PY_RUNS = Number(process.env.BENCH_PY_RUNS ?? 7);
const TARGET_RATIO = 0.9;
const TABLE = '/iceberg/v1/namespaces/bench%1Forders/tables/daily';
const HISTORY = '/iceberg/v1/namespaces/bench%1Fhist/tables/events';

const ms = (n: number) => `${n.toFixed(1)} ms`;
const s = (n: number) => `${(n / 1000).toFixed(2)} s`;

/** What a read gives back to check the readers agree: the rows and the sum of their ids. */
interface Scan {
  rows: number;
  idSum: bigint;
  ms: number;
}

function tally(scan: Omit<Scan, 'ms'>, rows: Record<string, unknown>[]) {
  scan.rows += rows.length;
  for (const row of rows) scan.idSum += BigInt(row.id as bigint | number);
}

/**
 * icebird 0.3.1 passes requestInit to its metadata and data file fetches but not to its manifest list
 * and manifest fetches: those get the same header (as a browser's cookie would carry it).
 */
function withAuthorization<T>(base: string, authorization: string, run: () => Promise<T>): Promise<T> {
  const original = globalThis.fetch;
  globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input instanceof Request ? input.url : input);
    const headers = new Headers(init?.headers);
    if (url.startsWith(base) && !headers.has('authorization')) headers.set('authorization', authorization);
    return original(input, { ...init, headers });
  };
  return run().finally(() => {
    globalThis.fetch = original;
  });
}

/** Load the table over REST, then icebird reads every row in chunks (each chunk from the same metadata). */
async function catalogScan(url: string, auth: Record<string, string>, total: number): Promise<Scan> {
  const start = performance.now();
  const scan = { rows: 0, idSum: 0n };
  const loaded = await requestJson<{ 'metadata-location': string; metadata: { location: string } }>(`${url}${TABLE}`, { headers: auth });
  const tableUrl = loaded.metadata.location;
  const metadataFileName = loaded['metadata-location'].slice(tableUrl.length + '/metadata/'.length);
  await withAuthorization(url, auth.authorization, async () => {
    const metadata = await (await fetch(loaded['metadata-location'], { headers: auth })).json();
    for (let from = 0; from < total; from += CHUNK) {
      tally(scan, await icebergRead({ tableUrl, metadataFileName, metadata, rowStart: from, rowEnd: Math.min(total, from + CHUNK), requestInit: { headers: auth } }));
    }
  });
  return { ...scan, ms: performance.now() - start };
}

/**
 * hyparquet over the given files, in the same chunks as icebird reads them (per file, by row range),
 * and with the same `columns` option icebird passes (every column: it makes hyparquet fetch each
 * column chunk by itself, so both readers make the same requests for the data).
 */
async function directScan(files: { open: () => Promise<AsyncBuffer>; rows: number }[], columns: string[]): Promise<Scan> {
  const start = performance.now();
  const scan = { rows: 0, idSum: 0n };
  for (const file of files) {
    for (let from = 0; from < file.rows; from += CHUNK) {
      const buffer = cachedAsyncBuffer(await file.open());
      const metadata = await parquetMetadataAsync(buffer);
      tally(scan, await parquetReadObjects({ file: buffer, metadata, rowStart: from, rowEnd: Math.min(file.rows, from + CHUNK), compressors, columns }));
    }
  }
  return { ...scan, ms: performance.now() - start };
}

/** What bench/iceberg_scan.py reports: per run, the catalog scan, the direct scan over the same URLs, and the local read. */
interface PythonScan {
  rows: number;
  id_sum: number;
  amount_sum: number;
  files: number;
  range_requests: number;
  /** TCP connections the HTTP readers opened (1 when kept alive). */
  connections?: number;
  s: number;
  metadata_s?: number;
}
interface PythonReport {
  token_s: number;
  runs: { catalog: PythonScan; direct: PythonScan; local: PythonScan }[];
  pyarrow: string;
  fastavro: string;
  python: string;
}

/** Runs bench/iceberg_scan.py with the venv's Python (test/python.ts), its progress on stderr, its report from stdout. */
async function pythonScan(input: object): Promise<PythonReport> {
  const python = await lakeportPython();
  if (!python) throw new Error('no Python with fastavro and pyarrow: run `node --import tsx test/python.ts` (it says why)');
  const child = spawn(python, [fileURLToPath(new URL('./iceberg_scan.py', import.meta.url))], { stdio: ['pipe', 'pipe', 'inherit'] });
  const out: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stdin.end(JSON.stringify(input));
  const code = await new Promise<number | null>((resolve, reject) => child.on('error', reject).on('close', resolve));
  if (code !== 0) throw new Error(`bench/iceberg_scan.py exited with ${code}`);
  return JSON.parse(Buffer.concat(out).toString()) as PythonReport;
}

export async function run(): Promise<void> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'lakeport-iceberg-bench-'));
  const dataDir = path.join(dir, 'server');
  await fsp.mkdir(dataDir);
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    const file = path.join(dir, 'orders.parquet');
    process.stderr.write(`generating ${ROWS.toLocaleString()} rows of Parquet...\n`);
    await makeOrdersParquet(file, ROWS);
    const size = (await fsp.stat(file)).size;
    server = await startServer({ env: { LAKEPORT_DATA_DIR: dataDir, LAKEPORT_JOB_WORKERS: '0', LAKEPORT_ACCESS_TOKEN_TTL_SECONDS: '7200', LAKEPORT_COMPACTION: 'off' } });
    const api = await setUp(server.url, server.adminToken);
    process.stderr.write(`uploading ${(size / 1e6).toFixed(0)} MB of Parquet through the upload API...\n`);
    const loaded = await uploadParquet(api, file, 'bench.orders.daily');
    if (loaded.rows !== ROWS) throw new Error(`committed ${loaded.rows} rows, expected ${ROWS}`);
    // A read token from the catalog's own token endpoint, as Iceberg clients get one.
    const token = await json<{ access_token: string }>(
      await fetch(`${server.url}/iceberg/v1/oauth/tokens`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'bench', client_secret: api.secret, scope: 'catalog' }) }),
    );
    const auth = { authorization: `Bearer ${token.access_token}` };

    // The data files the catalog names (read once, outside the timings), over HTTP and locally.
    const loadedTable = await requestJson<{ 'metadata-location': string }>(`${server.url}${TABLE}`, { headers: auth });
    const metadata = await requestJson<Parameters<typeof icebergManifests>[0]>(loadedTable['metadata-location'], { headers: auth });
    const manifests = await withAuthorization(server.url, auth.authorization, () => icebergManifests(metadata));
    const entries = manifests.flatMap((m) => m.entries.map((e) => e.data_file));
    const columns = (metadata.schemas.find((x) => x['schema-id'] === metadata['current-schema-id'])?.fields ?? []).map((f) => f.name);
    const httpFiles = entries.map((f) => ({ rows: Number(f.record_count), open: () => asyncBufferFromUrl({ url: f.file_path, byteLength: Number(f.file_size_in_bytes), requestInit: { headers: auth } }) }));
    const staging = path.join(dataDir, 'lake', '_staging', loaded.contractId);
    const localNames = (await fsp.readdir(staging)).filter((f) => f.endsWith('.parquet')).sort();
    const localFiles = await Promise.all(
      localNames.map(async (name) => {
        const buffer = await asyncBufferFromFile(path.join(staging, name));
        return { rows: Number((await parquetMetadataAsync(buffer)).num_rows), open: () => asyncBufferFromFile(path.join(staging, name)) };
      }),
    );

    // (a) The Python reader: its own token, catalog calls and range reads (bench/iceberg_scan.py).
    process.stderr.write(`(a) Python: a warm-up and ${PY_RUNS} run(s), alternating: pyarrow through the catalog, over the same URLs, from the local files...\n`);
    const py = await pythonScan({
      base: server.url,
      client_id: 'bench',
      client_secret: api.secret,
      namespace: ['bench', 'orders'],
      table: 'daily',
      runs: PY_RUNS,
      local_files: localNames.map((name) => path.join(staging, name)),
    });
    for (const [name, scan] of Object.entries(py.runs[0])) {
      if (scan.rows !== ROWS || BigInt(scan.id_sum) !== (BigInt(ROWS) * BigInt(ROWS - 1)) / 2n) throw new Error(`python ${name} read ${scan.rows} rows (id sum ${scan.id_sum})`);
    }

    process.stderr.write(`(a') a warm-up and ${RUNS} run(s) each, alternating: icebird through the catalog, hyparquet over the same URLs, hyparquet from the local files...\n`);
    const runs: { catalog: Scan; http: Scan; local: Scan }[] = [];
    // One warm-up of each (the first read also builds the metadata files), then the measured runs.
    for (let i = -1; i < RUNS; i++) {
      const catalog = await catalogScan(server.url, auth, ROWS);
      const http = await directScan(httpFiles, columns);
      const local = await directScan(localFiles, columns);
      for (const [name, scan] of Object.entries({ catalog, http, local })) {
        if (scan.rows !== ROWS || scan.idSum !== (BigInt(ROWS) * BigInt(ROWS - 1)) / 2n) throw new Error(`${name} read ${scan.rows} rows (id sum ${scan.idSum})`);
      }
      if (i < 0) continue;
      runs.push({ catalog, http, local });
      process.stderr.write(`  run ${i + 1}: catalog ${s(catalog.ms)}, direct over HTTP ${s(http.ms)}, direct local ${s(local.ms)}\n`);
    }

    // What the catalog itself costs a scan: the calls icebird makes for metadata (the table, its metadata
    // file, and the manifest list and manifest once per chunk), timed alone.
    const chunks = Math.ceil(ROWS / CHUNK);
    const metadataCost: number[] = [];
    for (let i = 0; i < 5; i++) {
      const start = performance.now();
      const table = await requestJson<{ 'metadata-location': string }>(`${server.url}${TABLE}`, { headers: auth });
      const fresh = await requestJson<Parameters<typeof icebergManifests>[0]>(table['metadata-location'], { headers: auth });
      await withAuthorization(server.url, auth.authorization, async () => {
        for (let c = 0; c < chunks; c++) await icebergManifests(fresh);
      });
      metadataCost.push(performance.now() - start);
    }

    process.stderr.write(`(b) ${SNAPSHOTS} snapshots of bench.hist.events (small CSV uploads, 4 at a time)...\n`);
    // The first creates the dataset; the others append, four at a time.
    await uploadCsv(api, 'id,at\n0,2024-01-01 00:00:00\n', 'bench.hist.events');
    let next = 1;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let n = next++; n < SNAPSHOTS; n = next++) await uploadCsv(api, `id,at\n${n},2024-01-01 00:00:00\n`, 'bench.hist.events');
      }),
    );
    const loadMs = async () => {
      const start = performance.now();
      const table = await requestJson<{ metadata: { snapshots: unknown[] } }>(`${server!.url}${HISTORY}`, { headers: auth });
      if (table.metadata.snapshots.length !== SNAPSHOTS) throw new Error(`${table.metadata.snapshots.length} snapshots in the metadata, expected ${SNAPSHOTS}`);
      return performance.now() - start;
    };
    const cold = await loadMs();
    const warm: number[] = [];
    for (let i = 0; i < 20; i++) warm.push(await loadMs());
    const metadataBytes = (await (await fetch(`${server.url}${HISTORY}`, { headers: auth })).text()).length;

    const median3 = (pick: (r: (typeof runs)[number]) => number) => median(runs.map(pick));
    const catalog = median3((r) => r.catalog.ms);
    const http = median3((r) => r.http.ms);
    const local = median3((r) => r.local.ms);
    const pyMedian = (pick: (r: PythonReport['runs'][number]) => number) => median(py.runs.map(pick)) * 1000;
    const pyCatalog = pyMedian((r) => r.catalog.s);
    const pyHttp = pyMedian((r) => r.direct.s);
    const pyLocal = pyMedian((r) => r.local.s);
    const pyMetadata = pyMedian((r) => r.catalog.metadata_s ?? 0);
    const pyRatio = pyHttp / pyCatalog;
    const first = py.runs[0];
    const runsOf = (list: number[]) => list.map(s).join(', ');
    process.stdout.write(
      `\nLakeport Iceberg catalog benchmark: ${ROWS.toLocaleString()} rows (${(size / 1e6).toFixed(1)} MB Parquet, ${entries.length} data file(s)), ` +
        `node ${process.version}, ${os.cpus().length} cores, metadata: ${server.database}\n` +
        `(a) Python ${py.python}, pyarrow ${py.pyarrow}, fastavro ${py.fastavro} (bench/iceberg_scan.py), ${py.runs.length} runs after a warm-up, alternating; ` +
        `each read ${first.catalog.rows.toLocaleString()} rows, sum(id) ${first.catalog.id_sum}, sum(amount) ${first.catalog.amount_sum.toFixed(2)}, the same in all three\n` +
        `    through the catalog (GET config, load table, metadata JSON, manifest list and manifests with fastavro, then ${first.catalog.files} data file(s) in ${first.catalog.range_requests} Range requests, ${first.catalog.connections} connection(s)): ` +
        `median ${s(pyCatalog)}; runs ${runsOf(py.runs.map((r) => r.catalog.s * 1000))}\n` +
        `      of which the catalog's own calls: median ${ms(pyMetadata)} (${((100 * pyMetadata) / pyCatalog).toFixed(1)}%), the data files: median ${s(pyMedian((r) => r.catalog.s - (r.catalog.metadata_s ?? 0)))} (the same requests as the peer's); the token from /auth/token, once for both HTTP readers: ${ms(py.token_s * 1000)}\n` +
        `    pyarrow reading the same files by the same URLs and token, no catalog calls (the peer): median ${s(pyHttp)}; runs ${runsOf(py.runs.map((r) => r.direct.s * 1000))}\n` +
        `    pyarrow reading the same files from local disk: median ${s(pyLocal)}; runs ${runsOf(py.runs.map((r) => r.local.s * 1000))}\n` +
        `    ratio direct(HTTP)/catalog: ${pyRatio.toFixed(2)}x — target >= ${TARGET_RATIO}x: ${pyRatio >= TARGET_RATIO ? 'ok' : 'MISSED'}; local/catalog: ${(pyLocal / pyCatalog).toFixed(2)}x (adds the file route's transport)\n` +
        `(a') icebird through the catalog vs hyparquet on the same files, in chunks of ${CHUNK.toLocaleString()} rows: this measures icebird's per-row cost, not the catalog's\n` +
        `    icebird through the catalog (load table + metadata JSON + Avro manifests + Parquet over the file route): median ${s(catalog)}; runs ${runsOf(runs.map((r) => r.catalog.ms))}\n` +
        `    hyparquet reading the same files over the same route and token: median ${s(http)}; runs ${runsOf(runs.map((r) => r.http.ms))}\n` +
        `    hyparquet reading the same files locally: median ${s(local)}; runs ${runsOf(runs.map((r) => r.local.ms))}\n` +
        `    ratio hyparquet(HTTP)/icebird: ${(http / catalog).toFixed(2)}x; hyparquet(local)/icebird: ${(local / catalog).toFixed(2)}x\n` +
        `    the catalog's own calls in an icebird scan (load table, metadata JSON, manifest list and manifest for each of ${chunks} chunk(s)), timed alone: median ${ms(median(metadataCost))} ` +
        `(${((100 * median(metadataCost)) / catalog).toFixed(1)}% of the icebird scan); the rest of any gap is icebird's own work per row (1-min load ${os.loadavg()[0].toFixed(2)})\n` +
        `(b) load table with ${SNAPSHOTS} snapshots over REST (${(metadataBytes / 1024).toFixed(0)} KiB answer): cold (built and written) ${ms(cold)}, warm median ${ms(median(warm))} (20 loads)\n`,
    );
  } finally {
    closeConnections();
    await server?.stop();
    await fsp.rm(dir, { recursive: true, force: true });
  }
}
