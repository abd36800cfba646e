import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { LRUCache } from 'lru-cache';
import { duckdbMemoryBytes } from './memory.ts';
import { datasetRelation, type ColumnNameCache, type DatasetFiles } from './relation.ts';
import { quoteIdent, quoteString } from './sql.ts';
import { statIfExists } from '../files.ts';

export type BoundValue = string | number | boolean | bigint | null;

/** A dataset version to read: its files with their row counts, its columns, and the name of its row-number column. */
export interface ReadableDataset {
  files: { path: string; rows: number }[];
  columns: DatasetFiles['columns'];
  rowId: string;
}

/**
 * Values to bind, or none: given a list, even an empty one, DuckDB prepares the statement and binds
 * read_parquet again when it runs it, which costs milliseconds on a file of hundreds of row groups.
 */
function bound(values: readonly BoundValue[]): DuckDBValue[] | undefined {
  return values.length > 0 ? (values as DuckDBValue[]) : undefined;
}

/** One read over one dataset version, on its own connection; close it when done (or interrupt it). */
export class ReadSession {
  private closed = false;
  private readonly firstIds: number[];

  constructor(
    private readonly connection: DuckDBConnection,
    readonly dataset: ReadableDataset,
    private readonly shared: SessionShared,
  ) {
    let next = 0;
    this.firstIds = dataset.files.map((f) => ((next += f.rows), next - f.rows));
  }

  /** A relation over every file, with the dataset's columns and row numbers, to put in a FROM clause. */
  relation(): Promise<string> {
    const { files, columns, rowId } = this.dataset;
    return datasetRelation(this.connection, { files: files.map((f) => f.path), columns, rowId: { column: rowId, firstIds: this.firstIds } }, this.shared.columnNames);
  }

  /**
   * Where row number `rowId` lies: the index of its file and the row within it (the file count
   * when it lies beyond the last row).
   */
  locate(rowId: number): { file: number; row: number } {
    for (let i = 0; i < this.firstIds.length; i++) {
      if (rowId < this.firstIds[i] + this.dataset.files[i].rows) return { file: i, row: Math.max(0, rowId - this.firstIds[i]) };
    }
    return { file: this.firstIds.length, row: 0 };
  }

  /** A relation over one file from a row on, up to a row if given (the scan skips the row groups outside). */
  fileRelation(file: number, fromRow: number, toRow?: number): Promise<string> {
    const { files, columns, rowId } = this.dataset;
    return datasetRelation(this.connection, {
      files: [files[file].path],
      columns,
      rowId: { column: rowId, firstIds: [this.firstIds[file]] },
      fromRowInFile: fromRow,
      toRowInFile: toRow,
    }, this.shared.columnNames);
  }

  /** The number of row `row` of file `file` in the dataset. */
  rowNumber(file: number, row: number): number {
    return this.firstIds[file] + row;
  }

  /**
   * Which of the named FLOAT/DOUBLE columns hold NaN or an infinity anywhere in file `file` (files
   * never change, so each is looked at once).
   */
  async nonFiniteColumns(file: number, columns: { name: string; type: string }[]): Promise<Set<string>> {
    if (columns.length === 0) return new Set();
    const key = `${this.dataset.files[file].path}\n${columns.map((c) => `${c.name}:${c.type}`).join('\n')}`;
    let found = this.shared.nonFinite.get(key);
    if (!found) {
      const checks = columns.map((c) => `coalesce(bool_or(NOT isfinite(${quoteIdent(c.name)})), false)`);
      const [row] = (await this.connection.runAndReadAll(`SELECT ${checks.join(', ')} FROM (${await this.fileRelation(file, 0)})`)).getRows();
      found = new Set(columns.filter((_, i) => row[i] === true).map((c) => c.name));
      this.shared.nonFinite.set(key, found);
    }
    return found;
  }

  /** The first column of the first row. */
  async scalar(sql: string, values: readonly BoundValue[]): Promise<DuckDBValue> {
    const reader = await this.connection.runAndReadAll(sql, bound(values));
    return reader.getRows()[0]?.[0] ?? null;
  }

