import crypto from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { isDiskFullError } from '../files.ts';
import { splitIntoChunks, type Chunk } from './chunker.ts';
import { countFileNewlines, csvDialect, csvRecordLine, csvRecordLines, jsonlRecordLine, jsonlRecordLines } from './csv-lines.ts';
import { decodingBody, notUtf8InFile, notUtf8Message, type TextEncoding } from './encoding.ts';
import { INPUT_LIMITS, jsonFileTooDeep } from './input-limits.ts';
import { IPV4_REGEX, decimalParts, isNestedType, normalizeType, physicalType } from './types.ts';
import { duckdbMemoryBytes } from './memory.ts';
import { datasetRelation } from './relation.ts';
import { quoteIdent, quoteString } from './sql.ts';

export type FileFormat = 'csv' | 'jsonl' | 'parquet';

/** How to read a text file; options a user may set, validated before they reach SQL. */
export interface ReadOptions {
  delimiter?: string;
  header?: boolean;
  quote?: string;
  escape?: string;
  null_string?: string;
  /** strptime formats for DATE / TIMESTAMP columns (CSV); sniffed when not given. */
  date_format?: string;
  timestamp_format?: string;
  /** How the text is encoded (CSV, JSONL); anything but UTF-8 is converted before DuckDB reads it. */
  encoding?: TextEncoding;
}

/**
 * The CSV dialect a sample was read with: DuckDB's sniffer's findings with the options a client gave
 * put over them. Writes read with exactly this dialect (no write sniffs again).
 */
export interface CsvDialectInfo {
  delimiter: string;
  quote: string;
  escape: string;
  header: boolean;
  /** The record separator the sample has ("\n", "\r\n" or "\r"); informational. */
  newline: string;
  date_format: string | null;
  timestamp_format: string | null;
  /** The file's text encoding (converted to UTF-8 while it streams). */
  encoding: TextEncoding;
}

/** The read options of a dialect (a contract's `null_string` is kept from `base`). */
export function dialectOptions(dialect: CsvDialectInfo, base: ReadOptions = {}): ReadOptions {
  return {
    ...base,
    delimiter: dialect.delimiter,
    quote: dialect.quote,
    escape: dialect.escape,
    header: dialect.header,
    date_format: dialect.date_format ?? undefined,
    timestamp_format: dialect.timestamp_format ?? undefined,
    encoding: dialect.encoding,
  };
}

export interface SourceColumn {
  name: string;
  /** Normalised Lakeport type; undefined when unsupported (nested). */
  type: string | undefined;
  /** The type as the file has it (for OData's SourceType). */
  sourceType: string;
}

export interface SampleSchema {
  columns: SourceColumn[];
  /** One real sampled value per column (first non-null), as JSON-safe values. */
  values: Record<string, unknown>;
  /** CSV: the dialect the sample was read with (to be used by every write). */
  csv?: CsvDialectInfo;
}

/** What a column becomes in the written Parquet file. */
export interface TargetColumn {
  name: string;
  type: string;
  nullable: boolean;
  /** The file's column feeding it; undefined fills NULL. */
  source?: string;
}

export interface ConvertedFile {
  rows: number;
  /** The data records read (rows plus any left out by an on_error policy). */
  records: number;
  bytes: number;
  stats: Record<string, { min: string | null; max: string | null; null_count: number }>;
  /** The file's columns in the file's own order (a CSV header may order them differently from the sample). */
  fileColumns: SourceColumn[];
}

/** One Parquet file of a converted upload: `path` is the local file. */
export interface ConvertedPart extends ConvertedFile {
  path: string;
}

/**
 * The rows of a row group in the Parquet files Lakeport writes. DuckDB reads a file a row group per
 * thread, and an ordered read (OData's pages) hands out a group's rows only once the group is done:
 * groups of a quarter of DuckDB's default put the first rows out about 4× sooner, at no measurable
 * cost to scans or aggregates (bench figures in docs/odata.md).
 */
export const ROW_GROUP_ROWS = 30_720;

/** Chunks of this size (at least) are converted while the rest of an upload arrives. */
export const DEFAULT_CHUNK_BYTES = 64 * 1024 * 1024;

/**
 * A value that cannot be stored as its column's promised type. `row` is the 1-based physical line
 * (text formats; the record for Parquet); `record` the 1-based data record (header excluded).
 */
export class ValueNotStorableError extends Error {
  record: number | null = null;

  constructor(
    readonly column: string,
    public row: number | null,
    readonly value: string | null,
    readonly type: string,
    detail: string,
  ) {
    super(detail);
  }
}

/** What a write does with a value its column cannot store: refuse the file, store NULL, or leave the record out. */
export type OnError = 'fail' | 'null' | 'skip';

/** A value an on_error policy did not store (`record`, `line`: 1-based, in the whole upload; `line` null for Parquet). */
export interface RejectedValue {
  record: number;
  line: number | null;
  column: string;
  value: string | null;
  reason: string;
  action: 'nulled' | 'skipped';
}

/** The values a tolerant conversion did not store: exact counts, and the first `maxRejects` values. */
export interface Rejections {
  /** Records left out. */
  rows: number;
  /** Values stored as NULL (in records that were kept). */
  values: number;
  /** In file order, at most the `maxRejects` first. */
  list: RejectedValue[];
}

/** Rejected values kept per write (the counts stay exact). */
export const DEFAULT_MAX_REJECTS = 100_000;

/**
 * The file does not have the shape its sample had (columns, encoding). `line` is the 1-based line
 * the problem was found on, when known; the message names it as "line N".
 */
export class FileShapeError extends Error {
  constructor(
    message: string,
    public line?: number,
  ) {
    super(message);
  }

  /** Moves the line the message names (for a piece of a file: its line in the whole file). */
  relocate(line: number): void {
    if (this.line === undefined) return;
    this.message = this.message.replace(`line ${this.line}`, `line ${line}`);
    this.line = line;
  }
}

function csvOptions(options: ReadOptions): { sql: string; params: Record<string, unknown> } {
  const parts: string[] = ['allow_quoted_nulls=false'];
  const params: Record<string, unknown> = {};
  if (options.delimiter !== undefined) {
    parts.push('delim=$delim');
    params.delim = options.delimiter;
  }
  if (options.quote !== undefined) {
    parts.push('quote=$quote');
    params.quote = options.quote;
  }
  if (options.escape !== undefined) {
    parts.push('escape=$escape');
    params.escape = options.escape;
  }
  if (options.null_string !== undefined) {
    parts.push('nullstr=$nullstr');
    params.nullstr = options.null_string;
  }
  if (options.date_format !== undefined) {
    parts.push('dateformat=$dateformat');
    params.dateformat = options.date_format;
  }
  if (options.timestamp_format !== undefined) {
    parts.push('timestampformat=$timestampformat');
    params.timestampformat = options.timestamp_format;
  }
  parts.push(`header=${options.header === false ? 'false' : 'true'}`);
  return { sql: parts.join(', '), params };
}

