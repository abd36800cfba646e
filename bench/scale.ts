// `npm run bench -- scale`: how Lakeport's costs grow with the size of the catalog, the length of a
// dataset's history and the size of a dataset (issue 20, "Scale curves"). Each point is printed, with
// its target beside it.
//  1. Catalog: 10 datasets, then 100 workspaces × 100 datasets (seeded straight into the metadata
//     database, the measured operations through HTTP). One identity (`reader`) is granted 1 000 of them
//     through 50 patterns: its job submit and upload commit against the 10-dataset catalog's; the
//     service document and service-wide $metadata for identities reading 10, 100, 1 000 and 10 000.
//  2. History: one dataset at 10 snapshots, then at 10 000 snapshots with 1 000 tags: commit,
//     @previous, a tag read and the dataset's $metadata.
//  3. Size: a 50-million-row dataset: the first OData page against the page at row 49 000 000, a
//     jobs aggregate against raw DuckDB on the same files, and the server's memory (RSS, sampled)
//     during ingest, query and download.
// Quick runs: LAKEPORT_BENCH_SCALE_ROWS (part 3's rows), LAKEPORT_BENCH_SCALE_WORKSPACES (part 1's
// workspaces of 100 datasets), LAKEPORT_BENCH_SCALE_SNAPSHOTS (part 2), LAKEPORT_BENCH_SCALE_PARTS
// (e.g. `1,2`). DATABASE_URL set: the server's metadata is on PostgreSQL.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { sql } from 'kysely';
import { openDatabase, type Db } from '../src/core/db/index.ts';
import { closeConnections, request, requestJson, stream } from './lib/http.ts';
import { submitJob, waitForJob } from './lib/jobs.ts';
import { makeOrdersParquet, median, setUp, timed, uploadCsv, uploadParquet, type Api } from './lib/lake.ts';
import { startServer, type BenchServer } from './lib/server.ts';

const env = process.env;
const ROWS = Number(env.LAKEPORT_BENCH_SCALE_ROWS ?? 50_000_000);
const WORKSPACES = Number(env.LAKEPORT_BENCH_SCALE_WORKSPACES ?? 100);
const SNAPSHOTS = Number(env.LAKEPORT_BENCH_SCALE_SNAPSHOTS ?? 10_000);
const PARTS = new Set((env.LAKEPORT_BENCH_SCALE_PARTS ?? '1,2,3').split(',').map((p) => p.trim()));
/** Part 1's shape: each workspace has COLLECTIONS collections of PER_COLLECTION datasets. */
const COLLECTIONS = 5;
const PER_COLLECTION = 20;
/** `reader` holds writer on `wsNNN.c0.*` in this many workspaces (50 × 20 = 1 000 datasets). */
const READER_PATTERNS = Math.min(50, WORKSPACES);
const TAGS = Math.min(1_000, Math.floor(SNAPSHOTS / 2));
/** Server memory bound during ingest, query and download (docs/scale.md). */
const MEMORY_BOUND_BYTES = Number(env.LAKEPORT_BENCH_SCALE_MEMORY_BOUND_MB ?? 1_536) * 1e6;
const TARGET = { withinFactor: 2, metadataMs: 150, serviceDocumentMs: 20, deepPage: 0.2, aggregateRatio: 1.3 };

const ws = (n: number) => `ws${String(n).padStart(3, '0')}`;
const ms = (v: number) => `${v.toFixed(1)} ms`;
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
const verdict = (ok: boolean) => (ok ? 'ok' : 'MISSED');
const load = () => os.loadavg().map((l) => l.toFixed(2)).join(' ');
const out = (line: string) => process.stdout.write(`${line}\n`);
const note = (line: string) => process.stderr.write(`${line}\n`);

