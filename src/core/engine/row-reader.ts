import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { LRUCache } from 'lru-cache';
import { datasetRelation, type ColumnNameCache, type DatasetFiles } from './relation.ts';

export type BoundValue = string | number | boolean | bigint | null;

/** A dataset version to read: its files with their row counts, its columns, and the name of its row-number column. */
export interface ReadableDataset {
  files: { path: string; rows: number }[];
  columns: DatasetFiles['columns'];
  rowId: string;
}

/** One read over one dataset version, on its own connection; close it when done (or interrupt it). */
export class ReadSession {
  private closed = false;
  private readonly firstIds: number[];

  constructor(
    private readonly connection: DuckDBConnection,
    readonly dataset: ReadableDataset,
    private readonly columnNames: ColumnNameCache,
  ) {
    let next = 0;
    this.firstIds = dataset.files.map((f) => ((next += f.rows), next - f.rows));
  }

  /** A relation over every file, with the dataset's columns and row numbers, to put in a FROM clause. */
  relation(): Promise<string> {
    const { files, columns, rowId } = this.dataset;
    return datasetRelation(this.connection, { files: files.map((f) => f.path), columns, rowId: { column: rowId, firstIds: this.firstIds } }, this.columnNames);
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

  /** A relation over one file from a row on (the scan skips the row groups before it). */
  fileRelation(file: number, fromRow: number): Promise<string> {
    const { files, columns, rowId } = this.dataset;
    return datasetRelation(this.connection, {
      files: [files[file].path],
      columns,
      rowId: { column: rowId, firstIds: [this.firstIds[file]] },
      fromRowInFile: fromRow,
    }, this.columnNames);
  }

  /** The first column of the first row. */
  async scalar(sql: string, values: readonly BoundValue[]): Promise<DuckDBValue> {
    const reader = await this.connection.runAndReadAll(sql, values as DuckDBValue[]);
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

/**
 * Lakeport's own read path for serving datasets (OData): SQL that Lakeport compiled, with user
 * values bound, over snapshot files Lakeport chose. User-written SQL never runs here (see Sandbox).
 */
export class RowReader {
  /** Data files never change, so what columns they hold is read once. */
  private readonly columnNames = new LRUCache<string, Set<string>>({ max: 2_000 });

  private constructor(private readonly instance: DuckDBInstance) {}

  static async create(options: { threads?: number; memoryLimit?: string; tempDirectory?: string } = {}): Promise<RowReader> {
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
    return new RowReader(instance);
  }

  async open(dataset: ReadableDataset): Promise<ReadSession> {
    return new ReadSession(await this.instance.connect(), dataset, this.columnNames);
  }

  close(): void {
    this.instance.closeSync();
  }
}
