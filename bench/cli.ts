// `npm run bench -- cli`: start-up of the `lakeport` command (docs/cli.md, "Start-up").
//  - median wall time of `lakeport --help`, `lakeport query --help` and `lakeport query "SELECT 1"`
//    against a running local server, each as a fresh `node bin/lakeport.cjs` process, runs interleaved;
//  - a query round trip's client-side cost: that wall time minus the same command's median run inside
//    this (warm) process over the same server, which is the server's and the network's share;
//  - each against a bare `node -e 0` (the "named peer" baseline) measured in the same run.
// First (re)builds the precompiled CLI as `npm ci` does, then measures it and, for comparison, the
// tsx path (LAKEPORT_CLI=tsx) that runs when the bundle is missing or stale. BENCH_RUNS overrides 15.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { queryCommand } from '../src/cli/query.ts';
import { median, setUp } from './lib/lake.ts';
import { startServer } from './lib/server.ts';
import { buildCli } from '../scripts/build-cli.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const TARGET_MS = 300;
const SQL = 'SELECT 1 AS one';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'lakeport.cjs');

interface Case {
  name: string;
  args: string[];
  env?: Record<string, string>;
  /** What its stdout must hold, so a failing command is not timed as a fast one. */
  expect: RegExp;
}

function timeOnce(c: Case, env: NodeJS.ProcessEnv): number {
  const started = performance.now();
  const run = spawnSync(process.execPath, c.args, { cwd: ROOT, env: { ...env, ...c.env }, encoding: 'utf8' });
  const elapsed = performance.now() - started;
  if (run.status !== 0 || !c.expect.test(run.stdout)) throw new Error(`${c.name}: exit ${run.status}\n${run.stdout}\n${run.stderr}`);
  return elapsed;
}

const sink = () => new Writable({ write: (_chunk, _encoding, done) => done() });

export async function run(): Promise<void> {
  await buildCli();
  const server = await startServer();
  try {
    const api = await setUp(server.url, server.adminToken);
    const env: NodeJS.ProcessEnv = { ...process.env, LAKEPORT_URL: server.url, LAKEPORT_TOKEN: api.auth.authorization.slice('Bearer '.length) };
    delete env.LAKEPORT_CLIENT_ID;
    delete env.LAKEPORT_CLIENT_SECRET;
    delete env.LAKEPORT_CLI;
    const tsx = { LAKEPORT_CLI: 'tsx' };
    const cases: Case[] = [
      { name: 'node -e 0', args: ['-e', '0'], expect: /^$/ },
      { name: 'lakeport --help', args: [BIN, '--help'], expect: /^Usage: lakeport / },
      { name: 'lakeport query --help', args: [BIN, 'query', '--help'], expect: /^Usage: lakeport query/ },
      { name: 'lakeport query (round trip)', args: [BIN, 'query', SQL], expect: /\(1 row\)/ },
      { name: 'lakeport --help (tsx)', args: [BIN, '--help'], env: tsx, expect: /^Usage: lakeport / },
      { name: 'lakeport query --help (tsx)', args: [BIN, 'query', '--help'], env: tsx, expect: /^Usage: lakeport query/ },
      { name: 'lakeport query (round trip, tsx)', args: [BIN, 'query', SQL], env: tsx, expect: /\(1 row\)/ },
    ];
    const times = new Map(cases.map((c) => [c.name, [] as number[]]));
    for (const c of cases) timeOnce(c, env); // warm-up: the tsx cache, the page cache
    for (let i = 0; i < RUNS; i++) for (const c of cases) times.get(c.name)!.push(timeOnce(c, env));

    // The same command in this warm process: what the server and the network take.
    const saved = { url: process.env.LAKEPORT_URL, token: process.env.LAKEPORT_TOKEN };
    Object.assign(process.env, { LAKEPORT_URL: env.LAKEPORT_URL, LAKEPORT_TOKEN: env.LAKEPORT_TOKEN });
    const inProcess: number[] = [];
    try {
      for (let i = 0; i < RUNS + 3; i++) {
        const started = performance.now();
        const code = await queryCommand([SQL], { stdout: sink(), stderr: process.stderr });
        if (code !== 0) throw new Error(`in-process query: exit ${code}`);
        if (i >= 3) inProcess.push(performance.now() - started);
      }
    } finally {
      for (const [name, value] of [['LAKEPORT_URL', saved.url], ['LAKEPORT_TOKEN', saved.token]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }

    const node = median(times.get('node -e 0')!);
    const serverMs = median(inProcess);
    const line = (name: string, ms: number, target?: boolean) =>
      console.log(`${name.padEnd(46)} ${ms.toFixed(0).padStart(5)} ms  ${(ms / node).toFixed(1).padStart(4)}x node${target === undefined ? '' : `  ${target ? 'ok' : 'MISSED'} (< ${TARGET_MS} ms)`}`);
    console.log(`lakeport CLI start-up: median of ${RUNS} runs each (interleaved), server ${server.url} (${server.database})`);
    line('node -e 0 (baseline)', node);
    for (const suffix of ['', ' (tsx)']) {
      const help = median(times.get(`lakeport --help${suffix}`)!);
      const queryHelp = median(times.get(`lakeport query --help${suffix}`)!);
      const query = median(times.get(`lakeport query (round trip${suffix ? ', tsx' : ''})`)!);
      const target = suffix ? undefined : true;
      console.log(suffix ? '\nwithout the bundle (LAKEPORT_CLI=tsx, as when it is missing or stale):' : '\nprecompiled bundle (dist/cli, built as npm ci does):');
      line(`  lakeport --help`, help, target && help < TARGET_MS);
      line(`  lakeport query --help`, queryHelp, target && queryHelp < TARGET_MS);
      line(`  lakeport query "${SQL}": whole`, query);
      line(`  ... client side (whole - ${serverMs.toFixed(0)} ms in-process)`, query - serverMs, target && query - serverMs < TARGET_MS);
    }
  } finally {
    await server.stop();
  }
}
