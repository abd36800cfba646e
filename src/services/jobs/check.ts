import { roleAtLeast, type Principal } from '../../core/authz/index.ts';
import { Sandbox, SandboxQueryError, lineColumn } from '../../core/engine/index.ts';
import { refOf, type Catalog } from '../../core/catalog/index.ts';
import { AppError, isAppError, scrubServerPaths } from '../../core/errors/index.ts';
import type { Authorizer } from '../../core/authz/index.ts';
import type { JobFailureCode } from './errors.ts';
import type { JobRepo } from './repo.ts';
import type { QueryPlanner } from './planner.ts';
import type { ParamValue } from './types.ts';
import type { LakeportStatements } from './statements/index.ts';

/**
 * The edit-time statement check: parses and resolves the statement as a job would, then asks DuckDB
 * for the result's shape over empty views. Reads no data and changes nothing (for READ_* of private
 * storage: everything up to the fetch is checked, and `columns` is null).
 */
export class QueryChecker {
  constructor(
    private readonly planner: QueryPlanner,
    private readonly repo: JobRepo,
    private readonly catalog: Catalog,
    private readonly authz: Authorizer,
    private readonly statements: LakeportStatements,
  ) {}

  async check(caller: Principal, sqlText: string, parameters: Record<string, ParamValue>) {
    const statement = await this.statements.check(caller, sqlText, parameters);
    if (statement) return statement;
    const saved = Object.fromEntries((await this.repo.variables(caller.identity)).map((v) => [v.name, v.value]));
    const prepared = await this.planner.prepare(caller, sqlText, { ...saved, ...parameters }, { withFiles: false });
    const relations = await this.relationsInScope(caller, sqlText);
    if (!prepared.ok) return { ok: false, error: this.underline(sqlText, prepared.error), relations };
    // A statement that reads private storage is checked up to the fetch (its calls, secrets,
    // permissions and SCOPEs): the check reads no data, so the result's shape is known only when
    // the job runs.
    if (prepared.query.external.length > 0) return { ok: true, columns: null, relations };
    let sandbox: Sandbox;
    try {
      sandbox = await Sandbox.open(prepared.query.views, { threads: 1, memoryLimit: '256MB' });
    } catch (error) {
      // A view that no longer binds over its sources (docs/views.md): no position in this text.
      if (!(error instanceof SandboxQueryError)) throw error;
      return { ok: false, error: this.underline(sqlText, { code: 'QUERY_ERROR', message: error.message }), relations };
    }
    try {
      const columns = await sandbox.describe(prepared.query.sql, prepared.query.params);
      return { ok: true, columns, relations };
    } catch (error) {
      if (!(error instanceof SandboxQueryError)) throw error;
      const position = error.position === undefined ? undefined : prepared.query.toOriginal(error.position);
      return { ok: false, error: this.underline(sqlText, { code: 'QUERY_ERROR', message: error.message, position }), relations };
    } finally {
      sandbox.close();
    }
  }

  /** An error with the span to underline: from its position to the end of the word there. */
  private underline(sqlText: string, error: { code: JobFailureCode; message: string; position?: number }) {
    const message = scrubServerPaths(error.message);
    if (error.position === undefined) return { code: error.code, message, line: null, column: null, start: null, end: null };
    const start = error.position;
    const match = /^[^\s,;()]+/.exec(sqlText.slice(start));
    return { code: error.code, message, ...lineColumn(sqlText, start), start, end: Math.min(sqlText.length, start + (match ? match[0].length : 1)) };
  }

  /** The workspace's datasets; none when there is no such workspace (a database failure throws). */
  private async datasetsOf(workspace: string) {
    try {
      return await this.catalog.listDatasets(workspace);
    } catch (error) {
      if (error instanceof AppError && error.status < 500) return [];
      throw error;
    }
  }

  /** The datasets (and their columns) the caller may read in the workspaces the statement names. */
  private async relationsInScope(caller: Principal, sqlText: string) {
    const workspaces = new Set([...sqlText.matchAll(/\b([A-Za-z0-9_]{1,63})\s*\.\s*[A-Za-z0-9_]{1,63}\s*\.\s*[A-Za-z0-9_]{1,63}/g)].map((m) => m[1].toLowerCase()));
    const relations = [];
    for (const workspace of workspaces) {
      const datasets = await this.datasetsOf(workspace);
      let access;
      try {
        access = await this.authz.accessIn(caller, workspace, datasets.map(refOf));
      } catch (error) {
        // A soft-deleted workspace offers no relations (core/authz refuses it).
        if (isAppError(error, 'WORKSPACE_DELETED')) continue;
        throw error;
      }
      for (const [i, d] of datasets.entries()) {
        const { role } = access[i];
        if (role === null || !roleAtLeast(role, 'reader')) continue;
        relations.push({ name: `${workspace}.${d.collection}.${d.name}`, kind: d.kind, columns: d.columns.map((c) => ({ name: c.name, type: c.type })) });
      }
    }
    return relations;
  }
}
