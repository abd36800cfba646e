/**
 * The sandbox a user's SQL job runs in: a fresh in-memory DuckDB per job that can read only the
 * Parquet files of the datasets the caller may read (as views with three-part names) and write
 * only the job's result file(s).
 *
 * Lifecycle: one Sandbox = one job = one connection, on a SandboxEngine (one locked-down DuckDB
 * instance holding one fixed set of views). `Sandbox.open` makes a private engine for the one job
 * and close() closes both. DuckDB's security settings are instance-wide, so an engine is never
 * shared between identities; sandbox-pool.ts may lend a warm engine to successive jobs of ONE
 * identity that need exactly the same views over exactly the same files (never two jobs at once),
 * each job on a fresh connection that is closed when it ends. What a job could leave behind on an
 * engine is covered in sandbox-pool.ts; an engine whose query was interrupted or failed oddly is
 * never lent again.
 *
 * Opening, in this order:
 *   0. A private work directory `lakeport-sandbox-XXXXXX` (under `tempDirectory`, else
 *      os.tmpdir()), removed on close: `result.parquet` in it is where results are written unless
 *      the caller declared its result path up front; `spill/` is DuckDB's temp_directory.
 *   1. `DuckDBInstance.create(':memory:', config)` with threads, memory_limit,
 *      temp_directory (`<work>/spill` when `tempDirectory` is given, else '' = no spilling),
 *      errors_as_json (for exact error positions), no extension auto-install/auto-load, no
 *      external file cache.
 *   2. `SET allowed_paths = [<view files>, <declared read paths>, <declared result paths>,
 *      <work>/result.parquet]` (read paths: a job's private copies of external objects)
 *   3. `SET enable_external_access = false`
 *   4. `SET lock_configuration = true`
 *   5. Only then: `ATTACH ':memory:' AS "ws"`, `CREATE SCHEMA "ws"."coll"`,
 *      `CREATE VIEW "ws"."coll"."ds" AS SELECT CAST("c" AS T) AS "c", … FROM read_parquet([…])`
 *      (so view creation itself proves that every file is readable under the restriction).
 *      A view over no files is `SELECT CAST(NULL AS T) AS "c", … WHERE false` (same shape).
 *
 * Naming / time travel: the caller names every view explicitly (`name: [catalog, schema, table]`)
 * and rewrites the user's SQL to those names itself. For `ws.coll.ds AT (VERSION => 'v1')` it adds
 * a second view over that snapshot's files under a name of its choosing (e.g.
 * `["ws", "coll", "ds@v1"]`) and rewrites the reference to `"ws"."coll"."ds@v1"`. DuckDB matches
 * names case-insensitively (so `WS` and `ws` are the same catalog), and `main`, `system` and `temp`
 * cannot be catalog names (DuckDB reserves them): open() refuses those, and the caller maps such a
 * workspace to another catalog name. A workspace called `memory` uses DuckDB's default catalog,
 * which is otherwise empty. (Do not try `:memory:<name>` to rename it: DuckDB 1.5's
 * DuckDBInstance.create treats that as a file name and creates a database file in the cwd.)
 *
 * What was verified against DuckDB 1.5 (see sandbox.test.ts), with the three settings applied:
 * - `allowed_paths` governs reads AND writes, by exact path (after normalising `..` and `//`; no
 *   prefix or glob match): `read_parquet`/`read_csv`/`read_text`/`read_blob`/`glob`/
 *   `parquet_metadata` on any other path, `COPY … TO` any other path, `ATTACH '<file>'`,
 *   `EXPORT DATABASE`, `INSTALL` all fail with "Permission Error: … file system operations are
 *   disabled by configuration"; `LOAD httpfs` fails ("Loading external extensions is disabled");
 *   `FROM '/etc/passwd'` fails (replacement scans are off). Every `SET`/`RESET`/`PRAGMA x=…` of an
 *   option fails ("the configuration has been locked"), including `lock_configuration` itself.
 * - COPY writes through a `tmp_<name>` file when the target already exists; that file is not in
 *   `allowed_paths`, so we write with `USE_TMP_FILE false` (DuckDB then overwrites in place).
 * - DuckDB silently adds `temp_directory` to `allowed_directories` (read + write). The default
 *   temp directory of an in-memory database is `.tmp` under the server's working directory, so a
 *   job would be able to read and write there. We therefore always set it: to the sandbox's
 *   private `spill/` directory when `tempDirectory` is given, otherwise to '' (no spilling:
 *   queries beyond memory_limit fail with an Out of Memory error). Spilling works with external
 *   access disabled.
 * - Result paths must be in allowed_paths before the lock, but callers often choose the path
 *   later: runToParquet(…, resultPath) writes to the declared path directly, or else to
 *   `<work>/result.parquet` and then moves the file to resultPath from Node (rename; copy across
 *   file systems). DuckDB itself can never write anywhere but those files. A pooled engine
 *   declares no result paths: every job on it writes the engine's private `result.parquet`
 *   (one job at a time per engine), which is moved out (or removed) before the job ends, so
 *   the next job on the engine finds no file there.
 * - Still allowed inside a sandbox at the DuckDB level, and harmless because the instance is
 *   private to one identity and one set of views: reading the granted files directly with
 *   read_parquet (so views must never be a row/column security filter: every granted file is fully
 *   readable), `ATTACH ':memory:'`, `CREATE TABLE` in memory (bounded by memory_limit),
 *   `SET VARIABLE`, `USE`, `DETACH` of its own catalogs. `duckdb_settings()`,
 *   `current_setting('allowed_paths')` and `duckdb_views()` reveal the paths of the job's own
 *   granted files, its result path and temp directory, nothing else. The sandbox itself runs only
 *   single SELECT statements (below), which change none of that; the analyzer refuses the rest.
 *   (runRawForTests bypasses this, so an engine it touched is never lent again.)
 *
 * Running a job: the user's SQL is first prepared alone (`duckdb_prepare`, which refuses any text
 * that is not exactly one statement, and runs nothing): exactly one statement,
 * which must prepare as a SELECT (this also reports parser/binder/catalog errors with positions
 * in the user's own text). Never `connection.run(userSql)`: the node API runs every statement of a
 * batch but the last. The result is written with `COPY (\n<sql>\n) TO '<file>' (FORMAT
 * parquet, USE_TMP_FILE false)`. Breakout containment: a text that parses alone as one complete
 * SELECT has balanced parentheses and ends outside any string or comment (a line comment is closed
 * by our newline), so it cannot close our parenthesis; trailing `;` are stripped. As a second
 * wall the combined text must again be exactly one statement, of type COPY; and as the third,
 * even a breakout that got through could only write to the files in `allowed_paths`, i.e. the
 * job's own result file (a test shows `COPY … TO '/tmp/evil.csv'` is refused by DuckDB itself).
 *
 * Timeouts and cancel: DuckDB has no statement timeout; a timer calls `connection.interrupt()`.
 * The node API runs each query on a libuv pool thread; an interrupt that arrives while the query
 * still waits for a pool thread is lost (DuckDB clears the flag when the query starts), so once
 * interrupted we repeat `interrupt()` every 50 ms until the query settles. Each running query
 * holds one libuv thread (UV_THREADPOOL_SIZE, default 4, shared with fs and crypto) for its whole
 * duration: the job runner should run fewer concurrent jobs than that size, or raise it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance, DuckDBTypeId, StatementType, type DuckDBConnection, type DuckDBPreparedStatement, type DuckDBValue } from '@duckdb/node-api';
import { datasetRelation } from './relation.ts';
import { quoteIdent, quoteString } from './sql.ts';
import { physicalType } from './types.ts';
import { duckdbMemoryBytes } from './memory.ts';

export interface SandboxView {
  /** The view's three-part name `[catalog, schema, table]`, as the (rewritten) SQL references it. */
  name: [string, string, string];
  /** Local Parquet paths of the snapshot; may be empty (then an empty view with `columns`). */
  files: string[];
  /** The dataset's columns, in order (DuckDB types, or Lakeport's IPV4); the view always has exactly this shape. */
  columns: { name: string; type: string }[];
  /**
   * A logical view (docs/views.md): instead of files, one SELECT (checked by the analyzer, its
   * dataset names already rewritten) over views listed before this one; the view is `SELECT <columns>
   * FROM (<sql>)`, so its column names stay the stored ones. A failure to bind it (a source's column
   * dropped) is a SandboxQueryError prefixed `View <label>: `.
   */
  sql?: string;
  /** The view's name for messages (`ws.coll.v`). */
  label?: string;
}

