import { LRUCache } from 'lru-cache';
import type { Authorizer, Principal } from '../../core/authz/index.ts';
import type { Catalog, Dataset, DatasetRef } from '../../core/catalog/index.ts';
import type { PermissionPair } from '../../core/db/index.ts';
import { FILE_OR_ENVIRONMENT_FUNCTIONS, lineColumn, tokenizeSql, type FunctionRef, type SqlAnalyzer, type SqlToken, type TableRef } from '../../core/engine/index.ts';
import type { SandboxView } from '../../core/engine/index.ts';
import { AppError, scrubServerPaths } from '../../core/errors/index.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import type { JobFailure, JobFailureCode } from './errors.ts';
import { EXTERNAL_READERS, ExternalReadRefusal, renderRead, type ExternalRead, type ExternalReadPlanner } from './external/index.ts';
import type { ParamValue } from './types.ts';

/** A statement ready for the sandbox: the SQL to run, its bound values, and the views it reads. */
export interface PreparedQuery {
  /** The SQL to run; when the statement reads private storage, see `external` and `render`. */
  sql: string;
  params: Record<string, ParamValue>;
  views: SandboxView[];
  /** The READ_* calls with credentials, in text order (empty for most statements). */
  external: ExternalRead[];
  /** The SQL with each READ_* call replaced by a read of its local copies (`files[i]` for `external[i]`). */
  render(files: string[][]): string;
  /** Maps an offset in `sql` back to the user's text, when it can. */
  toOriginal(offset: number): number | undefined;
}

export type Prepared = { ok: true; query: PreparedQuery } | { ok: false; error: JobFailure };

export interface Caller {
  identity: string;
  permissions: PermissionPair[];
}

/** A job's error as stored and shown: DuckDB's messages may name server paths, which are scrubbed. */
export function jobError(sqlText: string, code: JobFailureCode, message: string, position?: number): JobFailure {
  message = scrubServerPaths(message);
  if (position === undefined) return { code, message };
  return { code, message, position, ...lineColumn(sqlText, position) };
}

/** The tokens from the one starting at `position`, or -1. */
function tokenAt(tokens: SqlToken[], position: number | undefined): number {
  return position === undefined ? -1 : tokens.findIndex((t) => t.start === position);
}

/** The span of a time-travel reference `a.b.c AT (VERSION => …)`, by token positions. */
function referenceSpan(tokens: SqlToken[], ref: TableRef): { start: number; end: number } | undefined {
  const first = tokenAt(tokens, ref.position);
  if (first < 0) return undefined;
  let i = first;
  while (i < tokens.length && !(tokens[i].kind === 'word' && tokens[i].text.toUpperCase() === 'AT')) i++;
  if (tokens[i + 1]?.text !== '(') return undefined;
  let depth = 0;
  for (let j = i + 1; j < tokens.length; j++) {
    if (tokens[j].text === '(') depth++;
    if (tokens[j].text === ')' && --depth === 0) return { start: tokens[first].start, end: tokens[j].end };
  }
  return undefined;
}

/** The span of a dataset's three-part name as written (`ws.coll.ds`, parts bare or "quoted"), by token positions. */
function nameSpan(tokens: SqlToken[], ref: TableRef): { start: number; end: number } | undefined {
  const first = tokenAt(tokens, ref.position);
  if (first < 0) return undefined;
  const part = (k: number) => tokens[k]?.kind === 'word' || tokens[k]?.kind === 'quoted_identifier';
  const dot = (k: number) => tokens[k]?.kind === 'operator' && tokens[k].text === '.';
  return part(first) && dot(first + 1) && part(first + 2) && dot(first + 3) && part(first + 4) ? { start: tokens[first].start, end: tokens[first + 4].end } : undefined;
}

/**
 * DuckDB reserves the catalog names main, system and temp: a workspace so named is attached under
 * another name (one no workspace can have), and the statement's references to it are rewritten.
 */