/** A new credential for `identity` and an access token of it. */
async function tokenFor(server: BenchServer, identity: string): Promise<Api> {
  const cred = await requestJson<{ secret: string }>(`${server.url}/auth/clients/${identity}/credentials`, {
    method: 'POST',
    headers: { 'x-admin-token': server.adminToken, 'content-type': 'application/json' },
    body: '{}',
  });
  const { access_token } = await requestJson<{ access_token: string }>(`${server.url}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: identity, client_secret: cred.secret }).toString(),
  });
  return { url: server.url, auth: { authorization: `Bearer ${access_token}` } };
}

async function runJob(api: Api, text: string) {
  return waitForJob(api, await submitJob(api, text));
}

/** GET, checking the status; the body. */
async function get(api: Api, url: string): Promise<Buffer> {
  const { status, body } = await request(`${api.url}${url}`, { headers: api.auth });
  if (status !== 200) throw new Error(`GET ${url}: ${status} ${body.toString().slice(0, 300)}`);
  return body;
}

const csvRows = (n: number, from = 0) => `id,category,amount\n${Array.from({ length: n }, (_, i) => `${from + i},cat_${(from + i) % 7},${((from + i) * 1.25).toFixed(2)}`).join('\n')}\n`;

/** RSS of the server process (and with its query host and other children), sampled every 50 ms. */
function sampleMemory(pid: number) {
  const rss = (p: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  const children = (p: number) => {
    try {
      return fs.readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  };
  let server = 0;
  let withChildren = 0;
  const sample = () => {
    try {
      const own = rss(pid);
      server = Math.max(server, own);
      withChildren = Math.max(withChildren, own + children(pid).reduce((sum, c) => sum + (fs.existsSync(`/proc/${c}`) ? rss(c) : 0), 0));
    } catch {
      // the process ended
    }
  };
  sample();
  const timer = setInterval(sample, 50);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { server, withChildren };
    },
  };
}

// ── seeding (straight into the metadata database) ──────────────────────────────────────────────

/** Runs `fn` on the server's metadata database: PostgreSQL alongside the running server; PGlite with the server stopped and started again. */
async function withDatabase(server: BenchServer, dataDir: string, restart: () => Promise<BenchServer>, fn: (db: Db) => Promise<void>): Promise<BenchServer> {
  if (server.databaseUrl) {
    const db = await openDatabase({ databaseUrl: server.databaseUrl });
    try {
      await fn(db);
    } finally {
      await db.close();
    }
    return server;
  }
  await server.stop();
  const db = await openDatabase({ dataDir });
  try {
    await fn(db);
  } finally {
    await db.close();
  }
  return restart();
}

/**
 * Workspaces ws000…ws(N-1), each with COLLECTIONS × PER_COLLECTION datasets shaped like ws000.c0.d00
 * (its columns, a snapshot and a data file with its statistics; the files are not read); `bench`
 * owns them all, `reader` is writer on wsNNN.c0.* in READER_PATTERNS workspaces, `r10` reader on 10
 * datasets by name, `r100` on ws000.*.
 */
async function seedCatalog(db: Db): Promise<void> {
  const q = db.kysely;
  const template = await sql<{ dataset_id: string; columns: unknown; billing_account: string; row_count: string; size_bytes: string; column_stats: unknown }>`
    SELECT d.dataset_id, d.columns, w.billing_account, f.row_count, f.size_bytes, f.column_stats
    FROM catalog_datasets d JOIN workspaces w ON w.name = d.workspace JOIN catalog_data_files f ON f.dataset_id = d.dataset_id
    WHERE d.workspace = 'ws000' AND d.collection = 'c0' AND d.name = 'd00' LIMIT 1`.execute(q);
  const t = template.rows[0];
  const members = JSON.stringify([{ identity: 'bench', role: 'owner' }]);
  await q.transaction().execute(async (trx) => {
    await sql`INSERT INTO workspaces (name, billing_account, members, created_by)
      SELECT 'ws' || lpad(w::text, 3, '0'), ${t.billing_account}, ${members}::jsonb, 'bench' FROM generate_series(1, ${WORKSPACES - 1}) w`.execute(trx);
    await sql`INSERT INTO catalog_namespaces (workspace, billing_account)
      SELECT 'ws' || lpad(w::text, 3, '0'), ${t.billing_account} FROM generate_series(1, ${WORKSPACES - 1}) w`.execute(trx);
    await sql`INSERT INTO catalog_collections (workspace, name, created_by)
      SELECT 'ws' || lpad(w::text, 3, '0'), 'c' || c, 'bench' FROM generate_series(0, ${WORKSPACES - 1}) w, generate_series(0, ${COLLECTIONS - 1}) c
      ON CONFLICT DO NOTHING`.execute(trx);
    await sql`INSERT INTO catalog_datasets (dataset_id, workspace, collection, name, kind, columns, created_by, updated_by)
      SELECT 'ds_seed_' || w || '_' || c || '_' || d, 'ws' || lpad(w::text, 3, '0'), 'c' || c, 'd' || lpad(d::text, 2, '0'), 'table', ${JSON.stringify(t.columns)}::jsonb, 'bench', 'bench'
      FROM generate_series(0, ${WORKSPACES - 1}) w, generate_series(0, ${COLLECTIONS - 1}) c, generate_series(0, ${PER_COLLECTION - 1}) d
      WHERE NOT EXISTS (SELECT 1 FROM catalog_datasets e WHERE e.workspace = 'ws' || lpad(w::text, 3, '0') AND e.collection = 'c' || c AND e.name = 'd' || lpad(d::text, 2, '0'))`.execute(trx);
    await sql`INSERT INTO catalog_snapshots (dataset_id, sequence, author, operation, rows_added, rows_removed, total_records, total_size, changed_rows, definition_version)
      SELECT dataset_id, 1, 'bench', 'create', ${t.row_count}::bigint, 0, ${t.row_count}::bigint, ${t.size_bytes}::bigint, true, 1 FROM catalog_datasets WHERE dataset_id LIKE 'ds_seed_%'`.execute(trx);
    await sql`INSERT INTO catalog_data_files (file_id, dataset_id, path, row_count, size_bytes, column_stats, added_in_snapshot)
      SELECT 'file_seed_' || s.snapshot_id, s.dataset_id, 'lake/seed/' || s.dataset_id || '.parquet', ${t.row_count}::bigint, ${t.size_bytes}::bigint, ${JSON.stringify(t.column_stats)}::jsonb, s.snapshot_id
      FROM catalog_snapshots s WHERE s.dataset_id LIKE 'ds_seed_%'`.execute(trx);
    await sql`UPDATE catalog_datasets d SET current_snapshot_id = s.snapshot_id FROM catalog_snapshots s WHERE s.dataset_id = d.dataset_id AND d.dataset_id LIKE 'ds_seed_%'`.execute(trx);
    const policy = (workspace: string, principal: string, role: string, pattern: string) => ({
      policy_id: `pol_seed_${principal}_${pattern.replace(/[^a-z0-9]/g, '_')}`,
      workspace,
      principal,
      principal_type: 'user',
      role: role as 'owner',
      pattern,
      created_by: 'bench',
    });
    const policies = [
      ...Array.from({ length: WORKSPACES - 1 }, (_, i) => policy(ws(i + 1), 'bench', 'owner', `${ws(i + 1)}.*`)),
      ...Array.from({ length: READER_PATTERNS - 1 }, (_, i) => policy(ws(i + 1), 'reader', 'writer', `${ws(i + 1)}.c0.*`)),
      ...Array.from({ length: 10 }, (_, i) => policy('ws000', 'r10', 'reader', `ws000.c0.d${String(i).padStart(2, '0')}`)),
      policy('ws000', 'r100', 'reader', 'ws000.*'),
    ];
    for (let i = 0; i < policies.length; i += 500) await trx.insertInto('policies').values(policies.slice(i, i + 500)).execute();
  });
}

/**
 * ws000.hist.events grows to SNAPSHOTS snapshots: overwrites each holding one file (a copy of its
 * current file, so every version reads), and TAGS tags spread over them; the tag `mid` moves to the
 * middle of the history.
 */
async function seedHistory(db: Db, dataDir: string): Promise<void> {
  const q = db.kysely;
  const dataset = await q.selectFrom('catalog_datasets').selectAll().where('workspace', '=', 'ws000').where('collection', '=', 'hist').where('name', '=', 'events').executeTakeFirstOrThrow();
  const current = await q.selectFrom('catalog_snapshots').selectAll().where('snapshot_id', '=', dataset.current_snapshot_id!).executeTakeFirstOrThrow();
  const live = await q.selectFrom('catalog_data_files').selectAll().where('dataset_id', '=', dataset.dataset_id).where('removed_in_snapshot', 'is', null).execute();
  const file = live[0];
  const count = SNAPSHOTS - current.sequence;
  const source = path.join(dataDir, file.path);
  const seedPath = (i: number) => `${path.dirname(file.path)}/seed-${i}.parquet`;
  const paths = Array.from({ length: count }, (_, i) => seedPath(i));
  for (const p of paths) await fsp.copyFile(source, path.join(dataDir, p));
  const rows = Number(file.row_count);
  const size = Number(file.size_bytes);
  await q.transaction().execute(async (trx) => {
    await sql`INSERT INTO catalog_snapshots (dataset_id, sequence, author, message, operation, rows_added, rows_removed, total_records, total_size, changed_rows, definition_version)
      SELECT ${dataset.dataset_id}, ${current.sequence}::int + g, 'bench', 'seeded overwrite', 'overwrite', ${rows}::bigint, CASE WHEN g = 1 THEN ${current.total_records}::bigint ELSE ${rows}::bigint END, ${rows}::bigint, ${size}::bigint, true, ${dataset.definition_version}::int
      FROM generate_series(1, ${count}) g`.execute(trx);
    await sql`UPDATE catalog_snapshots s SET parent_snapshot_id = p.parent FROM (
        SELECT snapshot_id, lag(snapshot_id) OVER (ORDER BY sequence) AS parent FROM catalog_snapshots WHERE dataset_id = ${dataset.dataset_id}) p
      WHERE s.snapshot_id = p.snapshot_id AND s.sequence > ${current.sequence}`.execute(trx);
    const first = await sql<{ snapshot_id: string }>`SELECT snapshot_id FROM catalog_snapshots WHERE dataset_id = ${dataset.dataset_id} AND sequence = ${current.sequence + 1}`.execute(trx);
    await sql`UPDATE catalog_data_files SET removed_in_snapshot = ${first.rows[0].snapshot_id}::bigint WHERE dataset_id = ${dataset.dataset_id} AND removed_in_snapshot IS NULL`.execute(trx);
    // File i is added by seeded snapshot i + 1 and removed by the next one.
    await sql`INSERT INTO catalog_data_files (file_id, dataset_id, path, row_count, size_bytes, column_stats, added_in_snapshot, removed_in_snapshot)
      SELECT 'file_hist_' || s.sequence, ${dataset.dataset_id}, ${path.dirname(file.path) + '/seed-'} || (s.sequence - ${current.sequence} - 1) || '.parquet', ${rows}::bigint, ${size}::bigint, ${JSON.stringify(file.column_stats)}::jsonb, s.snapshot_id,
             (SELECT n.snapshot_id FROM catalog_snapshots n WHERE n.dataset_id = s.dataset_id AND n.sequence = s.sequence + 1)
      FROM catalog_snapshots s WHERE s.dataset_id = ${dataset.dataset_id} AND s.sequence > ${current.sequence}`.execute(trx);
    await sql`UPDATE catalog_datasets SET current_snapshot_id = (SELECT snapshot_id FROM catalog_snapshots WHERE dataset_id = ${dataset.dataset_id} AND sequence = ${SNAPSHOTS}) WHERE dataset_id = ${dataset.dataset_id}`.execute(trx);
    await sql`INSERT INTO catalog_tags (dataset_id, name, snapshot_id, created_by)
      SELECT ${dataset.dataset_id}, 'seed_' || lpad(g::text, 4, '0'), s.snapshot_id, 'bench'
      FROM generate_series(1, ${TAGS - 1}) g JOIN catalog_snapshots s ON s.dataset_id = ${dataset.dataset_id} AND s.sequence = ${current.sequence}::int + g * ${Math.floor(count / TAGS)}`.execute(trx);
    await sql`UPDATE catalog_tags SET snapshot_id = (SELECT snapshot_id FROM catalog_snapshots WHERE dataset_id = ${dataset.dataset_id} AND sequence = ${Math.floor(SNAPSHOTS / 2)})
      WHERE dataset_id = ${dataset.dataset_id} AND name = 'mid'`.execute(trx);
  });
}

// ── parts 1 and 2 ──────────────────────────────────────────────────────────────────────────────

interface CatalogPoint {
  jobMs: number;
  submitMs: number;
  uploadMs: number;
  curve: { identity: string; listed: number; firstMetadataMs: number; serviceDocumentMs: number; metadataMs: number; metadataBytes: number; coldServiceDocumentMs: number; coldMetadataMs: number }[];
}

interface HistoryPoint {
  snapshots: number;
  commitMs: number;
  previousMs: number;
  tagMs: number;
  metadataMs: number;
}

const KEPT_LAPSE_MS = 1_100;

/** The median of `runs` calls, each once the server's kept reads (listings, grants: KEPT_READ_TTL_MS, 1 s) have lapsed. */
async function coldTimed(fn: () => Promise<unknown>, runs = 3): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    await new Promise((resolve) => setTimeout(resolve, KEPT_LAPSE_MS));
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return median(times);
}

async function measureCatalog(server: BenchServer, identities: string[], large: boolean): Promise<CatalogPoint> {
  const reader = await tokenFor(server, 'reader');
  const submitTimes: number[] = [];
  const jobMs = await timed(async () => {
    const start = performance.now();
    const id = await submitJob(reader, 'SELECT count(*) FROM ws000.c0.d01');
    submitTimes.push(performance.now() - start);
    await waitForJob(reader, id);
  }, 10, 2);
  let n = 1_000;
  const uploadMs = await timed(() => uploadCsv(reader, csvRows(20, n++ * 20), 'ws000.c0.d00'), 5, 1);
  const curve: CatalogPoint['curve'] = [];
  for (const identity of identities) {
    const api = await tokenFor(server, identity);
    const listed = (JSON.parse((await get(api, '/odata/api/v4')).toString()) as { value: unknown[] }).value.length;
    // The identity's first $metadata: nothing of its datasets kept yet (the small catalog's were read before).
    const firstStart = performance.now();
    await get(api, '/odata/api/v4/$metadata');
    const firstMetadataMs = performance.now() - firstStart;
    const runs = large && listed > 2_000 ? 3 : 10;
    const serviceDocumentMs = await timed(() => get(api, '/odata/api/v4'), runs, 1);
    let metadataBytes = 0;
    const metadataMs = await timed(async () => (metadataBytes = (await get(api, '/odata/api/v4/$metadata')).length), runs, 1);
    const coldServiceDocumentMs = await coldTimed(() => get(api, '/odata/api/v4'));
    const coldMetadataMs = await coldTimed(() => get(api, '/odata/api/v4/$metadata'));
    curve.push({ identity, listed, firstMetadataMs, serviceDocumentMs, metadataMs, metadataBytes, coldServiceDocumentMs, coldMetadataMs });
    note(`  ${identity}: ${listed} entity sets, service document ${ms(serviceDocumentMs)} (cold ${ms(coldServiceDocumentMs)}), $metadata ${ms(metadataMs)} (cold ${ms(coldMetadataMs)})`);
  }
  return { jobMs, submitMs: median(submitTimes.slice(2)), uploadMs, curve };
}

async function measureHistory(owner: Api, snapshots: number): Promise<HistoryPoint> {
  let n = 5_000;
  const commitMs = await timed(() => uploadCsv(owner, csvRows(10, n++ * 10), 'ws000.hist.events'), 5, 1);
  const previousMs = await timed(() => get(owner, '/odata/api/v4/ws000/hist/events@previous?$top=10'), 10, 2);
  const tagMs = await timed(() => get(owner, '/odata/api/v4/ws000/hist/events@mid?$top=10'), 10, 2);
  const metadataMs = await timed(() => get(owner, '/odata/api/v4/ws000/hist/events/$metadata'), 10, 2);
  return { snapshots, commitMs, previousMs, tagMs, metadataMs };
}

function reportCatalog(small: CatalogPoint, large: CatalogPoint): void {
  const within = (a: number, b: number) => `${(b / a).toFixed(2)}x (target <= ${TARGET.withinFactor}x) ${verdict(b <= TARGET.withinFactor * a)}`;
  const readerPoint = large.curve.find((c) => c.identity === 'reader')!;
  out(`1. Catalog: 10 datasets, then ${WORKSPACES} workspaces × ${COLLECTIONS * PER_COLLECTION} datasets; 'reader' holds ${READER_PATTERNS} patterns reaching ${readerPoint.listed} datasets`);
  out(`   job submit -> succeeded (SELECT count(*) …, median of 10): ${ms(small.jobMs)} -> ${ms(large.jobMs)}: ${within(small.jobMs, large.jobMs)}`);
  out(`     of it the POST: ${ms(small.submitMs)} -> ${ms(large.submitMs)}`);
  out(`   upload commit (negotiate + data + commit of 20 rows, median of 5): ${ms(small.uploadMs)} -> ${ms(large.uploadMs)}: ${within(small.uploadMs, large.uploadMs)}`);
  out(`   OData, by what the caller may read (median; targets at 1 000 datasets: service document <= ${TARGET.serviceDocumentMs} ms, $metadata <= ${TARGET.metadataMs} ms):`);
  out(`     catalog     identity  entity sets  service document  $metadata (bytes)           cold: service document  $metadata`);
  const rows = [...small.curve.map((c) => ({ ...c, catalog: 'small' })), ...large.curve.map((c) => ({ ...c, catalog: 'large' }))];
  out(`     "cold": each request after the kept listings and grants lapsed (${KEPT_LAPSE_MS} ms); snapshots and their files, which never change, stay kept`);
  for (const c of rows) {
    const at1000 = c.catalog === 'large' && c.identity === 'reader';
    const targets = at1000 ? `  cold: ${verdict(c.coldServiceDocumentMs <= TARGET.serviceDocumentMs)} / ${verdict(c.coldMetadataMs <= TARGET.metadataMs)}` : '';
    out(`     ${c.catalog.padEnd(10)}  ${c.identity.padEnd(8)}  ${String(c.listed).padStart(11)}  ${ms(c.serviceDocumentMs).padStart(16)}  ${ms(c.metadataMs).padStart(9)} (${(c.metadataBytes / 1e6).toFixed(2)} MB)  ${ms(c.coldServiceDocumentMs).padStart(22)}  ${ms(c.coldMetadataMs).padStart(9)}${targets}`);
  }
  out(`   $metadata at ${readerPoint.listed} datasets, the identity's first read (none of its snapshots kept yet, the database's pages cold after a restart; one request): ${ms(readerPoint.firstMetadataMs)}`);
}

function reportHistory(small: HistoryPoint, large: HistoryPoint): void {
  const line = (name: string, a: number, b: number) =>
    out(`   ${name.padEnd(28)} ${ms(a).padStart(9)} -> ${ms(b).padStart(9)}: ${(b / a).toFixed(2)}x (target <= ${TARGET.withinFactor}x) ${verdict(b <= TARGET.withinFactor * a)}`);
  out(`2. History: ws000.hist.events at ${small.snapshots} snapshots (1 tag), then ${large.snapshots} snapshots and ${TAGS} tags (medians)`);
  line('commit (upload of 10 rows)', small.commitMs, large.commitMs);
  line('@previous, first page', small.previousMs, large.previousMs);
  line('@mid (a tag), first page', small.tagMs, large.tagMs);
  line("the dataset's $metadata", small.metadataMs, large.metadataMs);
}

async function catalogAndHistory(dir: string): Promise<void> {
  const dataDir = path.join(dir, 'catalog-server');
  await fsp.mkdir(dataDir);
  const start = () => startServer({ env: { LAKEPORT_DATA_DIR: dataDir, LAKEPORT_ACCESS_TOKEN_TTL_SECONDS: '7200' } });
  let server = await start();
  try {
    note(`catalog: 10 datasets and ws000.hist.events through the API (${server.database})...`);
    const owner = await setUp(server.url, server.adminToken, 'bench', 'ws000');
    await runJob(owner, 'GRANT writer ON ws000.c0.* TO reader');
    for (let d = 0; d < 10; d++) await uploadCsv(owner, csvRows(100), `ws000.c0.d${String(d).padStart(2, '0')}`);
    for (let s = 1; s <= 10; s++) {
      await uploadCsv(owner, csvRows(10, s * 10), 'ws000.hist.events');
      if (s === 5) await runJob(owner, 'CREATE TAG mid ON ws000.hist.events');
    }
    note('measuring the small catalog...');
    const smallCatalog = await measureCatalog(server, ['reader', 'bench'], false);
    const smallHistory = PARTS.has('2') ? await measureHistory(owner, 10) : undefined;

    note(`seeding ${WORKSPACES * COLLECTIONS * PER_COLLECTION} datasets${PARTS.has('2') ? ` and ${SNAPSHOTS} snapshots` : ''} into the metadata database...`);
    const seedStart = performance.now();
    server = await withDatabase(server, dataDir, start, async (db) => {
      await seedCatalog(db);
      if (PARTS.has('2')) await seedHistory(db, dataDir);
    });
    note(`  seeded in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);
    note('measuring the large catalog...');
    const largeCatalog = await measureCatalog(server, ['r10', 'r100', 'reader', 'bench'], true);
    reportCatalog(smallCatalog, largeCatalog);
    if (smallHistory) reportHistory(smallHistory, await measureHistory(await tokenFor(server, 'bench'), SNAPSHOTS));
    out(`   load average 1/5/15 min now: ${load()}`);
  } finally {
    await server.stop();
  }
}

