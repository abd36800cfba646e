/**
 * `:name` placeholders in user SQL, and the small SQL lexer that finds them.
 *
 * DuckDB has no `:name` parameters, so a job's SQL is rewritten to DuckDB's `$name` before it is
 * parsed or run, and parameter values are bound, never spliced into the text. `:name` and `$name`
 * have the same length, so every offset in the rewritten text is the same offset in the user's text;
 * the offset map is still built from the edits, so a rewrite that changes lengths stays correct.
 *
 * The lexer follows DuckDB's (PostgreSQL's) rules closely enough to know what is code and what is
 * not: it never looks inside string literals ('…' with '' escapes; E'…' with backslash escapes too;
 * $$…$$ and $tag$…$tag$), quoted identifiers ("…" with ""), line comments (-- …) or block comments
 * (/* … *\/, nested). Unterminated ones run to the end of the text (DuckDB then reports the error).
 *
 * A `:` starts a placeholder when all of these hold (see docs/sql.md):
 * - it is followed by a name: `[A-Za-z_][A-Za-z0-9_]*`, and the name is not directly followed by
 *   another identifier character (`$`, or any non-ASCII character), so `:név` is not a placeholder;
 * - it is not part of `::` (a cast) or `:=` (a named argument), nor right after another `:`;
 * - the character right before it is not one that ends an operand: an identifier character or digit
 *   (including `$` and non-ASCII), `]`, `)`, `}`, `'` or `"`. So `a::int` is a cast, `l[1:n]` and
 *   `l[lo:hi]` are slices, `{'k':v}` is a struct key and `lambda x:x+1` is a lambda, while
 *   `WHERE x = :p`, `(:p)`, `, :p` and `:p` at the very start are placeholders;
 * - it is not the first thing inside a subscript bracket (`l[:n]`, `l[ :n]` slice from the start). A
 *   `[` is a subscript when it directly follows an operand (`l[`, `f(x)[`, `"col"[`); `[` after a blank
 *   or an operator starts a list literal, so `[:a, :b]` is a list of two placeholders.
 * To use a placeholder as a slice bound, write it where an operand cannot end: `l[1:(:n)]` or
 * `l[1: :n]`; to index with one, `l[(:i)]`.
 */

/** What the lexer found. Whitespace and comments are not tokens. */
export type SqlTokenKind =
  | 'word' // an unquoted identifier or keyword
  | 'quoted_identifier' // "…"
  | 'string' // '…', E'…', $$…$$, $tag$…$tag$
  | 'number'
  | 'parameter' // DuckDB's own: $name, $1, ?
  | 'placeholder' // Lakeport's :name
  | 'operator'; // any other single character, or `::` / `:=`

export interface SqlToken {
  kind: SqlTokenKind;
  /** UTF-16 offsets into the text, end exclusive. */
  start: number;
  end: number;
  text: string;
}

const SPACE = new Set([0x20, 0x09, 0x0a, 0x0d, 0x0c, 0x0b]);

function isAsciiLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}
function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
/** Starts an unquoted identifier: letters, `_` and any non-ASCII character (as in DuckDB's lexer). */
function isIdentStart(c: number): boolean {
  return isAsciiLetter(c) || c === 0x5f || c >= 0x80;
}
function isIdentCont(c: number): boolean {
  return isIdentStart(c) || isDigit(c) || c === 0x24; /* $ */
}
/** A placeholder name's characters: ASCII only. */
function isNameStart(c: number): boolean {
  return isAsciiLetter(c) || c === 0x5f;
}
function isNameCont(c: number): boolean {
  return isNameStart(c) || isDigit(c);
}
/** The last character of an operand: a `:` right after one is a slice, cast, struct key or lambda colon. */
function endsOperand(c: number): boolean {
  return isIdentCont(c) || c === 0x5d /* ] */ || c === 0x29 /* ) */ || c === 0x7d /* } */ || c === 0x27 /* ' */ || c === 0x22; /* " */
}

const DOLLAR_TAG = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;

/**
 * Splits SQL into tokens, skipping whitespace and comments. Never throws; every input (including
 * unterminated strings and comments, NULs and lone surrogates) gives tokens that cover it in order.
 */
