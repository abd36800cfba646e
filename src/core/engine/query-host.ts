/**
 * ProcessQueryEngine: the job sandboxes in a child process (query-host-child.ts), so that what
 * DuckDB does with a user's query cannot take the server down:
 * - a native crash (deep recursion, an engine bug) ends the child; the runs in it fail with
 *   QueryEngineCrashedError and the next run starts a new child;
 * - the child's data segment is capped (RLIMIT_DATA, `memoryBudgetBytes`): the memory of all jobs
 *   together, including what DuckDB allocates outside its buffer manager, stays within the budget
 *   (an allocation past it fails as DuckDB's Out of Memory error);
 * - the child has its own libuv thread pool, so running queries never hold the threads the server
 *   needs for files, crypto and its own DuckDB reads;
 * - the child gets no secrets: only PATH, HOME and TMPDIR of the environment.
 * Messages are structured clones over the IPC channel; results are files the child writes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { silentLogger, type Logger } from '../logger.ts';
import { processAlive } from '../processes.ts';
import type { QueryResult } from './sandbox.ts';
import { fromWire, QueryEngineCrashedError, type EngineOptions, type QueryEngine, type QueryEngineStats, type QueryRequest, type QueryRun, type WireError } from './query-engine.ts';

export interface ProcessQueryEngineOptions {
  engine: EngineOptions;
  /** The child's data segment limit: the memory budget of every job it runs together. */
  memoryBudgetBytes: number;
  /** Queries it may run at once (sizes its thread pool). */
  concurrency: number;
  /** Pool warm sandboxes in the child (false: one engine per query, closed after it). */
  pooled?: boolean;
  /** Where a lost child and a spill directory that cannot be removed are reported. */
  log?: Logger;
}

type ToChild = { type: 'init'; engine: EngineOptions; pooled: boolean } | { type: 'run'; id: number; request: QueryRequest } | { type: 'interrupt'; id: number; reason: string } | { type: 'stats'; id: number };
export type FromChild = { type: 'done'; id: number; result: QueryResult } | { type: 'failed'; id: number; error: WireError } | { type: 'stats'; id: number; stats: QueryEngineStats };

/** A child that does not say what it holds within this long is reported without its sandboxes. */
const STATS_TIMEOUT_MS = 1_000;

const CHILD = fileURLToPath(new URL('./query-host-child.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm')).href;

interface Pending {
  resolve(result: QueryResult): void;
  reject(error: Error): void;
}

export class ProcessQueryEngine implements QueryEngine {
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  /** Stats asked of the child, by message id. */
  private readonly asked = new Map<number, (stats: QueryEngineStats) => void>();
  private nextId = 1;
  private closed = false;
  /** Children started so far (1 + crashes recovered), for tests and metrics. */
  starts = 0;

  private readonly log: Logger;

  constructor(private readonly options: ProcessQueryEngineOptions) {
    this.log = options.log ?? silentLogger;
  }

  /** The child's pid while one runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  run(request: QueryRequest): QueryRun {
    const id = this.nextId++;
    const done = new Promise<QueryResult>((resolve, reject) => {
      if (this.closed) return reject(new Error('The query engine is closed'));
      this.pending.set(id, { resolve, reject });
      this.send({ type: 'run', id, request });
    });
    return {
      done,
      interrupt: (reason) => {
        if (this.pending.has(id)) this.send({ type: 'interrupt', id, reason });
      },
    };
  }

  /** The child's sandboxes and resident memory; nothing (and no child started) while none runs. */
  stats(): Promise<QueryEngineStats> {
    const child = this.child;
    if (!child || this.closed) return Promise.resolve({ idle: 0, leased: 0, processResidentBytes: 0 });
    const id = this.nextId++;
    return new Promise<QueryEngineStats>((resolve) => {
      const timer = setTimeout(() => settle({ idle: 0, leased: 0 }), STATS_TIMEOUT_MS);
      const settle = (stats: QueryEngineStats) => {
        clearTimeout(timer);
        this.asked.delete(id);
        resolve(stats);
      };
      this.asked.set(id, settle);
      child.send({ type: 'stats', id } satisfies ToChild);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.disconnect();
    const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(force);
  }

  private send(message: ToChild): void {
    const child = this.child ?? this.start();
    child.send(message);
  }

  private start(): ChildProcess {
    const { memoryBudgetBytes, concurrency, engine } = this.options;
    if (this.starts === 0 && engine.tempDirectory) removeDeadSpill(engine.tempDirectory);
    const node = [process.execPath, '--import', TSX, CHILD];
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/',
      TMPDIR: process.env.TMPDIR ?? '/tmp',
      // A query holds a pool thread for its whole run; keep some for the child's own file work.
      UV_THREADPOOL_SIZE: String(Math.max(4, concurrency * 2 + 2)),
    };
    // RLIMIT_DATA is set through the shell's ulimit (KiB): Node has no setrlimit of its own.
    const limitKiB = Math.ceil(memoryBudgetBytes / 1024);
    const useShell = process.platform === 'linux' && fs.existsSync('/bin/sh');
    const child = useShell
      ? spawn('/bin/sh', ['-c', 'ulimit -d "$0" || echo "lakeport: the query process runs without its memory limit" >&2; exec "$@"', String(limitKiB), ...node], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' })
      : spawn(node[0], node.slice(1), { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
    this.starts++;
    this.child = child;
    child.on('message', (message: FromChild) => this.receive(message));
    child.on('error', (error) => this.lost(child, error.message));
    child.once('exit', (code, signal) => this.lost(child, signal ? `killed by ${signal}` : `exit code ${code}`));
    child.send({ type: 'init', engine, pooled: this.options.pooled ?? true } satisfies ToChild);
    return child;
  }

  private receive(message: FromChild): void {
    if (message.type === 'stats') return this.asked.get(message.id)?.(message.stats);
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.pending.delete(message.id);
    if (message.type === 'done') pending.resolve(message.result);
    else pending.reject(fromWire(message.error));
  }

  /** The child is gone: what ran in it failed with it; the next run starts a new one. */
  private lost(child: ChildProcess, detail: string): void {
    // 'error' and 'exit' may both report one child: it is logged once, while it is the current one.
    const current = this.child === child;
    if (current) this.child = undefined;
    const spill = this.options.engine.tempDirectory;
    if (spill && child.pid) {
      const dir = path.join(spill, String(child.pid));
      fs.rm(dir, { recursive: true, force: true }, (error) => error && this.log.warn({ err: error, dir }, 'could not remove the spill directory of a query process'));
    }
    if (this.closed && this.pending.size === 0) return;
    if (current) this.log.error({ pid: child.pid, detail, running: this.pending.size }, 'the query process stopped; its queries fail and the next one starts a new process');
    const crashed = new QueryEngineCrashedError(detail);
    for (const [id, pending] of this.pending) {
      this.pending.delete(id);
      pending.reject(crashed);
    }
  }
}

/** Spill directories (named by pid) of query hosts that are no longer running, e.g. after a kill. */
function removeDeadSpill(directory: string): void {
  for (const name of fs.existsSync(directory) ? fs.readdirSync(directory) : []) {
    if (!/^\d+$/.test(name) || processAlive(Number(name))) continue;
    fs.rmSync(path.join(directory, name), { recursive: true, force: true });
  }
}