// ── part 3 ─────────────────────────────────────────────────────────────────────────────────────

async function bigDataset(dir: string): Promise<void> {
  const file = path.join(dir, 'orders.parquet');
  note(`generating ${ROWS.toLocaleString()} rows of Parquet...`);
  await makeOrdersParquet(file, ROWS);
  const dataDir = path.join(dir, 'big-server');
  await fsp.mkdir(dataDir);
  const server = await startServer({ env: { LAKEPORT_DATA_DIR: dataDir, LAKEPORT_ACCESS_TOKEN_TTL_SECONDS: '7200' } });
  const raw = await DuckDBInstance.create(':memory:', { threads: '2' });
  const rawConnection = await raw.connect();
  try {
    const api = await setUp(server.url, server.adminToken, 'bench', 'big');
    const started = (await server.peakRssBytes()) ?? 0;
    note('ingest...');
    let memory = sampleMemory(server.pid);
    const loaded = await uploadParquet(api, file, 'big.orders.all');
    const ingest = memory.stop();
    if (loaded.rows !== ROWS) throw new Error(`committed ${loaded.rows} rows, expected ${ROWS}`);

    note('query: first and deep pages, jobs aggregate vs raw DuckDB...');
    memory = sampleMemory(server.pid);
    const deepRow = Math.floor(ROWS * 0.98);
    const pages = {
      first: '/odata/api/v4/big/orders/all?$top=1000',
      deep: `/odata/api/v4/big/orders/all?$top=1000&$skiptoken=${deepRow}`,
      firstOrdered: '/odata/api/v4/big/orders/all?$top=1000&$orderby=_lakeport_row_id',
      deepOrdered: `/odata/api/v4/big/orders/all?$top=1000&$orderby=_lakeport_row_id&$skip=${deepRow}`,
    };
    const firstRow = async (url: string) => (JSON.parse((await get(api, url)).toString()) as { value: { id: number }[] }).value[0]?.id;
    if ((await firstRow(pages.deep)) !== deepRow || (await firstRow(pages.deepOrdered)) !== deepRow) throw new Error(`the deep pages do not start at row ${deepRow}`);
    const times: Record<keyof typeof pages, number[]> = { first: [], deep: [], firstOrdered: [], deepOrdered: [] };
    for (let i = 0; i < 7; i++) {
      for (const key of Object.keys(pages) as (keyof typeof pages)[]) {
        // Each page by itself: the last request's read-ahead (the next range or pages) done first.
        await new Promise((resolve) => setTimeout(resolve, 300));
        const t = performance.now();
        await get(api, pages[key]);
        if (i > 0) times[key].push(performance.now() - t);
      }
    }
    const page = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) as Record<keyof typeof pages, number>;
    note(`  pages (median ms): ${Object.entries(page).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}; ingest peak RSS ${mb(ingest.withChildren)}; load ${load()}`);

    const files = await committedFiles(dataDir, loaded.contractId);
    const aggregate = 'SELECT category, count(*), sum(amount), avg(amount) FROM big.orders.all GROUP BY category';
    const rawAggregate = `SELECT category, count(*), sum(amount), avg(amount) FROM read_parquet([${files.map((f) => `'${f}'`).join(', ')}]) GROUP BY category`;
    const service: number[] = [];
    const direct: number[] = [];
    for (let i = 0; i <= 5; i++) {
      let t = performance.now();
      const status = await runJob(api, aggregate);
      if (status.row_count !== 100) throw new Error(`aggregate returned ${status.row_count} rows`);
      const s = performance.now() - t;
      t = performance.now();
      await rawConnection.runAndReadAll(rawAggregate);
      if (i > 0) {
        service.push(s);
        direct.push(performance.now() - t);
      }
    }
    const query = memory.stop();
    note(`  aggregate: service ${ms(median(service))}, raw DuckDB ${ms(median(direct))}; query peak RSS ${mb(query.withChildren)}`);

    note('download: every row as one Parquet file of a job result...');
    memory = sampleMemory(server.pid);
    const job = await runJob(api, 'SELECT * FROM big.orders.all');
    let bytes = 0;
    const downloadStart = performance.now();
    const status = await stream(`${api.url}/jobs/api/v1/jobs/${job.execution_id}/download?file_format=parquet&limit=${ROWS}`, { headers: api.auth }, (chunk) => (bytes += chunk.length));
    if (status !== 200) throw new Error(`download: ${status}`);
    const downloadSeconds = (performance.now() - downloadStart) / 1000;
    const download = memory.stop();

    const deepOk = (deep: number, first: number) => `${(deep / first).toFixed(2)}x (target ${(1 - TARGET.deepPage).toFixed(1)}–${(1 + TARGET.deepPage).toFixed(1)}x) ${verdict(Math.abs(deep / first - 1) <= TARGET.deepPage)}`;
    const ratio = median(service) / median(direct);
    const within = (m: { server: number; withChildren: number }) => `${mb(m.server)} (with its query host ${mb(m.withChildren)}), bound ${mb(MEMORY_BOUND_BYTES)} ${verdict(m.withChildren <= MEMORY_BOUND_BYTES)}`;
    out(`3. Size: ${ROWS.toLocaleString()} rows (${mb((await fsp.stat(file)).size)} Parquet, ${files.length} committed file(s))`);
    out(`   OData $top=1000 first page ${ms(page.first)}, at row ${deepRow.toLocaleString()} ($skiptoken) ${ms(page.deep)}: ${deepOk(page.deep, page.first)}`);
    out(`   the same ordered by _lakeport_row_id: first ${ms(page.firstOrdered)}, $skip=${deepRow} ${ms(page.deepOrdered)}: ${deepOk(page.deepOrdered, page.firstOrdered)}`);
    out(`   jobs aggregate (${aggregate}): service ${ms(median(service))}, raw DuckDB (threads=2, same files) ${ms(median(direct))}: ${ratio.toFixed(2)}x (target <= ${TARGET.aggregateRatio}x) ${verdict(ratio <= TARGET.aggregateRatio)}`);
    out(`   server RSS at start ${mb(started)}; peak during ingest (${loaded.seconds.toFixed(1)} s): ${within(ingest)}`);
    out(`     during query: ${within(query)}`);
    out(`     during download (${mb(bytes)} Parquet in ${downloadSeconds.toFixed(1)} s): ${within(download)}`);
    out(`   load average 1/5/15 min now: ${load()}`);
  } finally {
    rawConnection.closeSync();
    raw.closeSync();
    await server.stop();
  }
}

/** The Parquet files the upload committed (local storage: under the data directory). */
async function committedFiles(dataDir: string, contractId: string): Promise<string[]> {
  const staging = path.join(dataDir, 'lake', '_staging', contractId);
  const files = (await fsp.readdir(staging)).filter((f) => f.endsWith('.parquet')).map((f) => path.join(staging, f));
  if (files.length === 0) throw new Error(`no committed Parquet files under ${staging}`);
  return files;
}

export async function run(): Promise<void> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'lakeport-scale-bench-'));
  out(`Lakeport scale curves (node ${process.version}, ${os.cpus().length} cores; metadata on ${env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}); load average 1/5/15 min at start: ${load()}`);
  try {
    if (PARTS.has('1') || PARTS.has('2')) await catalogAndHistory(dir);
    if (PARTS.has('3')) await bigDataset(dir);
  } finally {
    closeConnections();
    await fsp.rm(dir, { recursive: true, force: true });
  }
}