const RESERVED_CATALOGS = new Set(['main', 'system', 'temp']);
const catalogOf = (workspace: string) => (RESERVED_CATALOGS.has(workspace) ? `workspace:${workspace}` : workspace);

/** The span of a table function call `[schema.]name( … )`, by token positions. */
function callSpan(tokens: SqlToken[], position: number | undefined): { start: number; end: number } | undefined {
  const first = tokenAt(tokens, position);
  if (first < 0) return undefined;
  let i = first;
  while (i < tokens.length && (tokens[i].kind === 'word' || tokens[i].kind === 'quoted_identifier' || tokens[i].text === '.')) i++;
  if (tokens[i]?.text !== '(') return undefined;
  let depth = 0;
  for (let j = i; j < tokens.length; j++) {
    if (tokens[j].text === '(') depth++;
    if (tokens[j].text === ')' && --depth === 0) return { start: tokens[first].start, end: tokens[j].end };
  }
  return undefined;
}

/** The READ_* calls that name credentials: they read private storage (the rest stay refused). */
function externalCalls(functions: FunctionRef[]): FunctionRef[] {
  return functions.filter((f) => EXTERNAL_READERS.has(f.name) && f.namedArgs.includes('credentials'));
}

/** Table functions that only generate values (no file, catalog or setting access). */
const GENERATORS = new Set(['range', 'generate_series', 'unnest']);

const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;

/**
 * Turns a user's statement into something the sandbox may run: one SELECT, over three-part dataset
 * names the caller may read (resolved to their snapshot's files), with every placeholder bound.
 * READ_PARQUET / READ_CSV / READ_JSONL with `credentials =>` are planned by ExternalReadPlanner
 * (secret, permission, SCOPE; nothing fetched) and left for the runner to render over the job's
 * local copies (`render`). Every refusal is an error the user can act on, with its place in the
 * text where it has one.
 */
export class QueryPlanner {
  /** Snapshot id → its data files' blob keys (immutable once committed), bounded by the number of keys kept. */
  private readonly filesOf = new LRUCache<number, { keys: string[]; current: number | null }>({ maxSize: 100_000, sizeCalculation: (entry) => entry.keys.length + 1 });

  constructor(
    private readonly analyzer: SqlAnalyzer,
    private readonly catalog: Catalog,
    private readonly authz: Authorizer,
    private readonly blobs: BlobStore,
    private readonly external: ExternalReadPlanner,
  ) {}

  /**
   * The refusal of a statement's READ_* calls at submit, before a job exists: the same checks as
   * planning (shape, secret, permission, type and SCOPE), nothing fetched. Undefined when the text
   * reads no private storage, or is wrong otherwise (that fails the job, as before).
   */
  async refuseExternalReads(caller: Caller, sqlText: string): Promise<ExternalReadRefusal | undefined> {
    // Only statements that mention credentials can read private storage: the others cost nothing here.
    if (!/credentials/i.test(sqlText)) return undefined;
    const analysis = await this.analyzer.analyze(sqlText);
    if (analysis.kind !== 'select') return undefined;
    const calls = externalCalls(analysis.tableFunctions);
    if (calls.length === 0) return undefined;
    try {
      await this.external.plan(this.principal(caller), calls);
      return undefined;
    } catch (error) {
      if (error instanceof ExternalReadRefusal) return error;
      throw error;
    }
  }

  private principal(caller: Caller): Principal {
    return { identity: caller.identity, permissions: caller.permissions, scopes: [], credentialId: '', tokenId: '', expiresAt: new Date(0) };
  }

