import { DuckDBInstance, type DuckDBConnection, type DuckDBPreparedStatement } from '@duckdb/node-api';
import { LRUCache } from 'lru-cache';
import { rewritePlaceholders, tokenizeSql, type PlaceholderRewrite, type SqlToken } from './placeholders.ts';

/**
 * What SQL a query job may run (docs/sql.md): exactly one read-only SELECT, or one of Lakeport's own
 * statements. The SQL is parsed by DuckDB itself (`json_serialize_sql`, which only parses: nothing is
 * bound or run, and the text is a bound parameter), and the parse tree is walked for every base table
 * and table function it names. Deciding which of those are allowed is the caller's: it resolves
 * three-part names through the catalog and keeps an allow-list of table functions.
 *
 * The analysis is of `rewritten.sql`, the text with `:name` placeholders written as `$name`: that is
 * the text the caller must run, with `rewritten.names` bound. Every position is a UTF-16 offset into
 * the user's original text.
 */

export type TimeTravel = { kind: 'tag'; name: string } | { kind: 'id'; snapshotId: number } | { kind: 'timestamp'; value: string };

export interface TableRef {
  catalog?: string;
  schema?: string;
  name: string;
  /** The name's parts as written (case kept, quotes removed): `ws.coll.ds` → `['ws', 'coll', 'ds']`. */
  parts: string[];
  /** `AT (VERSION => 'tag')`, `AT (VERSION => 42)` or `AT (TIMESTAMP => '…')`. */
  version?: TimeTravel;
  position?: number;
}

export interface FunctionRef {
  /** Lowercased, without schema or catalog. */
  name: string;
  position?: number;
  /** Named arguments, lowercased, e.g. `credentials` for `read_parquet(…, credentials => 'x')`. */
  namedArgs: string[];
  /** Every argument in order, positional and named, with its value when it is a literal. */
  args: FunctionArg[];
}

/**
 * The value of a table function's argument as far as it is a literal: strings, whole numbers,
 * booleans (also `header = true`, which DuckDB parses as a cast of 't'), NULL, lists and structs of
 * those; a placeholder; or any other expression (not described further).
 */
export type ArgValue =
  | { kind: 'string'; value: string }
  | { kind: 'number'; value: number }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'null' }
  | { kind: 'list'; items: ArgValue[] }
  | { kind: 'struct'; fields: { name: string; value: ArgValue }[] }
  | { kind: 'parameter'; name: string }
  | { kind: 'expression' };

export interface FunctionArg {
  /** The argument's name, lowercased (`name => v`, `name := v`, `name = v`); undefined when positional. */
  name?: string;
  value: ArgValue;
  /** Where the value is written (UTF-16 offset into the user's text), when DuckDB says. */
  position?: number;
  /** For a list value: where each item is written. */
  itemPositions?: (number | undefined)[];
}

export type LakeportStatement = 'create_secret' | 'grant' | 'revoke' | 'alter_workspace' | 'alter_dataset';

export type RefusalCode =
  | 'EMPTY_STATEMENT'
  | 'MULTIPLE_STATEMENTS'
  | 'SYNTAX_ERROR'
  | 'STATEMENT_NOT_ALLOWED'
  | 'NOT_A_QUERY'
  | 'FILE_ACCESS_NOT_ALLOWED'
  | 'INVALID_TIME_TRAVEL'
  | 'UNSUPPORTED_PARAMETER'
  | 'QUERY_TOO_COMPLEX';

export interface SelectAnalysis {
  kind: 'select';
  /** Every base table named anywhere (FROM, joins, subqueries, CTE bodies, set operations), CTE references excluded, in text order. */
  tables: TableRef[];
  /** Every table function called anywhere (`FROM read_parquet(…)`), in text order. */
  tableFunctions: FunctionRef[];
  /** Distinct names (lowercased) of every other function called: scalar, aggregate and window functions, macros. Operators are not listed. */
  scalarFunctions: string[];
  rewritten: PlaceholderRewrite;
}

export interface LakeportAnalysis {
  kind: 'lakeport';
  statement: LakeportStatement;
  rewritten: PlaceholderRewrite;
}

export interface Refusal {
  kind: 'refused';
  code: RefusalCode;
  message: string;
  /** UTF-16 offset into the user's original text. */
  position?: number;
}

export type Analysis = SelectAnalysis | LakeportAnalysis | Refusal;