function reader(format: FileFormat, options: ReadOptions, columns?: Record<string, string>, wholeSample = false): { sql: string; params: Record<string, unknown> } {
  let typed = columns ? `, columns={${Object.entries(columns).map(([n, t]) => `${quoteString(n)}: ${quoteString(t)}`).join(', ')}}` : '';
  // Types from every record read, not DuckDB's first 20 480 rows (a sample holds records from across its file).
  if (wholeSample && format !== 'parquet') typed += ', sample_size=-1';
  if (format === 'csv') {
    const o = csvOptions(options);
    return { sql: `read_csv($path, ${o.sql}${columns ? ', auto_detect=false' : ''}${typed})`, params: o.params };
  }
  if (format === 'jsonl') return { sql: `read_json($path, format='newline_delimited'${typed})`, params: {} };
  return { sql: 'read_parquet($path)', params: {} };
}

/**
 * A FileShapeError from DuckDB's message: its first line without the internal file path, with the
 * record DuckDB names as "line N" (translated to a line of the file by the caller), and DuckDB's own
 * explanation (e.g. "Expected Number of Columns: 3 Found: 2") when it gives one.
 */
function shapeError(message: string, record: number | undefined): FileShapeError {
  const lines = message.split('\n');
  let first = lines[0].replace(/ in file "[^"]*"/, '').replace(/,? ?CSV Error on Line: \d+/, '').replace(/,? in line \d+/, '');
  const reason = lines.slice(1).find((l) => /^(Expected Number of Columns|Value with unterminated quote|Invalid unicode|Maximum line size)/i.test(l.trim()));
  if (reason) first = `${first.replace(/:?\s*$/, '')}: ${reason.trim()}`;
  const where = record === undefined ? '' : ` (line ${record})`;
  return new FileShapeError(`The file does not have the shape of its sample${where}: ${first}`, record);
}

/** Fixed-point text, as a CSV column must hold it in every sampled value to be inferred as DECIMAL. */
const FIXED_POINT_REGEX = '-?[0-9]+(\\.[0-9]+)?';
/** Plain fixed-point text (no exponent), whose excess decimals a rejects file can name. */
const TRY_DECIMAL_TEXT = /^-?[0-9]+\.[0-9]+$/;

/** The most decimals inferred as DECIMAL; a column with more stays DOUBLE. */
const MAX_INFERRED_SCALE = 9;

/**
 * SQL that is true when the text `v` has a nonzero digit past the scale of DECIMAL `type`, which a
 * cast would round away. Plain numbers are judged by their digits (so `12.500` fits two decimals);
 * one with an exponent by its value as a double against the rounded decimal's. The first test is
 * cheap and passes every value that could (no text with at most min(s, 2) characters after its point,
 * or in all without one, has more decimals, exponent or not), so the regexp runs on few values.
 */
function excessDecimals(v: string, type: string): string {
  const scale = decimalParts(type)![1];
  const exponent = `contains(${v}, 'e') OR contains(${v}, 'E')`;
  return `(length(${v}) - strpos(${v}, '.') > ${Math.min(scale, 2)} AND regexp_matches(${v}, ${quoteString(`\\.[0-9]{${scale}}[0-9]*[1-9]|[eE]`)}) AND (CASE WHEN ${exponent} THEN TRY_CAST(${v} AS DOUBLE) <> TRY_CAST(${v} AS ${type})::DOUBLE ELSE true END))`;
}

/** Whether a column of `from` (a sampled file's type) may hold values with more decimals than `to` keeps. */
function mayExceedScale(from: string | undefined, to: string): boolean {
  if (from !== undefined && /^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?)$/.test(from)) return false;
  const source = from === undefined ? undefined : decimalParts(from);
  return source === undefined || source[1] > decimalParts(to)![1];
}

function jsonSafe(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string') return value;
  return String(value);
}

/**
 * Lakeport's own use of DuckDB for ingestion: reading samples and converting uploaded files to
 * Parquet. Only Lakeport's SQL runs here, on paths Lakeport chose; user values are bound.
 */
/** DuckDB's JSON reader recurses on nesting: a line nested past the limit is refused before DuckDB reads the file. */
async function refuseDeepJson(file: string, format: FileFormat): Promise<void> {
  if (format !== 'jsonl') return;
  const deep = await jsonFileTooDeep(createReadStream(file));
  if (deep) throw new FileShapeError(`line ${deep.line} nests more than ${INPUT_LIMITS.nestingDepth} levels of arrays or objects`, deep.line);
}

export class Ingestor {
  private constructor(
    private readonly instance: DuckDBInstance,
    /**
     * One thread: each chunk of an upload but its last converts on it, one chunk per thread of
     * `instance` at a time (see convertStream); and result pages are read on it (small reads cost
     * about half the CPU without a second thread to wake).
     */
    private readonly single: DuckDBInstance,
    private readonly threads: number,
  ) {}

  static async create(options: { threads?: number; memoryLimit?: string; tempDirectory?: string } = {}): Promise<Ingestor> {
    const threads = Math.max(1, options.threads ?? 2);
    const config: Record<string, string> = {
      threads: String(threads),
      memory_limit: options.memoryLimit ?? '1GB',
      preserve_insertion_order: 'true',
    };
    if (options.tempDirectory) config.temp_directory = options.tempDirectory;
    // Two engines never share a temp directory: their spill files would have the same names.
    const singleConfig = { ...config, threads: '1', ...(options.tempDirectory ? { temp_directory: `${options.tempDirectory}-chunks` } : {}) };
    const [instance, single] = await Promise.all([DuckDBInstance.create(':memory:', config), DuckDBInstance.create(':memory:', singleConfig)]);
    return new Ingestor(instance, single, threads);
  }

  /** The DuckDB memory both engines have in use, in bytes (GET /metrics). */
  async memoryBytes(): Promise<number> {
    const [main, single] = await Promise.all([duckdbMemoryBytes(() => this.instance.connect()), duckdbMemoryBytes(() => this.single.connect())]);
    return main + single;
  }