  async prepare(caller: Caller, sqlText: string, values: Record<string, ParamValue>, options: { withFiles: boolean }): Promise<Prepared> {
    const fail = (code: JobFailureCode, message: string, position?: number): Prepared => ({ ok: false, error: jobError(sqlText, code, message, position) });
    const analysis = await this.analyzer.analyze(sqlText);
    if (analysis.kind === 'refused') return fail(analysis.code, analysis.message, analysis.position);
    if (analysis.kind === 'lakeport') return fail('STATEMENT_NOT_SUPPORTED', `${analysis.statement.replace('_', ' ').toUpperCase()} is not available in this version of Lakeport`);
    const calls = externalCalls(analysis.tableFunctions);
    const fn = analysis.tableFunctions.find((f) => !GENERATORS.has(f.name) && !calls.includes(f));
    if (fn) {
      const hint = EXTERNAL_READERS.has(fn.name)
        ? `${fn.name}() reads only private storage, with a secret: ${fn.name}('s3://bucket/prefix/…', credentials => '<workspace>.<secret>'); datasets are queried by their workspace.collection.dataset names`
        : fn.namedArgs.includes('credentials')
          ? `${fn.name}() is not allowed: read private storage with read_parquet, read_csv or read_jsonl(…, credentials => '<workspace>.<secret>')`
          : `${fn.name}() is not allowed: query datasets by their workspace.collection.dataset names`;
      return fail('TABLE_FUNCTION_NOT_ALLOWED', hint, fn.position);
    }
    const forbidden = analysis.scalarFunctions.find((f) => FILE_OR_ENVIRONMENT_FUNCTIONS.has(f));
    if (forbidden) return fail('FUNCTION_NOT_ALLOWED', `${forbidden}() reads files, settings or the environment and is not allowed`);

    const lower = new Map(Object.entries(values).map(([k, v]) => [k.toLowerCase(), v]));
    const missing = analysis.rewritten.names.filter((n) => !lower.has(n.toLowerCase()));
    if (missing.length > 0) {
      const at = analysis.rewritten.placeholders.find((p) => p.name.toLowerCase() === missing[0].toLowerCase())?.start;
      return fail('PARAMETER_NOT_DEFINED', `The statement references parameter(s) with no value: ${missing.map((m) => `:${m}`).join(', ')} (pass them in parameters or save them as variables)`, at);
    }
    const params = Object.fromEntries(analysis.rewritten.names.map((n) => [n, lower.get(n.toLowerCase()) ?? null]));

    const principal = this.principal(caller);
    let external: ExternalRead[] = [];
    if (calls.length > 0) {
      try {
        external = await this.external.plan(principal, calls);
      } catch (error) {
        if (error instanceof ExternalReadRefusal) return fail(error.code, error.message, error.position);
        throw error;
      }
    }
    const sql = analysis.rewritten.sql;
    const tokens = tokenizeSql(sql);
    /** Pieces of text to replace, all found in `sql` first and then replaced together. */
    const edits: { start: number; end: number; text: string | number }[] = [];
    for (const [index, read] of external.entries()) {
      const span = callSpan(tokens, read.position);
      if (!span) return fail('INVALID_EXTERNAL_READ', `Could not find where the ${read.fn}() call ends`, read.position);
      edits.push({ ...span, text: index });
    }
    const views = new Map<string, SandboxView>();
    // From the last reference back (the order errors have always been reported in).
    for (const ref of [...analysis.tables].sort((a, b) => (b.position ?? 0) - (a.position ?? 0))) {
      if (ref.parts.length !== 3) {
        return fail('UNKNOWN_TABLE', `'${ref.parts.join('.')}' is not a dataset: name datasets as workspace.collection.dataset`, ref.position);
      }
      const [workspace, collection, name] = ref.parts.map((p) => p.toLowerCase());
      const label = `${workspace}.${collection}.${name}`;
      const dataset = await this.findDataset({ workspace, collection, dataset: name });
      const readable = dataset !== undefined && (await this.authz.can(principal, 'reader', { workspace, collection, dataset: name }));
      if (!dataset || !readable) return fail('DATASET_NOT_FOUND', `Dataset ${label} does not exist, or you may not read it`, ref.position);
      if (dataset.kind === 'external') return fail('VERSIONING_NOT_SUPPORTED', `Dataset ${label} is listed from an external catalog and cannot be queried here`, ref.position);
      let snapshotId: number | null = dataset.current_snapshot_id;
      let viewName: [string, string, string] = [catalogOf(workspace), collection, name];
      if (ref.version) {
        if (ref.version.kind === 'timestamp') return fail('INVALID_TIME_TRAVEL', 'Time travel by timestamp is not supported; use a tag or a snapshot id', ref.position);
        const selector = ref.version.kind === 'tag' ? { kind: 'tag' as const, name: ref.version.name } : { kind: 'id' as const, snapshotId: ref.version.snapshotId };
        try {
          snapshotId = (await this.catalog.resolveSnapshotOf(dataset, selector)).snapshot_id;
        } catch (error) {
          if (error instanceof AppError && error.status < 500) return fail('SNAPSHOT_NOT_FOUND', `${label}: ${error.message}`, ref.position);
          throw error;
        }
        viewName = [viewName[0], collection, `${name}@${snapshotId}`];
        const span = referenceSpan(tokens, ref);
        if (!span) return fail('INVALID_TIME_TRAVEL', `Could not read the AT clause of ${label}`, ref.position);
        edits.push({ ...span, text: viewName.map(quote).join('.') });
      } else if (viewName[0] !== workspace) {
        const span = nameSpan(tokens, ref);
        if (!span) return fail('UNKNOWN_TABLE', `Could not read the name of ${label}: write it as ${workspace}.${collection}.${name}`, ref.position);
        edits.push({ ...span, text: viewName.map(quote).join('.') });
      }
      const key = viewName.join('\u0000');
      if (!views.has(key)) views.set(key, await this.view(viewName, dataset, snapshotId, options.withFiles));
    }
    // The text between the edits, and the edits, in order (edits never overlap: a READ_* call's
    // arguments are literals, so no dataset is named inside one).
    edits.sort((a, b) => a.start - b.start);
    const pieces: (string | number)[] = [];
    let at = 0;
    for (const edit of edits) {
      pieces.push(sql.slice(at, edit.start), edit.text);
      at = edit.end;
    }
    pieces.push(sql.slice(at));
    const render = (files: string[][]) => pieces.map((p) => (typeof p === 'string' ? p : renderRead(external[p], files[p] ?? []))).join('');
    // Offsets before the first edit are the same in the rewritten text; after it they moved.
    const unmoved = edits.length > 0 ? edits[0].start : Number.POSITIVE_INFINITY;
    const toOriginal = (offset: number) => (offset < unmoved ? analysis.rewritten.toOriginal(offset) : undefined);
    return { ok: true, query: { sql: render([]), params, views: [...views.values()], external, render, toOriginal } };
  }