/**
 * Scalar functions a job may not call: they read files, the environment or the engine's settings
 * (`current_setting('allowed_paths')` would name server paths). The caller refuses them. Table
 * functions, `duckdb_settings()` and `pragma_*()` among them, are refused unless allow-listed.
 */
export const FILE_OR_ENVIRONMENT_FUNCTIONS: ReadonlySet<string> = new Set(['read_text', 'read_blob', 'glob', 'getenv', 'current_setting']);

/** Statement keywords that are read-only but not queries. */
const NOT_A_QUERY = new Set(['DESCRIBE', 'SHOW', 'SUMMARIZE']);
/** Leading keywords of a query. */
const QUERY_KEYWORDS = new Set(['SELECT', 'FROM', 'VALUES', 'TABLE', 'PIVOT', 'UNPIVOT', 'WITH']);
/** Words between CREATE and the kind of object created. */
const CREATE_MODIFIERS = new Set(['OR', 'REPLACE', 'TEMP', 'TEMPORARY', 'PERSISTENT', 'UNIQUE', 'UNLOGGED', 'IF', 'NOT', 'EXISTS']);
/** Extensions that make a one- or two-part table name a file (DuckDB's replacement scans read them). */
const FILE_EXTENSIONS = new Set(['parquet', 'csv', 'tsv', 'json', 'jsonl', 'ndjson', 'txt', 'gz', 'zst', 'arrow', 'xlsx', 'db', 'duckdb', 'sqlite', 'avro']);
/** Characters of a path or URL, never in a dataset name. */
const PATH_CHARS = /[/\\.:*?~]/;
/** Deeper parse trees are refused (DuckDB's own limits keep real queries far below this). */
const MAX_DEPTH = 20_000;

class Refused extends Error {
  constructor(
    readonly code: RefusalCode,
    message: string,
    readonly position?: number,
  ) {
    super(message);
  }
}

/** The DuckDB configuration of a parse-only instance: no file or network access, no extension loading. */
const PARSER_CONFIG: Record<string, string> = {
  threads: '1',
  memory_limit: '256MB',
  enable_external_access: 'false',
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
  lock_configuration: 'true',
};

/** Texts longer than this are analysed every time (the cache holds texts of recent analyses). */
const CACHED_TEXT_MAX = 64 * 1024;

/**
 * Classifies job SQL. Owns a parse-only DuckDB instance (`SqlAnalyzer.create()`) or uses one it is
 * given (`new SqlAnalyzer(instance)`, which it never closes); only `json_serialize_sql` runs on it,
 * as one prepared statement. Calls are serialised on two connections (ParseLane): one for short texts, one for long ones.
 *
 * An analysis depends on the text alone, so recent ones are kept by text and shared (the same
 * statements come again and again: dashboards, retries, a submit and its check): callers must not
 * change what they get.
 */
/**
 * One connection that parses one text at a time, with its prepared `json_serialize_sql`. The
 * analyzer has two: texts up to CACHED_TEXT_MAX on one, longer ones on the other, so a flood of
 * long texts (up to ~0.25 s each within the limits of input-limits.ts) never delays anyone's
 * ordinary statements.
 */
class ParseLane {
  private connection: Promise<DuckDBConnection> | undefined;
  private statement: DuckDBPreparedStatement | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly instance: DuckDBInstance) {}

  /** DuckDB's parse of `sql`, bound as a parameter. Big integers arrive as strings. */
  serialize(sql: string): Promise<Json> {
    const run = this.queue.then(async () => {
      if (this.closed) throw new Error('SqlAnalyzer is closed');
      this.connection ??= this.instance.connect();
      // Prepared once: binding a text costs about half of preparing and running it afresh.
      this.statement ??= await (await this.connection).prepare('SELECT json_serialize_sql($sql::VARCHAR) AS tree');
      this.statement.bind({ sql });
      const reader = await this.statement.runAndReadAll();
      const value = reader.getRows()[0]?.[0];
      if (typeof value !== 'string') throw new Error('json_serialize_sql returned no text');
      return parseJsonKeepingBigIntegers(value);
    });
    // The next parse waits for this one either way; its failure goes to its caller.
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Closes the connection once the parses under way are done. */
  async close(): Promise<void> {
    this.closed = true;
    const connection = this.connection;
    this.connection = undefined;
    await this.queue;
    this.statement?.destroySync();
    this.statement = undefined;
    // A connection that never opened failed the parse that asked for it: then there is nothing to close.
    const [opened] = await Promise.allSettled([connection]);
    if (opened.status === 'fulfilled') opened.value?.closeSync();
  }
}

