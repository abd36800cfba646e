import type { Authorizer } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import type { Db } from '../../core/db/index.ts';
import type { Ingestor, SandboxOptions, SqlAnalyzer } from '../../core/engine/index.ts';
import type { TokenVerifier } from '../../core/http/index.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { QueryChecker } from './check.ts';
import { QueryPlanner } from './planner.ts';
import { JobRepo } from './repo.ts';
import { jobRoutes } from './routes.ts';
import { SandboxJobRunner } from './runner.ts';
import { JobsService } from './service.ts';
import { LakeportStatements, type StatementOptions } from './statements/index.ts';
import { DEFAULT_WORKER_OPTIONS, WorkerPool, type WorkerOptions } from './worker.ts';

export { JobsService } from './service.ts';
export { WorkerPool, DEFAULT_WORKER_OPTIONS, type WorkerOptions } from './worker.ts';
export { LakeportStatements, SecretStore, type StatementOptions, type WorkspaceDirectory, type HostResolver } from './statements/index.ts';

export interface JobsOptions {
  db: Db;
  catalog: Catalog;
  authz: Authorizer;
  analyzer: SqlAnalyzer;
  ingestor: Ingestor;
  blobs: BlobStore;
  verifier: TokenVerifier;
  scratchDir: string;
  baseUrl: () => string;
  timeoutMs: number;
  sandbox: SandboxOptions;
  worker?: Partial<WorkerOptions>;
  /** What CREATE SECRET, GRANT, REVOKE, CREATE/DROP TAG and ALTER WORKSPACE need. */
  statements: StatementOptions;
}

/** The query job service: its HTTP routes and the worker pool that runs jobs (started by the caller). */
export function createJobsService(options: JobsOptions) {
  const repo = new JobRepo(options.db);
  const planner = new QueryPlanner(options.analyzer, options.catalog, options.authz, options.blobs);
  const pool = new WorkerPool(repo, new SandboxJobRunner(planner, options.blobs, options.sandbox), { ...DEFAULT_WORKER_OPTIONS, ...options.worker });
  const statements = new LakeportStatements({ ...options.statements, db: options.db, authz: options.authz, catalog: options.catalog, repo, blobs: options.blobs, timeoutMs: options.timeoutMs });
  const jobs = new JobsService({ repo, pool, ingestor: options.ingestor, blobs: options.blobs, scratchDir: options.scratchDir, baseUrl: options.baseUrl, timeoutMs: options.timeoutMs, statements });
  const checker = new QueryChecker(planner, repo, options.catalog, options.authz, statements);
  return { jobs, pool, statements, routes: jobRoutes({ jobs, checker, verifier: options.verifier }) };
}
