// `npm run bench -- token`: the authenticated hot path (docs/auth.md, "Performance and caching").
// Token exchanges against their target of 5 000/s, and GET /auth/me plus one cheap authenticated
// read of each service against 0.5× GET /healthz on the same server, each read measured between two
// /healthz runs (their mean is its floor, so a change in the machine's load moves both). PGlite by
// default; a fresh PostgreSQL database beside DATABASE_URL's when it is set.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { requestJson } from './lib/http.ts';
import { submitJob, waitForJob } from './lib/jobs.ts';
import { makeOrdersParquet, setUp, uploadParquet } from './lib/lake.ts';
import { startServer, type BenchServer } from './lib/server.ts';

const CONNECTIONS = 8;
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const VERIFY_SECONDS = 3;
const EXCHANGES_TARGET = 5_000;
const READ_TARGET = 0.5;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

interface Target {
  name: string;
  path: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

interface Measured {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  /** Server CPU time (all its threads) per request, in microseconds: what the machine's other load does not change. */
  cpuMicros: number | undefined;
  failures: string | undefined;
}

/** What went wrong in a run, or undefined when every response was a 200. */
function failuresOf(r: autocannon.Result): string | undefined {
  const stats = Object.entries(r.statusCodeStats ?? {});
  if (r.non2xx === 0 && r.errors === 0 && r.timeouts === 0 && stats.every(([code]) => code === '200')) return undefined;
  const codes = stats.map(([code, s]) => `${code}×${s.count ?? 0}`);
  return `non2xx=${r.non2xx} errors=${r.errors} timeouts=${r.timeouts} statuses: ${codes.join(', ') || 'none'}`;
}

async function measure(server: BenchServer, t: Target): Promise<Measured> {
  const options = { url: server.url + t.path, method: t.method ?? 'GET', headers: t.headers, body: t.body, connections: CONNECTIONS };
  const warmup = await autocannon({ ...options, duration: WARMUP_SECONDS });
  const cpuBefore = await server.cpuSeconds();
  const r = await autocannon({ ...options, duration: DURATION_SECONDS });
  const cpuAfter = await server.cpuSeconds();
  const failures = failuresOf(warmup) ?? failuresOf(r);
  const cpuMicros = cpuBefore === undefined || cpuAfter === undefined ? undefined : ((cpuAfter - cpuBefore) * 1e6) / r.requests.total;
  const m = { name: t.name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, cpuMicros, failures };
  process.stderr.write(`  measured ${t.name}: ${Math.round(m.rps)} req/s${failures ? ` (FAILED: ${failures})` : ''}\n`);
  return m;
}

async function verificationsPerSecond(url: string, token: string): Promise<number> {
  const jwks = createLocalJWKSet(await requestJson<JSONWebKeySet>(`${url}/auth/jwks`));
  const options = { issuer: `${url}/auth`, audience: 'lakeport' };
  for (let i = 0; i < 200; i++) await jwtVerify(token, jwks, options); // warm-up
  let count = 0;
  const start = performance.now();
  const end = start + VERIFY_SECONDS * 1000;
  while (performance.now() < end) {
    await jwtVerify(token, jwks, options);
    count++;
  }
  return count / ((performance.now() - start) / 1000);
}

/**
 * What the reads read: an account and workspace `bench` owned by identity `bench` (lib/lake.ts), a
 * 100-row dataset uploaded through a contract, and a finished job over it.
 */
async function seed(url: string, adminToken: string) {
  const api = await setUp(url, adminToken);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-bench-token-'));
  try {
    const file = path.join(dir, 'orders.parquet');
    await makeOrdersParquet(file, 100);
    const { contractId } = await uploadParquet(api, file, 'bench.orders.daily');
    const jobId = await submitJob(api, 'SELECT count(*) AS n FROM bench.orders.daily');
    await waitForJob(api, jobId);
    const { policies } = await requestJson<{ policies: { policy_id: string }[] }>(`${url}/policy/v1/access/workspace/bench`, { headers: api.auth });
    return { api, contractId, jobId, policyId: policies[0].policy_id };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// autocannon's latency histogram has 1 ms resolution.
const ms = (v: number) => (v < 1 ? '<1' : String(Math.round(v)));
const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');

export async function run(): Promise<void> {
  process.stderr.write('starting Lakeport (the first start in a fresh data dir runs initdb)...\n');
  const server = await startServer();
  try {
    const { url } = server;
    const { api, contractId, jobId, policyId } = await seed(url, server.adminToken);
    const ccBody = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'bench', client_secret: api.secret }).toString();
    const pair = await requestJson<{ access_token: string; refresh_token: string }>(`${url}/auth/token`, { method: 'POST', headers: FORM, body: ccBody });
    const refreshBody = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: pair.refresh_token }).toString();
    const bearer = { authorization: `Bearer ${pair.access_token}` };

