// `npm run bench -- console`: the web console's first load in headless Chromium (Debian's chromium via
// playwright-core) against a real server: bytes transferred (compressed as served) and the time until
// the dataset list is interactive, cold cache, median of RUNS. Targets: ≤ 300 KB, ≤ 1.5 s. The peer is
// the API call the list shows (the Iceberg catalog's table listing, from Node, same run): the ratio
// says what the page costs beyond the data it displays.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { buildConsole, CHROMIUM, launchChromium } from '../test/console/browser.ts';
import { startServer } from './lib/server.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const execFileAsync = promisify(execFile);
const RUNS = 5;
const TARGET_BYTES = 300 * 1024;
const TARGET_MS = 1500;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function run(): Promise<void> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-bench-console-'));
  const consoleDir = path.join(work, 'console');
  await buildConsole(consoleDir);
  const server = await startServer({ env: { LAKEPORT_CONSOLE_DIR: consoleDir } });
  const browser = await launchChromium();
  try {
    const call = async (method: string, url: string, init: { token?: string; json?: unknown; admin?: boolean } = {}) => {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (init.token) headers.authorization = `Bearer ${init.token}`;
      if (init.admin) headers['x-admin-token'] = server.adminToken;
      if (init.json !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${server.url}${url}`, { method, headers, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
      const body = await res.json().catch(() => undefined);
      if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(body)}`);
      return body;
    };
    const { secret } = await call('POST', '/auth/clients/bench/credentials', { admin: true, json: {} });
    const token = await fetch(`${server.url}/auth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'bench', client_secret: secret }) }).then((r) => r.json());
    const account = await call('POST', '/billing/v1/accounts', { token: token.access_token, json: { name: 'Bench' } });
    await call('PUT', '/control/v1/workspaces/bench', { token: token.access_token, json: { billing_account: account.account_id, members: [{ identity: 'bench', role: 'owner' }] } });
    // Ten datasets to list, made by the CLI's upload (as a user would).
    const file = path.join(work, 'rows.csv');
    fs.writeFileSync(file, 'id,name\n1,a\n2,b\n');
    const env = { ...process.env, LAKEPORT_URL: server.url, LAKEPORT_CLIENT_ID: 'bench', LAKEPORT_CLIENT_SECRET: secret };
    for (let i = 0; i < 10; i++) {
      await execFileAsync(process.execPath, [path.join(ROOT, 'bin', 'lakeport.cjs'), 'upload', file, '--to', `bench.core.table_${i}`, '--accept'], { env });
    }
    const listUrl = '/browse/bench/core';

    const loads: { ms: number; bytes: number; requests: number; assets: Map<string, number> }[] = [];
    const apiMs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      await call('GET', `/iceberg/v1/namespaces/bench%1Fcore/tables`, { token: token.access_token });
      apiMs.push(performance.now() - t0);

      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      // Signed in as the console does it: the session cookies from /auth/token?set_cookie=true.
      await context.request.post(`${server.url}/auth/token?set_cookie=true`, { form: { grant_type: 'client_credentials', client_id: 'bench', client_secret: secret } });
      const page = await context.newPage();
      const sizes: Promise<{ url: string; bytes: number }>[] = [];
      page.on('requestfinished', (request) => sizes.push(request.sizes().then((s) => ({ url: request.url(), bytes: s.responseBodySize + s.responseHeadersSize }))));
      const start = performance.now();
      await page.goto(`${server.url}${listUrl}`);
      const first = page.getByTestId('datasets-list').getByRole('link').first();
      await first.waitFor({ state: 'visible' });
      await first.click({ trial: true }); // actionable: visible, stable, enabled, receives events
      const ms = performance.now() - start;
      await page.waitForLoadState('networkidle');
      const done = await Promise.all(sizes);
      const assets = new Map(done.filter((d) => d.url.includes('/_console/')).map((d) => [new URL(d.url).pathname, d.bytes]));
      loads.push({ ms, bytes: done.reduce((n, d) => n + d.bytes, 0), requests: done.length, assets });
      await context.close();
    }

    // The same files' gzip sizes, for the record (the server sends brotli to browsers that take it).
    const firstAssets = [...loads[0].assets.keys()];
    const gzipBytes = firstAssets.reduce((n, p) => n + zlib.gzipSync(fs.readFileSync(path.join(consoleDir, p))).length, 0) + zlib.gzipSync(fs.readFileSync(path.join(consoleDir, 'index.html'))).length;
    const bytes = median(loads.map((l) => l.bytes));
    const ms = median(loads.map((l) => l.ms));
    const peer = median(apiMs);
    const ok = (pass: boolean) => (pass ? 'ok' : 'MISSED');
    console.log(`console first load (cold cache, median of ${RUNS}; Chromium ${browser.version()}, ${os.cpus().length} cores)`);
    console.log(`  transferred: ${(bytes / 1024).toFixed(1)} KB in ${loads[0].requests} requests, as served (brotli) incl. headers and API answers (target ≤ ${TARGET_BYTES / 1024} KB) ${ok(bytes <= TARGET_BYTES)}`);
    console.log(`  the same page files gzip-compressed: ${(gzipBytes / 1024).toFixed(1)} KB (${firstAssets.length} assets + index.html) ${ok(gzipBytes <= TARGET_BYTES)}`);
    console.log(`  dataset list interactive: ${ms.toFixed(0)} ms (target ≤ ${TARGET_MS} ms) ${ok(ms <= TARGET_MS)}; runs ${loads.map((l) => l.ms.toFixed(0)).join(' ')}`);
    console.log(`  peer: the listing API call alone ${peer.toFixed(1)} ms; ratio page / API call ${(ms / peer).toFixed(1)}x`);
  } finally {
    await browser.close();
    await server.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}