export class SqlAnalyzer {
  private readonly lanes: { short: ParseLane; long: ParseLane };
  private readonly recent = new LRUCache<string, Promise<Analysis>>({ max: 1_000, maxSize: 4 * 1024 * 1024, maxEntrySize: CACHED_TEXT_MAX + 1, sizeCalculation: (_analysis, sql) => sql.length + 1 });
  private closed = false;

  constructor(
    private readonly instance: DuckDBInstance,
    private readonly owned = false,
  ) {
    this.lanes = { short: new ParseLane(instance), long: new ParseLane(instance) };
  }

  /** An analyzer with its own small in-memory DuckDB, which `close()` closes. */
  static async create(): Promise<SqlAnalyzer> {
    return new SqlAnalyzer(await DuckDBInstance.create(':memory:', PARSER_CONFIG), true);
  }

  /** Closes the connection (and the instance, when owned) once the analyses under way are done. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.lanes.short.close(), this.lanes.long.close()]);
    this.recent.clear();
    if (this.owned) this.instance.closeSync();
  }

  /** Starts analysing `sql` for a later `analyze` (texts too long to keep are left alone). */
  warm(sql: string): void {
    // A failure is not kept: the analyze that needs the answer runs again and gets it.
    if (!this.closed && sql.length <= CACHED_TEXT_MAX) this.analyze(sql).catch(() => undefined);
  }

  analyze(sql: string): Promise<Analysis> {
    if (this.closed) return Promise.reject(new Error('SqlAnalyzer is closed'));
    if (sql.length > CACHED_TEXT_MAX) return this.analyzeNow(sql);
    let analysis = this.recent.get(sql);
    if (!analysis) {
      analysis = this.analyzeNow(sql);
      this.recent.set(sql, analysis);
      // Only answers are kept: a failure (e.g. the analyzer closing) is not.
      const pending = analysis;
      pending.catch(() => this.recent.peek(sql) === pending && this.recent.delete(sql));
    }
    return analysis;
  }

  private async analyzeNow(sql: string): Promise<Analysis> {
    const rewritten = rewritePlaceholders(sql);
    try {
      return await this.classify(rewritten);
    } catch (e) {
      if (e instanceof Refused) return { kind: 'refused', code: e.code, message: e.message, ...(e.position === undefined ? {} : { position: e.position }) };
      throw e;
    }
  }

  private async classify(rewritten: PlaceholderRewrite): Promise<SelectAnalysis | LakeportAnalysis> {
    const text = rewritten.sql;
    const toOriginal = (offset: number | undefined) => (offset === undefined ? undefined : rewritten.toOriginal(offset));
    const nul = text.indexOf('\u0000');
    if (nul >= 0) throw new Refused('SYNTAX_ERROR', 'The SQL contains a NUL character.', toOriginal(nul));

    const statements = splitStatements(tokenizeSql(text));
    if (statements.length === 0) throw new Refused('EMPTY_STATEMENT', 'The SQL has no statement: write one SELECT query.');
    const multiple = () =>
      new Refused(
        'MULTIPLE_STATEMENTS',
        'A job runs exactly one statement; remove everything after the first `;`.',
        statements.length > 1 ? toOriginal(statements[1][0].start) : undefined,
      );

    const lakeport = lakeportStatement(statements[0]);
    if (lakeport) {
      if (statements.length > 1) throw multiple();
      return { kind: 'lakeport', statement: lakeport, rewritten };
    }

    const parsed = await this.serialize(text);
    const offsets = new TextOffsets(text);
    const number = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN);
    /** A node's query_location (UTF-8 bytes; 2^64 - 1 when it has none) → the user's text. */
    const at = (location: unknown): number | undefined => {
      const byte = number(location);
      return Number.isSafeInteger(byte) && byte <= 4 * text.length ? toOriginal(offsets.fromByte(byte)) : undefined;
    };
    /** A syntax error's position (code points) → the user's text. */
    const errorAt = (position: unknown): number | undefined => {
      const cp = number(position);
      return Number.isSafeInteger(cp) ? toOriginal(offsets.fromCodePoint(cp)) : undefined;
    };

