import { LRUCache } from 'lru-cache';
import type { Authorizer, Principal } from '../../core/authz/index.ts';
import type { Catalog, Dataset, DatasetRef } from '../../core/catalog/index.ts';
import type { PermissionPair } from '../../core/db/index.ts';
import { FILE_OR_ENVIRONMENT_FUNCTIONS, lineColumn, tokenizeSql, type FunctionRef, type SqlAnalyzer, type SqlToken, type TableRef } from '../../core/engine/index.ts';
import type { SandboxView } from '../../core/engine/index.ts';
import { AppError, isAppError, scrubServerPaths } from '../../core/errors/index.ts';
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
  /** The three-part names the text reads directly (lowercased, in text order): a view's `sources`. */
  sources: string[];
  /** The datasets the statement reads (each once), as resolved for the caller. */
  datasets: { dataset_id: string; label: string }[];
  /** The snapshot each dataset read at its current version was read at (null: none yet), by dataset id. */
  current: Record<string, number | null>;
}

/** How deep views may nest (a view over a view over …). */
export const MAX_VIEW_DEPTH = 16;

/** A piece of text to replace: a name, or (a number) the READ_* call `external[n]`. */
interface Edit {
  start: number;
  end: number;
  text: string | number;
}

interface Refusal {
  code: JobFailureCode;
  message: string;
  position?: number;
}

interface ResolveContext {
  principal: Principal;
  views: Map<string, SandboxView>;
  withFiles: boolean;
  /** A job about to run: the snapshots it reads are leased to it (see prepare). */
  lease?: { holder: string; ttlMs: number };
  /** Every dataset resolved (through views too): id → label; a materialized view's sources. */
  datasets: Map<string, string>;
  /** The snapshot of each dataset read at its current version: id → snapshot. */
  current: Map<string, number | null>;
  /** The views being resolved, outermost first (for messages, cycles and depth). */
  stack: string[];
  /** When planning a CREATE VIEW: the view's own name, which its definition must not reach. */
  self?: string;
}

/** The text with the edits made (`external` renders a READ_* call's edit). */
function applyEdits(sql: string, edits: Edit[], external: (index: number) => string): string {
  const sorted = [...edits].sort((a, b) => a.start - b.start);
  let out = '';
  let at = 0;
  for (const edit of sorted) {
    out += sql.slice(at, edit.start) + (typeof edit.text === 'string' ? edit.text : external(edit.text));
    at = edit.end;
  }
  return out + sql.slice(at);
}

