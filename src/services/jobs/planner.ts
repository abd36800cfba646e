import type { Authorizer, Principal } from '../../core/authz/index.ts';
import type { Catalog, Dataset, Snapshot } from '../../core/catalog/index.ts';
import type { JobError, PermissionPair } from '../../core/db/index.ts';
import { FILE_OR_ENVIRONMENT_FUNCTIONS, lineColumn, tokenizeSql, type SqlAnalyzer, type TableRef } from '../../core/engine/index.ts';
import type { SandboxView } from '../../core/engine/index.ts';
import { AppError } from '../../core/errors/index.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import type { ParamValue } from './service.ts';

/** A statement ready for the sandbox: the SQL to run, its bound values, and the views it reads. */
export interface PreparedQuery {
  sql: string;
  params: Record<string, ParamValue>;
  views: SandboxView[];
  /** Maps an offset in `sql` back to the user's text, when it can. */
  toOriginal(offset: number): number | undefined;
}

export type Prepared = { ok: true; query: PreparedQuery } | { ok: false; error: JobError };

export interface Caller {
  identity: string;
  permissions: PermissionPair[];
}

export function jobError(sqlText: string, code: string, message: string, position?: number): JobError {
  if (position === undefined) return { code, message };
  return { code, message, position, ...lineColumn(sqlText, position) };
}

/** Replaces a time-travel reference `a.b.c AT (VERSION => …)` with `replacement`, by token positions. */
function replaceReference(sql: string, ref: TableRef, replacement: string): { sql: string; start: number; end: number } | undefined {
  const tokens = tokenizeSql(sql);
  const first = tokens.findIndex((t) => t.start === ref.position);
  if (first < 0) return undefined;
  let i = first;
  while (i < tokens.length && !(tokens[i].kind === 'word' && tokens[i].text.toUpperCase() === 'AT')) i++;
  if (tokens[i + 1]?.text !== '(') return undefined;
  let depth = 0;
  for (let j = i + 1; j < tokens.length; j++) {
    if (tokens[j].text === '(') depth++;
    if (tokens[j].text === ')' && --depth === 0) {
      const start = tokens[first].start;
      const end = tokens[j].end;
      return { sql: sql.slice(0, start) + replacement + sql.slice(end), start, end };
    }
  }
  return undefined;
}

/** Table functions that only generate values (no file, catalog or setting access). */
const GENERATORS = new Set(['range', 'generate_series', 'unnest']);

const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;

/**
 * Turns a user's statement into something the sandbox may run: one SELECT, over three-part dataset
 * names the caller may read (resolved to their snapshot's files), with every placeholder bound.
 * Every refusal is an error the user can act on, with its place in the text where it has one.
 */
export class QueryPlanner {
  constructor(
    private readonly analyzer: SqlAnalyzer,
    private readonly catalog: Catalog,
    private readonly authz: Authorizer,
    private readonly blobs: BlobStore,
  ) {}