    if (parsed.error === true) {
      const message = String(parsed.error_message ?? 'The SQL could not be parsed.');
      if (/only select statements can be serialized/i.test(message)) {
        if (statements.length > 1) throw multiple();
        throw notAllowed(statements[0], toOriginal);
      }
      if (/mixing named and positional parameters/i.test(message)) throw unsupportedParameter(text, rewritten, toOriginal);
      throw new Refused('SYNTAX_ERROR', message, errorAt(parsed.position));
    }

    const list = Array.isArray(parsed.statements) ? (parsed.statements as Json[]) : [];
    if (list.length === 0) throw new Refused('EMPTY_STATEMENT', 'The SQL has no statement: write one SELECT query.');
    if (list.length > 1) throw multiple();
    const statement = list[0];

    // Only the parameters we wrote may be there: `$x`, `$1` and `?` written by the user would never be bound.
    const known = new Set(rewritten.names.map((n) => n.toLowerCase()));
    const params = Array.isArray(statement.named_param_map) ? (statement.named_param_map as Json[]) : [];
    if (params.some((p) => !known.has(String(p.key).toLowerCase()))) throw unsupportedParameter(text, rewritten, toOriginal);
    // And every placeholder we rewrote must be one DuckDB sees (else our lexer and DuckDB's disagree on what is code).
    const seen = new Set(params.map((p) => String(p.key).toLowerCase()));
    const lost = rewritten.placeholders.find((p) => !seen.has(p.name.toLowerCase()));
    if (lost) {
      throw new Refused('UNSUPPORTED_PARAMETER', `:${lost.name} is not where a value can go; write it as an operand, e.g. \`= :${lost.name}\`.`, lost.start);
    }

    const walker = new TreeWalker(text, at, offsets, toOriginal(statements[0][0].start));
    walker.walk(statement.node, new Set(), 0);
    return {
      kind: 'select',
      tables: walker.tables,
      tableFunctions: walker.tableFunctions,
      scalarFunctions: [...walker.scalarFunctions],
      rewritten,
    };
  }

  private serialize(sql: string): Promise<Json> {
    return (sql.length > CACHED_TEXT_MAX ? this.lanes.long : this.lanes.short).serialize(sql);
  }
}

// ----------------------------------------------------------------------------------------------
// Statements and leading keywords (our lexer)

/** Non-empty statements, split at top-level `;` (the lexer already skips strings and comments). */
function splitStatements(tokens: SqlToken[]): SqlToken[][] {
  const statements: SqlToken[][] = [];
  let current: SqlToken[] = [];
  for (const t of tokens) {
    if (t.kind === 'operator' && t.text === ';') {
      if (current.length) statements.push(current);
      current = [];
    } else {
      current.push(t);
    }
  }
  if (current.length) statements.push(current);
  return statements;
}

const upperWord = (t: SqlToken | undefined): string | undefined => (t && t.kind === 'word' ? t.text.toUpperCase() : undefined);

/** Lakeport's own statements, recognised by their leading keywords only (parsed later, by our parser). */
function lakeportStatement(tokens: SqlToken[]): LakeportStatement | undefined {
  const first = upperWord(tokens[0]);
  if (first === 'GRANT') return 'grant';
  if (first === 'REVOKE') return 'revoke';
  if (first === 'ALTER' && upperWord(tokens[1]) === 'WORKSPACE') return 'alter_workspace';
  if (first === 'ALTER' && upperWord(tokens[1]) === 'DATASET') return 'alter_dataset';
  if (first === 'CREATE') {
    let i = 1;
    if (upperWord(tokens[i]) === 'OR' && upperWord(tokens[i + 1]) === 'REPLACE') i += 2;
    if (['PERSISTENT', 'TEMPORARY', 'TEMP'].includes(upperWord(tokens[i]) ?? '')) i++;
    if (upperWord(tokens[i]) === 'SECRET') return 'create_secret';
  }
  return undefined;
}

/** The token that says what kind of statement this is: after leading `(`s and a WITH clause. */
function statementKeyword(tokens: SqlToken[]): number {
  let i = 0;
  while (tokens[i]?.text === '(') i++;
  if (upperWord(tokens[i]) !== 'WITH') return i;
  // WITH [RECURSIVE] name [(cols)] [USING KEY (…)] AS [[NOT] MATERIALIZED] (body) [, …] <statement>
  let depth = 0;
  for (i++; i < tokens.length; i++) {
    const t = tokens[i];
    if (t.text === '(') depth++;
    else if (t.text === ')') {
      depth--;
      if (depth === 0) {
        const after = tokens[i + 1];
        if (after && after.text !== ',' && upperWord(after) !== 'AS' && upperWord(after) !== 'USING') {
          let j = i + 1;
          while (tokens[j]?.text === '(') j++;
          return j;
        }
      }
    }
  }
  return tokens.length;
}

