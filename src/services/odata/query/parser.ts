import type { CompareOp, Expr, Literal, ShiftOp } from './ast.ts';
import { MAX_DEPTH, invalid, type OptionContext } from './errors.ts';
import { describeToken, tokenize, type Token, type TokenKind } from './lexer.ts';

/** A cursor over one option's tokens, shared by the $filter, $apply, $select and $orderby parsers. */
export class TokenStream {
  private index = 0;

  constructor(
    readonly tokens: Token[],
    readonly source: string,
    readonly ctx: OptionContext,
  ) {}

  static of(text: string, ctx: OptionContext): TokenStream {
    return new TokenStream(tokenize(text, ctx), text, ctx);
  }

  peek(offset = 0): Token {
    return this.tokens[Math.min(this.index + offset, this.tokens.length - 1)];
  }

  next(): Token {
    const token = this.peek();
    if (token.kind !== 'eof') this.index++;
    return token;
  }

  /** Consumes the next token if it has this kind (and, for identifiers, this text). */
  accept(kind: TokenKind, text?: string): Token | undefined {
    const token = this.peek();
    if (token.kind !== kind || (text !== undefined && token.text !== text)) return undefined;
    return this.next();
  }

  expect(kind: TokenKind, what: string, text?: string): Token {
    const token = this.accept(kind, text);
    if (token) return token;
    throw this.error(this.peek(), `expected ${what}, found ${describeToken(this.peek())}`);
  }

  error(token: Token, message: string) {
    return invalid(this.ctx, token.pos, message);
  }
}

const BINDING = new Map<string, number>([
  ['or', 1],
  ['and', 2],
  ['eq', 3],
  ['ne', 3],
  ['lt', 4],
  ['le', 4],
  ['gt', 4],
  ['ge', 4],
  ['add', 5],
  ['sub', 5],
]);
/** `not` binds tighter than every binary operator: `not a eq b` is `(not a) eq b`. */
const NOT_BINDING = 6;
const UNSUPPORTED_OPERATORS = new Set(['in', 'has', 'mul', 'div', 'divby', 'mod', 'neg']);

/** An expression node before its depth is known. */
type Draft<E = Expr> = E extends Expr ? Omit<E, 'depth'> : never;

/** Parses a $filter expression (or the inside of $apply's filter()) from the stream's position. */
export class ExpressionParser {
  private nesting = 0;

  constructor(private readonly stream: TokenStream) {}

  parse(minBinding = 0): Expr {
    let left = this.prefix();
    for (;;) {
      const operator = this.stream.peek();
      const binding = operator.kind === 'ident' ? BINDING.get(operator.text) : undefined;
      if (binding === undefined || binding <= minBinding) return left;
      this.stream.next();
      left = this.binary(operator, left, this.parse(binding));
    }
  }

  /** The error for a token that cannot follow a complete expression. */
  unexpected(token: Token, expected: string): Error {
    const word = token.text;
    if (token.kind === 'ident' && BINDING.has(word.toLowerCase())) {
      return this.stream.error(token, `operators are lowercase: write '${word.toLowerCase()}' instead of '${word}'`);
    }
    if (token.kind === 'ident' && UNSUPPORTED_OPERATORS.has(word)) {
      return this.stream.error(token, `operator '${word}' is not supported (supported: eq ne lt le gt ge and or not, add and sub with durations)`);
    }
    if (token.kind === ')') return this.stream.error(token, "this ')' has no matching '('");
    return this.stream.error(token, `expected ${expected}, found ${describeToken(token)}`);
  }