  private async withConnection<T>(fn: (c: DuckDBConnection) => Promise<T>, instance: DuckDBInstance = this.instance): Promise<T> {
    const connection = await instance.connect();
    try {
      return await fn(connection);
    } finally {
      connection.closeSync();
    }
  }

  /** The columns and a value per column of a sample (a text prefix, or a Parquet footer with `PAR1` put before it). */
  async inspect(path: string, format: FileFormat, given: ReadOptions): Promise<SampleSchema> {
    await refuseDeepJson(path, format);
    return this.withConnection(async (c) => {
      const csv = format === 'csv' ? await this.sniff(c, path, given) : undefined;
      const options = csv ? dialectOptions(csv, given) : given;
      const source = reader(format, options, undefined, true);
      const params = { path, ...source.params };
      const described = (await c.runAndReadAll(`DESCRIBE SELECT * FROM ${source.sql}`, params)).getRowObjectsJson() as { column_name: string; column_type: string }[];
      const columns: SourceColumn[] = described.map((d) => ({
        name: d.column_name,
        sourceType: d.column_type,
        type: isNestedType(d.column_type) ? undefined : normalizeType(d.column_type),
      }));
      const values: Record<string, unknown> = {};
      if (format === 'parquet') {
        // A footer holds no rows, but its statistics hold real values.
        const stats = (await c.runAndReadAll('SELECT path_in_schema AS name, min(stats_min_value) AS v FROM parquet_metadata($path) GROUP BY 1', { path })).getRowObjectsJson() as { name: string; v: string | null }[];
        for (const column of columns) values[column.name] = stats.find((s) => s.name === column.name)?.v ?? null;
      } else if (columns.length > 0) {
        const picks = columns.map((col) => `any_value(${quoteIdent(col.name)}::VARCHAR)`).join(', ');
        const row = (await c.runAndReadAll(`SELECT ${picks} FROM ${source.sql}`, params)).getRows()[0] ?? [];
        columns.forEach((col, i) => (values[col.name] = jsonSafe(row[i])));
      }
      // A text column whose sampled values are all dotted quads is an IPv4 column.
      if (format !== 'parquet') {
        for (const col of columns.filter((x) => x.type === 'VARCHAR')) {
          const check = (await c.runAndReadAll(
            `SELECT count(v) AS n, count(v) FILTER (WHERE regexp_full_match(v, $re)) AS ip FROM (SELECT ${quoteIdent(col.name)}::VARCHAR AS v FROM ${source.sql})`,
            { ...params, re: IPV4_REGEX },
          )).getRowObjectsJson()[0] as { n: string; ip: string };
          if (Number(check.n) > 0 && check.n === check.ip) col.type = 'IPV4';
        }
      }
      if (format === 'csv') await this.inferDecimals(c, path, options, columns, values);
      return { columns, values, ...(csv ? { csv } : {}) };
    });
  }

  /**
   * Money and other fixed-point text: a CSV column DuckDB sniffs as DOUBLE (or FLOAT) whose every
   * sampled value is plain fixed-point (`-?digits(.digits)?`) with the same number of decimals s
   * (1 ≤ s ≤ MAX_INFERRED_SCALE; whole numbers among them allowed, at least one with decimals) is
   * DECIMAL(18,s), or DECIMAL(38,s) when its whole part is too long for 18 digits — so sums are exact.
   * The column's sourceType stays what DuckDB sniffed. One query over the sample for all candidates.
   */
  private async inferDecimals(c: DuckDBConnection, path: string, options: ReadOptions, columns: SourceColumn[], values: Record<string, unknown>): Promise<void> {
    const candidates = columns.filter((col) => col.type === 'DOUBLE' || col.type === 'FLOAT');
    if (candidates.length === 0) return;
    const source = reader('csv', options, Object.fromEntries(columns.map((col) => [col.name, 'VARCHAR'])));
    const select = candidates.flatMap((col, i) => {
      const v = quoteIdent(col.name);
      return [
        `count(${v}) AS n${i}`,
        `count(${v}) FILTER (WHERE regexp_full_match(${v}, $fixed)) AS fixed${i}`,
        `min(length(split_part(${v}, '.', 2))) FILTER (WHERE contains(${v}, '.')) AS low${i}`,
        `max(length(split_part(${v}, '.', 2))) AS high${i}`,
        `max(length(ltrim(split_part(ltrim(${v}, '-'), '.', 1), '0'))) AS whole${i}`,
        `first(${v}) FILTER (WHERE ${v} IS NOT NULL) AS v${i}`,
      ];
    });
    const row = (await c.runAndReadAll(`SELECT ${select.join(', ')} FROM ${source.sql}`, { path, ...source.params, fixed: FIXED_POINT_REGEX })).getRowObjectsJson()[0] as Record<string, string | number | null>;
    candidates.forEach((col, i) => {
      const scale = Number(row[`high${i}`]);
      const whole = Number(row[`whole${i}`]);
      const fixed = Number(row[`n${i}`]) > 0 && row[`n${i}`] === row[`fixed${i}`] && row[`low${i}`] !== null && Number(row[`low${i}`]) === scale;
      if (!fixed || scale < 1 || scale > MAX_INFERRED_SCALE) return;
      const precision = [18, 38].find((p) => whole <= p - scale);
      if (precision === undefined) return;
      col.type = `DECIMAL(${precision},${scale})`;
      values[col.name] = row[`v${i}`];
    });
  }