  async prepare(caller: Caller, sqlText: string, values: Record<string, ParamValue>, options: { withFiles: boolean }): Promise<Prepared> {
    const fail = (code: string, message: string, position?: number): Prepared => ({ ok: false, error: jobError(sqlText, code, message, position) });
    const analysis = await this.analyzer.analyze(sqlText);
    if (analysis.kind === 'refused') return fail(analysis.code, analysis.message, analysis.position);
    if (analysis.kind === 'lakeport') return fail('STATEMENT_NOT_SUPPORTED', `${analysis.statement.replace('_', ' ').toUpperCase()} is not available in this version of Lakeport`);
    const fn = analysis.tableFunctions.find((f) => !GENERATORS.has(f.name));
    if (fn) return fail('TABLE_FUNCTION_NOT_ALLOWED', `${fn.name}() is not allowed: query datasets by their workspace.collection.dataset names`, fn.position);
    const forbidden = analysis.scalarFunctions.find((f) => FILE_OR_ENVIRONMENT_FUNCTIONS.has(f));
    if (forbidden) return fail('FUNCTION_NOT_ALLOWED', `${forbidden}() reads files or the environment and is not allowed`);

    const lower = new Map(Object.entries(values).map(([k, v]) => [k.toLowerCase(), v]));
    const missing = analysis.rewritten.names.filter((n) => !lower.has(n.toLowerCase()));
    if (missing.length > 0) {
      const at = analysis.rewritten.placeholders.find((p) => p.name.toLowerCase() === missing[0].toLowerCase())?.start;
      return fail('PARAMETER_NOT_DEFINED', `The statement references parameter(s) with no value: ${missing.map((m) => `:${m}`).join(', ')} (pass them in parameters or save them as variables)`, at);
    }
    const params = Object.fromEntries(analysis.rewritten.names.map((n) => [n, lower.get(n.toLowerCase()) ?? null]));

    const principal: Principal = { identity: caller.identity, permissions: caller.permissions, scopes: [], credentialId: '', tokenId: '', expiresAt: new Date(0) };
    let sql = analysis.rewritten.sql;
    let shifted = false;
    const views = new Map<string, SandboxView>();
    // Rewrite from the last reference back, so earlier positions stay valid.
    for (const ref of [...analysis.tables].sort((a, b) => (b.position ?? 0) - (a.position ?? 0))) {
      if (ref.parts.length !== 3) {
        return fail('UNKNOWN_TABLE', `'${ref.parts.join('.')}' is not a dataset: name datasets as workspace.collection.dataset`, ref.position);
      }
      const [workspace, collection, name] = ref.parts.map((p) => p.toLowerCase());
      const label = `${workspace}.${collection}.${name}`;
      const dataset = await this.catalog.findDataset({ workspace, collection, dataset: name }).catch(() => undefined);
      const readable = dataset !== undefined && (await this.authz.can(principal, 'reader', { workspace, collection, dataset: name }));
      if (!dataset || !readable) return fail('DATASET_NOT_FOUND', `Dataset ${label} does not exist, or you may not read it`, ref.position);
      if (dataset.kind === 'external') return fail('VERSIONING_NOT_SUPPORTED', `Dataset ${label} is listed from an external catalog and cannot be queried here`, ref.position);
      let snapshot: Snapshot | undefined;
      let viewName: [string, string, string] = [workspace, collection, name];
      if (ref.version) {
        if (ref.version.kind === 'timestamp') return fail('INVALID_TIME_TRAVEL', 'Time travel by timestamp is not supported; use a tag or a snapshot id', ref.position);
        const selector = ref.version.kind === 'tag' ? { kind: 'tag' as const, name: ref.version.name } : { kind: 'id' as const, snapshotId: ref.version.snapshotId };
        try {
          snapshot = await this.catalog.resolveSnapshot(dataset.dataset_id, selector);
        } catch (error) {
          if (error instanceof AppError && error.status < 500) return fail('SNAPSHOT_NOT_FOUND', `${label}: ${error.message}`, ref.position);
          throw error;
        }
        viewName = [workspace, collection, `${name}@${snapshot.snapshot_id}`];
        const replaced = replaceReference(sql, ref, viewName.map(quote).join('.'));
        if (!replaced) return fail('INVALID_TIME_TRAVEL', `Could not read the AT clause of ${label}`, ref.position);
        sql = replaced.sql;
        shifted = true;
      } else if (dataset.current_snapshot_id !== null) {
        snapshot = await this.catalog.getSnapshot(dataset.current_snapshot_id);
      }
      const key = viewName.join('\u0000');
      if (!views.has(key)) views.set(key, await this.view(viewName, dataset, snapshot, options.withFiles));
    }
    const toOriginal = (offset: number) => (shifted ? undefined : analysis.rewritten.toOriginal(offset));
    return { ok: true, query: { sql, params, views: [...views.values()], toOriginal } };
  }

  private async view(name: [string, string, string], dataset: Dataset, snapshot: Snapshot | undefined, withFiles: boolean): Promise<SandboxView> {
    const files = withFiles && snapshot ? await this.catalog.snapshotFiles(snapshot.snapshot_id) : [];
    return {
      name,
      columns: dataset.columns.map((c) => ({ name: c.name, type: c.type })),
      files: await Promise.all(files.map((f) => this.blobs.localPath(f.path))),
    };
  }
}