function notAllowed(tokens: SqlToken[], toOriginal: (o: number | undefined) => number | undefined): Refused {
  const k = statementKeyword(tokens);
  const keyword = upperWord(tokens[k]);
  const position = tokens[k] ? toOriginal(tokens[k].start) : undefined;
  if (keyword && NOT_A_QUERY.has(keyword)) return new Refused('NOT_A_QUERY', `${keyword} is not allowed in a job: write a SELECT query.`, position);
  if (!keyword || QUERY_KEYWORDS.has(keyword)) {
    // A query DuckDB cannot hand over as a plain SELECT: a PIVOT that reads its values from the data.
    const pivot = tokens.find((t) => ['PIVOT', 'UNPIVOT'].includes(upperWord(t) ?? ''));
    if (pivot) {
      return new Refused(
        'STATEMENT_NOT_ALLOWED',
        `This ${upperWord(pivot)} needs its values listed, as in \`ON column IN ('a', 'b')\`: one that reads them from the data runs more than one query.`,
        toOriginal(pivot.start),
      );
    }
    return new Refused('STATEMENT_NOT_ALLOWED', 'This statement is not allowed in a job: only a single read-only SELECT query can be run.', position);
  }
  let phrase = keyword;
  if (['CREATE', 'DROP', 'ALTER', 'EXPORT', 'IMPORT', 'ATTACH', 'DETACH'].includes(keyword)) {
    let j = k + 1;
    while (CREATE_MODIFIERS.has(upperWord(tokens[j]) ?? '')) j++;
    const object = upperWord(tokens[j]);
    if (object && ['TABLE', 'VIEW', 'SCHEMA', 'SEQUENCE', 'MACRO', 'FUNCTION', 'INDEX', 'TYPE', 'SECRET', 'DATABASE'].includes(object)) phrase += ` ${object}`;
  }
  return new Refused('STATEMENT_NOT_ALLOWED', `${phrase} is not allowed in a job: only a single read-only SELECT query can be run.`, position);
}

function unsupportedParameter(text: string, rewritten: PlaceholderRewrite, toOriginal: (o: number | undefined) => number | undefined): Refused {
  const ours = new Set(rewritten.placeholders.map((p) => p.start));
  const foreign = tokenizeSql(text).find((t) => t.kind === 'parameter' && !ours.has(rewritten.toOriginal(t.start)));
  const what = foreign ? `\`${foreign.text}\`` : 'a DuckDB parameter';
  return new Refused('UNSUPPORTED_PARAMETER', `Parameters are written :name; ${what} is not supported.`, foreign ? toOriginal(foreign.start) : undefined);
}

// ----------------------------------------------------------------------------------------------
// The parse tree

type Json = Record<string, any>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmpty = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** JSON.parse, except that integers beyond 2^53 become strings (DuckDB writes 2^64 - 1 for "no location"). */
function parseJsonKeepingBigIntegers(text: string): Json {
  const safe = text.replace(/"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g, (m) => {
    if (m.charCodeAt(0) === 0x22 || m.length < 16 || /[.eE]/.test(m)) return m;
    return Number.isSafeInteger(Number(m)) ? m : `"${m}"`;
  });
  return JSON.parse(safe) as Json;
}

/**
 * DuckDB's offsets → UTF-16 offsets (JavaScript's). DuckDB gives node locations (`query_location`)
 * in UTF-8 bytes and syntax-error positions in characters (code points).
 */
class TextOffsets {
  private readonly bytes: number[] | undefined;
  private readonly codePoints: number[] | undefined;