export function tokenizeSql(sql: string): SqlToken[] {
  const tokens: SqlToken[] = [];
  const n = sql.length;
  let i = 0;
  /** The last token was a `[` that opens a subscript (slice). */
  let afterSubscriptOpen = false;
  const push = (kind: SqlTokenKind, start: number, end: number) => {
    tokens.push({ kind, start, end, text: sql.slice(start, end) });
    afterSubscriptOpen = false;
  };

  while (i < n) {
    const c = sql.charCodeAt(i);
    const next = i + 1 < n ? sql.charCodeAt(i + 1) : -1;

    if (SPACE.has(c)) {
      i++;
      continue;
    }
    // -- line comment
    if (c === 0x2d && next === 0x2d) {
      i += 2;
      while (i < n && sql.charCodeAt(i) !== 0x0a && sql.charCodeAt(i) !== 0x0d) i++;
      continue;
    }
    // /* block comment */, nested
    if (c === 0x2f && next === 0x2a) {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        const a = sql.charCodeAt(i);
        const b = i + 1 < n ? sql.charCodeAt(i + 1) : -1;
        if (a === 0x2f && b === 0x2a) {
          depth++;
          i += 2;
        } else if (a === 0x2a && b === 0x2f) {
          depth--;
          i += 2;
        } else {
          i++;
        }
      }
      continue;
    }
    // '…' (standard: only '' escapes)
    if (c === 0x27) {
      const start = i;
      i = skipQuoted(sql, i + 1, 0x27, false);
      push('string', start, i);
      continue;
    }
    // "…" quoted identifier
    if (c === 0x22) {
      const start = i;
      i = skipQuoted(sql, i + 1, 0x22, false);
      push('quoted_identifier', start, i);
      continue;
    }
    // $…: dollar-quoted string, $1, $name, or a lone $
    if (c === 0x24) {
      const start = i;
      DOLLAR_TAG.lastIndex = i;
      const tag = DOLLAR_TAG.exec(sql);
      if (tag) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        i = close < 0 ? n : close + tag[0].length;
        push('string', start, i);
      } else if (isDigit(next)) {
        i++;
        while (i < n && isDigit(sql.charCodeAt(i))) i++;
        push('parameter', start, i);
      } else if (next >= 0 && isIdentStart(next)) {
        i++;
        while (i < n && isIdentCont(sql.charCodeAt(i)) && sql.charCodeAt(i) !== 0x24) i++;
        push('parameter', start, i);
      } else {
        i++;
        push('operator', start, i);
      }
      continue;
    }
    if (isDigit(c) || (c === 0x2e && isDigit(next))) {
      const start = i;
      i++;
      while (i < n) {
        const d = sql.charCodeAt(i);
        if (isDigit(d) || isAsciiLetter(d) || d === 0x5f || d === 0x2e) i++;
        else break;
      }
      push('number', start, i);
      continue;
    }
    if (isIdentStart(c)) {
      const start = i;
      // E'…': backslash escapes as well as ''
      if ((c === 0x45 || c === 0x65) && next === 0x27) {
        i = skipQuoted(sql, i + 2, 0x27, true);
        push('string', start, i);
        continue;
      }
      i++;
      while (i < n && isIdentCont(sql.charCodeAt(i))) i++;
      push('word', start, i);
      continue;
    }
    if (c === 0x3a /* : */) {
      const start = i;
      if (next === 0x3a || next === 0x3d) {
        i += 2;
        push('operator', start, i);
        continue;
      }
      const prev = i > 0 ? sql.charCodeAt(i - 1) : -1;
      if (next >= 0 && isNameStart(next) && !(prev >= 0 && (endsOperand(prev) || prev === 0x3a)) && !afterSubscriptOpen) {
        let j = i + 2;
        while (j < n && isNameCont(sql.charCodeAt(j))) j++;
        if (!(j < n && isIdentCont(sql.charCodeAt(j)))) {
          i = j;
          push('placeholder', start, i);
          continue;
        }
      }
      i++;
      push('operator', start, i);
      continue;
    }
    if (c === 0x3f /* ? */) {
      push('parameter', i, i + 1);
      i++;
      continue;
    }
    if (c === 0x5b /* [ */) {
      const prev = i > 0 ? sql.charCodeAt(i - 1) : -1;
      push('operator', i, i + 1);
      afterSubscriptOpen = prev >= 0 && endsOperand(prev);
      i++;
      continue;
    }
    // Any other character is an operator of its own (multi-character operators are not joined).
    // A surrogate pair is never split: both halves are >= 0x80 and were taken as a word above.
    push('operator', i, i + 1);
    i++;
  }
  return tokens;
}

