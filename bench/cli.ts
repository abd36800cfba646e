// `npm run bench -- cli`: start-up of the `lakeport` command (docs/cli.md, "Start-up").
//  - median wall time of `lakeport --help`, `lakeport query --help` and `lakeport query "SELECT 1"`
//    against a running local server, each as a fresh `node bin/lakeport.cjs` process, runs interleaved;
//  - a query round trip's client-side cost: that wall time minus the same command's median run inside
//    this (warm) process over the same server, which is the server's and the network's share;
//  - each against a bare `node -e 0` (the "named peer" baseline) measured in the same run, and with
//    the mean CPU time of each process (load-independent, unlike the wall time on a shared machine).
// First (re)builds the precompiled CLI as `npm ci` does, then measures it and, for comparison, the
// tsx path (LAKEPORT_CLI=tsx) that runs when the bundle is missing or stale. BENCH_RUNS overrides 15.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
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

/** CPU time (user + system, ms) of this process's children that have ended, from /proc (Linux; else undefined). */
function childrenCpuMs(): number | undefined {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100; // cutime, cstime (fields 16 and 17), USER_HZ 100
  } catch {
    return undefined;
  }
}

/** One run's wall time and CPU time (the CPU time does not grow with the machine's load). */
function timeOnce(c: Case, env: NodeJS.ProcessEnv): { wall: number; cpu: number | undefined } {
  const cpuBefore = childrenCpuMs();
  const started = performance.now();
  const run = spawnSync(process.execPath, c.args, { cwd: ROOT, env: { ...env, ...c.env }, encoding: 'utf8' });
  const wall = performance.now() - started;
  const cpuAfter = childrenCpuMs();
  if (run.status !== 0 || !c.expect.test(run.stdout)) throw new Error(`${c.name}: exit ${run.status}\n${run.stdout}\n${run.stderr}`);
  return { wall, cpu: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore };
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
    // The same command in this warm process: what the server and the network take. First, while
    // setUp's kept-alive connection is fresh (fetch may reuse one the server has closed meanwhile).
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

    const times = new Map(cases.map((c) => [c.name, [] as number[]]));
    const cpu = new Map(cases.map((c) => [c.name, [] as number[]]));
    for (const c of cases) timeOnce(c, env); // warm-up: the tsx cache, the page cache
    for (let i = 0; i < RUNS; i++) {
      for (const c of cases) {
        const t = timeOnce(c, env);
        times.get(c.name)!.push(t.wall);
        if (t.cpu !== undefined) cpu.get(c.name)!.push(t.cpu);
      }
    }
    // Mean, not median: the kernel counts CPU time in 10 ms ticks.
    const cpuOf = (name: string) => {
      const values = cpu.get(name)!;
      return values.length ? `${(values.reduce((a, b) => a + b, 0) / values.length).toFixed(0).padStart(4)} ms CPU` : '';
    };

    const node = median(times.get('node -e 0')!);
    const serverMs = median(inProcess);
    const line = (name: string, ms: number, cpuName: string | undefined, target?: boolean) =>
      console.log(
        `${name.padEnd(46)} ${ms.toFixed(0).padStart(5)} ms  ${(ms / node).toFixed(1).padStart(4)}x node  ${cpuName ? cpuOf(cpuName) : ''.padEnd(11)}${target === undefined ? '' : `  ${target ? 'ok' : 'MISSED'} (< ${TARGET_MS} ms)`}`,
      );
    console.log(`lakeport CLI start-up: median wall time of ${RUNS} runs each (interleaved), mean CPU time; server ${server.url} (${server.database})`);
    line('node -e 0 (baseline)', node, 'node -e 0');
    for (const suffix of ['', ' (tsx)']) {
      const help = median(times.get(`lakeport --help${suffix}`)!);
      const queryHelp = median(times.get(`lakeport query --help${suffix}`)!);
      const query = median(times.get(`lakeport query (round trip${suffix ? ', tsx' : ''})`)!);
      const target = suffix ? undefined : true;
      console.log(suffix ? '\nwithout the bundle (LAKEPORT_CLI=tsx, as when it is missing or stale):' : '\nprecompiled bundle (dist/cli, built as npm ci does):');
      line(`  lakeport --help`, help, `lakeport --help${suffix}`, target && help < TARGET_MS);
      line(`  lakeport query --help`, queryHelp, `lakeport query --help${suffix}`, target && queryHelp < TARGET_MS);
      line(`  lakeport query "${SQL}": whole`, query, `lakeport query (round trip${suffix ? ', tsx' : ''})`);
      line(`  ... client side (whole - ${serverMs.toFixed(0)} ms in-process)`, query - serverMs, undefined, target && query - serverMs < TARGET_MS);
    }
  } finally {
    await server.stop();
  }
}
