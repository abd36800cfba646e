// `npm run bench -- token`: throughput and latency of the authentication service's token paths,
// each relative to GET /healthz on the same server, plus in-process JWT verification with jose.
import autocannon from 'autocannon';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { startServer } from './lib/server.ts';

const CONNECTIONS = 8;
const WARMUP_SECONDS = 2;
const DURATION_SECONDS = 8;
const VERIFY_SECONDS = 3;
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
  failures: string | undefined;
}

async function fetchJson<T>(url: string, init: RequestInit): Promise<T> {
  const response = await fetch(url, init);
  const text = await response.text();
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

/** What went wrong in a run, or undefined when every response was a 200. */
function failuresOf(r: autocannon.Result): string | undefined {
  const stats = Object.entries(r.statusCodeStats ?? {});
  if (r.non2xx === 0 && r.errors === 0 && r.timeouts === 0 && stats.every(([code]) => code === '200')) return undefined;
  const codes = stats.map(([code, s]) => `${code}×${s.count ?? 0}`);
  return `non2xx=${r.non2xx} errors=${r.errors} timeouts=${r.timeouts} statuses: ${codes.join(', ') || 'none'}`;
}

async function measure(url: string, t: Target): Promise<Measured> {
  const options = { url: url + t.path, method: t.method ?? 'GET', headers: t.headers, body: t.body, connections: CONNECTIONS };
  const warmup = await autocannon({ ...options, duration: WARMUP_SECONDS });
  const r = await autocannon({ ...options, duration: DURATION_SECONDS });
  const failures = failuresOf(warmup) ?? failuresOf(r);
  const m = { name: t.name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, failures };
  process.stderr.write(`  measured ${t.name}: ${Math.round(m.rps)} req/s${failures ? ` (FAILED: ${failures})` : ''}\n`);
  return m;
}

async function verificationsPerSecond(url: string, token: string): Promise<number> {
  const jwks = createLocalJWKSet(await fetchJson<JSONWebKeySet>(`${url}/auth/jwks`, {}));
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

// autocannon's latency histogram has 1 ms resolution.
const ms = (v: number) => (v < 1 ? '<1' : String(Math.round(v)));

export async function run(): Promise<void> {
  process.stderr.write('starting Lakeport (the first start in a fresh data dir runs initdb)...\n');
  const server = await startServer();
  try {
    const { url } = server;
    const credential = await fetchJson<{ secret: string }>(`${url}/auth/clients/bench/credentials`, {
      method: 'POST',
      headers: { 'x-admin-token': server.adminToken, 'content-type': 'application/json' },
      body: '{}',
    });
    const ccBody = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'bench', client_secret: credential.secret }).toString();
    const pair = await fetchJson<{ access_token: string; refresh_token: string }>(`${url}/auth/token`, {
      method: 'POST',
      headers: FORM,
      body: ccBody,
    });
    const refreshBody = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: pair.refresh_token }).toString();

    process.stderr.write(
      `server at ${url}; ${CONNECTIONS} connections, ${WARMUP_SECONDS} s warm-up + ${DURATION_SECONDS} s per endpoint\n`,
    );
    const targets: Target[] = [
      { name: 'GET /healthz', path: '/healthz' },
      { name: 'client_credentials', path: '/auth/token', method: 'POST', headers: FORM, body: ccBody },
      { name: 'refresh_token', path: '/auth/token', method: 'POST', headers: FORM, body: refreshBody },
      { name: 'GET /auth/me', path: '/auth/me', headers: { authorization: `Bearer ${pair.access_token}` } },
    ];
    const results: Measured[] = [];
    for (const t of targets) results.push(await measure(url, t));
    const verifyRate = await verificationsPerSecond(url, pair.access_token);

    const floor = results[0].rps;
    const width = Math.max(...results.map((r) => r.name.length));
    const lines = results.map(
      (r) =>
        `${`${r.name}:`.padEnd(width + 1)} ${Math.round(r.rps).toString().padStart(6)} req/s, ` +
        `p50 ${ms(r.p50).padStart(4)} ms, p99 ${ms(r.p99).padStart(4)} ms, ${(r.rps / floor).toFixed(2)}x of /healthz` +
        (r.failures ? `  ** INVALID: ${r.failures}` : ''),
    );
    process.stdout.write(
      `\nLakeport token benchmark (${url}, ${CONNECTIONS} connections, ${DURATION_SECONDS} s each, node ${process.version})\n` +
        `${lines.join('\n')}\n` +
        `jose jwtVerify (in-process): ${Math.round(verifyRate)} verifications/s (single loop, ${VERIFY_SECONDS} s)\n`,
    );

    const failed = results.filter((r) => r.failures);
    if (failed.length > 0) {
      process.stderr.write(`WARNING: non-200 responses for ${failed.map((r) => r.name).join(', ')}; figures above are not valid\n`);
      process.exitCode = 1;
    }
  } finally {
    await server.stop();
  }
}