  /**
   * A CSV sample's dialect: DuckDB's sniffer, with what the client gave winning. A quote or escape
   * the sample does not show stays DuckDB's default (`"`, and the escape the quote), since the rest
   * of the file may have them.
   */
  private async sniff(c: DuckDBConnection, path: string, given: ReadOptions): Promise<CsvDialectInfo> {
    const parts: string[] = [];
    const params: Record<string, string> = { path };
    for (const [key, option] of [['delimiter', 'delim'], ['quote', 'quote'], ['escape', 'escape'], ['null_string', 'nullstr'], ['date_format', 'dateformat'], ['timestamp_format', 'timestampformat']] as const) {
      if (given[key] === undefined) continue;
      parts.push(`${option}=$${option}`);
      params[option] = given[key]!;
    }
    if (given.header !== undefined) parts.push(`header=${given.header ? 'true' : 'false'}`);
    const sql = `SELECT Delimiter AS d, Quote AS q, Escape AS e, NewLineDelimiter AS nl, HasHeader AS h, DateFormat AS df, TimestampFormat AS tf FROM sniff_csv($path${parts.map((p) => `, ${p}`).join('')})`;
    const found = (await c.runAndReadAll(sql, params)).getRowObjectsJson()[0] as { d: string; q: string; e: string; nl: string | null; h: boolean; df: string | null; tf: string | null };
    const char = (v: string | null | undefined) => (v === null || v === undefined || v === '(empty)' || v === '' ? undefined : v);
    const quote = given.quote ?? char(found.q) ?? '"';
    const newline = { '\\r\\n': '\r\n', '\\r': '\r' }[found.nl ?? ''] ?? '\n';
    return {
      delimiter: given.delimiter ?? char(found.d) ?? ',',
      quote,
      escape: given.escape ?? char(found.e) ?? quote,
      header: given.header ?? found.h !== false,
      newline,
      date_format: given.date_format ?? char(found.df) ?? null,
      timestamp_format: given.timestamp_format ?? char(found.tf) ?? null,
      encoding: given.encoding ?? 'utf-8',
    };
  }

  /**
   * Converts one uploaded file to Parquet with the target columns' types. A value that does not fit
   * its type throws ValueNotStorableError naming the column, the row (the 1-based line for CSV) and
   * the value; nothing is left at `destination` then.
   */
  async convert(input: {
    path: string;
    format: FileFormat;
    options: ReadOptions;
    /** The file's columns as negotiated, in file order. */
    fileColumns: SourceColumn[];
    /**
     * The columns are known to be in `fileColumns`' order (a later piece of a file whose header was
     * already checked): the CSV header is not looked at again.
     */
    columnsChecked?: boolean;
    target: TargetColumn[];
    destination: string;
  }): Promise<ConvertedFile> {
    return this.convertOn(this.instance, input);
  }

  private async convertOn(instance: DuckDBInstance, input: Parameters<Ingestor['convert']>[0]): Promise<ConvertedFile> {
    await refuseDeepJson(input.path, input.format);
    return this.withConnection(async (c) => {
      const loaded = new Map(input.target.filter((t) => t.source).map((t) => [t.source!, t]));
      const fileColumns = input.format === 'csv' && !input.columnsChecked ? await this.csvHeader(c, input) : input.fileColumns;
      // Text formats parse straight into the target types, so DuckDB reports the failing line itself.
      // (DECIMAL columns parse as text: DuckDB would round a value with more decimals without a word.)
      const parseAs = input.format === 'parquet' ? undefined : Object.fromEntries(fileColumns.map((col) => [col.name, decimalParts(loaded.get(col.name)?.type ?? '') ? 'VARCHAR' : physicalType(loaded.get(col.name)?.type ?? 'VARCHAR')]));
      const source = reader(input.format, input.options, parseAs);
      const params = { path: input.path, ...source.params };
      const select = input.target
        .map((t) => {
          const physical = physicalType(t.type);
          if (!t.source) return `NULL::${physical} AS ${quoteIdent(t.name)}`;
          let expr = input.format === 'parquet' ? `CAST(${quoteIdent(t.source)} AS ${physical})` : quoteIdent(t.source);
          if (t.type === 'IPV4') expr = `CASE WHEN ${expr} IS NULL OR regexp_full_match(${expr}, ${quoteString(IPV4_REGEX)}) THEN ${expr} ELSE error('lakeport:not-ipv4') END`;
          if (decimalParts(t.type) && (input.format !== 'parquet' || mayExceedScale(fileColumns.find((f) => f.name === t.source)?.type, t.type))) {
            const text = `${quoteIdent(t.source)}::VARCHAR`;
            expr = `CASE WHEN ${excessDecimals(text, t.type)} THEN error('lakeport:excess-decimals') ELSE CAST(${quoteIdent(t.source)} AS ${physical}) END`;
          }
          if (!t.nullable) expr = `CASE WHEN ${expr} IS NULL THEN error('lakeport:null') ELSE ${expr} END`;
          return `${expr} AS ${quoteIdent(t.name)}`;
        })
        .join(', ');
      try {
        const result = await c.runAndReadAll(
          `COPY (SELECT ${select} FROM ${source.sql}) TO ${quoteString(input.destination)} (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE ${ROW_GROUP_ROWS})`,
          params,
        );
        const rows = Number((result.getRowObjectsJson()[0] as { Count: string }).Count);
        return { rows, records: rows, ...(await this.statistics(c, input.destination, input.target)), fileColumns };
      } catch (error) {
        await fs.rm(input.destination, { force: true });
        // The server's disk, not the file: no explanation of the file's shape applies.
        if (isDiskFullError(error)) throw error;
        const explained = await this.explain(c, error as Error, { ...input, fileColumns }).catch(
          (e: unknown) => new FileShapeError(`The file could not be read as ${input.format}: ${(e as Error).message.split('\n')[0]}`),
        );
        // DuckDB counts records; a person opens the file at a line.
        const line = (record: number) => (input.format === 'csv' ? csvRecordLine(input.path, record, input.options) : jsonlRecordLine(input.path, record));
        if (explained instanceof ValueNotStorableError && explained.row !== null) {
          explained.record = explained.row - (input.format === 'csv' && input.options.header !== false ? 1 : 0);
          if (input.format !== 'parquet') explained.row = await line(explained.row);
        }
        // (DuckDB's JSON reader names the physical line of malformed JSON already.)
        if (explained instanceof FileShapeError && input.format === 'csv' && explained.line !== undefined) {
          explained.relocate(await line(explained.line));
        }
        throw explained;
      }
    }, instance);
  }

