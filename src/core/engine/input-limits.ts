/**
 * Bounds on user text that reaches DuckDB. DuckDB's parser and JSON functions recurse on nesting
 * (a JSON value ~100 000 levels deep crashes the process; nested block comments make the parser
 * quadratic: 8 KB of `/*` takes 0.2 s, 80 KB about 50 s), so depth is refused before any DuckDB
 * call, along with sizes. Linear scans, no allocation.
 */
export const INPUT_LIMITS = {
  /** Bytes of SQL text in one statement (Snowflake's SQL API allows 1 MB). */
  sqlTextBytes: 1_000_000,
  /** Nesting of ( [ { anywhere in a text: SQL, a parameter value, a JSON document or line. */
  nestingDepth: 256,
  /** Nesting of block comments in SQL. */
  commentDepth: 16,
  /** Characters of one parameter or saved variable value. */
  valueChars: 1_000_000,
} as const;

export interface LimitViolation {
  message: string;
  /** 0-based character offset where the limit was passed. */
  position: number;
}

/** Where `text` first nests brackets deeper than `limit` (quotes are not special: the scan is conservative). */
export function tooDeep(text: string, limit: number = INPUT_LIMITS.nestingDepth): LimitViolation | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x28 || c === 0x5b || c === 0x7b) {
      if (++depth > limit) return { message: `nests brackets more than ${limit} levels deep`, position: i };
    } else if ((c === 0x29 || c === 0x5d || c === 0x7d) && depth > 0) {
      depth--;
    }
  }
  return undefined;
}

/** Where `sql` first nests block comments deeper than the limit. */
export function commentsTooDeep(sql: string, limit: number = INPUT_LIMITS.commentDepth): LimitViolation | undefined {
  let depth = 0;
  for (let i = 0; i < sql.length - 1; i++) {
    const pair = sql.slice(i, i + 2);
    if (pair === '/*') {
      if (++depth > limit) return { message: `nests block comments more than ${limit} levels deep`, position: i };
      i++;
    } else if (pair === '*/' && depth > 0) {
      depth--;
      i++;
    }
  }
  return undefined;
}

/** The first limit a statement's text passes, or undefined. */
export function sqlTextViolation(sql: string): LimitViolation | undefined {
  if (Buffer.byteLength(sql) > INPUT_LIMITS.sqlTextBytes) return { message: `is longer than ${INPUT_LIMITS.sqlTextBytes} bytes`, position: 0 };
  return commentsTooDeep(sql) ?? tooDeep(sql);
}

/** The first limit a parameter value passes, or undefined. */
export function valueViolation(value: unknown): LimitViolation | undefined {
  if (typeof value !== 'string') return undefined;
  if (value.length > INPUT_LIMITS.valueChars) return { message: `is longer than ${INPUT_LIMITS.valueChars} characters`, position: 0 };
  return tooDeep(value);
}

/**
 * Where a JSON-lines file first nests deeper than the limit: its bytes are scanned in chunks,
 * with strings (and their escapes) skipped, so brackets inside values do not count.
 */
export async function jsonFileTooDeep(chunks: AsyncIterable<Uint8Array>, limit: number = INPUT_LIMITS.nestingDepth): Promise<{ line: number } | undefined> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let line = 1;
  for await (const chunk of chunks) {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
        else if (c === 0x0a) line++;
        continue;
      }
      if (c === 0x22) inString = true;
      else if (c === 0x5b || c === 0x7b) {
        if (++depth > limit) return { line };
      } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
      else if (c === 0x0a) {
        line++;
        depth = 0;
      }
    }
  }
  return undefined;
}
