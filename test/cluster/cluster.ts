/**
 * A Lakeport cluster on one machine for the cluster suite: `serve` and `lakeport worker` processes
 * (real OS processes, `node bin/lakeport.cjs …`, each in its own process group and data directory)
 * sharing one fresh PostgreSQL database and one S3-compatible bucket — with a TCP relay in front of
 * PostgreSQL that can be cut (tcp-proxy.ts) and a fault-injecting HTTP proxy in front of the S3
 * server (fault-proxy.ts). Ports are all chosen by the OS; everything is stopped and removed by stop().
 */
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createDatabaseBeside } from '../pg-database.ts';
import { groupAlive, REPO_ROOT, signalGroup } from '../processes.ts';
import { startS3Server, type TestS3Server } from '../s3-server.ts';
import { startFaultProxy, type FaultProxy } from './fault-proxy.ts';
import { startTcpProxy, type TcpProxy } from '../tcp-proxy.ts';

const BIN = path.join(REPO_ROOT, 'bin', 'lakeport.cjs');
const LISTENING = /^Lakeport listening on (\S+) /m;
const WORKER = /^Lakeport worker (\S+) /m;
const OUTPUT_KEPT = 256 * 1024;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `check` until it returns something other than undefined/false, or throws after `timeoutMs`
 * naming `what`. A thrown error is retried, unless it is marked `fatal`.
 */
export async function until<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs: number, stepMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      if ((error as { fatal?: boolean }).fatal) throw error;
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(stepMs);
  }
}

export interface LakeportProcess {
  readonly kind: 'serve' | 'worker';
  readonly name: string;
  /** `http://127.0.0.1:<port>` (serve only). */
  readonly url: string;
  /** The worker id it printed (worker only), as in `jobs.worker_id`. */
  readonly workerId: string;
  readonly dataDir: string;
  readonly pid: number;
  /** Whether the process is still running. */
  alive(): boolean;
  /** What it printed (stdout and stderr, the last 256 KiB). */
  output(): string;
  /** `kill -9` of its process group (the process and the query processes it started); resolves once it is gone. */
  kill9(): Promise<void>;
  /** SIGTERM, then SIGKILL after a grace period. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Extra environment (applied last; '' values unset a variable). */
  env?: Record<string, string>;
  /** Reuse this data directory (a restart) instead of a fresh one. */
  dataDir?: string;
  timeoutMs?: number;
}

export interface Cluster {
  /** The shared environment every process gets (DATABASE_URL through the relay, storage, keys). */
  readonly env: Record<string, string>;
  readonly adminToken: string;
  readonly publicUrl: string;
  readonly pgProxy: TcpProxy;
  readonly s3: TestS3Server;
  readonly s3Proxy: FaultProxy;
  /** A pool on the cluster's database, straight to PostgreSQL (not through the relay): for checks. */
  readonly db: pg.Pool;
  start(kind: 'serve' | 'worker', name: string, options?: StartOptions): Promise<LakeportProcess>;
  /** Starts a process and resolves with how it ended, for processes that must refuse to start. */
  run(kind: 'serve' | 'worker', env: Record<string, string>, timeoutMs?: number): Promise<{ code: number | null; output: string }>;
  /** A fresh temporary directory, removed by stop(). */
  tempDir(name: string): Promise<string>;
  /**
   * A fresh temporary directory on a tmpfs of `size` (e.g. `256m`) of its own, so that it can be
   * filled; unmounted by stop(). Answers why not when mounting is not allowed here (not root, or no
   * CAP_SYS_ADMIN in a container): then the directory is a plain one.
   */
  smallDisk(name: string, size: string): Promise<{ dir: string; mounted: true } | { dir: string; mounted: false; reason: string }>;
  stop(): Promise<void>;
}

/** The variables a process inherits from the test run that would change what it does: unset for the cluster's processes. */
const INHERITED = /^(LAKEPORT_|DATABASE_URL$|S3_|AWS_|PORT$|HOST$)/;

function baseEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!INHERITED.test(k)) env[k] = v;
  for (const [k, v] of Object.entries(overrides)) {
    if (v === '') delete env[k];
    else env[k] = v;
  }
  return env;
}

