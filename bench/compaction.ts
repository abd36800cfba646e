// `npm run bench -- compaction`: a dataset built from 10 000 one-row commits (BENCH_COMMITS
// overrides), committed as real one-row Parquet files through the catalog directly (to build it
// fast), read before and after `ALTER DATASET … COMPACT`, next to the same rows committed once (one
// commit of all rows but the last, then one of the last row, so `@previous` exists on both), all in
// one server in this process:
//  - OData `@previous?$count=true` (the previous version: the commits before the last);
//  - a first OData page (`?$top=100`) of the current version;
//  - a job `SELECT count(*), sum(x)` (submit → succeeded);
// and the compaction itself. Target: after compaction ≤ 2× the once-committed dataset.
import crypto from 'node:crypto';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import pino from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openRuntime } from '../src/main.ts';
import { json, setUp, timed, type Api } from './lib/lake.ts';

const COMMITS = Number(process.env.BENCH_COMMITS ?? 10_000);
const RUNS = 7;
const WARM_UP = 2;
const TARGET = 2;
const columns = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'x', type: 'DOUBLE', nullable: false },
];

/** A local Parquet file of rows [from, to). */
async function writeRows(c: Awaited<ReturnType<DuckDBInstance['connect']>>, from: number, to: number): Promise<string> {
  const local = path.join(os.tmpdir(), `lakeport-bench-${crypto.randomUUID()}.parquet`);
  await c.run(`COPY (SELECT i::BIGINT AS id, i * 0.5 AS x FROM range(${from}, ${to}) t(i)) TO '${local}' (FORMAT parquet)`);
  return local;
}

export async function run(): Promise<void> {
  const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'lakeport-compaction-bench-'));
  const adminToken = `bench_${crypto.randomBytes(24).toString('base64url')}`;
  const config = loadConfig({
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LAKEPORT_'))),
    PORT: '0',
    HOST: '127.0.0.1',
    LAKEPORT_DATA_DIR: dataDir,
    LAKEPORT_ADMIN_TOKEN: adminToken,
    LAKEPORT_LOG_LEVEL: 'warn',
    LAKEPORT_COMPACTION: 'off',
    LAKEPORT_ACCESS_TOKEN_TTL_SECONDS: '7200',
  });
  const runtime = await openRuntime(config, pino({ level: 'warn' }));
  const app = await buildApp(runtime.deps, { workers: true });
  const duck = await DuckDBInstance.create(':memory:', { threads: '1' });
  const c = await duck.connect();
  try {
    const url = (await app.listen({ port: 0, host: '127.0.0.1' })).replace(/\/+$/, '');
    const api = await setUp(url, adminToken);
    const { catalog } = app.lakeport;
    const blobs = runtime.deps.blobs;

    const commit = async (dataset: string, from: number, to: number) => {
      const ref = { workspace: 'bench', collection: 'small', dataset };
      const local = await writeRows(c, from, to);
      const key = `lake/bench/small/${dataset}/${crypto.randomUUID()}.parquet`;
      const info = await blobs.putFile(key, local);
      await fsp.rm(local, { force: true });
      const existing = await catalog.findDataset(ref);
      const target = existing ?? (await catalog.createDataset(ref, { columns }, 'bench'));
      await catalog.commitSnapshot({ dataset: target.dataset_id, operation: existing ? 'append' : 'create', author: 'bench', addFiles: [{ path: key, row_count: to - from, size_bytes: info.size }] });
    };

    process.stderr.write(`committing ${COMMITS.toLocaleString()} one-row Parquet files...\n`);
    const buildStart = performance.now();
    for (let i = 0; i < COMMITS; i++) {
      await commit('appended', i, i + 1);
      if ((i + 1) % 2000 === 0) process.stderr.write(`  ${i + 1}\n`);
    }
    const buildSeconds = (performance.now() - buildStart) / 1000;
    await commit('once', 0, COMMITS - 1);
    await commit('once', COMMITS - 1, COMMITS);

    // Reads of 10 000 small files take seconds each: fewer runs before compaction.
    const measure = async (dataset: string, runs = RUNS) => ({
      previous: await timedRuns(runs, () => odataCount(api, `bench/small/${dataset}@previous?$count=true`, COMMITS - 1)),
      page: await timedRuns(runs, () => odataCount(api, `bench/small/${dataset}?$top=100`, undefined)),
      job: await timedRuns(runs, () => jobSum(api, `SELECT count(*), sum(x) FROM bench.small.${dataset}`, COMMITS)),
    });

    const before = await measure('appended', 3);
    const compactStart = performance.now();
    const status = await statement(api, 'ALTER DATASET bench.small.appended COMPACT');
    const compactSeconds = (performance.now() - compactStart) / 1000;
    const after = await measure('appended');
    const once = await measure('once');

    const ms = (v: number) => `${v.toFixed(1)} ms`;
    const line = (name: keyof typeof before, label: string) => {
      const ratio = after[name] / once[name];
      return `  ${label.padEnd(34)} before ${ms(before[name]).padStart(9)}   after ${ms(after[name]).padStart(8)}   once ${ms(once[name]).padStart(8)}   after/once ${ratio.toFixed(2)}x ${ratio <= TARGET ? 'ok' : 'MISSED'}`;
    };
    const out = [
      `Compaction: ${COMMITS.toLocaleString()} one-row commits vs the same rows committed once (${config.databaseUrl ? 'PostgreSQL' : 'PGlite'}; median of ${RUNS}, of 3 before compaction)`,
      `  built in ${buildSeconds.toFixed(1)} s (${((buildSeconds * 1000) / COMMITS).toFixed(1)} ms a commit)`,
      `  ALTER DATASET … COMPACT: ${compactSeconds.toFixed(2)} s — ${status}`,
      line('previous', 'OData @previous?$count=true'),
      line('page', 'OData first page ($top=100)'),
      line('job', 'job SELECT count(*), sum(x)'),
      `  target after/once <= ${TARGET}x`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    c.closeSync();
    duck.closeSync();
    await app.close();
    await runtime.db.close();
    await fsp.rm(dataDir, { recursive: true, force: true });
  }
}

