export type SqlValue = string | number | boolean | bigint | null;

/**
 * The values of a compiled query's positional parameters. Compiled SQL refers to them as `$1`, `$2`, …
 * (always inside a CAST to the intended type), so binding `values` as they are is enough.
 */
export class SqlParams {
  readonly values: SqlValue[] = [];

  /** Adds a value and returns its placeholder. */
  add(value: SqlValue): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /** Adds a value and returns `CAST($n AS type)`. */
  cast(value: SqlValue, type: string): string {
    return `CAST(${this.add(value)} AS ${type})`;
  }
}