  /** Streams the rows of a query a DuckDB chunk at a time, so no result is ever held whole. */
  async *rows(sql: string, values: readonly BoundValue[]): AsyncGenerator<DuckDBValue[]> {
    const result = await this.connection.stream(sql, values as DuckDBValue[]);
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) return;
      yield* chunk.getRows();
    }
  }

  /**
   * Starts writing the rows of a query, in order, to a new scratch file with DuckDB's own JSON
   * writer: one object per line (JSON escapes any newline in a value), appended as they are
   * written, so the file can be read while `written` is pending. The caller removes the file.
   */
  jsonLines(sql: string, values: readonly BoundValue[]): { path: string; written: Promise<void> } {
    const file = path.join(this.shared.scratch, `${ROWS_FILE_PREFIX}${crypto.randomUUID()}.json`);
    const written = this.connection.run(`COPY (${sql}) TO ${quoteString(file)} (FORMAT json)`, bound(values)).then(() => undefined);
    return { path: file, written };
  }

  /** Stops a running query (the client went away). */
  interrupt(): void {
    if (!this.closed) this.connection.interrupt();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.connection.closeSync();
  }
}

/** Scratch files of rows start so. */
const ROWS_FILE_PREFIX = 'rows-';

/** Rows files untouched for this long were left by a process that stopped (a reader keeps its files open, so removing one it still reads is harmless). */
const STALE_ROWS_MS = 60 * 60 * 1000;

async function removeStaleRows(scratch: string): Promise<void> {
  for (const name of await fs.readdir(scratch)) {
    if (!name.startsWith(ROWS_FILE_PREFIX)) continue;
    const file = path.join(scratch, name);
    const stat = await statIfExists(file);
    if (stat && Date.now() - stat.mtimeMs > STALE_ROWS_MS) await fs.rm(file, { force: true });
  }
}

/** What every session of a reader shares. */
interface SessionShared {
  columnNames: ColumnNameCache;
  nonFinite: LRUCache<string, Set<string>>;
  /** Where rows are written on their way out. */
  scratch: string;
}

/**
 * Lakeport's own read path for serving datasets (OData): SQL that Lakeport compiled, with user
 * values bound, over snapshot files Lakeport chose. User-written SQL never runs here (see Sandbox).
 */
export class RowReader {
  private readonly shared: SessionShared;

  private constructor(
    private readonly instance: DuckDBInstance,
    scratch: string,
  ) {
    // Data files never change, so what they hold is looked at once.
    this.shared = { columnNames: new LRUCache({ max: 2_000 }), nonFinite: new LRUCache({ max: 2_000 }), scratch };
  }

  /** `tempDirectory` is where DuckDB spills; `scratchDirectory` where rows are written on their way out (default: the OS's). */
  static async create(options: { threads?: number; memoryLimit?: string; tempDirectory?: string; scratchDirectory?: string } = {}): Promise<RowReader> {
    const config: Record<string, string> = {
      threads: String(options.threads ?? 2),
      memory_limit: options.memoryLimit ?? '1GB',
      preserve_insertion_order: 'true',
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
    };
    if (options.tempDirectory) config.temp_directory = options.tempDirectory;
    const instance = await DuckDBInstance.create(':memory:', config);
    const setup = await instance.connect();
    try {
      // Timestamps with zone are read and written in UTC (ICU is linked in; nothing is downloaded).
      await setup.run('LOAD icu');
      await setup.run(`SET GLOBAL TimeZone = 'UTC'`);
      // Data files never change once written: their footers are read once.
      await setup.run('SET GLOBAL parquet_metadata_cache = true');
    } finally {
      setup.closeSync();
    }
    const scratch = options.scratchDirectory ?? os.tmpdir();
    await fs.mkdir(scratch, { recursive: true });
    if (options.scratchDirectory) await removeStaleRows(scratch);
    return new RowReader(instance, scratch);
  }

  async open(dataset: ReadableDataset): Promise<ReadSession> {
    return new ReadSession(await this.instance.connect(), dataset, this.shared);
  }

  /** The DuckDB memory the reader has in use, in bytes (GET /metrics). */
  memoryBytes(): Promise<number> {
    return duckdbMemoryBytes(() => this.instance.connect());
  }

  close(): void {
    this.instance.closeSync();
  }
}