export interface SandboxOptions {
  /** DuckDB memory_limit, e.g. '512MB' (default '1GB'). */
  memoryLimit?: string;
  /** DuckDB threads (default 2). */
  threads?: number;
  /** Bytes a job may spill to disk, e.g. '4GiB' (the default). */
  maxSpill?: string;
  /** Per call of runToParquet/describe: the query is interrupted after this long. */
  timeoutMs?: number;
  /**
   * A directory under which this sandbox makes its private work directory (removed on close), with
   * a `spill/` directory for DuckDB. Without it the work directory is made under os.tmpdir() and
   * nothing spills (a query beyond memoryLimit fails with an Out of Memory error).
   */
  tempDirectory?: string;
  /**
   * Files runToParquet may write directly (added to allowed_paths before the lock). Any other
   * resultPath also works: the result is written to the sandbox's private result file and then
   * moved there (a rename, or a copy across file systems).
   */
  resultPaths?: string[];
  /**
   * Files DuckDB may read besides the views' own (added to allowed_paths before the lock): a job's
   * private copies of objects it reads from external storage (services/jobs/external). An engine
   * with these belongs to that one job and is never pooled.
   */
  readPaths?: string[];
}

export interface QueryResult {
  /** The columns of the written Parquet file (DuckDB types as read back). */
  columns: { name: string; type: string }[];
  rowCount: number;
}