    process.stderr.write(`server at ${url} (${server.database}); ${CONNECTIONS} connections, ${WARMUP_SECONDS} s warm-up + ${DURATION_SECONDS} s per run\n`);
    const healthz: Target = { name: 'GET /healthz', path: '/healthz' };
    const exchanges: Target[] = [
      { name: 'client_credentials', path: '/auth/token', method: 'POST', headers: FORM, body: ccBody },
      { name: 'refresh_token', path: '/auth/token', method: 'POST', headers: FORM, body: refreshBody },
    ];
    const reads: Target[] = [
      { name: 'auth: GET /auth/me', path: '/auth/me' },
      { name: 'control: list accounts', path: '/control/v1/accounts' },
      { name: 'policy: read a policy', path: `/policy/v1/access/workspace/bench/policies/${policyId}` },
      { name: 'jobs: a finished job', path: `/jobs/api/v1/jobs/${jobId}/status` },
      { name: 'upload: a committed contract', path: `/upload/v2/contracts/${contractId}` },
      { name: 'odata: service document', path: '/odata/api/v4/' },
    ].map((t) => ({ ...t, headers: bearer }));

    const floors: Measured[] = [await measure(server, healthz)];
    const exchanged: Measured[] = [];
    for (const t of exchanges) exchanged.push(await measure(server, t));
    const read: { m: Measured; floor: number }[] = [];
    for (const t of reads) {
      const m = await measure(server, t);
      const before = floors[floors.length - 1].rps;
      floors.push(await measure(server, healthz));
      read.push({ m, floor: (before + floors[floors.length - 1].rps) / 2 });
    }
    const verifyRate = await verificationsPerSecond(url, pair.access_token);

    const width = Math.max(...[...exchanged, ...read.map((r) => r.m)].map((m) => m.name.length));
    const cpu = (m: Measured) => (m.cpuMicros === undefined ? '' : `  ${Math.round(m.cpuMicros).toString().padStart(4)} µs CPU`);
    const figures = (m: Measured) =>
      `${m.name.padEnd(width)} ${Math.round(m.rps).toString().padStart(7)} req/s  p50 ${ms(m.p50).padStart(3)} ms  p99 ${ms(m.p99).padStart(4)} ms${cpu(m)}`;
    const invalid = (m: Measured) => (m.failures ? `  ** INVALID: ${m.failures}` : '');
    const floorRates = floors.map((f) => Math.round(f.rps));
    const floorCpu = floors.map((f) => f.cpuMicros).filter((c): c is number => c !== undefined);
    const lines = [
      `GET /healthz: ${floorRates.join(', ')} req/s (before the reads and after each one)` +
        (floorCpu.length > 0 ? `; ${Math.round(floorCpu.reduce((x, y) => x + y, 0) / floorCpu.length)} µs CPU a request` : ''),
      ...exchanged.map((m) => `${figures(m)}  target ≥ ${EXCHANGES_TARGET}/s: ${(m.rps / EXCHANGES_TARGET).toFixed(2)}x, ${verdict(m.rps >= EXCHANGES_TARGET)}${invalid(m)}`),
      ...read.map(
        ({ m, floor }) =>
          `${figures(m)}  target ≥ ${READ_TARGET}x /healthz (${Math.round(floor)}): ${(m.rps / floor).toFixed(2)}x, ${verdict(m.rps >= READ_TARGET * floor)}${invalid(m)}`,
      ),
    ];
    process.stdout.write(
      `\nLakeport token benchmark (${server.database}, ${CONNECTIONS} connections, ${DURATION_SECONDS} s each, node ${process.version})\n` +
        `${lines.join('\n')}\n` +
        `reads: ${reads.map((t) => `${t.name.split(':')[0]} = GET ${t.path}`).join('; ')}\n` +
        `(µs CPU: the server process's CPU time, all threads, per request${server.database.startsWith('PostgreSQL') ? "; PostgreSQL's own is not included" : ''})\n` +
        `jose jwtVerify (in-process): ${Math.round(verifyRate)} verifications/s (single loop, ${VERIFY_SECONDS} s)\n`,
    );

    const failed = [...floors, ...exchanged, ...read.map((r) => r.m)].filter((m) => m.failures);
    if (failed.length > 0) {
      process.stderr.write(`WARNING: non-200 responses for ${failed.map((m) => m.name).join(', ')}; figures above are not valid\n`);
      process.exitCode = 1;
    }
  } finally {
    await server.stop();
  }
}