/** The offset just past a quoted run that started before `from`; the end of the text when unterminated. */
function skipQuoted(sql: string, from: number, quote: number, backslash: boolean): number {
  const n = sql.length;
  let i = from;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (backslash && c === 0x5c) {
      i += 2;
      continue;
    }
    if (c === quote) {
      if (i + 1 < n && sql.charCodeAt(i + 1) === quote) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
  return n;
}

/** One replaced span: `original[originalStart, originalEnd)` became `replacementLength` characters. */
export interface OffsetEdit {
  originalStart: number;
  originalEnd: number;
  replacementLength: number;
}

/**
 * Maps offsets in a rewritten text back to the original, given the edits (in order, not overlapping).
 * Offsets outside edits shift by the edits before them; an offset inside a replacement maps into the
 * replaced span (its last character at most). The result is clamped to `[0, originalLength]`.
 */
export function offsetMapper(edits: readonly OffsetEdit[], originalLength: number): (offset: number) => number {
  // Rewritten start of each edit.
  const starts: number[] = [];
  let shift = 0;
  for (const e of edits) {
    starts.push(e.originalStart + shift);
    shift += e.replacementLength - (e.originalEnd - e.originalStart);
  }
  return (offset: number): number => {
    if (!Number.isFinite(offset)) return offset > 0 ? originalLength : 0;
    const r = Math.trunc(offset);
    // Last edit starting at or before r (binary search).
    let lo = 0;
    let hi = starts.length - 1;
    let k = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid] <= r) {
        k = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    let o: number;
    if (k < 0) {
      o = r;
    } else {
      const e = edits[k];
      const into = r - starts[k];
      const originalLen = e.originalEnd - e.originalStart;
      if (into < e.replacementLength) o = e.originalStart + Math.min(into, Math.max(originalLen - 1, 0));
      else o = e.originalEnd + (into - e.replacementLength);
    }
    return Math.min(Math.max(o, 0), originalLength);
  };
}

export interface Placeholder {
  /** As written (without the colon). */
  name: string;
  /** Offsets of `:name` in the user's text. */
  start: number;
  end: number;
}

export interface PlaceholderRewrite {
  /** The SQL with every `:name` placeholder written as DuckDB's `$name`. */
  sql: string;
  /**
   * The distinct names in order of first use, spelled as first written. DuckDB's parameter names
   * are case-insensitive, so `:Day` and `:day` are one parameter (listed once, as `Day`).
   */
  names: string[];
  /** Every placeholder, in order. */
  placeholders: Placeholder[];
  /** An offset into `sql` (UTF-16) → the same place in the user's text. */
  toOriginal(offset: number): number;
}

/** Rewrites `:name` placeholders to `$name` (see the rules at the top of this file). Never throws. */
export function rewritePlaceholders(sql: string): PlaceholderRewrite {
  const placeholders: Placeholder[] = [];
  for (const t of tokenizeSql(sql)) {
    if (t.kind === 'placeholder') placeholders.push({ name: t.text.slice(1), start: t.start, end: t.end });
  }
  const names: string[] = [];
  const seen = new Set<string>();
  const parts: string[] = [];
  const edits: OffsetEdit[] = [];
  let at = 0;
  for (const p of placeholders) {
    const key = p.name.toLowerCase();
    if (!seen.has(key)) {
      seen.add(key);
      names.push(p.name);
    }
    const replacement = `$${p.name}`;
    parts.push(sql.slice(at, p.start), replacement);
    edits.push({ originalStart: p.start, originalEnd: p.end, replacementLength: replacement.length });
    at = p.end;
  }
  parts.push(sql.slice(at));
  return { sql: parts.join(''), names, placeholders, toOriginal: offsetMapper(edits, sql.length) };
}

/**
 * 1-based line and column of a UTF-16 offset (clamped into the text). Lines end at `\n`, `\r\n` or a
 * lone `\r`; columns count characters (code points), so an emoji is one column.
 */
export function lineColumn(sql: string, offset: number): { line: number; column: number } {
  const end = Math.min(Math.max(Number.isFinite(offset) ? Math.trunc(offset) : 0, 0), sql.length);
  let line = 1;
  let column = 1;
  for (let i = 0; i < end; i++) {
    const c = sql.charCodeAt(i);
    if (c === 0x0a || (c === 0x0d && sql.charCodeAt(i + 1) !== 0x0a)) {
      line++;
      column = 1;
    } else if (c === 0x0d) {
      // the \r of \r\n: the \n ends the line
    } else if (c >= 0xdc00 && c <= 0xdfff && i > 0 && sql.charCodeAt(i - 1) >= 0xd800 && sql.charCodeAt(i - 1) <= 0xdbff) {
      // second half of a surrogate pair: same character
    } else {
      column++;
    }
  }
  return { line, column };
}
