// `npm run bench -- iceberg`: the Iceberg REST catalog (docs/iceberg.md).
//  (a) icebird scanning a dataset of 10 million rows (BENCH_ROWS overrides), loaded through the upload
//      API as Parquet, through the catalog: load the table over REST, then icebird reads every row
//      from the metadata location (metadata JSON, Avro manifest list and manifest, Parquet over the
//      file route). Next to it, in the same run, hyparquet reading the same Parquet files directly:
//      over the same HTTP route with the same token (the catalog's cost alone), and from the local
//      files. Target: direct/catalog >= 0.9 (the catalog adds only metadata cost).
//  (b) loading the table metadata of a dataset with 1 000 snapshots (BENCH_SNAPSHOTS), cold (built and
//      written) and warm (kept), over REST.
// Rows are read in chunks of BENCH_CHUNK_ROWS (1 000 000) by both readers, so memory stays bounded.
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { asyncBufferFromFile, asyncBufferFromUrl, cachedAsyncBuffer, parquetMetadataAsync, parquetReadObjects, type AsyncBuffer } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { icebergManifests, icebergRead } from 'icebird';
import { json, makeOrdersParquet, median, setUp, uploadCsv, uploadParquet } from './lib/lake.ts';
import { closeConnections, requestJson } from './lib/http.ts';
import { startServer } from './lib/server.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const SNAPSHOTS = Number(process.env.BENCH_SNAPSHOTS ?? 1_000);
const CHUNK = Number(process.env.BENCH_CHUNK_ROWS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 2);
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

    process.stderr.write(`(a) a warm-up and ${RUNS} run(s) each, alternating: icebird through the catalog, hyparquet over the same URLs, hyparquet from the local files...\n`);
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
    const ratio = http / catalog;
    process.stdout.write(
      `\nLakeport Iceberg catalog benchmark: ${ROWS.toLocaleString()} rows (${(size / 1e6).toFixed(1)} MB Parquet, ${entries.length} data file(s)), ` +
        `read in chunks of ${CHUNK.toLocaleString()} rows (node ${process.version}, ${os.cpus().length} cores), metadata: ${server.database}\n` +
        `(a) icebird through the catalog (load table over REST + metadata JSON + Avro manifests + Parquet over the file route): median ${s(catalog)}; runs ${runs.map((r) => s(r.catalog.ms)).join(', ')}\n` +
        `    hyparquet reading the same Parquet files directly, same transport (HTTP file route, same token): median ${s(http)}; runs ${runs.map((r) => s(r.http.ms)).join(', ')}\n` +
        `    hyparquet reading the same Parquet files directly, local files: median ${s(local)}; runs ${runs.map((r) => s(r.local.ms)).join(', ')}\n` +
        `    ratio direct(HTTP)/catalog: ${ratio.toFixed(2)}x — target >= ${TARGET_RATIO}x: ${ratio >= TARGET_RATIO ? 'ok' : 'MISSED'}; direct(local)/catalog: ${(local / catalog).toFixed(2)}x\n` +
        `    the catalog's own calls in a scan (load table, metadata JSON, manifest list and manifest for each of ${chunks} chunk(s)), timed alone: median ${ms(median(metadataCost))} ` +
        `(${((100 * median(metadataCost)) / catalog).toFixed(1)}% of the icebird scan); the rest of the difference is icebird's own work per row (1-min load ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} cores)\n` +
        `(b) load table with ${SNAPSHOTS} snapshots over REST (${(metadataBytes / 1024).toFixed(0)} KiB answer): cold (built and written) ${ms(cold)}, warm median ${ms(median(warm))} (20 loads)\n`,
    );
  } finally {
    closeConnections();
    await server?.stop();
    await fsp.rm(dir, { recursive: true, force: true });
  }
}
