/**
 * Starts Lakeport for end-to-end tests exactly as a user does: `npm start` in the repository root,
 * configured only through the environment. PORT=0 lets the OS pick a free port; the URL is read
 * back from the "Lakeport listening on …" line. No LAKEPORT_ADMIN_TOKEN is passed, so the server
 * generates one, prints it once and keeps it in `<data dir>/admin-token`.
 *
 * When DATABASE_URL is set (CI runs the suite against PostgreSQL), each server gets a fresh
 * database `lakeport_e2e_<hex>`, dropped again by stop().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { groupAlive, REPO_ROOT, signalGroup } from '../processes.ts';

export { REPO_ROOT } from '../processes.ts';

export interface StartServerOptions {
  /** How long to wait for the server to announce itself. */
  startTimeoutMs?: number;
  /** Extra environment variables for the server (applied last). */
  env?: Record<string, string>;
}

export interface RunningServer {
  /** The listening address, e.g. `http://127.0.0.1:41234` (no trailing slash). */
  url: string;
  /** The public URL the server announced (equals `url` unless LAKEPORT_PUBLIC_URL is set). */
  publicUrl: string;
  dataDir: string;
  /** The generated admin token, as read from `<dataDir>/admin-token`. */
  adminToken: string;
  /** The database the server uses when DATABASE_URL was set, else undefined (PGlite in dataDir). */
  databaseUrl: string | undefined;
  /** The process group of `npm start` and everything it started (the server, its query host). */
  pgid: number | undefined;
  /** Everything the server printed on stdout so far. */
  stdout(): string;
  /** Everything the server printed on stderr so far. */
  stderr(): string;
  /** Stops the whole process group, waits for it to exit, then removes the data dir (and database). */
  stop(): Promise<void>;
}

const LISTENING_LINE = /^Lakeport listening on (\S+) \(public URL (\S+)\)$/m;
const ADMIN_TOKEN_LINE = /^admin token \(shown once; kept in (.+)\): (\S+)$/m;
const KILL_GRACE_MS = 5_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitUntil(check: () => boolean, timeoutMs: number, stepMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await sleep(stepMs);
  }
  return check();
}

/** A fresh PostgreSQL database next to the one DATABASE_URL names; returns its URL and a dropper. */
async function createDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `lakeport_e2e_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

export async function startServer(options: StartServerOptions = {}): Promise<RunningServer> {
  const startTimeoutMs = options.startTimeoutMs ?? 90_000;
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'lakeport-e2e-'));
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let child: ChildProcess | undefined;
  let out = '';
  let err = '';
  let exited: Promise<void> = Promise.resolve();
  let onProcessExit: (() => void) | undefined;

  const stop = async () => {
    if (child?.pid !== undefined) {
      const pgid = child.pid;
      // npm, the shell it may use and the node server all share the group `detached` created.
      signalGroup(pgid, 'SIGTERM');
      const gone = await waitUntil(() => !groupAlive(pgid), KILL_GRACE_MS);
      if (!gone) {
        signalGroup(pgid, 'SIGKILL');
        await waitUntil(() => !groupAlive(pgid), KILL_GRACE_MS);
      }
      await exited;
      if (onProcessExit) process.off('exit', onProcessExit);
      child = undefined;
    }
    try {
      if (database) await database.drop();
    } finally {
      database = undefined;
      await fs.rm(dataDir, { recursive: true, force: true, maxRetries: 3 });
    }
  };

  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      LAKEPORT_DATA_DIR: dataDir,
      LAKEPORT_LOG_LEVEL: 'warn',
    };
    // The server must generate its own admin token and derive its public URL from the port.
    delete env.LAKEPORT_ADMIN_TOKEN;
    delete env.LAKEPORT_PUBLIC_URL;
    if (process.env.DATABASE_URL) {
      database = await createDatabase(process.env.DATABASE_URL);
      env.DATABASE_URL = database.url;
    } else {
      delete env.DATABASE_URL;
    }
    Object.assign(env, options.env);

    const proc = spawn('npm', ['start'], { cwd: REPO_ROOT, detached: true, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    exited = new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) resolve();
      else proc.once('exit', () => resolve());
    });
    // Should the test process die without calling stop(), do not leave the server behind.
    const pgid = proc.pid;
    if (pgid !== undefined) {
      onProcessExit = () => signalGroup(pgid, 'SIGKILL');
      process.once('exit', onProcessExit);
    }
    proc.stdout!.setEncoding('utf8');
    proc.stderr!.setEncoding('utf8');
    proc.stdout!.on('data', (chunk: string) => (out += chunk));
    proc.stderr!.on('data', (chunk: string) => (err += chunk));

    const announced = await new Promise<{ url: string; publicUrl: string }>((resolve, reject) => {
      const describeOutput = () => `\n--- stdout ---\n${out}\n--- stderr ---\n${err}`;
      const check = () => {
        const listening = LISTENING_LINE.exec(out);
        // The admin-token line is written after the listening line; wait for both.
        if (listening && ADMIN_TOKEN_LINE.test(out)) {
          cleanup();
          resolve({ url: listening[1].replace(/\/+$/, ''), publicUrl: listening[2].replace(/\/+$/, '') });
        }
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        cleanup();
        reject(new Error(`npm start exited (code ${code}, signal ${signal}) before the server was ready${describeOutput()}`));
      };
      const onError = (error: Error) => {
        cleanup();
        reject(new Error(`could not spawn npm start: ${error.message}`));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`server did not announce itself within ${startTimeoutMs} ms${describeOutput()}`));
      }, startTimeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        proc.stdout!.off('data', check);
        proc.off('exit', onExit);
        proc.off('error', onError);
      };
      proc.stdout!.on('data', check);
      proc.once('exit', onExit);
      proc.once('error', onError);
      check();
    });

    const tokenFile = path.join(dataDir, 'admin-token');
    const adminToken = (await fs.readFile(tokenFile, 'utf8')).trim();
    const printed = [...out.matchAll(new RegExp(ADMIN_TOKEN_LINE.source, 'gm'))];
    if (printed.length !== 1) throw new Error(`expected the admin token to be printed once, saw ${printed.length} times:\n${out}`);
    if (printed[0][1] !== tokenFile || printed[0][2] !== adminToken) {
      throw new Error(`the printed admin token line does not match ${tokenFile}: ${printed[0][0]}`);
    }

    return {
      url: announced.url,
      publicUrl: announced.publicUrl,
      dataDir,
      adminToken,
      databaseUrl: database?.url,
      pgid: proc.pid,
      stdout: () => out,
      stderr: () => err,
      stop,
    };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

/** A server and a scratch directory for the tests of one suite: started before them, stopped and removed after. */
export interface SuiteServer {
  server: RunningServer;
  /** A temporary directory for the suite's files. */
  work: string;
}

/** Registers beforeAll/afterAll hooks that start a server (on the file store unless `env` says otherwise) and make a scratch directory. */
export function serverForSuite(name: string, options: StartServerOptions = {}): SuiteServer {
  const suite = {} as SuiteServer;
  beforeAll(async () => {
    suite.work = await fs.mkdtemp(path.join(os.tmpdir(), `lakeport-${name}-e2e-`));
    // Empty values count as unset: stay on the default file store whatever the shell exports.
    suite.server = await startServer({ startTimeoutMs: 90_000, ...options, env: { LAKEPORT_STORAGE_URL: '', ...options.env } });
  }, 180_000);
  afterAll(async () => {
    try {
      await suite.server?.stop();
    } finally {
      if (suite.work) await fs.rm(suite.work, { recursive: true, force: true });
    }
  }, 60_000);
  return suite;
}
