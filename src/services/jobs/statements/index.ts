import { DuckDBInstance } from '@duckdb/node-api';
import type { Authorizer, Principal } from '../../../core/authz/index.ts';
import type { Catalog } from '../../../core/catalog/index.ts';
import { newId, type Sealer } from '../../../core/crypto/index.ts';
import type { Db } from '../../../core/db/index.ts';
import { quoteString } from '../../../core/engine/index.ts';
import type { BlobStore } from '../../../core/storage/index.ts';
import type { Logger } from '../../../core/logger.ts';
import type { WorkspaceDirectory } from '../../accounts/index.ts';
import type { PolicyPlanner } from '../../policy/index.ts';
import type { Compactor } from '../../upload/index.ts';
import type { JobRepo, JobRow } from '../repo.ts';
import type { ParamValue } from '../types.ts';
import { placeOf, StatementError, toHttpError } from './errors.ts';
import { StatementExecutor, type StatementOutcome } from './executor.ts';
import { isLakeportText, parseStatement, redactedSecretText, type LakeportStatement } from './parser.ts';
import { SecretStore } from './secret-store.ts';
import type { QueryPlanner } from '../planner.ts';
import type { MaterializedViews } from '../mviews/service.ts';
import { systemResolver, type HostResolver } from '../../../core/net/index.ts';
import type { ViewDescriber } from '../views.ts';

export { SecretStore } from './secret-store.ts';
export { isLakeportText, parseStatement, redactedSecretText } from './parser.ts';
export type { HostResolver } from '../../../core/net/index.ts';

/** What app.ts hands the job service for Lakeport's own statements. */
export interface StatementOptions {
  /** GRANT/REVOKE plan and apply through the policy module's planner. */
  policies: PolicyPlanner;
  workspaces: WorkspaceDirectory;
  /** The master key's sealer: it wraps the per-billing-account data keys. */
  sealer: Sealer;
  /** How http_endpoint host names are resolved (tests pass their own). */
  resolveHost?: HostResolver;
  /** ALTER DATASET … COMPACT (the upload module's compactor). */
  compactor?: Compactor;
}

export interface StatementDeps extends StatementOptions {
  db: Db;
  authz: Authorizer;
  catalog: Catalog;
  repo: JobRepo;
  blobs: BlobStore;
  timeoutMs: number;
  log: Logger;
  /** Plans CREATE VIEW's SELECT as a query job (the job service's planner). */
  views: ViewDescriber;
  /** Materialized views: the planner their select is checked with, and where refreshes are queued. */
  planner: QueryPlanner;
  materializedViews: MaterializedViews;
}

const RESULT_COLUMNS = [{ name: 'status', type: 'VARCHAR' }];

/**
 * Lakeport's own statements (CREATE SECRET, GRANT, REVOKE, CREATE/DROP TAG, ALTER WORKSPACE, CREATE/DROP
 * VIEW, COMMENT ON, DROP/UNDROP DATASET, ALTER DATASET (… COMPACT rewrites only the small files), CREATE/REFRESH/DROP MATERIALIZED VIEW) as the
 * job service runs them: they change metadata only, so they run inside the submit request. Success is
 * a job that is already `succeeded`, with a one-row result (`status`: what was done) — except REFRESH
 * MATERIALIZED VIEW, which answers with the refresh job (queued, or the one in progress) that the
 * worker pool runs; an error is an HTTP error of the submit and leaves no job behind.
 *
 * A CREATE SECRET's values are never stored or logged in clear: the job row keeps a text rebuilt from
 * the parse with every literal lifted out (`KEY :redacted_key`) and no parameter values.
 */
export class LakeportStatements {
  private readonly executor: StatementExecutor;
  readonly secrets: SecretStore;

  constructor(private readonly deps: StatementDeps) {
    this.secrets = new SecretStore(deps.db, deps.sealer);
    this.executor = new StatementExecutor({
      authz: deps.authz,
      catalog: deps.catalog,
      policies: deps.policies,
      workspaces: deps.workspaces,
      secrets: this.secrets,
      resolveHost: deps.resolveHost ?? systemResolver,
      views: deps.views,
      planner: deps.planner,
      materializedViews: deps.materializedViews,
      compactor: deps.compactor,
    });
  }