  constructor(private readonly text: string) {
    if (/^[\x00-\x7f]*$/.test(text)) return;
    // For each UTF-16 offset (and the end), where it is in bytes and in code points. The second
    // half of a surrogate pair gets the pair's end, so lookups land on a character's start.
    const bytes: number[] = [];
    const codePoints: number[] = [];
    let byte = 0;
    let cp = 0;
    for (let i = 0; i < text.length; i++) {
      bytes.push(byte);
      codePoints.push(cp);
      const c = text.charCodeAt(i);
      cp++;
      if (c < 0x80) byte += 1;
      else if (c < 0x800) byte += 2;
      else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff) {
        byte += 4;
        bytes.push(byte);
        codePoints.push(cp);
        i++;
      } else byte += 3; // a lone surrogate is sent as U+FFFD
    }
    bytes.push(byte);
    codePoints.push(cp);
    this.bytes = bytes;
    this.codePoints = codePoints;
  }

  fromByte(byte: number): number {
    return this.bytes ? lastAtOrBefore(this.bytes, byte) : Math.min(byte, this.text.length);
  }

  fromCodePoint(codePoint: number): number {
    return this.codePoints ? lastAtOrBefore(this.codePoints, codePoint) : Math.min(codePoint, this.text.length);
  }
}