  /**
   * Converts an upload while it arrives: the body is cut into record-aligned chunks of about
   * `chunkBytes` (CSV by DuckDB's own quoting rules, JSONL at newlines; Parquet is one piece), and
   * each chunk is converted to its own Parquet part while the rest still streams in — so one upload
   * may give several parts, in the upload's order, whose rows concatenated are the upload's rows in
   * order. Conversion is all or nothing: the first chunk (in upload order) with a value that does not
   * fit fails the whole upload with ValueNotStorableError naming the line in the whole upload; the
   * rest of the body is then read and discarded, and no part is left behind. On success the caller
   * owns the parts' files.
   */
  async convertStream(input: {
    body: AsyncIterable<Buffer | Uint8Array | string>;
    format: FileFormat;
    options: ReadOptions;
    fileColumns: SourceColumn[];
    target: TargetColumn[];
    /** A local directory for the chunks in flight. */
    scratchDir: string;
    /** A fresh local path for a part (e.g. BlobStore.tempPath). */
    partPath: () => Promise<string>;
    chunkBytes?: number;
    /** Chunks converted at once (default: the engine's threads). */
    concurrency?: number;
    maxBytes: number;
    tooLarge: () => Error;
    /** A value that cannot be stored: fail the upload (default), store NULL, or leave its record out. */
    onError?: OnError;
    /** Rejected values listed (default DEFAULT_MAX_REJECTS); the counts are exact regardless. */
    maxRejects?: number;
  }): Promise<{ sourceBytes: number; parts: ConvertedPart[]; rejections: Rejections }> {
    const dir = path.join(input.scratchDir, `upload-${crypto.randomUUID()}`);
    await fs.mkdir(dir, { recursive: true });
    const concurrency = Math.max(1, input.concurrency ?? this.threads);
    const chunkBytes = input.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    const chunks: Chunk[] = [];
    const parts: ConvertedPart[] = [];
    const errors = new Map<number, unknown>();
    /** The first chunk known to fail; later chunks are not converted. */
    let failedAt = Infinity;
    let checked: SourceColumn[] | undefined;
    const waiting: Chunk[] = [];
    const running = new Set<Promise<void>>();
    const tolerant = input.onError === 'null' || input.onError === 'skip' ? input.onError : undefined;
    const maxRejects = input.maxRejects ?? DEFAULT_MAX_REJECTS;
    const rejected = new RejectsByChunk(maxRejects);

    const convertChunk = async (chunk: Chunk) => {
      let destination: string | undefined;
      try {
        destination = await input.partPath();
        // One thread per chunk converts more per CPU second than several threads on one (no parallel
        // CSV scan, no reordering of row groups), and chunks keep every core busy; the last chunk —
        // the whole file, when it is small — has no other chunk beside it, so it gets all threads.
        const engine = chunk.last ? this.instance : this.single;
        const convertInput = {
          path: chunk.path,
          format: input.format,
          options: input.options,
          fileColumns: checked ?? input.fileColumns,
          columnsChecked: checked !== undefined,
          target: input.target,
          destination,
        };
        let converted: ConvertedFile;
        // Under null/skip a chunk takes the fast path too; only a chunk with a value it refuses is
        // converted again, the tolerant way (a clean upload costs what it costs under fail).
        const fast = await this.convertOn(engine, convertInput).catch((error: unknown) => {
          if (tolerant && error instanceof ValueNotStorableError) return undefined;
          throw error;
        });
        if (fast) converted = fast;
        else {
          const result = await this.convertTolerantOn(engine, { ...convertInput, onError: tolerant!, maxRejects });
          rejected.add(chunk.index, result.rowsRejected, result.valuesNulled, result.rejects);
          converted = result;
        }
        checked ??= converted.fileColumns;
        parts[chunk.index] = { path: destination, ...converted };
      } catch (error) {
        if (destination) await fs.rm(destination, { force: true });
        errors.set(chunk.index, await this.notUtf8(chunk.path, input, error));
        failedAt = Math.min(failedAt, chunk.index);
      }
    };
    // Chunks convert in order, `concurrency` at a time (as many as `instance` has threads).
    const pump = () => {
      while (running.size < concurrency && waiting.length > 0) {
        const chunk = waiting.shift()!;
        if (chunk.index > failedAt) continue;
        const run: Promise<void> = convertChunk(chunk).finally(() => {
          running.delete(run);
          pump();
        });
        running.add(run);
      }
    };
    const settled = async () => {
      while (running.size > 0) await Promise.all(running);
    };

    try {
      // A single-byte encoding becomes UTF-8 here, before the chunks (and DuckDB) see it; the limit
      // holds for the bytes sent (a character becomes at most 3 bytes).
      const encoding = input.format === 'parquet' ? undefined : input.options.encoding;
      const decoding = (encoding ?? 'utf-8') !== 'utf-8';
      let sent = 0;
      const body = decodingBody(input.body, encoding, (n) => {
        sent += n;
        if (sent > input.maxBytes) throw input.tooLarge();
      });
      const utf8Bytes = await splitIntoChunks(body, {
        dir,
        ext: `.${input.format}`,
        records: input.format === 'csv' ? 'csv' : input.format === 'jsonl' ? 'lines' : 'none',
        dialect: input.format === 'csv' ? csvDialect(input.options) : undefined,
        header: input.options.header !== false,
        chunkBytes,
        // A smaller first chunk gets DuckDB going sooner; until then only the receiving thread works.
        firstChunkBytes: Math.max(1, Math.floor(chunkBytes / 4)),
        maxBytes: decoding ? input.maxBytes * 3 : input.maxBytes,
        tooLarge: input.tooLarge,
        keep: () => failedAt === Infinity,
        onChunk: (chunk) => {
          chunks.push(chunk);
          waiting.push(chunk);
          pump();
        },
      });
      await settled();
      if (failedAt !== Infinity) {
        // Every chunk before the first failing one converted: its error is the file's first.
        const error = errors.get(failedAt);
        const recordsBefore = parts.slice(0, failedAt).reduce((n, p) => n + p.records, 0);
        throw await this.relocate(error, chunks[failedAt], chunks, recordsBefore).catch(() => error);
      }
      const rejections = await rejected.placed(chunks, parts, input.format, input.options);
      return { sourceBytes: decoding ? sent : utf8Bytes, parts, rejections };
    } catch (error) {
      waiting.length = 0;
      await settled(); // conversions in flight still read their chunks and write their parts
      await Promise.all(parts.filter(Boolean).map((p) => fs.rm(p.path, { force: true })));
      throw error;
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * A UTF-8 file DuckDB could not read because part of it is not UTF-8: that, in words, with the line
   * in the chunk (DuckDB's own message names no bytes, and may name no line or the wrong one).
   */
  private async notUtf8(file: string, input: { format: FileFormat; options: ReadOptions }, error: unknown): Promise<unknown> {
    if (!(error instanceof FileShapeError) || input.format === 'parquet' || (input.options.encoding ?? 'utf-8') !== 'utf-8') return error;
    const found = await notUtf8InFile(file).catch(() => undefined);
    return found ? new FileShapeError(notUtf8Message(found), found.line) : error;
  }

  /** An error from converting `chunk`, with its line (and record) moved to the line in the whole upload. */
  private async relocate(error: unknown, chunk: Chunk, chunks: Chunk[], recordsBefore = 0): Promise<unknown> {
    if (chunk.index === 0) return error;
    if (error instanceof ValueNotStorableError && error.record !== null) error.record += recordsBefore;
    const lineOf = async (line: number) => {
      let before = 0;
      for (const c of chunks.slice(0, chunk.index)) before += await countFileNewlines(c.path, c.headerBytes);
      return before + line - chunk.headerLines;
    };
    if (error instanceof ValueNotStorableError && error.row !== null) error.row = await lineOf(error.row);
    if (error instanceof FileShapeError && error.line !== undefined) error.relocate(await lineOf(error.line));
    return error;
  }

  /**
   * The file's own header, in its order. Columns are matched to the sample by name, so a file whose
   * columns come in another order still lands right; a file with other columns is refused.
   */
  private async csvHeader(c: DuckDBConnection, input: { path: string; options: ReadOptions; fileColumns: SourceColumn[] }): Promise<SourceColumn[]> {
    if (input.options.header === false) return input.fileColumns;
    const o = csvOptions(input.options);
    let names: string[];
    try {
      const described = await c.runAndReadAll(`DESCRIBE SELECT * FROM read_csv($path, ${o.sql}, all_varchar=true, sample_size=1)`, { path: input.path, ...o.params });
      names = (described.getRowObjectsJson() as { column_name: string }[]).map((r) => r.column_name);
    } catch (error) {
      if (isDiskFullError(error)) throw error;
      throw new FileShapeError(`The file could not be read as csv: ${(error as Error).message.split('\n')[0]}`);
    }
    const sampled = new Map(input.fileColumns.map((col) => [col.name, col]));
    const same = names.length === input.fileColumns.length && names.every((n) => sampled.has(n));
    if (!same) {
      throw new FileShapeError(`its header has columns (${names.join(', ')}) but its sample had (${input.fileColumns.map((col) => col.name).join(', ')})`);
    }
    return names.map((n) => sampled.get(n)!);
  }

  private async statistics(c: DuckDBConnection, file: string, target: TargetColumn[]) {
    const size = (await c.runAndReadAll('SELECT file_size_bytes AS size FROM parquet_file_metadata($path)', { path: file })).getRowObjectsJson()[0] as { size: string } | undefined;
    const rows = (await c.runAndReadAll(
      'SELECT path_in_schema AS name, stats_min_value AS min, stats_max_value AS max, stats_null_count AS nulls FROM parquet_metadata($path)',
      { path: file },
    )).getRowObjectsJson() as { name: string; min: string | null; max: string | null; nulls: string | null }[];
    const stats: ConvertedFile['stats'] = {};
    for (const t of target) {
      const groups = rows.filter((r) => r.name === t.name);
      const pick = (values: (string | null)[], better: (a: string, b: string) => boolean) =>
        values.reduce<string | null>((acc, v) => (v === null ? acc : acc === null || better(v, acc) ? v : acc), null);
      const numeric = /INT|FLOAT|DOUBLE|DECIMAL/.test(t.type);
      const less = (a: string, b: string) => (numeric ? Number(a) < Number(b) : a < b);
      stats[t.name] = {
        min: pick(groups.map((g) => g.min), less),
        max: pick(groups.map((g) => g.max), (a, b) => less(b, a)),
        null_count: groups.reduce((n, g) => n + Number(g.nulls ?? 0), 0),
      };
    }
    return { bytes: Number(size?.size ?? 0), stats };
  }

  /** Per-column min, max and null count of a Parquet file, as an upload's files record them (column_stats). */
  async fileStatistics(file: string, columns: { name: string; type: string }[]): Promise<ConvertedFile['stats']> {
    return this.withConnection(async (c) => (await this.statistics(c, file, columns as TargetColumn[])).stats, this.single);
  }

  /** Turns a DuckDB failure into the column, row and value a person can act on. */
  private async explain(c: DuckDBConnection, error: Error, input: Parameters<Ingestor['convert']>[0]): Promise<Error> {
    const message = error.message ?? String(error);
    const line = /CSV Error on Line: (\d+)/.exec(message) ?? /in line (\d+)/.exec(message);
    const column = /converting column "([^"]+)"/.exec(message)?.[1];
    const value = /Could not convert string "([^"]*)"/.exec(message)?.[1] ?? /value to [a-z]+: "([^"]*)"/.exec(message)?.[1];
    if (/Expected Number of Columns|expected \d+ columns|found \d+ columns|column .* not found|Binder Error|Malformed JSON|Invalid Input Error: (?!JSON transform|lakeport:)/i.test(message) && !column) {
      return shapeError(message, line ? Number(line[1]) : undefined);
    }
    if (column && line) {
      const t = input.target.find((x) => x.source === column);
      return new ValueNotStorableError(t?.name ?? column, Number(line[1]), value ?? null, t?.type ?? 'unknown', `"${value ?? ''}" is not a valid ${t?.type ?? 'value'}`);
    }
    // Otherwise find the first offending row ourselves: the record number, in file order.
    for (const t of input.target.filter((x) => x.source)) {
      const physical = physicalType(t.type);
      const source = reader(input.format, input.options, input.format === 'parquet' ? undefined : Object.fromEntries(input.fileColumns.map((col) => [col.name, 'VARCHAR'])));
      const v = `${quoteIdent(t.source!)}::VARCHAR`;
      const excess = decimalParts(t.type) ? `coalesce(${excessDecimals(v, t.type)}, false)` : 'false';
      const bad = [
        `(${v} IS NOT NULL AND TRY_CAST(${quoteIdent(t.source!)} AS ${physical}) IS NULL)`,
        t.type === 'IPV4' ? `(${v} IS NOT NULL AND NOT regexp_full_match(${v}, ${quoteString(IPV4_REGEX)}))` : 'false',
        t.nullable ? 'false' : `(${quoteIdent(t.source!)} IS NULL)`,
        excess,
      ].join(' OR ');
      const found = (await c.runAndReadAll(
        `SELECT rn, v, excess FROM (SELECT row_number() OVER () AS rn, ${v} AS v, (${bad}) AS bad, ${excess} AS excess FROM ${source.sql}) WHERE bad ORDER BY rn LIMIT 1`,
        { path: input.path, ...source.params },
      )).getRowObjectsJson()[0] as { rn: string; v: string | null; excess: boolean } | undefined;
      if (found) {
        const headerLines = input.format === 'csv' && input.options.header !== false ? 1 : 0;
        const scale = decimalParts(t.type)?.[1];
        const reason =
          found.v === null ? 'a NULL in a NOT NULL column' : found.excess ? `"${found.v}" has more than ${scale} decimal${scale === 1 ? '' : 's'}` : `"${found.v}" is not a valid ${t.type}`;
        return new ValueNotStorableError(t.name, Number(found.rn) + headerLines, found.v, t.type, reason);
      }
    }
    if (line && value !== undefined) return new ValueNotStorableError(column ?? 'unknown', Number(line[1]), value, 'unknown', message.split('\n')[0]);
    return new FileShapeError(`The file could not be read as ${input.format}: ${message.split('\n')[0]}`);
  }

  /**
   * convertOn for an on_error policy of `null` or `skip`: the chunk's columns are read as text and
   * cast with TRY_CAST (the dialect's date/timestamp formats with try_strptime), in one pass into a
   * temporary table; the records kept go to Parquet, and the values that could not be stored (and
   * NULLs in NOT NULL columns) are counted and listed (the first `maxRejects`, with the chunk's
   * record numbers). `null` stores such a value as NULL, but a record whose NOT NULL column would be
   * NULL is left out; `skip` leaves the record out.
   */
  private async convertTolerantOn(
    instance: DuckDBInstance,
    input: Parameters<Ingestor['convert']>[0] & { onError: 'null' | 'skip'; maxRejects: number },
  ): Promise<ConvertedFile & { rowsRejected: number; valuesNulled: number; rejects: RejectedValue[] }> {
    await refuseDeepJson(input.path, input.format);
    return this.withConnection(async (c) => {
      const fileColumns = input.format === 'csv' && !input.columnsChecked ? await this.csvHeader(c, input) : input.fileColumns;
      const source = reader(input.format, input.options, input.format === 'parquet' ? undefined : Object.fromEntries(fileColumns.map((col) => [col.name, 'VARCHAR'])));
      const params = { path: input.path, ...source.params };
      const loaded = input.target.map((t, i) => ({ t, i })).filter(({ t }) => t.source);
      const text = input.format === 'csv'; // (the dialect's formats are CSV's)
      const columns = loaded.map(({ t, i }) => {
        const raw = quoteIdent(t.source!);
        const physical = physicalType(t.type);
        let typed = `TRY_CAST(${raw} AS ${physical})`;
        if (t.type === 'IPV4') typed = `CASE WHEN regexp_full_match(${raw}::VARCHAR, ${quoteString(IPV4_REGEX)}) THEN ${raw}::VARCHAR END`;
        else if (decimalParts(t.type)) typed = `CASE WHEN coalesce(${excessDecimals(`${raw}::VARCHAR`, t.type)}, false) THEN NULL ELSE ${typed} END`;
        else if (text && physical === 'DATE' && input.options.date_format !== undefined) typed = `try_strptime(${raw}, $dateformat)::DATE`;
        else if (text && physical.startsWith('TIMESTAMP') && input.options.timestamp_format !== undefined) typed = `try_strptime(${raw}, $timestampformat)::${physical}`;
        return `${raw}::VARCHAR AS v${i}, ${typed} AS t${i}, (${raw} IS NOT NULL AND ${typed} IS NULL) AS b${i}`;
      });
      // A record is left out when a value fails (skip), or when a NOT NULL column would be NULL (both).
      const skipWhen = [
        ...(input.onError === 'skip' ? loaded.map(({ i }) => `b${i}`) : []),
        ...loaded.filter(({ t }) => !t.nullable).map(({ i }) => `t${i} IS NULL`),
      ];
      const skip = skipWhen.length > 0 ? `(${skipWhen.join(' OR ')})` : 'false';
      try {
        await c.run(`CREATE TEMP TABLE lakeport_chunk AS SELECT row_number() OVER () AS rn, ${columns.length > 0 ? columns.join(', ') : 'NULL AS none'} FROM ${source.sql}`, params);
        const select = input.target.map((t, i) => (t.source ? `t${i} AS ${quoteIdent(t.name)}` : `NULL::${physicalType(t.type)} AS ${quoteIdent(t.name)}`)).join(', ');
        const result = await c.runAndReadAll(
          `COPY (SELECT ${select} FROM lakeport_chunk WHERE NOT ${skip} ORDER BY rn) TO ${quoteString(input.destination)} (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE ${ROW_GROUP_ROWS})`,
        );
        const rows = Number((result.getRowObjectsJson()[0] as { Count: string }).Count);
        const nulled = loaded.length > 0 ? loaded.map(({ i }) => `count(*) FILTER (WHERE b${i} AND NOT ${skip})`).join(' + ') : '0';
        const counts = (await c.runAndReadAll(`SELECT count(*) AS records, count(*) FILTER (WHERE ${skip}) AS skipped, ${nulled} AS nulled FROM lakeport_chunk`)).getRowObjectsJson()[0] as Record<string, string>;
        const rejects: RejectedValue[] = [];
        if (loaded.length > 0 && input.maxRejects > 0) {
          const union = loaded
            .map(({ t, i }) => `SELECT rn, ${i} AS col, v${i} AS v, b${i} AS bad, ${skip} AS skipped FROM lakeport_chunk WHERE b${i}${t.nullable ? '' : ` OR t${i} IS NULL`}`)
            .join(' UNION ALL ');
          const found = (await c.runAndReadAll(`SELECT rn, col, v, bad, skipped FROM (${union}) ORDER BY rn, col LIMIT ${Math.floor(input.maxRejects)}`)).getRowObjectsJson() as { rn: string; col: number; v: string | null; bad: boolean; skipped: boolean }[];
          for (const f of found) {
            const t = input.target[Number(f.col)];
            const scale = decimalParts(t.type)?.[1];
            const excess = scale !== undefined && f.v !== null && TRY_DECIMAL_TEXT.test(f.v) && (f.v.split('.')[1] ?? '').replace(/0+$/, '').length > scale;
            const reason = !f.bad
              ? 'a NULL in a NOT NULL column'
              : t.type === 'IPV4'
                ? `"${f.v}" is not an IPv4 address`
                : excess
                  ? `"${f.v}" has more than ${scale} decimal${scale === 1 ? '' : 's'}`
                  : `"${f.v}" is not a valid ${t.type}`;
            rejects.push({ record: Number(f.rn), line: null, column: t.name, value: f.v, reason, action: f.skipped ? 'skipped' : 'nulled' });
          }
        }
        return {
          rows,
          records: Number(counts.records),
          rowsRejected: Number(counts.skipped),
          valuesNulled: Number(counts.nulled),
          rejects,
          ...(await this.statistics(c, input.destination, input.target)),
          fileColumns,
        };
      } catch (error) {
        await fs.rm(input.destination, { force: true });
        if (error instanceof FileShapeError) throw error;
        // What remains is the file's shape (columns, quoting): as convertOn says it, with its line.
        const message = (error as Error).message ?? String(error);
        const line = /CSV Error on Line: (\d+)/.exec(message) ?? /in line (\d+)/.exec(message);
        const shape = shapeError(message, line ? Number(line[1]) : undefined);
        if (input.format === 'csv' && shape.line !== undefined) shape.relocate(await csvRecordLine(input.path, shape.line, input.options));
        throw shape;
      }
    }, instance);
  }

  /**
   * A page of a result file: rows as JSON-safe arrays (big numbers, decimals and times as strings).
   * `rowCount`, the file's rows when known: a page that reaches the end is read without LIMIT (and
   * one from the start without OFFSET), which DuckDB plans as a plain scan instead of a two-pass
   * "late materialization" (about half the CPU for a small result).
   */
  async readPage(path: string, offset: number, limit: number, rowCount?: number): Promise<{ columns: { name: string; type: string }[]; rows: unknown[][] }> {
    const toEnd = rowCount !== undefined && offset + limit >= rowCount;
    const sql = `SELECT * FROM read_parquet($path)${toEnd ? '' : ' LIMIT $limit'}${offset > 0 ? ' OFFSET $offset' : ''}`;
    return this.withConnection(async (c) => {
      const reader = await c.runAndReadAll(sql, { path, ...(toEnd ? {} : { limit }), ...(offset > 0 ? { offset } : {}) });
      const names = reader.columnNames();
      const types = reader.columnTypes().map((t) => t.toString());
      // Whole numbers that fit a JSON number exactly are numbers; larger ones stay strings.
      const integral = types.map((t) => /^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|UHUGEINT)$/.test(t));
      const rows = (reader.getRowsJson() as unknown[][]).map((row) =>
        row.map((v, i) => (integral[i] && typeof v === 'string' && Number.isSafeInteger(Number(v)) ? Number(v) : v)),
      );
      return { columns: names.map((name, i) => ({ name, type: types[i] })), rows };
    }, this.single);
  }

