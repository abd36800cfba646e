import { Sandbox, SandboxQueryError } from '../../core/engine/index.ts';
import type { JobFailureCode } from './errors.ts';
import type { Caller, QueryPlanner } from './planner.ts';

/** A CREATE VIEW's SELECT as planned for its creator: its result columns and the names it reads, or why not. */
export type ViewPlan =
  | { ok: true; columns: { name: string; type: string }[]; sources: string[] }
  | { ok: false; error: { code: JobFailureCode; message: string; position?: number } };

/**
 * Plans a view's SELECT exactly as a query job of the caller would be planned (the same analysis,
 * permissions and view resolution), then asks DuckDB for the result's shape over empty views. Reads
 * no data. Positions are offsets in the SELECT's own text.
 */
export class ViewDescriber {
  constructor(private readonly planner: QueryPlanner) {}

  async describe(caller: Caller, selectText: string, self: string): Promise<ViewPlan> {
    const prepared = await this.planner.prepare(caller, selectText, {}, { withFiles: false, view: { self } });
    if (!prepared.ok) return { ok: false, error: prepared.error };
    const sandbox = await Sandbox.open(prepared.query.views, { threads: 1, memoryLimit: '256MB' }).catch((error: unknown) => {
      if (error instanceof SandboxQueryError) return error;
      throw error;
    });
    if (sandbox instanceof SandboxQueryError) return { ok: false, error: { code: 'QUERY_ERROR', message: sandbox.message } };
    try {
      const columns = await sandbox.describe(prepared.query.sql, {});
      return { ok: true, columns, sources: prepared.query.sources };
    } catch (error) {
      if (!(error instanceof SandboxQueryError)) throw error;
      const position = error.position === undefined ? undefined : prepared.query.toOriginal(error.position);
      return { ok: false, error: { code: 'QUERY_ERROR', message: error.message, position } };
    } finally {
      sandbox.close();
    }
  }
}