  /** The dataset, or undefined when no dataset has that name (a name that cannot exist included); a database failure throws. */
  private async findDataset(ref: DatasetRef): Promise<Dataset | undefined> {
    try {
      return await this.catalog.findDataset(ref);
    } catch (error) {
      if (error instanceof AppError && error.status < 500) return undefined;
      throw error;
    }
  }

  private async view(name: [string, string, string], dataset: Dataset, snapshotId: number | null, withFiles: boolean): Promise<SandboxView> {
    const keys = withFiles && snapshotId !== null ? await this.snapshotFiles(snapshotId, dataset.current_snapshot_id) : [];
    return {
      name,
      columns: dataset.columns.map((c) => ({ name: c.name, type: c.type })),
      files: await Promise.all(keys.map((key) => this.blobs.localPath(key))),
    };
  }

  /**
   * The blob keys of a snapshot's data files (compacted runs read as their compacted file,
   * Catalog.readFiles), kept while the dataset's current snapshot stays the same: a later compaction
   * may let an older snapshot read fewer files, and it moves the current snapshot.
   */
  private async snapshotFiles(snapshotId: number, current: number | null): Promise<string[]> {
    let cached = this.filesOf.get(snapshotId);
    if (!cached || cached.current !== current) {
      cached = { keys: (await this.catalog.readFiles(snapshotId)).map((f) => f.path), current };
      this.filesOf.set(snapshotId, cached);
    }
    return cached.keys;
  }

}