export type InterruptReason = 'cancelled' | 'timeout' | 'too_large';

const INTERRUPT_MESSAGES: Record<InterruptReason, string> = {
  cancelled: 'The query was cancelled',
  timeout: 'The query was stopped: it ran past its time limit',
  too_large: 'The query was stopped: its result grew past the size limit',
};

export class SandboxInterruptedError extends Error {
  constructor(readonly reason: InterruptReason) {
    super(INTERRUPT_MESSAGES[reason]);
    this.name = 'SandboxInterruptedError';
  }
}

/** DuckDB refused or failed the query. */
export class SandboxQueryError extends Error {
  constructor(
    message: string,
    /** 0-based character offset in the SQL the caller passed, when DuckDB reports one. */
    readonly position?: number,
    /** DuckDB's exception type, e.g. 'Parser', 'Binder', 'Catalog', 'Conversion', 'Permission', 'Out of Memory'. */
    readonly errorType?: string,
  ) {
    super(message);
    this.name = 'SandboxQueryError';
  }
}

export type SandboxParam = string | number | boolean | null | bigint;

const RESERVED_CATALOGS = new Set(['main', 'system', 'temp']);
/** Simple types, DECIMAL(p,s) and lists of them; nothing that could carry SQL. */
const TYPE_PATTERN = /^[A-Za-z][A-Za-z0-9_ ]*(\(\s*\d+\s*(,\s*\d+\s*)?\))?(\[\d*\])*$/;
const COPY_PREFIX = 'COPY (\n';
/**
 * Column types a Parquet result reads back exactly as the SELECT produced them (no alias such as
 * JSON; sandbox.test.ts checks each against DESCRIBE of the written file). A result with only these
 * (and distinct names, and no parameters) takes its columns from the prepared statement instead of
 * a DESCRIBE of the file (~1.5 ms less per job). HUGEINT (stored as DOUBLE), TIMESTAMP_S/_MS
 * (read back as TIMESTAMP), ENUM, BIT, BIGNUM, nested types… are described from the file.
 */
const ROUND_TRIP_TYPES: ReadonlySet<DuckDBTypeId> = new Set([
  DuckDBTypeId.BOOLEAN, DuckDBTypeId.TINYINT, DuckDBTypeId.SMALLINT, DuckDBTypeId.INTEGER, DuckDBTypeId.BIGINT,
  DuckDBTypeId.UTINYINT, DuckDBTypeId.USMALLINT, DuckDBTypeId.UINTEGER, DuckDBTypeId.UBIGINT, DuckDBTypeId.FLOAT, DuckDBTypeId.DOUBLE,
  DuckDBTypeId.DECIMAL, DuckDBTypeId.VARCHAR, DuckDBTypeId.BLOB, DuckDBTypeId.UUID, DuckDBTypeId.DATE, DuckDBTypeId.TIME,
  DuckDBTypeId.TIMESTAMP, DuckDBTypeId.TIMESTAMP_TZ, DuckDBTypeId.TIMESTAMP_NS, DuckDBTypeId.INTERVAL,
]);
const DESCRIBE_PREFIX = 'DESCRIBE SELECT * FROM (\n';