  private prefix(): Expr {
    const token = this.stream.next();
    if (token.kind === 'literal') return this.leaf(token, { kind: 'literal', literal: token.literal! });
    if (token.kind === '(') return this.nested(token, () => this.parenthesized(token));
    if (token.kind !== 'ident') {
      const after = token.kind === 'eof' ? 'the expression ends too early: ' : '';
      throw this.stream.error(token, `${after}expected a value, a column or a function, found ${describeToken(token)}`);
    }
    switch (token.text) {
      case 'null':
        return this.leaf(token, { kind: 'literal', literal: { type: 'null' } });
      case 'true':
      case 'false':
        return this.leaf(token, { kind: 'literal', literal: { type: 'boolean', value: token.text === 'true' } });
      case 'not':
        return this.nested(token, () => this.not(token));
    }
    if (this.stream.peek().kind === '(') return this.nested(token, () => this.call(token));
    return this.leaf(token, { kind: 'column', name: token.text });
  }

  private leaf(token: Token, node: { kind: 'literal'; literal: Literal } | { kind: 'column'; name: string }): Expr {
    return { ...node, pos: token.pos, depth: 1, text: token.text };
  }

  private nested(token: Token, parse: () => Expr): Expr {
    if (++this.nesting > MAX_DEPTH) throw this.stream.error(token, `the expression is nested more than ${MAX_DEPTH} levels deep`);
    try {
      return parse();
    } finally {
      this.nesting--;
    }
  }

  private parenthesized(open: Token): Expr {
    const inner = this.parse();
    const close = this.stream.peek();
    if (close.kind !== ')') {
      if (close.kind === 'eof') throw this.stream.error(open, "this '(' is never closed: add ')'");
      throw this.unexpected(close, "')' or an operator");
    }
    this.stream.next();
    return { ...inner, pos: open.pos, text: this.stream.source.slice(open.pos, close.end) };
  }

  private not(token: Token): Expr {
    const operand = this.parse(NOT_BINDING);
    return this.node(token, { kind: 'not', operand, pos: token.pos, text: this.textFrom(token.pos, operand) }, [operand]);
  }

  private call(name: Token): Expr {
    const open = this.stream.next();
    const args: Expr[] = [];
    if (!this.stream.accept(')')) {
      for (;;) {
        args.push(this.parse());
        if (this.stream.accept(')')) break;
        const token = this.stream.peek();
        if (token.kind === 'eof') throw this.stream.error(open, `${name.text}( is never closed: add ')'`);
        if (!this.stream.accept(',')) throw this.unexpected(token, `',' or ')' in the arguments of ${name.text}()`);
      }
    }
    const end = this.stream.peek(-1).end;
    const text = this.stream.source.slice(name.pos, end);
    return this.node(name, { kind: 'call', name: name.text, args, pos: name.pos, text }, args);
  }

  private binary(operator: Token, left: Expr, right: Expr): Expr {
    const op = operator.text;
    const base = { pos: left.pos, text: this.textFrom(left.pos, right) };
    if (op === 'and' || op === 'or') {
      const operands = [left, right].flatMap((e) => (e.kind === 'logical' && e.op === op ? e.operands : [e]));
      return this.node(operator, { kind: 'logical', op, operands, ...base }, operands);
    }
    if (op === 'add' || op === 'sub') {
      return this.node(operator, { kind: 'shift', op: op as ShiftOp, opPos: operator.pos, left, right, ...base }, [left, right]);
    }
    return this.node(operator, { kind: 'compare', op: op as CompareOp, opPos: operator.pos, left, right, ...base }, [left, right]);
  }

  private node(token: Token, node: Draft, children: Expr[]): Expr {
    const depth = 1 + Math.max(0, ...children.map((c) => c.depth));
    if (depth > MAX_DEPTH) throw this.stream.error(token, `the expression is nested more than ${MAX_DEPTH} levels deep`);
    return { ...node, depth } as Expr;
  }

  private textFrom(start: number, last: Expr): string {
    return this.stream.source.slice(start, last.pos + last.text.length);
  }
}

/** Parses a whole $filter text. */
export function parseFilter(text: string, ctx: OptionContext): Expr {
  const stream = TokenStream.of(text, ctx);
  const parser = new ExpressionParser(stream);
  const expr = parser.parse();
  const rest = stream.peek();
  if (rest.kind !== 'eof') throw parser.unexpected(rest, 'an operator such as eq, and or or, or the end of the filter');
  return expr;
}
