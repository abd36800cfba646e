import path from 'node:path';
import type { Authorizer, Principal } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import type { Db } from '../../core/db/index.ts';
import { InlineQueryEngine, parseSize, ProcessQueryEngine, tokenizeSql, type EngineOptions, type Ingestor, type QueryEngine, type SandboxOptions, type SqlAnalyzer } from '../../core/engine/index.ts';
import { serviceModule, type PublicUrl, type TokenVerifier } from '../../core/http/index.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import type { Logger } from '../../core/logger.ts';
import { QueryChecker } from './check.ts';
import { jobsError } from './errors.ts';
import { ExternalFetcher, ExternalReadPlanner, type ExternalReadOptions } from './external/index.ts';
import { ViewDescriber } from './views.ts';
import { QueryPlanner } from './planner.ts';
import { JobRepo } from './repo.ts';
import { jobRoutes } from './routes.ts';
import { SandboxJobRunner, type JobEngines } from './runner.ts';
import { JobsService } from './service.ts';
import { LakeportStatements, SecretStore, type StatementOptions } from './statements/index.ts';
import { placeOf } from './statements/errors.ts';
import { DEFAULT_WORKER_OPTIONS, WorkerPool, type WorkerOptions } from './worker.ts';
import { MaterializedViewRepo } from './mviews/repo.ts';
import { MaterializedViewRefresher, RefreshingJobRunner } from './mviews/refresh.ts';
import { MaterializedViews, DEFAULT_SCHEDULER_TICK_MS } from './mviews/service.ts';
import { writeStatusResult } from './statements/index.ts';
import type { JobRow } from './repo.ts';

export { JobsService } from './service.ts';
export { WorkerPool, DEFAULT_WORKER_OPTIONS, type WorkerOptions } from './worker.ts';
export { SandboxJobRunner, type JobEngines } from './runner.ts';
export { LakeportStatements, SecretStore, type StatementOptions, type HostResolver } from './statements/index.ts';
export type { ExternalReadOptions } from './external/index.ts';
export { MaterializedViews } from './mviews/service.ts';

/** Materialized views: how often the scheduler looks for due REFRESH EVERY views; a test hook. */
export interface MaterializedViewOptions {
  tickMs?: number;
  /** Tests: runs just before a refresh commits (throwing there is a crash mid-refresh). */
  beforeCommit?: (job: JobRow) => Promise<void>;
}

export interface JobsOptions {
  db: Db;
  catalog: Catalog;
  authz: Authorizer;
  analyzer: SqlAnalyzer;
  ingestor: Ingestor;
  blobs: BlobStore;
  verifier: TokenVerifier;
  scratchDir: string;
  publicUrl: PublicUrl;
  timeoutMs: number;
  sandbox: SandboxOptions;
  /** Where queries run: a child process, or this one. */
  isolation: 'process' | 'inline';
  /** Memory of all job queries together (process isolation): the child's data limit. */
  memoryBudgetBytes?: number;
  results?: Partial<ResultPolicy>;
  /** Where background work (the worker pool, the runner, result sweeps) reports failures. */
  log: Logger;
  /** The worker pool; `concurrency: 0` runs no jobs in this process. */
  worker?: Partial<WorkerOptions>;
  /** What CREATE SECRET, GRANT, REVOKE, CREATE/DROP TAG and ALTER WORKSPACE need. */
  statements: StatementOptions;
  /** READ_* of private storage: adapter endpoints and limits (defaults: AWS and Google, 1 GiB per job). */
  external?: ExternalReadOptions;
  materializedViews?: MaterializedViewOptions;
}

const PREFIX = '/jobs';