interface DuckDBErrorJson {
  exception_type?: string;
  exception_message?: string;
  position?: string;
}

function parseDuckDBError(error: unknown): { type?: string; message: string; bytePosition?: number } {
  const raw = error instanceof Error ? error.message : String(error);
  const start = raw.indexOf('{"exception_type"');
  if (start >= 0) {
    try {
      const json = JSON.parse(raw.slice(start)) as DuckDBErrorJson;
      const first = (json.exception_message ?? '').split('\n')[0];
      const type = json.exception_type;
      return {
        type,
        message: type ? `${type} Error: ${first}` : first,
        bytePosition: json.position !== undefined && /^\d+$/.test(json.position) ? Number(json.position) : undefined,
      };
    } catch {
      // not JSON after all: fall through
    }
  }
  return { message: raw.replace(/^Failed to extract statements: /, '').split('\n')[0] };
}

/** A DuckDB error as SandboxQueryError; `prefixBytes` is how much text we put before the user's SQL. */
function queryError(error: unknown, userSql: string, prefixBytes: number): SandboxQueryError {
  const parsed = parseDuckDBError(error);
  let position: number | undefined;
  if (parsed.bytePosition !== undefined) {
    const bytes = Buffer.from(userSql, 'utf8');
    const p = parsed.bytePosition - prefixBytes;
    if (p >= 0 && p <= bytes.length) position = bytes.subarray(0, p).toString('utf8').length;
  }
  return new SandboxQueryError(parsed.message, position, parsed.type);
}

function isInterrupt(error: unknown): boolean {
  return parseDuckDBError(error).type?.toUpperCase() === 'INTERRUPT';
}

function checkValue(name: string, value: unknown): DuckDBValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new SandboxQueryError(`Parameter $${name} is not a finite number`);
    return value;
  }
  throw new SandboxQueryError(`Parameter $${name} must be a string, number, boolean or null`);
}

function checkViews(views: SandboxView[]): void {
  const seen = new Set<string>();
  for (const view of views) {
    if (!Array.isArray(view.name) || view.name.length !== 3 || view.name.some((part) => typeof part !== 'string' || part === '')) {
      throw new Error(`A sandbox view needs a three-part name, got ${JSON.stringify(view.name)}`);
    }
    if (RESERVED_CATALOGS.has(view.name[0].toLowerCase())) throw new Error(`"${view.name[0]}" cannot be a catalog name in DuckDB; map it to another name`);
    const key = view.name.map((p) => p.toLowerCase()).join('\u0000');
    if (seen.has(key)) throw new Error(`Two sandbox views are named ${view.name.join('.')}`);
    seen.add(key);
    if (view.columns.length === 0) throw new Error(`The view ${view.name.join('.')} has no columns`);
    const names = new Set<string>();
    for (const column of view.columns) {
      if (names.has(column.name.toLowerCase())) throw new Error(`The view ${view.name.join('.')} has two columns named ${column.name}`);
      names.add(column.name.toLowerCase());
      if (view.sql === undefined && !TYPE_PATTERN.test(physicalType(column.type))) throw new Error(`Unsupported column type ${JSON.stringify(column.type)}`);
    }
  }
}

/** The engine options: everything in SandboxOptions that is fixed when the DuckDB instance is made. */
export type SandboxEngineOptions = Omit<SandboxOptions, 'timeoutMs'>;

/**
 * One locked-down DuckDB instance with its views (steps 0–5 at the top of this file). It runs
 * nothing itself: each job gets a Sandbox, i.e. a fresh connection, from `Sandbox.open` (a private
 * engine) or from a SandboxPool (a pooled one).
 */
export class SandboxEngine {
  private closed = false;

  private constructor(
    private readonly instance: DuckDBInstance,
    /** Private to this engine: `result.parquet` (writable by DuckDB) and `spill/` (when spilling). */
    readonly workDirectory: string,
    readonly resultPaths: ReadonlySet<string>,
  ) {}

  /** Where a job writes its result unless it declared its result path: in allowed_paths, private to this engine. */
  get privateResult(): string {
    return path.join(this.workDirectory, 'result.parquet');
  }

  get isClosed(): boolean {
    return this.closed;
  }

