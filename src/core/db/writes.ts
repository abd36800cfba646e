import {
  DeleteQueryNode,
  InsertQueryNode,
  SelectQueryNode,
  TableNode,
  UpdateQueryNode,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type OperationNode,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

/** Every table: what a statement of unknown target (raw SQL, DDL, a data-changing WITH) may have written. */
const ALL = '*';

function tableName(node: OperationNode | undefined): string | undefined {
  if (node === undefined) return undefined;
  if (TableNode.is(node)) return node.table.identifier.name;
  if (node.kind === 'AliasNode') return tableName((node as unknown as { node: OperationNode }).node);
  return undefined;
}

/** A statement that starts with SELECT or WITH and names no data-changing command only reads. */
function textReadsOnly(sql: string): boolean {
  return /^\s*(select|with)\b/i.test(sql) && !/\b(insert|update|delete|merge|truncate|copy)\b/i.test(sql);
}

/** The tables an SQL text names after INSERT INTO, UPDATE or DELETE FROM (a stray word now and then is harmless). */
function tablesNamedIn(sql: string): string[] {
  return [...sql.matchAll(/\b(?:insert\s+into|update|delete\s+from)\s+"?([a-z_][a-z0-9_]*)"?/gi)].map((m) => m[1].toLowerCase());
}

/** The tables a statement may change: none for a read, ['*'] when it cannot tell. */
export function tablesWritten(compiled: CompiledQuery): readonly string[] {
  const node = compiled.query;
  if (SelectQueryNode.is(node) && node.with === undefined) return [];
  let table: string | undefined;
  if (InsertQueryNode.is(node) && node.with === undefined) table = tableName(node.into);
  else if (UpdateQueryNode.is(node) && node.with === undefined) table = tableName(node.table);
  else if (DeleteQueryNode.is(node) && node.with === undefined && node.from.froms.length === 1) table = tableName(node.from.froms[0]);
  if (table !== undefined) return [table];
  // Raw SQL, WITH clauses, DDL: judged by the text.
  if (textReadsOnly(compiled.sql)) return [];
  const named = tablesNamedIn(compiled.sql);
  return named.length > 0 ? named : [ALL];
}

/**
 * This process's writes to the metadata database, counted per table, for caches of what was read
 * (core/kept.ts): a count moves just before a statement that may change the table is sent, again
 * once it has run, and for a transaction once more before and after its COMMIT. So an answer read
 * while the counts of its tables stood still is what the database held, as far as this process's
 * own writes go (other processes' writes are what a cache's time bound is for).
 */
export class TableWrites {
  private readonly counts = new Map<string, number>();

  /** A number that changes whenever this process writes one of `tables` (or a statement it cannot attribute). */
  version(tables: readonly string[]): number {
    let sum = this.counts.get(ALL) ?? 0;
    for (const table of tables) sum += this.counts.get(table) ?? 0;
    return sum;
  }

  note(tables: Iterable<string>): void {
    for (const table of tables) this.counts.set(table, (this.counts.get(table) ?? 0) + 1);
  }
}

/** A connection that remembers which tables the transaction it runs has written. */
class TrackedConnection implements DatabaseConnection {
  inTransaction = false;
  readonly written = new Set<string>();

  constructor(
    readonly inner: DatabaseConnection,
    private readonly writes: TableWrites,
  ) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const tables = tablesWritten(compiled);
    if (tables.length === 0) return this.inner.executeQuery<R>(compiled);
    this.writes.note(tables);
    if (this.inTransaction) for (const t of tables) this.written.add(t);
    try {
      return await this.inner.executeQuery<R>(compiled);
    } finally {
      this.writes.note(tables);
    }
  }

  streamQuery<R>(compiled: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(compiled, chunkSize);
  }
}

class TrackingDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    private readonly writes: TableWrites,
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new TrackedConnection(await this.inner.acquireConnection(), this.writes);
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const c = connection as TrackedConnection;
    await this.inner.beginTransaction(c.inner, settings);
    c.inTransaction = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as TrackedConnection;
    this.writes.note(c.written);
    try {
      await this.inner.commitTransaction(c.inner);
    } finally {
      this.writes.note(c.written);
      this.end(c);
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as TrackedConnection;
    try {
      await this.inner.rollbackTransaction(c.inner);
    } finally {
      this.end(c);
    }
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((connection as TrackedConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }

  private end(c: TrackedConnection) {
    c.inTransaction = false;
    c.written.clear();
  }
}

/** The dialect with its driver's writes counted in `writes`. */
export function trackWrites(dialect: Dialect, writes: TableWrites): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new TrackingDriver(dialect.createDriver(), writes),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
  };
}