/** A logical view's SQL (`properties.view.definition`), as CREATE VIEW stored it. */
export function viewDefinition(dataset: Pick<Dataset, 'properties'>): string | undefined {
  const view = dataset.properties.view;
  const definition = typeof view === 'object' && view !== null && !Array.isArray(view) ? (view as Record<string, unknown>).definition : undefined;
  return typeof definition === 'string' ? definition : undefined;
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

  /**
   * 409 `WORKSPACE_DELETED` (core/authz) when the statement reads a dataset of a soft-deleted
   * workspace: a job's result stays unreadable while a workspace it read is deleted.
   */
  async requireLiveSources(sqlText: string): Promise<void> {
    const analysis = await this.analyzer.analyze(sqlText);
    if (analysis.kind !== 'select') return;
    const workspaces = new Set(analysis.tables.filter((t) => t.parts.length === 3).map((t) => t.parts[0].toLowerCase()));
    await this.authz.requireLiveWorkspaces([...workspaces]);
  }

  private principal(caller: Caller): Principal {
    return { identity: caller.identity, permissions: caller.permissions, scopes: [], credentialId: '', tokenId: '', expiresAt: new Date(0) };
  }

  /**
   * `view`: the text is the SELECT of a CREATE VIEW named `self` (which it must not reach): it may
   * not take parameters or read private storage.
   * With `lease` (a job about to run), every snapshot the job reads is leased to `lease.holder` for
   * `lease.ttlMs` before its files are listed, so EXPIRE SNAPSHOTS cannot take them while it runs
   * (docs/lifecycle.md); the runner releases the lease when the job ends.
   */
  async prepare(
    caller: Caller,
    sqlText: string,
    values: Record<string, ParamValue>,
    options: { withFiles: boolean; view?: { self: string }; lease?: { holder: string; ttlMs: number } },
  ): Promise<Prepared> {
    const fail = (code: JobFailureCode, message: string, position?: number): Prepared => ({ ok: false, error: jobError(sqlText, code, message, position) });
    const analysis = await this.analyzer.analyze(sqlText);
    if (analysis.kind === 'refused') return fail(analysis.code, analysis.message, analysis.position);
    if (analysis.kind === 'lakeport') {
      if (options.view) return fail('NOT_A_QUERY', 'A view is defined by one SELECT query');
      return fail('STATEMENT_NOT_SUPPORTED', `${analysis.statement.replace('_', ' ').toUpperCase()} is not available in this version of Lakeport`);
    }
    const calls = externalCalls(analysis.tableFunctions);
    if (options.view) {
      if (calls.length > 0) return fail('TABLE_FUNCTION_NOT_ALLOWED', 'A view reads datasets only: READ_* of private storage cannot be part of a view', calls[0].position);
      const placeholder = analysis.rewritten.placeholders[0];
      if (placeholder) return fail('UNSUPPORTED_PARAMETER', `A view cannot take parameters (:${placeholder.name}): write the value into its SELECT`, placeholder.start);
    }
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
        // A secret of a soft-deleted workspace (core/authz's 409).
        if (isAppError(error, 'WORKSPACE_DELETED')) return fail('WORKSPACE_DELETED', error.message);
        throw error;
      }
    }
    const sql = analysis.rewritten.sql;
    const tokens = tokenizeSql(sql);
    /** Pieces of text to replace, all found in `sql` first and then replaced together. */
    const edits: Edit[] = [];
    for (const [index, read] of external.entries()) {
      const span = callSpan(tokens, read.position);
      if (!span) return fail('INVALID_EXTERNAL_READ', `Could not find where the ${read.fn}() call ends`, read.position);
      edits.push({ ...span, text: index });
    }
    const views = new Map<string, SandboxView>();
    const datasets = new Map<string, string>();
    const current = new Map<string, number | null>();
    const refused = await this.resolveTables({ principal, views, withFiles: options.withFiles, lease: options.lease, datasets, current, stack: [], self: options.view?.self }, analysis.tables, tokens, edits);
    if (refused) return fail(refused.code, refused.message, refused.position);
    // Edits never overlap: a READ_* call's arguments are literals, so no dataset is named inside one.
    const render = (files: string[][]) => applyEdits(sql, edits, (p) => renderRead(external[p], files[p] ?? []));
    // Offsets before the first edit are the same in the rewritten text; after it they moved.
    const unmoved = edits.length > 0 ? Math.min(...edits.map((e) => e.start)) : Number.POSITIVE_INFINITY;
    const toOriginal = (offset: number) => (offset < unmoved ? analysis.rewritten.toOriginal(offset) : undefined);
    const sources = [...new Set(analysis.tables.filter((t) => t.parts.length === 3).map((t) => t.parts.join('.').toLowerCase()))];
    return { ok: true, query: { sql: render([]), params, views: [...views.values()], external, render, toOriginal, sources, datasets: [...datasets].map(([dataset_id, label]) => ({ dataset_id, label })).reverse(), current: Object.fromEntries(current) } };
  }

  /**
   * Resolves the three-part names of one text (the user's, or a view's definition) into sandbox
   * views, adding `edits` where a name must be written otherwise. A logical view is replaced by its
   * definition, resolved the same way with the same reader (invoker's rights, docs/views.md), its
   * sources added to the sandbox before it. Undefined when every name resolved; else the refusal,
   * at the position of the reference in this text.
   */
  private async resolveTables(ctx: ResolveContext, tables: TableRef[], tokens: SqlToken[], edits: Edit[]): Promise<Refusal | undefined> {
    const inView = ctx.stack.length > 0 ? `View ${ctx.stack.join(' → ')}` : undefined;
    // From the last reference back (the order errors have always been reported in).
    for (const ref of [...tables].sort((a, b) => (b.position ?? 0) - (a.position ?? 0))) {
      const refuse = (code: JobFailureCode, message: string): Refusal => ({ code, message, position: ref.position });
      if (ref.parts.length !== 3) {
        return refuse('UNKNOWN_TABLE', `${inView ? `${inView}: ` : ''}'${ref.parts.join('.')}' is not a dataset: name datasets as workspace.collection.dataset`);
      }
      const [workspace, collection, name] = ref.parts.map((p) => p.toLowerCase());
      const label = `${workspace}.${collection}.${name}`;
      const dataset = await this.findDataset({ workspace, collection, dataset: name });
      let readable: boolean;
      try {
        readable = dataset !== undefined && (await this.authz.can(ctx.principal, 'reader', { workspace, collection, dataset: name }));
      } catch (error) {
        // core/authz: readable, but in a soft-deleted workspace.
        if (isAppError(error, 'WORKSPACE_DELETED')) return refuse('WORKSPACE_DELETED', `${inView ? `${inView}: ` : ''}${error.message} (${label})`);
        throw error;
      }
      if (inView && !dataset) {
        return refuse('DATASET_NOT_FOUND', `${inView}: it reads ${label}, which no longer exists (dropped or renamed); recreate the view with CREATE OR REPLACE VIEW`);
      }
      if (inView && !readable) {
        return refuse(
          'VIEW_SOURCE_NOT_READABLE',
          `${inView}: it reads ${label}, which you may not read. Views run with the reader's own grants (invoker's rights): reading the view needs reader on ${label} too`,
        );
      }
      if (!dataset || !readable) return refuse('DATASET_NOT_FOUND', `Dataset ${label} does not exist, or you may not read it`);
      if (dataset.kind === 'external') return refuse('VERSIONING_NOT_SUPPORTED', `${inView ? `${inView}: ` : ''}Dataset ${label} is listed from an external catalog and cannot be queried here`);
      ctx.datasets.set(dataset.dataset_id, label);
      let snapshotId: number | null = dataset.current_snapshot_id;
      let viewName: [string, string, string] = [catalogOf(workspace), collection, name];
      if (dataset.kind === 'view') {
        if (ref.version) return refuse('INVALID_TIME_TRAVEL', `${label} is a logical view: it has no versions, so AT (VERSION => …) cannot apply to it (it always reads its sources' current versions)`);
        const failure = await this.resolveView(ctx, dataset, viewName, label);
        if (failure) return { ...failure, position: ref.position };
      }
      if (ref.version) {
        if (ref.version.kind === 'timestamp') return refuse('INVALID_TIME_TRAVEL', 'Time travel by timestamp is not supported; use a tag or a snapshot id');
        const selector = ref.version.kind === 'tag' ? { kind: 'tag' as const, name: ref.version.name } : { kind: 'id' as const, snapshotId: ref.version.snapshotId };
        try {
          snapshotId = (await this.catalog.resolveSnapshotOf(dataset, selector)).snapshot_id;
        } catch (error) {
          if (error instanceof AppError && error.status < 500) {
            return refuse(error.code === 'SNAPSHOT_EXPIRED' ? 'SNAPSHOT_EXPIRED' : 'SNAPSHOT_NOT_FOUND', `${inView ? `${inView}: ` : ''}${label}: ${error.message}`);
          }
          throw error;
        }
        viewName = [viewName[0], collection, `${name}@${snapshotId}`];
        const span = referenceSpan(tokens, ref);
        if (!span) return refuse('INVALID_TIME_TRAVEL', `Could not read the AT clause of ${label}`);
        edits.push({ ...span, text: viewName.map(quote).join('.') });
      } else if (viewName[0] !== workspace) {
        const span = nameSpan(tokens, ref);
        if (!span) return refuse('UNKNOWN_TABLE', `Could not read the name of ${label}: write it as ${workspace}.${collection}.${name}`);
        edits.push({ ...span, text: viewName.map(quote).join('.') });
      }
      const key = viewName.join('\u0000');
      if (dataset.kind !== 'view' && !ref.version) ctx.current.set(dataset.dataset_id, snapshotId);
      if (dataset.kind !== 'view' && !ctx.views.has(key)) {
        try {
          ctx.views.set(key, await this.view(viewName, dataset, snapshotId, ctx));
        } catch (error) {
          if (!(error instanceof AppError && error.code === 'SNAPSHOT_EXPIRED')) throw error;
          // The current snapshot was replaced and expired between reading the dataset and leasing it: read it again, once.
          const again = ref.version ? undefined : await this.findDataset({ workspace, collection, dataset: name });
          const retried = again && (await this.view(viewName, again, again.current_snapshot_id, ctx).catch(() => undefined));
          if (!retried) return refuse('SNAPSHOT_EXPIRED', `${inView ? `${inView}: ` : ''}${label}: ${error.message}`);
          ctx.views.set(key, retried);
          ctx.current.set(dataset.dataset_id, again.current_snapshot_id);
        }
      }
    }
    return undefined;
  }

  /** Adds a logical view (after its sources) to the sandbox's views; the refusal when it cannot be read. */
  private async resolveView(ctx: ResolveContext, dataset: Dataset, name: [string, string, string], label: string): Promise<Omit<Refusal, 'position'> | undefined> {
    const key = name.join('\u0000');
    if (ctx.views.has(key)) return undefined;
    const path = [...ctx.stack, label];
    if (ctx.stack.includes(label) || ctx.self === label) {
      return { code: 'VIEW_CYCLE', message: `View ${[...(ctx.self && ctx.stack[0] !== ctx.self ? [ctx.self] : []), ...path].join(' → ')} reads itself: views cannot be circular` };
    }
    if (path.length > MAX_VIEW_DEPTH) return { code: 'QUERY_TOO_COMPLEX', message: `View ${path.join(' → ')}: views nest more than ${MAX_VIEW_DEPTH} deep` };
    const definition = viewDefinition(dataset);
    if (definition === undefined) return { code: 'DATASET_NOT_FOUND', message: `View ${label} has no definition: recreate it with CREATE OR REPLACE VIEW` };
    const analysis = await this.analyzer.analyze(definition);
    const broken = (message: string) => ({ code: 'QUERY_ERROR' as const, message: `View ${path.join(' → ')}: ${message}` });
    if (analysis.kind !== 'select') return broken(analysis.kind === 'refused' ? analysis.message : 'its definition is not a SELECT');
    const fn = analysis.tableFunctions.find((f) => !GENERATORS.has(f.name));
    if (fn) return broken(`${fn.name}() is not allowed in a view`);
    const forbidden = analysis.scalarFunctions.find((f) => FILE_OR_ENVIRONMENT_FUNCTIONS.has(f));
    if (forbidden) return broken(`${forbidden}() is not allowed`);
    if (analysis.rewritten.names.length > 0) return broken('a view cannot take parameters');
    const text = analysis.rewritten.sql;
    const edits: Edit[] = [];
    const inner = await this.resolveTables({ ...ctx, stack: path }, analysis.tables, tokenizeSql(text), edits);
    if (inner) return { code: inner.code, message: inner.message };
    ctx.views.set(key, {
      name,
      columns: dataset.columns.map((c) => ({ name: c.name, type: c.type })),
      files: [],
      sql: applyEdits(text, edits, () => ''),
      label,
    });
    return undefined;
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

  private async view(name: [string, string, string], dataset: Dataset, snapshotId: number | null, options: { withFiles: boolean; lease?: { holder: string; ttlMs: number } }): Promise<SandboxView> {
    if (options.withFiles && options.lease && snapshotId !== null) await this.catalog.leaseSnapshots([snapshotId], options.lease.holder, options.lease.ttlMs);
    const keys = options.withFiles && snapshotId !== null ? await this.snapshotFiles(snapshotId, dataset.current_snapshot_id) : [];
    return {
      name,
      columns: dataset.columns.map((c) => ({ name: c.name, type: c.type })),
      files: await Promise.all(keys.map((key) => this.blobs.localPath(key))),
    };
  }

  /** Ends the leases a job's run took (prepare's `lease.holder`). */
  releaseLeases(holder: string): Promise<void> {
    return this.catalog.releaseLeases(holder);
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