  static async create(views: SandboxView[], options: SandboxEngineOptions = {}): Promise<SandboxEngine> {
    checkViews(views);
    const resolved = views.map((v) => ({ ...v, files: v.files.map((f) => path.resolve(f)) }));
    const resultPaths = (options.resultPaths ?? []).map((p) => path.resolve(p));
    const workDirectory = await fs.promises.mkdtemp(path.join(path.resolve(options.tempDirectory ?? os.tmpdir()), 'lakeport-sandbox-'));
    const spillDirectory = options.tempDirectory ? path.join(workDirectory, 'spill') : undefined;
    if (spillDirectory) await fs.promises.mkdir(spillDirectory);
    const readPaths = (options.readPaths ?? []).map((p) => path.resolve(p));
    const allowed = [...new Set([...resolved.flatMap((v) => v.files), ...readPaths, ...resultPaths, path.join(workDirectory, 'result.parquet')])];

    const config: Record<string, string> = {
      threads: String(options.threads ?? 2),
      memory_limit: options.memoryLimit ?? '1GB',
      // Always set: DuckDB allows reading and writing under temp_directory, whose default is ./.tmp.
      temp_directory: spillDirectory ?? '',
      // A job spills at most this much to disk (DuckDB's default is 90% of the free space).
      max_temp_directory_size: options.maxSpill ?? '4GiB',
      errors_as_json: 'true',
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
      // Its footer cache can serve a stale schema for a result file rewritten in place with the same size.
      enable_external_file_cache: 'false',
    };
    let instance: DuckDBInstance | undefined;
    let connection: DuckDBConnection | undefined;
    try {
      instance = await DuckDBInstance.create(':memory:', config);
      connection = await instance.connect();
      // The lock-down, in this order; nothing has touched a file before it. All three are global
      // settings: every later connection to this instance has them too (sandbox-pool.test.ts).
      await connection.run(`SET allowed_paths = [${allowed.map(quoteString).join(', ')}]`);
      await connection.run('SET enable_external_access = false');
      await connection.run('SET lock_configuration = true');

      const catalogs = new Map<string, string>();
      const schemas = new Set<string>();
      for (const view of resolved) {
        const [catalog, schema] = view.name;
        if (!catalogs.has(catalog.toLowerCase())) {
          // `memory` is the (empty) default catalog itself.
          if (catalog.toLowerCase() !== 'memory') await connection.run(`ATTACH ':memory:' AS ${quoteIdent(catalog)}`);
          catalogs.set(catalog.toLowerCase(), catalog);
        }
        const schemaKey = `${catalog.toLowerCase()}\u0000${schema.toLowerCase()}`;
        if (!schemas.has(schemaKey)) {
          await connection.run(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(catalog)}.${quoteIdent(schema)}`);
          schemas.add(schemaKey);
        }
        if (view.sql !== undefined) {
          // The analyzer proved the text one complete SELECT: it cannot close this parenthesis (a line comment ends at our newline).
          const body = `SELECT ${view.columns.map((c) => quoteIdent(c.name)).join(', ')} FROM (\n${view.sql}\n) AS ${quoteIdent('view')}`;
          try {
            await connection.run(`CREATE VIEW ${view.name.map(quoteIdent).join('.')} AS ${body}`);
          } catch (error) {
            throw new SandboxQueryError(`View ${view.label ?? view.name.join('.')}: ${parseDuckDBError(error).message} (a dataset it reads was changed since the view was created: recreate it with CREATE OR REPLACE VIEW)`, undefined, parseDuckDBError(error).type);
          }
          continue;
        }
        await connection.run(`CREATE VIEW ${view.name.map(quoteIdent).join('.')} AS ${await datasetRelation(connection, view)}`);
      }
      // The set-up connection is ours alone; jobs get fresh ones.
      connection.closeSync();
      return new SandboxEngine(instance, workDirectory, new Set(resultPaths));
    } catch (error) {
      connection?.closeSync();
      instance?.closeSync();
      fs.rmSync(workDirectory, { recursive: true, force: true });
      if (error instanceof SandboxQueryError) throw error;
      throw new Error(`Could not open the sandbox: ${parseDuckDBError(error).message}`, { cause: error });
    }
  }

  /** A new connection for one job. */
  connect(): Promise<DuckDBConnection> {
    if (this.closed) throw new Error('The sandbox engine is closed');
    return this.instance.connect();
  }

  /** The engine's DuckDB memory in use (buffer manager, all tags), in bytes; on its own short-lived connection. */
  memoryUsage(): Promise<number> {
    return duckdbMemoryBytes(() => this.connect());
  }

  /**
   * Closes the instance (synchronous in DuckDB: a few ms on the calling thread) and removes the work
   * directory. Only when no connection of it runs a query any more.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.instance.closeSync();
    fs.rmSync(this.workDirectory, { recursive: true, force: true });
  }
}

/** DuckDB error types after which an engine is still clean: the statement failed before or while binding, or on a value. */
const BENIGN_ERROR_TYPES = new Set(['Parser', 'Binder', 'Catalog', 'Conversion', 'Invalid Input', 'Out of Range', 'Not implemented', 'Syntax', 'Constraint', 'Mismatch Type']);

/** How a Sandbox ended, for whoever lent it its engine. */
export interface SandboxRelease {
  /** False after an interrupt (cancel, timeout, close during a query), an unexpected error, or raw SQL (tests). */
  reusable: boolean;
}

/**
 * One job on a SandboxEngine: its own connection, one query at a time, a timeout and cancellation.
 * See the top of this file for what it allows and why.
 */
export class Sandbox {
  private running = false;
  private closed = false;
  private cancelled = false;
  /** Cleared when something happened after which the engine should not serve another job. */
  private reusable = true;
  private interruptReason: InterruptReason | undefined;
  private repeat: NodeJS.Timeout | undefined;

  private constructor(
    private readonly engine: SandboxEngine,
    private readonly connection: DuckDBConnection,
    private readonly timeoutMs: number | undefined,
    /** Called once, after the connection is closed: the engine's owner decides what happens to it. */
    private readonly onRelease: (engine: SandboxEngine, release: SandboxRelease) => void,
  ) {}

  /** A private engine for one job, closed with the sandbox. */
  static async open(views: SandboxView[], options: SandboxOptions = {}): Promise<Sandbox> {
    const engine = await SandboxEngine.create(views, options);
    let connection: DuckDBConnection;
    try {
      connection = await engine.connect();
    } catch (error) {
      engine.close();
      throw error;
    }
    return new Sandbox(engine, connection, options.timeoutMs, (e) => e.close());
  }

  /** A job on an engine someone else owns (a pool): a fresh connection; `onRelease` gets the engine back. */
  static async lease(engine: SandboxEngine, options: { timeoutMs?: number }, onRelease: (engine: SandboxEngine, release: SandboxRelease) => void): Promise<Sandbox> {
    const connection = await engine.connect();
    return new Sandbox(engine, connection, options.timeoutMs, onRelease);
  }

  /**
   * Runs one SELECT with bound named parameters ($name) and writes the result to `resultPath` as
   * Parquet. Rejects with SandboxQueryError when DuckDB refuses or fails the query,
   * SandboxInterruptedError on timeout or cancel; no file is left at `resultPath` then.
   */
  async runToParquet(sql: string, params: Record<string, unknown>, resultPath: string, limits: { maxBytes?: number } = {}): Promise<QueryResult> {
    const target = path.resolve(resultPath);
    const direct = this.engine.resultPaths.has(target);
    const written = direct ? target : this.engine.privateResult;
    const watch = limits.maxBytes === undefined ? undefined : this.watchSize(written, limits.maxBytes);
    try {
      const result = await this.guarded(async () => {
        const { body, values, columns: known } = await this.validate(sql, params);
        const text = `${COPY_PREFIX}${body}\n) TO ${quoteString(written)} (FORMAT parquet, USE_TMP_FILE false)`;
        const counted = await this.runOne(text, values, StatementType.COPY, sql, Buffer.byteLength(COPY_PREFIX));
        const rowCount = Number(counted[0]?.[0] ?? 0);
        if (known) return { columns: known, rowCount };
        // The file's own schema (what readers get; e.g. HUGEINT is stored as DOUBLE in Parquet).
        const described = await this.connection.runAndReadAll('DESCRIBE SELECT * FROM read_parquet($path)', { path: written });
        const columns = (described.getRowObjectsJson() as { column_name: string; column_type: string }[]).map((r) => ({ name: r.column_name, type: r.column_type }));
        return { columns, rowCount };
      });
      if (!direct) await moveFile(written, target);
      return result;
    } catch (error) {
      fs.rmSync(written, { force: true });
      fs.rmSync(target, { force: true });
      throw error;
    } finally {
      clearInterval(watch);
    }
  }

  /** Stops the query once the file it writes passes `maxBytes` (DuckDB writes row groups as it goes). */
  private watchSize(file: string, maxBytes: number): NodeJS.Timeout {
    const timer = setInterval(() => {
      fs.stat(file, (error, stat) => {
        if (!error && stat.size > maxBytes && this.running) this.stop('too_large');
      });
    }, 100);
    timer.unref();
    return timer;
  }

  /**
   * The result columns of a SELECT without running it (DuckDB binds it: Parquet footers are read,
   * no data). Names are as the Parquet result will have them (duplicates get DuckDB's `_1` suffix).
   */
  async describe(sql: string, params: Record<string, unknown>): Promise<{ name: string; type: string }[]> {
    return this.guarded(async () => {
      const { body, values } = await this.validate(sql, params);
      const rows = await this.runOne(`${DESCRIBE_PREFIX}${body}\n)`, values, StatementType.SELECT, sql, Buffer.byteLength(DESCRIBE_PREFIX));
      return rows.map((r) => ({ name: String(r[0]), type: String(r[1]) }));
    });
  }

  /** Cancels the running query (and any later one: a cancelled sandbox stays cancelled). */
  interrupt(): void {
    this.cancelled = true;
    this.reusable = false;
    if (this.running) this.stop('cancelled');
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.running) {
      // Closes once the query has settled (see guarded); never close under a running query.
      this.stop('cancelled');
      return;
    }
    this.release();
  }

  private release(): void {
    this.connection.closeSync();
    this.onRelease(this.engine, { reusable: this.reusable && !this.cancelled && this.interruptReason === undefined });
  }

  private stop(reason: InterruptReason): void {
    if (this.interruptReason) return;
    this.interruptReason = reason;
    this.reusable = false;
    this.connection.interrupt();
    // An interrupt sent before the query got a libuv thread is lost: repeat until it settles.
    this.repeat = setInterval(() => this.connection.interrupt(), 50);
    this.repeat.unref();
  }

  /** Runs `work` as the sandbox's one query at a time, under the timeout, mapping interruptions. */
  private async guarded<T>(work: () => Promise<T>): Promise<T> {
    if (this.closed) throw new Error('The sandbox is closed');
    if (this.cancelled) throw new SandboxInterruptedError('cancelled');
    if (this.running) throw new Error('The sandbox is already running a query');
    this.running = true;
    this.interruptReason = undefined;
    const timer = this.timeoutMs !== undefined ? setTimeout(() => this.stop('timeout'), this.timeoutMs) : undefined;
    try {
      const result = await work();
      return result;
    } catch (error) {
      const reason = this.interruptReason;
      if (reason) throw new SandboxInterruptedError(reason);
      if (isInterrupt(error)) {
        this.reusable = false;
        throw new SandboxInterruptedError('cancelled');
      }
      if (!(error instanceof SandboxQueryError) || (error.errorType !== undefined && !BENIGN_ERROR_TYPES.has(error.errorType))) this.reusable = false;
      throw error;
    } finally {
      clearTimeout(timer);
      clearInterval(this.repeat);
      this.repeat = undefined;
      this.running = false;
      if (this.closed) this.release();
    }
  }

  private checkInterrupted(): void {
    if (this.interruptReason) throw new SandboxInterruptedError(this.interruptReason);
  }

  /**
   * The user's SQL must be exactly one SELECT; returns it without trailing `;`, the values its
   * parameters need, and its result columns when a Parquet file of them reads back the same
   * (ROUND_TRIP_TYPES, distinct names, no parameters whose values could change the types).
   */
  private async validate(sql: string, params: Record<string, unknown>): Promise<{ body: string; values: Record<string, DuckDBValue>; columns?: { name: string; type: string }[] }> {
    const prepared = await this.prepareOne(sql, sql, 0);
    try {
      if (prepared.statementType !== StatementType.SELECT) throw new SandboxQueryError('Only a SELECT statement can run here', undefined, 'Invalid Input');
      const values: Record<string, DuckDBValue> = {};
      for (let i = 1; i <= prepared.parameterCount; i++) {
        const name = prepared.parameterName(i);
        if (!Object.prototype.hasOwnProperty.call(params, name)) throw new SandboxQueryError(`No value was given for the parameter $${name}`, undefined, 'Invalid Input');
        values[name] = checkValue(name, params[name]);
      }
      return { body: sql.replace(/[\s;]+$/, ''), values, columns: prepared.parameterCount === 0 ? roundTripColumns(prepared) : undefined };
    } finally {
      prepared.destroySync();
    }
  }

  /** Parses `text`, which must be exactly one statement, and prepares it. */
  private async prepareOne(text: string, userSql: string, prefixBytes: number): Promise<DuckDBPreparedStatement> {
    this.checkInterrupted();
    try {
      // duckdb_prepare parses the whole text and refuses anything but exactly one statement
      // ("Cannot prepare multiple statements at once!", "No statement to prepare!"); it runs nothing.
      // One call instead of extractStatements + prepare (a third of the time for a short query).
      return await this.connection.prepare(text);
    } catch (error) {
      if (this.interruptReason) throw new SandboxInterruptedError(this.interruptReason);
      const parsed = parseDuckDBError(error);
      if (parsed.type === 'Invalid Input' && /^Invalid Input Error: (Cannot prepare multiple statements at once|No statement to prepare)/.test(parsed.message)) {
        throw new SandboxQueryError('Exactly one SQL statement can run at a time', undefined, 'Invalid Input');
      }
      throw queryError(error, userSql, prefixBytes);
    }
  }

  /** Prepares `text` (one statement of `type`), binds and runs it; rows as arrays. */
  private async runOne(text: string, values: Record<string, DuckDBValue>, type: StatementType, userSql: string, prefixBytes: number): Promise<unknown[][]> {
    const prepared = await this.prepareOne(text, userSql, prefixBytes);
    try {
      if (prepared.statementType !== type) throw new SandboxQueryError('The query is not a single SELECT', undefined, 'Invalid Input');
      prepared.bind(values);
      this.checkInterrupted();
      const reader = await prepared.runAndReadAll();
      return reader.getRows() as unknown[][];
    } catch (error) {
      if (error instanceof SandboxQueryError || error instanceof SandboxInterruptedError) throw error;
      throw this.interruptReason ? new SandboxInterruptedError(this.interruptReason) : queryError(error, userSql, prefixBytes);
    } finally {
      prepared.destroySync();
    }
  }
}

/** The prepared SELECT's columns, when a Parquet file of its result reads back with exactly these names and types. */
function roundTripColumns(prepared: DuckDBPreparedStatement): { name: string; type: string }[] | undefined {
  const columns: { name: string; type: string }[] = [];
  const names = new Set<string>();
  for (let i = 0; i < prepared.columnCount; i++) {
    const type = prepared.columnType(i);
    const name = prepared.columnName(i);
    if (!ROUND_TRIP_TYPES.has(type.typeId) || type.alias !== undefined || name === '' || names.has(name.toLowerCase())) return undefined;
    names.add(name.toLowerCase());
    columns.push({ name, type: type.toString() });
  }
  return columns.length > 0 ? columns : undefined;
}

async function moveFile(from: string, to: string): Promise<void> {
  try {
    await fs.promises.rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await fs.promises.copyFile(from, to);
    await fs.promises.rm(from, { force: true });
  }
}

/**
 * Tests only (do not export from index.ts): runs any single statement on the sandbox's own
 * connection, bypassing the SELECT-only check, to show that DuckDB itself refuses what matters.
 */
export async function runRawForTests(sandbox: Sandbox, sql: string): Promise<Record<string, unknown>[]> {
  // Raw SQL bypasses the SELECT-only check: the engine is not lent to another job afterwards.
  (sandbox as unknown as { reusable: boolean }).reusable = false;
  const connection = (sandbox as unknown as { connection: DuckDBConnection }).connection;
  try {
    const statements = await connection.extractStatements(sql);
    const rows: Record<string, unknown>[] = [];
    for (let i = 0; i < statements.count; i++) {
      const prepared = await statements.prepare(i);
      try {
        rows.splice(0, rows.length, ...((await prepared.runAndReadAll()).getRowObjectsJson() as Record<string, unknown>[]));
      } finally {
        prepared.destroySync();
      }
    }
    return rows;
  } catch (error) {
    throw queryError(error, sql, 0);
  }
}