/** Starts the cluster's shared parts (no Lakeport process yet): a fresh database beside `adminUrl`, the relay, the S3 server and its proxy. */
export async function startCluster(adminUrl: string): Promise<Cluster> {
  const cleanups: (() => Promise<unknown>)[] = [];
  const processes = new Set<{ pgid: number; exited: Promise<void> }>();
  const killAllOnExit = () => {
    for (const p of processes) signalGroup(p.pgid, 'SIGKILL');
  };
  process.once('exit', killAllOnExit);

  const stop = async () => {
    await Promise.all(
      [...processes].map(async (p) => {
        signalGroup(p.pgid, 'SIGTERM');
        const gone = await Promise.race([p.exited.then(() => true), sleep(3_000).then(() => false)]);
        if (!gone) signalGroup(p.pgid, 'SIGKILL');
        await p.exited;
      }),
    );
    process.off('exit', killAllOnExit);
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error) => console.error('cluster cleanup:', error));
  };

  try {
    const database = await createDatabaseBeside(adminUrl, 'lakeport_cluster');
    cleanups.push(() => database.drop());
    const direct = new URL(database.url);
    const pgProxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    cleanups.push(() => pgProxy.close());
    const db = new pg.Pool({ connectionString: database.url, max: 4 });
    cleanups.push(() => db.end());
    const s3 = await startS3Server({ bucket: 'lakeport', verifySignatures: true });
    cleanups.push(() => s3.stop());
    const s3Proxy = await startFaultProxy(s3.endpoint);
    cleanups.push(() => s3Proxy.close());

    const relayed = new URL(database.url);
    relayed.hostname = '127.0.0.1';
    relayed.port = String(pgProxy.port);
    const adminToken = `lpadm_cluster_${crypto.randomBytes(16).toString('hex')}`;
    // Behind a load balancer every server has the same public URL; nothing here resolves it.
    const publicUrl = 'http://lakeport.cluster.invalid';
    const env: Record<string, string> = {
      DATABASE_URL: relayed.toString(),
      LAKEPORT_STORAGE_URL: `s3://${s3.bucket}/cluster`,
      S3_ENDPOINT: s3Proxy.endpoint,
      S3_REGION: s3.region,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      LAKEPORT_MASTER_KEY: crypto.randomBytes(32).toString('base64'),
      LAKEPORT_ADMIN_TOKEN: adminToken,
      LAKEPORT_PUBLIC_URL: publicUrl,
      LAKEPORT_LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: '0',
    };

    const tempDir = async (name: string) => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), `lakeport-cluster-${name}-`));
      cleanups.push(() => fs.rm(dir, { recursive: true, force: true, maxRetries: 3 }));
      return dir;
    };

    const smallDisk = async (name: string, size: string) => {
      const dir = await tempDir(name);
      try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
      } catch (error) {
        const reason = String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim().split('\n')[0];
        return { dir, mounted: false as const, reason: `cannot mount a tmpfs here: ${reason}` };
      }
      // Registered after the directory's removal, so run before it.
      cleanups.push(async () => execFileSync('umount', ['-l', dir], { stdio: 'pipe' }));
      return { dir, mounted: true as const };
    };

    const spawnLakeport = (kind: 'serve' | 'worker', env: NodeJS.ProcessEnv) => {
      const child = spawn(process.execPath, [BIN, kind], { cwd: REPO_ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const keep = (chunk: Buffer) => {
        out = (out + chunk.toString('utf8')).slice(-OUTPUT_KEPT);
      };
      child.stdout!.on('data', keep);
      child.stderr!.on('data', keep);
      const exited = new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve();
        else child.once('exit', () => resolve());
      });
      const entry = { pgid: child.pid!, exited };
      processes.add(entry);
      void exited.then(() => {
        // The group may outlive its leader (a query process): it is gone only when the group is.
        if (!groupAlive(entry.pgid)) processes.delete(entry);
      });
      return { child, exited, output: () => out, entry };
    };

    const start = async (kind: 'serve' | 'worker', name: string, options: StartOptions = {}): Promise<LakeportProcess> => {
      const dataDir = options.dataDir ?? (await tempDir(name));
      const { child, exited, output, entry } = spawnLakeport(kind, baseEnv({ ...env, LAKEPORT_DATA_DIR: dataDir, ...options.env }));
      const timeoutMs = options.timeoutMs ?? 60_000;
      const ready = kind === 'serve' ? LISTENING : WORKER;
      let ended = false;
      void exited.then(() => (ended = true));
      const announced = await until(
        `${kind} ${name} to start`,
        () => {
          if (ended) throw Object.assign(new Error(`${kind} ${name} exited before it was ready:\n${output()}`), { fatal: true });
          return ready.exec(output())?.[1];
        },
        timeoutMs,
        50,
      ).catch((error: Error) => {
        signalGroup(entry.pgid, 'SIGKILL');
        throw new Error(`${error.message}\n--- output of ${kind} ${name} ---\n${output()}`);
      });
      const kill = async (signal: NodeJS.Signals, graceMs: number) => {
        signalGroup(entry.pgid, signal);
        const gone = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
        if (!gone) signalGroup(entry.pgid, 'SIGKILL');
        await exited;
        await until(`the process group of ${name} to end`, () => !groupAlive(entry.pgid), 10_000, 20);
        processes.delete(entry);
      };
      return {
        kind,
        name,
        url: kind === 'serve' ? announced.replace(/\/+$/, '') : '',
        workerId: kind === 'worker' ? announced : '',
        dataDir,
        pid: child.pid!,
        alive: () => !ended,
        output,
        kill9: () => kill('SIGKILL', 0),
        stop: () => kill('SIGTERM', 3_000),
      };
    };

    const run = async (kind: 'serve' | 'worker', extra: Record<string, string>, timeoutMs = 60_000) => {
      const dataDir = extra.LAKEPORT_DATA_DIR ?? (await tempDir(`${kind}-run`));
      const { child, exited, output, entry } = spawnLakeport(kind, baseEnv({ ...env, LAKEPORT_DATA_DIR: dataDir, ...extra }));
      const ended = await Promise.race([exited.then(() => true), sleep(timeoutMs).then(() => false)]);
      if (!ended) {
        signalGroup(entry.pgid, 'SIGKILL');
        await exited;
      }
      processes.delete(entry);
      return { code: ended ? child.exitCode : null, output: output() };
    };

    return { env, adminToken, publicUrl, pgProxy, s3, s3Proxy, db, start, run, tempDir, smallDisk, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