  /** Whether this text is for this path rather than the query path. */
  handles(sqlText: string): boolean {
    return isLakeportText(sqlText);
  }

  /**
   * Runs a Lakeport statement submitted as a job; undefined when the text is not one (a query).
   * Throws an AppError (400/403/404/409/423) when the statement is refused; nothing is changed then.
   */
  async submit(caller: Principal, input: { sql_text: string; client_info?: Record<string, unknown> | null; parameters?: Record<string, ParamValue> | null }): Promise<JobRow | undefined> {
    const sqlText = input.sql_text;
    if (!this.handles(sqlText)) return undefined;
    const started = performance.now();
    let statement: LakeportStatement;
    let outcome: StatementOutcome;
    try {
      statement = parseStatement(sqlText);
      outcome = await this.executor.execute(caller, statement, input.parameters ?? {}, { dryRun: false });
    } catch (error) {
      if (error instanceof StatementError) throw toHttpError(sqlText, error);
      throw error;
    }
    // REFRESH MATERIALIZED VIEW answers with the refresh job (queued, running, or the one already in progress).
    if (outcome.job) return outcome.job;
    const executionId = newId('job');
    // The change is made; a result file that cannot be written leaves a job without results, not a failed submit.
    const resultKey = await this.writeResult(executionId, outcome.message).catch((error: unknown) => {
      this.deps.log.error({ err: error, execution_id: executionId }, 'could not write the result of a statement; its job has none');
      return null;
    });
    return this.deps.repo.insertFinished({
      execution_id: executionId,
      owner: caller.identity,
      sql_text: statement.kind === 'create_secret' ? redactedSecretText(statement) : sqlText,
      // Never the request's parameters: for a CREATE SECRET they are the secret's values.
      parameters: '{}',
      client_info: input.client_info ? JSON.stringify(input.client_info) : null,
      permissions: JSON.stringify(caller.permissions),
      status: 'succeeded',
      result_key: resultKey,
      row_count: 1,
      columns: JSON.stringify(RESULT_COLUMNS),
      timeout_ms: this.deps.timeoutMs,
    }, performance.now() - started);
  }

  /**
   * The check endpoint's answer for a Lakeport statement (undefined for a query): parsed, resolved and
   * checked as a submit would be, permissions and existing objects included, without changing anything.
   */
  async check(caller: Principal, sqlText: string, parameters: Record<string, ParamValue>) {
    if (!this.handles(sqlText)) return undefined;
    try {
      const statement = parseStatement(sqlText);
      await this.executor.execute(caller, statement, parameters, { dryRun: true });
      return { ok: true, columns: RESULT_COLUMNS, relations: [] };
    } catch (error) {
      if (!(error instanceof StatementError)) throw error;
      const { line, column, start, end } = placeOf(sqlText, error.span);
      return { ok: false, error: { code: error.code, message: error.message, line, column, start, end }, relations: [] };
    }
  }

  /** The job's one-row result (`status`), written once as Parquet like any job's, so results and download work. */
  writeResult(executionId: string, message: string): Promise<string> {
    return writeStatusResult(this.deps.blobs, executionId, message);
  }
}

/** One small DuckDB for the one-row results of statements and refreshes, made on first use and kept. */
let statusEngine: Promise<DuckDBInstance> | undefined;

/** A job's one-row result (`status`) as Parquet at results/<execution_id>.parquet; returns its key. */
export async function writeStatusResult(blobs: BlobStore, executionId: string, message: string): Promise<string> {
  const local = await blobs.tempPath('.parquet');
  statusEngine ??= DuckDBInstance.create(':memory:', {
    threads: '1',
    memory_limit: '64MB',
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
  }).catch((error: unknown) => {
    statusEngine = undefined;
    throw error;
  });
  const connection = await (await statusEngine).connect();
  try {
    await connection.run(`COPY (SELECT $status::VARCHAR AS status) TO ${quoteString(local)} (FORMAT parquet)`, { status: message });
  } finally {
    connection.closeSync();
  }
  const key = `results/${executionId}.parquet`;
  await blobs.putFile(key, local);
  return key;
}