  /**
   * Compaction: rewrites a dataset's Parquet files into one, with the dataset's columns (a file written
   * under an older definition gets NULL for a column it lacks; every column cast to its current type),
   * keeping the rows in order — the files in the order given, each file's rows in its own order
   * (preserve_insertion_order) — and with the statistics an upload's file gets.
   */
  async rewrite(input: { files: string[]; columns: { name: string; type: string }[]; destination: string }): Promise<{ rows: number; bytes: number; stats: ConvertedFile['stats'] }> {
    return this.withConnection(async (c) => {
      const relation = await datasetRelation(c, { files: input.files, columns: input.columns });
      try {
        const result = await c.runAndReadAll(`COPY (${relation}) TO ${quoteString(input.destination)} (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE ${ROW_GROUP_ROWS})`);
        const rows = Number((result.getRowObjectsJson()[0] as { Count: string }).Count);
        return { rows, ...(await this.statistics(c, input.destination, input.columns.map((col) => ({ ...col, nullable: true })))) };
      } catch (error) {
        await fs.rm(input.destination, { force: true });
        throw error;
      }
    });
  }

  /** Writes a slice of a result file to `destination` as CSV (with header), newline-delimited JSON or Parquet. */
  async exportSlice(path: string, format: 'csv' | 'json' | 'parquet', offset: number, limit: number, destination: string): Promise<void> {
    const options = { csv: 'FORMAT csv, HEADER true', json: 'FORMAT json', parquet: 'FORMAT parquet' }[format];
    await this.withConnection((c) =>
      c.run(`COPY (SELECT * FROM read_parquet($path) LIMIT $limit OFFSET $offset) TO ${quoteString(destination)} (${options})`, { path, limit, offset }),
    );
  }