/** The query job service: its API, and the worker pool that runs jobs (the module's start and stop). */
export function createJobsService(options: JobsOptions) {
  const { log } = options;
  const repo = new JobRepo(options.db);
  const secrets = new SecretStore(options.db, options.statements.sealer);
  const planner = new QueryPlanner(options.analyzer, options.catalog, options.authz, options.blobs, new ExternalReadPlanner(secrets, options.authz));
  const external = { fetcher: new ExternalFetcher(secrets, options.external), directory: path.join(options.scratchDir, 'external') };
  const worker = { ...DEFAULT_WORKER_OPTIONS, ...options.worker };
  const runsJobs = worker.concurrency > 0;
  // Without workers the pool only follows jobs that other processes run; the engines are sized for one.
  const workerOptions = { ...worker, concurrency: Math.max(1, worker.concurrency) };
  const results = { ...DEFAULT_RESULT_POLICY, ...options.results };
  const engines = jobEngines(options, workerOptions.concurrency);
  const limits = { perJob: results.maxBytes, perIdentity: results.quotaBytes, retainedBy: (owner: string) => repo.retainedResultBytes(owner) };
  const viewRepo = new MaterializedViewRepo(options.db, repo);
  const views = new MaterializedViews({ views: viewRepo, catalog: options.catalog, timeoutMs: options.timeoutMs, notify: () => pool.notify(), log });
  const refresher = new MaterializedViewRefresher({
    views: viewRepo,
    catalog: options.catalog,
    planner,
    blobs: options.blobs,
    engine: () => engines.shared,
    statistics: (file, columns) => options.ingestor.fileStatistics(file, columns),
    writeResult: (executionId, message) => writeStatusResult(options.blobs, executionId, message),
    finish: (executionId, workerId, outcome, trx) => repo.finish(executionId, workerId, outcome, trx),
    committed: (datasetId) => views.committed(datasetId),
    beforeCommit: options.materializedViews?.beforeCommit,
    log,
  });
  const runner = new RefreshingJobRunner(new SandboxJobRunner(planner, options.blobs, engines, limits, external, log), refresher);
  const pool = new WorkerPool(repo, runner, workerOptions, log);
  const statements = new LakeportStatements({ ...options.statements, db: options.db, authz: options.authz, catalog: options.catalog, repo, blobs: options.blobs, timeoutMs: options.timeoutMs, log, planner, views: new ViewDescriber(planner), materializedViews: views });
  const refuseExternalReads = async (caller: Principal, sqlText: string) => {
    const refusal = await planner.refuseExternalReads(caller, sqlText);
    if (!refusal) return undefined;
    const span = refusal.position === undefined ? undefined : { start: refusal.position, end: literalEnd(sqlText, refusal.position) };
    return jobsError(refusal.code, refusal.message, { extra: span ? placeOf(sqlText, span) : {} });
  };
  const jobs = new JobsService({
    repo,
    pool,
    ingestor: options.ingestor,
    blobs: options.blobs,
    scratchDir: options.scratchDir,
    baseUrl: () => options.publicUrl.service(PREFIX),
    timeoutMs: options.timeoutMs,
    statements,
    refuseExternalReads,
    requireLiveSources: (sqlText) => planner.requireLiveSources(sqlText),
    prepareAhead: (sqlText) => options.analyzer.warm(sqlText),
    resultRetentionMs: results.retentionMs,
    log: options.log,
  });
  const checker = new QueryChecker(planner, repo, options.catalog, options.authz, statements);
  return serviceModule({
    jobs,
    pool,
    statements,
    views,
    /** Where job queries run (its sandboxes and memory, for GET /metrics). */
    queryEngine: engines.shared,
    apis: [
      {
        prefix: PREFIX,
        title: 'query job service',
        description: 'Asynchronous SQL on DuckDB: jobs, results, downloads, variables and statement check.',
        routes: [jobRoutes({ jobs, checker, verifier: options.verifier })],
      },
    ],
    start: async () => {
      if (runsJobs) pool.start();
      views.start(options.materializedViews?.tickMs ?? DEFAULT_SCHEDULER_TICK_MS);
    },
    stop: async () => {
      views.stop();
      if (runsJobs) await pool.stop();
    },
    upkeep: () =>
      jobs.sweepExpiredResults().then(
        (n) => void (n > 0 && log.info({ results: n }, 'removed job results past their retention')),
        (error: unknown) => log.error({ err: error }, 'result sweep failed'),
      ),
  });
}

export interface ResultPolicy {
  /** Bytes one job's result may take. */
  maxBytes: number;
  /** Bytes of results one identity may keep. */
  quotaBytes: number;
  /** A result is removed this long after its job finished. */
  retentionMs: number;
}

export const DEFAULT_RESULT_POLICY: ResultPolicy = { maxBytes: 2 ** 30, quotaBytes: 10 * 2 ** 30, retentionMs: 24 * 3600_000 };

/**
 * The engines jobs run on. With process isolation each job gets at most an even share of the
 * memory budget as its DuckDB memory_limit (the child's data limit bounds all of them together,
 * including memory DuckDB does not count); a job under suspicion gets a child of its own.
 */
function jobEngines(options: JobsOptions, concurrency: number): JobEngines {
  const { memoryLimit, threads, tempDirectory } = options.sandbox;
  if (options.isolation === 'inline') {
    const engine: EngineOptions = { memoryLimit, threads, tempDirectory };
    const { log } = options;
    return { shared: new InlineQueryEngine(engine, { log }), isolated: () => new InlineQueryEngine(engine, { maxIdle: 0, log }) };
  }
  const budget = options.memoryBudgetBytes ?? concurrency * 2 ** 30 + 2 ** 29;
  const share = Math.floor((budget * 0.8) / concurrency / 2 ** 20);
  const perJob = memoryLimit ? Math.min(share, Math.floor(parseSize(memoryLimit) / 2 ** 20)) : share;
  const engine: EngineOptions = { memoryLimit: `${Math.max(64, perJob)}MiB`, threads, tempDirectory };
  const { log } = options;
  const shared: QueryEngine = new ProcessQueryEngine({ engine, memoryBudgetBytes: budget, concurrency, log });
  return { shared, isolated: () => new ProcessQueryEngine({ engine, memoryBudgetBytes: budget, concurrency: 1, pooled: false, log }) };
}

/** The end of the token at `position` (a string literal, a name…), for the span an error underlines. */
function literalEnd(sqlText: string, position: number): number {
  const token = tokenizeSql(sqlText).find((t) => t.start === position);
  return token ? token.end : position + 1;
}
