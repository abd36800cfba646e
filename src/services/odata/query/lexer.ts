import type { Literal } from './ast.ts';
import { MAX_OPTION_LENGTH, invalid, type OptionContext } from './errors.ts';
import { parseDate, parseDateTime, parseDuration, parseTimeOfDay, type Parsed } from './temporal.ts';

export type TokenKind = 'ident' | 'literal' | '(' | ')' | ',' | '/' | '*' | 'eof';

export interface Token {
  kind: TokenKind;
  /** The source text of the token (for a string literal, with its quotes). */
  text: string;
  pos: number;
  end: number;
  /** Set for kind 'literal'. `null`, `true` and `false` stay identifiers: the parser decides. */
  literal?: Literal;
}

const WHITESPACE = /[ \t\r\n]+/y;
const DATETIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?/y;
const DATE = /\d{4}-\d{2}-\d{2}/y;
const TIME = /\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?/y;
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
/** OData identifiers (letters, digits, underscore); `$` starts system names such as $count. */
const IDENT = /\$?[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]*/uy;
/** Characters that may not directly follow a number, date or time: `12abc`, `1.2.3`, `2024-01-31T10`. */
const GLUED = /[\p{L}\p{N}_.:$-]+/uy;
const PUNCTUATION = new Set(['(', ')', ',', '/', '*']);

function matchAt(regex: RegExp, text: string, pos: number): string | undefined {
  regex.lastIndex = pos;
  return regex.exec(text)?.[0];
}

export function describeToken(token: Token): string {
  if (token.kind === 'eof') return 'the end of the text';
  const text = token.text.length > 40 ? `${token.text.slice(0, 40)}…` : token.text;
  return `'${text}'`;
}

/** Splits one option's text into tokens; refuses over-long text and malformed literals. */
export function tokenize(text: string, ctx: OptionContext): Token[] {
  if (text.length > MAX_OPTION_LENGTH) {
    throw invalid(ctx, MAX_OPTION_LENGTH, `${ctx.option} is longer than ${MAX_OPTION_LENGTH} characters`);
  }
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < text.length) {
    const space = matchAt(WHITESPACE, text, pos);
    if (space) {
      pos += space.length;
      continue;
    }
    const token = readToken(text, pos, ctx);
    tokens.push(token);
    pos = token.end;
  }
  tokens.push({ kind: 'eof', text: '', pos: text.length, end: text.length });
  return tokens;
}

function readToken(text: string, pos: number, ctx: OptionContext): Token {
  const char = text[pos];
  if (PUNCTUATION.has(char)) return { kind: char as TokenKind, text: char, pos, end: pos + 1 };
  if (char === "'") {
    const { value, end } = readQuoted(text, pos, ctx);
    return { kind: 'literal', text: text.slice(pos, end), pos, end, literal: { type: 'string', value } };
  }
  const literal = readTemporalOrNumber(text, pos, ctx);
  if (literal) return literal;
  const ident = matchAt(IDENT, text, pos);
  if (ident) {
    if (text[pos + ident.length] === "'") return readTypedLiteral(text, pos, ident, ctx);
    return { kind: 'ident', text: ident, pos, end: pos + ident.length };
  }
  const shown = String.fromCodePoint(text.codePointAt(pos)!);
  throw invalid(ctx, pos, `unexpected character '${shown}'`);
}

/** A single-quoted string starting at `pos`; `''` stands for one quote. */
function readQuoted(text: string, pos: number, ctx: OptionContext): { value: string; end: number } {
  let value = '';
  let i = pos + 1;
  for (;;) {
    const close = text.indexOf("'", i);
    if (close < 0) throw invalid(ctx, pos, 'this string is never closed: add the closing quote (write a quote inside a string as two quotes)');
    value += text.slice(i, close);
    if (text[close + 1] !== "'") return { value, end: close + 1 };
    value += "'";
    i = close + 2;
  }
}

function readTemporalOrNumber(text: string, pos: number, ctx: OptionContext): Token | undefined {
  const forms: [RegExp, (t: string) => Parsed<Literal>][] = [
    [DATETIME, (t) => wrap(parseDateTime(t), (micros) => ({ type: 'datetime', micros }))],
    [DATE, (t) => wrap(parseDate(t), (days) => ({ type: 'date', days }))],
    [TIME, (t) => wrap(parseTimeOfDay(t), (micros) => ({ type: 'time', micros }))],
    [NUMBER, parseNumber],
  ];
  for (const [regex, parse] of forms) {
    const raw = matchAt(regex, text, pos);
    if (!raw) continue;
    const end = pos + raw.length;
    const glued = matchAt(GLUED, text, end);
    if (glued) throw invalid(ctx, pos, `'${raw}${glued}' is not a valid number, date or time`);
    const parsed = parse(raw);
    if (!parsed.ok) throw invalid(ctx, pos, `'${raw}' is not valid: ${parsed.message}`);
    return { kind: 'literal', text: raw, pos, end, literal: parsed.value };
  }
  return undefined;
}

function wrap<T>(parsed: Parsed<T>, make: (value: T) => Literal): Parsed<Literal> {
  return parsed.ok ? { ok: true, value: make(parsed.value) } : parsed;
}

function parseNumber(text: string): Parsed<Literal> {
  if (!Number.isFinite(Number(text))) return { ok: false, message: 'the number is out of range' };
  return { ok: true, value: { type: 'number', text } };
}

/** `duration'P1D'`; other typed literals (OData v2's datetime'…', guid'…', …) are refused. */
function readTypedLiteral(text: string, pos: number, prefix: string, ctx: OptionContext): Token {
  const { value, end } = readQuoted(text, pos + prefix.length, ctx);
  const raw = text.slice(pos, end);
  if (prefix !== 'duration') {
    const hint = /^(datetime|datetimeoffset|date|time)$/i.test(prefix)
      ? ': write dates and datetimes without quotes, e.g. 2024-01-31 or 2024-01-31T10:00:00Z'
      : "; the only typed literal is duration'…'";
    throw invalid(ctx, pos, `typed literal ${prefix}'…' is not supported${hint}`);
  }
  const duration = parseDuration(value);
  if (!duration.ok) throw invalid(ctx, pos, `${raw} is not valid: ${duration.message}`);
  return { kind: 'literal', text: raw, pos, end, literal: { type: 'duration', duration: duration.value, text: value } };
}