/** The median milliseconds of `runs` calls after the warm-up ones. */
function timedRuns(runs: number, fn: () => Promise<void>): Promise<number> {
  return timed(fn, runs, runs < RUNS ? 1 : WARM_UP);
}

async function odataCount(api: Api, query: string, expected: number | undefined): Promise<void> {
  const body = await json<{ value: unknown[]; '@odata.count'?: number }>(await fetch(`${api.url}/odata/api/v4/${query}`, { headers: api.auth }));
  if (expected !== undefined && body['@odata.count'] !== expected) throw new Error(`${query}: count ${body['@odata.count']}, expected ${expected}`);
  if (body.value.length === 0) throw new Error(`${query}: no rows`);
}

async function submit(api: Api, sql: string): Promise<string> {
  const job = await json<{ execution_id: string; status: string }>(
    await fetch(`${api.url}/jobs/api/v1/jobs`, { method: 'POST', headers: { ...api.auth, 'content-type': 'application/json' }, body: JSON.stringify({ sql_text: sql }) }),
  );
  if (job.status !== 'succeeded') {
    const status = await json<{ status: string; error?: unknown }>(await fetch(`${api.url}/jobs/api/v1/jobs/${job.execution_id}/status?wait=30`, { headers: api.auth }));
    if (status.status !== 'succeeded') throw new Error(`${sql}: ${JSON.stringify(status)}`);
  }
  return job.execution_id;
}

async function results(api: Api, id: string): Promise<unknown[][]> {
  return (await json<{ data: unknown[][] }>(await fetch(`${api.url}/jobs/api/v1/jobs/${id}/results`, { headers: api.auth }))).data;
}

async function jobSum(api: Api, sql: string, rows: number): Promise<void> {
  const data = await results(api, await submit(api, sql));
  if (Number(data[0][0]) !== rows) throw new Error(`${sql}: ${JSON.stringify(data)}`);
}

async function statement(api: Api, sql: string): Promise<string> {
  return String((await results(api, await submit(api, sql)))[0][0]);
}