  close(): void {
    this.single.closeSync();
    this.instance.closeSync();
  }
}

/**
 * The rejected values of a tolerant upload, per chunk while chunks convert (in any order), kept to
 * the first `max` of the whole upload; `placed` numbers them in the whole upload once all are done.
 */
class RejectsByChunk {
  private readonly byChunk = new Map<number, RejectedValue[]>();
  private kept = 0;
  private rows = 0;
  private values = 0;

  constructor(private readonly max: number) {}

  add(index: number, rows: number, values: number, rejects: RejectedValue[]): void {
    this.rows += rows;
    this.values += values;
    if (rejects.length === 0) return;
    this.byChunk.set(index, rejects);
    this.kept += rejects.length;
    // Over the limit: the latest chunks' values go first, so what stays is the upload's first.
    const order = [...this.byChunk.keys()].sort((a, b) => b - a);
    for (const i of order) {
      if (this.kept <= this.max) break;
      const list = this.byChunk.get(i)!;
      const drop = Math.min(list.length, this.kept - this.max);
      list.length -= drop;
      this.kept -= drop;
      if (list.length === 0) this.byChunk.delete(i);
    }
  }

  /** Record and line numbers in the whole upload: the records and lines of the chunks before added. */
  async placed(chunks: Chunk[], parts: ConvertedPart[], format: FileFormat, options: ReadOptions): Promise<Rejections> {
    const list: RejectedValue[] = [];
    const header = format === 'csv' && options.header !== false ? 1 : 0;
    let records = 0;
    let lines = 0;
    for (const chunk of chunks) {
      const own = this.byChunk.get(chunk.index);
      if (own) {
        const local =
          format === 'csv'
            ? await csvRecordLines(chunk.path, own.map((r) => r.record + header), options)
            : format === 'jsonl'
              ? await jsonlRecordLines(chunk.path, own.map((r) => r.record))
              : undefined;
        for (const r of own) {
          const line = local?.get(format === 'csv' ? r.record + header : r.record);
          list.push({ ...r, record: records + r.record, line: line === undefined ? null : lines + line - chunk.headerLines });
        }
      }
      if (list.length === this.kept) break;
      records += parts[chunk.index]?.records ?? 0;
      if (format !== 'parquet') lines += await countFileNewlines(chunk.path, chunk.headerBytes);
    }
    return { rows: this.rows, values: this.values, list };
  }
}
