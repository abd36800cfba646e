/**
 * Where a job's SQL runs: a sandboxed DuckDB over exactly the views it may read (sandbox.ts). Two
 * implementations: InlineQueryEngine in this process (a pool of warm sandboxes), and
 * ProcessQueryEngine (query-host.ts), the same pool in a child process, so that a native crash,
 * a memory blow-up or a busy libuv thread pool never reaches the server.
 */
import fs from 'node:fs';
import { Sandbox, SandboxInterruptedError, SandboxQueryError, type InterruptReason, type QueryResult, type SandboxParam, type SandboxView } from './sandbox.ts';
import { SandboxPool, type SandboxPoolOptions } from './sandbox-pool.ts';

export interface QueryRequest {
  identity: string;
  views: SandboxView[];
  sql: string;
  params: Record<string, SandboxParam>;
  /** Where the Parquet result goes (a fresh local path). */
  resultPath: string;
  /** Private copies of external objects the query reads: the job gets an engine of its own, never pooled. */
  readPaths?: string[];
  /** The query is stopped (SandboxInterruptedError 'too_large') once its result file passes this. */
  maxResultBytes?: number;
}

export interface QueryRun {
  /** The result, or SandboxQueryError, SandboxInterruptedError, QueryEngineCrashedError. */
  done: Promise<QueryResult>;
  interrupt(reason: InterruptReason): void;
}

/** What an engine holds now (GET /metrics). */
export interface QueryEngineStats {
  /** Warm sandbox engines waiting for a job, and those running one. */
  idle: number;
  leased: number;
  /** The query process's resident memory (ProcessQueryEngine; 0 while none runs); inline engines are in this process's. */
  processResidentBytes?: number;
}

export interface QueryEngine {
  run(request: QueryRequest): QueryRun;
  stats(): Promise<QueryEngineStats>;
  close(): Promise<void>;
}

/** The process that ran the query died under it (a native crash, or killed for its memory). */
export class QueryEngineCrashedError extends Error {
  constructor(readonly detail: string) {
    super(`The query engine process stopped: ${detail}`);
    this.name = 'QueryEngineCrashedError';
  }
}

export type EngineOptions = SandboxPoolOptions['engine'];

/** The sandboxes in this process: warm pooled engines, or a private one for a job with read paths. */
export class InlineQueryEngine implements QueryEngine {
  readonly sandboxes: SandboxPool;

  constructor(
    private readonly engine: EngineOptions,
    poolOptions: Partial<Omit<SandboxPoolOptions, 'engine'>> = {},
  ) {
    this.sandboxes = new SandboxPool({ ...poolOptions, engine });
  }

  run(request: QueryRequest): QueryRun {
    let sandbox: Sandbox | undefined;
    let stopped: InterruptReason | undefined;
    const done = (async () => {
      if (request.readPaths) {
        if (this.engine.tempDirectory) await fs.promises.mkdir(this.engine.tempDirectory, { recursive: true });
        sandbox = await Sandbox.open(request.views, { ...this.engine, readPaths: request.readPaths });
      } else {
        sandbox = await this.sandboxes.acquire(request.identity, request.views);
      }
      try {
        if (stopped) throw new SandboxInterruptedError(stopped);
        return await sandbox.runToParquet(request.sql, request.params, request.resultPath, { maxBytes: request.maxResultBytes });
      } catch (error) {
        // An interrupt from here is reported with the reason it was given for.
        if (error instanceof SandboxInterruptedError && stopped) throw new SandboxInterruptedError(stopped);
        throw error;
      } finally {
        sandbox.close();
      }
    })();
    return {
      done,
      interrupt(reason) {
        stopped ??= reason;
        sandbox?.interrupt();
      },
    };
  }

  async stats(): Promise<QueryEngineStats> {
    const { idle, leased } = this.sandboxes.stats();
    return { idle, leased };
  }

  close(): Promise<void> {
    return this.sandboxes.drain();
  }
}

/** Errors as they cross the process boundary (structured clone keeps no classes). */
export type WireError = { kind: 'query'; message: string; position?: number; errorType?: string } | { kind: 'interrupted'; reason: InterruptReason } | { kind: 'other'; message: string };

export function toWire(error: unknown): WireError {
  if (error instanceof SandboxQueryError) return { kind: 'query', message: error.message, position: error.position, errorType: error.errorType };
  if (error instanceof SandboxInterruptedError) return { kind: 'interrupted', reason: error.reason };
  return { kind: 'other', message: error instanceof Error ? error.message : String(error) };
}

export function fromWire(error: WireError): Error {
  if (error.kind === 'query') return new SandboxQueryError(error.message, error.position, error.errorType);
  if (error.kind === 'interrupted') return new SandboxInterruptedError(error.reason);
  return new Error(error.message);
}
