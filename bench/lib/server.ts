// Starts a real Lakeport server (`node bin/lakeport.cjs serve`) as a child process for benchmarks.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createDatabaseBeside } from '../../test/pg-database.ts';

export interface BenchServer {
  /** Base URL the server listens on, e.g. `http://127.0.0.1:41234`. */
  url: string;
  adminToken: string;
  /** Where its metadata is, for reports: `PGlite` or `PostgreSQL <host>/<database>`. */
  database: string;
  /** The fresh PostgreSQL database's URL (dropped by stop()), when DATABASE_URL was set. */
  databaseUrl?: string;
  /** The server process's id. */
  pid: number;
  /** The server process's peak resident memory so far (Linux VmHWM), in bytes. */
  peakRssBytes(): Promise<number | undefined>;
  /** CPU seconds the server process (all its threads) has used so far (Linux /proc), or undefined. */
  cpuSeconds(): Promise<number | undefined>;
  /** Stops the server (SIGTERM, SIGKILL after 5 s) and removes its data directory and database. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** How long to wait for the listening line; the first start runs PGlite's initdb. */
  startupTimeoutMs?: number;
  /** Extra environment for the server (e.g. LAKEPORT_ACCESS_TOKEN_TTL_SECONDS). */
  env?: Record<string, string>;
  /** Extra node options for the server process, e.g. ['--cpu-prof'] (or BENCH_SERVER_NODE_ARGS, space-separated). */
  nodeArgs?: string[];
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LISTENING = /^Lakeport listening on (\S+)/;
const KILL_AFTER_MS = 5_000;

export async function startServer(options: StartOptions = {}): Promise<BenchServer> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'lakeport-bench-'));
  const adminToken = `bench_${crypto.randomBytes(24).toString('base64url')}`;

  // With DATABASE_URL, a fresh database beside the one it names (never that one), dropped by stop():
  // every run starts empty, its signing keys sealed with this run's master key.
  const adminUrl = options.env?.DATABASE_URL ?? process.env.DATABASE_URL;
  const database = adminUrl ? await createDatabaseBeside(adminUrl, 'lakeport_bench') : undefined;

  // The caller's environment minus any Lakeport settings, so e.g. a LAKEPORT_PUBLIC_URL cannot
  // change the issuer.
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LAKEPORT_')));
  Object.assign(env, {
    PORT: '0',
    HOST: '127.0.0.1',
    LAKEPORT_DATA_DIR: dataDir,
    LAKEPORT_LOG_LEVEL: 'warn',
    LAKEPORT_ADMIN_TOKEN: adminToken,
    ...options.env,
    ...(database ? { DATABASE_URL: database.url } : {}),
  });

  const child = spawn(process.execPath, [...(options.nodeArgs ?? process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []), path.join(ROOT, 'bin/lakeport.cjs'), 'serve'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
        await exited;
        clearTimeout(timer);
      }
      await fs.rm(dataDir, { recursive: true, force: true });
      await database?.drop();
    })());
  // Ctrl-C on the benchmark still cleans up the server and its data directory.
  const onSignal = (signal: NodeJS.Signals) => void stop().then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);

  const early: string[] = [];
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timeoutMs = options.startupTimeoutMs ?? 60_000;
      const timer = setTimeout(() => reject(new Error(`server did not start within ${timeoutMs / 1000} s`)), timeoutMs);
      child.once('error', reject);
      child.once('exit', (code, signal) => reject(new Error(`server exited (${signal ?? `code ${code}`}) before listening`)));
      let ready = false;
      readline.createInterface({ input: child.stdout }).on('line', (line) => {
        const match = ready ? null : LISTENING.exec(line);
        if (match) {
          ready = true;
          clearTimeout(timer);
          resolve(match[1].replace(/\/+$/, ''));
        } else if (ready) {
          process.stderr.write(`[lakeport] ${line}\n`); // warn-level logs during the benchmark
        } else {
          early.push(line);
        }
      });
    });
    const peakRssBytes = async () => {
      const status = await fs.readFile(`/proc/${child.pid}/status`, 'utf8').catch(() => '');
      const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
      return kb === undefined ? undefined : Number(kb) * 1024;
    };
    const cpuSeconds = async () => {
      // Fields 14 and 15 of /proc/<pid>/stat (after the parenthesised name): user and system time in clock ticks (100 a second).
      const stat = await fs.readFile(`/proc/${child.pid}/stat`, 'utf8').catch(() => '');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return fields.length > 13 ? (Number(fields[11]) + Number(fields[12])) / 100 : undefined;
    };
    const where = database ? `PostgreSQL ${new URL(database.url).host}/${database.name}` : 'PGlite';
    return { url, adminToken, database: where, databaseUrl: database?.url, pid: child.pid!, peakRssBytes, cpuSeconds, stop };
  } catch (error) {
    await stop();
    const output = early.length ? `\n--- server stdout ---\n${early.join('\n')}` : '';
    throw new Error(`${error instanceof Error ? error.message : String(error)}${output}`);
  }
}