/** The last index of a non-decreasing array whose value is at most `value` (0 when none). */
function lastAtOrBefore(values: number[], value: number): number {
  let lo = 0;
  let hi = values.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (values[mid] <= value) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

class TreeWalker {
  readonly tables: TableRef[] = [];
  readonly tableFunctions: FunctionRef[] = [];
  readonly scalarFunctions = new Set<string>();

  constructor(
    private readonly text: string,
    private readonly at: (location: unknown) => number | undefined,
    private readonly offsets: TextOffsets,
    /** Where the statement starts, for refusals of nodes without a location. */
    private readonly statementStart: number | undefined,
  ) {}

  /** `scope`: the lowercased CTE names visible here. */
  walk(value: unknown, scope: ReadonlySet<string>, depth: number): void {
    if (depth > MAX_DEPTH) throw new Refused('QUERY_TOO_COMPLEX', 'The query is nested too deeply to analyse.');
    if (Array.isArray(value)) {
      for (const v of value) this.walk(v, scope, depth + 1);
      return;
    }
    if (!isObject(value)) return;

    // A query node's WITH: each CTE sees the ones before it; the body sees all.
    const ctes = isObject(value.cte_map) && Array.isArray(value.cte_map.map) ? (value.cte_map.map as Json[]) : [];
    if (ctes.length) {
      const visible = new Set(scope);
      for (const entry of ctes) {
        this.walk(entry?.value, visible, depth + 1);
        if (typeof entry?.key === 'string') visible.add(entry.key.toLowerCase());
      }
      scope = visible;
    }
    // A recursive CTE sees itself.
    if (value.type === 'RECURSIVE_CTE_NODE' && typeof value.cte_name === 'string') scope = new Set([...scope, value.cte_name.toLowerCase()]);

    switch (value.type) {
      case 'BASE_TABLE':
        this.baseTable(value, scope);
        return;
      case 'TABLE_FUNCTION':
        this.tableFunction(value, scope, depth);
        return;
      case 'SHOW_REF': {
        const show = value.show_type === 'SUMMARY' ? 'SUMMARIZE' : value.show_type === 'DESCRIBE' ? 'DESCRIBE' : 'SHOW';
        throw new Refused('NOT_A_QUERY', `${show} is not allowed in a job: write a SELECT query.`, this.at(value.query_location) ?? this.statementStart);
      }
    }
    if (value.class === 'CONSTANT') return; // a literal: nothing inside but its value
    if ((value.class === 'FUNCTION' && value.is_operator !== true) || value.class === 'WINDOW') {
      const name = nonEmpty(value.function_name);
      if (name) this.scalarFunctions.add(name.toLowerCase());
    }
    for (const [key, child] of Object.entries(value)) {
      if (key === 'cte_map') continue;
      if (typeof child === 'object' && child !== null) this.walk(child, scope, depth + 1);
    }
  }

  private baseTable(node: Json, scope: ReadonlySet<string>): void {
    const catalog = nonEmpty(node.catalog_name);
    const schema = nonEmpty(node.schema_name);
    const name = typeof node.table_name === 'string' ? node.table_name : '';
    const position = this.at(node.query_location);
    if (!catalog && !schema && scope.has(name.toLowerCase())) {
      if (node.at_clause) throw new Refused('INVALID_TIME_TRAVEL', `${name} is a CTE: AT (…) applies to datasets only.`, position);
      return;
    }
    const parts = [catalog, schema, name].filter((p): p is string => p !== undefined);
    if (this.isFile(node, parts)) {
      throw new Refused('FILE_ACCESS_NOT_ALLOWED', `Reading files is not allowed: '${parts.join('.')}' is not a dataset; name datasets as workspace.collection.dataset.`, position);
    }
    const ref: TableRef = { name, parts };
    if (catalog !== undefined) ref.catalog = catalog;
    if (schema !== undefined) ref.schema = schema;
    if (node.at_clause) ref.version = timeTravel(node.at_clause, parts.join('.'), position);
    if (position !== undefined) ref.position = position;
    this.tables.push(ref);
  }

  /** A name written as a string literal (`FROM 'x.parquet'`), a path, or a name ending in a file extension. */
  private isFile(node: Json, parts: string[]): boolean {
    const location = typeof node.query_location === 'number' && Number.isSafeInteger(node.query_location) ? node.query_location : undefined;
    if (location !== undefined) {
      const index = this.offsets.fromByte(location);
      const c = this.text[index];
      if (c === "'" || ((c === 'e' || c === 'E') && this.text[index + 1] === "'") || c === '$') return true;
    }
    if (parts.some((p) => PATH_CHARS.test(p) || p === '')) return true;
    return parts.length < 3 && FILE_EXTENSIONS.has(parts[parts.length - 1].toLowerCase());
  }

  /** Where a value starts: its node's location, or its operand's for a cast (whose own is its `::`, or none). */
  private firstLocation(node: Json, depth: number): number | undefined {
    if (node.class === 'CAST' && isObject(node.child) && depth <= MAX_ARG_DEPTH) {
      const inner = this.firstLocation(node.child, depth + 1);
      if (inner !== undefined) return inner;
    }
    const own = this.at(node.query_location);
    if (own !== undefined || depth > MAX_ARG_DEPTH) return own;
    for (const key of ['child', 'children']) {
      const value = node[key];
      for (const c of Array.isArray(value) ? value : [value]) {
        if (!isObject(c)) continue;
        const found = this.firstLocation(c, depth + 1);
        if (found !== undefined) return found;
      }
    }
    return undefined;
  }

  private tableFunction(node: Json, scope: ReadonlySet<string>, depth: number): void {
    const fn = isObject(node.function) ? node.function : {};
    const name = (nonEmpty(fn.function_name) ?? '').toLowerCase();
    const namedArgs: string[] = [];
    const args: FunctionArg[] = [];
    const children = Array.isArray(fn.children) ? (fn.children as unknown[]) : [];
    for (const child of children) {
      if (!isObject(child)) {
        args.push({ value: { kind: 'expression' } });
        continue;
      }
      let argName: string | undefined;
      let valueNode: Json = child;
      const alias = nonEmpty(child.alias);
      if (alias) argName = alias.toLowerCase();
      else if (child.type === 'COMPARE_EQUAL' && isObject(child.left) && child.left.class === 'COLUMN_REF' && Array.isArray(child.left.column_names) && child.left.column_names.length === 1) {
        argName = String(child.left.column_names[0]).toLowerCase();
        valueNode = isObject(child.right) ? child.right : {};
      }
      if (argName !== undefined) namedArgs.push(argName);
      const arg: FunctionArg = { value: argValue(valueNode, 0) };
      if (argName !== undefined) arg.name = argName;
      const at = this.firstLocation(valueNode, 0);
      if (at !== undefined) arg.position = at;
      if (arg.value.kind === 'list' && Array.isArray(valueNode.children)) {
        arg.itemPositions = (valueNode.children as unknown[]).map((c) => (isObject(c) ? this.firstLocation(c, 0) : undefined));
      }
      args.push(arg);
    }
    const ref: FunctionRef = { name, namedArgs, args };
    const position = this.at(node.query_location ?? fn.query_location);
    if (position !== undefined) ref.position = position;
    this.tableFunctions.push(ref);
    // The arguments (and anything else on the node) may hold subqueries and function calls of their own.
    for (const [key, child] of Object.entries(node)) {
      if (key === 'function') continue;
      if (typeof child === 'object' && child !== null) this.walk(child, scope, depth + 1);
    }
    for (const child of Object.values(fn)) {
      if (typeof child === 'object' && child !== null) this.walk(child, scope, depth + 1);
    }
  }
}

const INTEGER_TYPES = new Set(['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'HUGEINT', 'UHUGEINT']);
const MAX_ARG_DEPTH = 32;

/** A table function argument's value, as far as it is a literal (see ArgValue). */
function argValue(node: Json, depth: number): ArgValue {
  const expression: ArgValue = { kind: 'expression' };
  if (depth > MAX_ARG_DEPTH) return expression;
  const children = Array.isArray(node.children) ? (node.children as unknown[]) : [];
  switch (node.class) {
    case 'CONSTANT': {
      const v = node.value;
      if (!isObject(v)) return expression;
      if (v.is_null === true) return { kind: 'null' };
      const type = String(v.type?.id ?? '');
      if (type === 'VARCHAR' && typeof v.value === 'string') return { kind: 'string', value: v.value };
      if (type === 'BOOLEAN' && typeof v.value === 'boolean') return { kind: 'boolean', value: v.value };
      if (INTEGER_TYPES.has(type) && typeof v.value === 'number' && Number.isSafeInteger(v.value)) return { kind: 'number', value: v.value };
      return expression;
    }
    case 'CAST': {
      // `header = true` arrives as CAST('t' AS BOOLEAN).
      const inner = isObject(node.child) ? argValue(node.child, depth + 1) : expression;
      if (String(node.cast_type?.id ?? '') === 'BOOLEAN' && node.try_cast !== true) {
        if (inner.kind === 'boolean') return inner;
        if (inner.kind === 'string' && /^(t|true)$/i.test(inner.value)) return { kind: 'boolean', value: true };
        if (inner.kind === 'string' && /^(f|false)$/i.test(inner.value)) return { kind: 'boolean', value: false };
      }
      return expression;
    }
    case 'FUNCTION': {
      const fn = String(node.function_name ?? '').toLowerCase();
      if (node.is_operator === true) {
        if (fn === '-' && children.length === 1 && isObject(children[0])) {
          const inner = argValue(children[0], depth + 1);
          if (inner.kind === 'number') return { kind: 'number', value: -inner.value };
        }
        return expression;
      }
      if (nonEmpty(node.catalog) || (nonEmpty(node.schema) && node.schema !== 'main')) return expression;
      if (fn === 'list_value') return { kind: 'list', items: children.map((c) => (isObject(c) ? argValue(c, depth + 1) : expression)) };
      if (fn === 'struct_pack') {
        const fields: { name: string; value: ArgValue }[] = [];
        for (const c of children) {
          if (!isObject(c) || !nonEmpty(c.alias)) return expression;
          fields.push({ name: c.alias as string, value: argValue(c, depth + 1) });
        }
        return { kind: 'struct', fields };
      }
      return expression;
    }
    case 'PARAMETER':
      return typeof node.identifier === 'string' ? { kind: 'parameter', name: node.identifier } : expression;
  }
  return expression;
}

/** `AT (VERSION => 'tag' | 42)` or `AT (TIMESTAMP => '…')`, literals only. */
function timeTravel(clause: Json, table: string, position: number | undefined): TimeTravel {
  const unit = String(clause.unit ?? '').toUpperCase();
  let expr: Json = isObject(clause.expr) ? clause.expr : {};
  const fail = (why: string) => new Refused('INVALID_TIME_TRAVEL', `AT (…) on ${table}: ${why}`, position);
  if (unit === 'VERSION') {
    if (expr.class !== 'CONSTANT' || !isObject(expr.value)) throw fail("the version must be a literal tag ('v1') or snapshot id (42).");
    const type = String(expr.value.type?.id ?? '');
    const v = expr.value.value;
    if (type === 'VARCHAR' && typeof v === 'string') return { kind: 'tag', name: v };
    if (['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'HUGEINT', 'UHUGEINT'].includes(type)) {
      if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return { kind: 'id', snapshotId: v };
      throw fail('a snapshot id is a whole number from 0 to 9007199254740991.');
    }
    throw fail("the version must be a literal tag ('v1') or snapshot id (42).");
  }
  if (unit === 'TIMESTAMP') {
    if (expr.class === 'CAST' && isObject(expr.child)) expr = expr.child;
    if (expr.class === 'CONSTANT' && isObject(expr.value) && typeof expr.value.value === 'string') return { kind: 'timestamp', value: expr.value.value };
    throw fail("the timestamp must be a literal ('2024-05-01 12:00:00').");
  }
  throw fail(`${unit || 'this'} is not supported; use VERSION or TIMESTAMP.`);
}
