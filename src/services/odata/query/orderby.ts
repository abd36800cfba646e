import type { ColumnSet } from './columns.ts';
import { ORDERBY } from './errors.ts';
import { describeToken } from './lexer.ts';
import { TokenStream } from './parser.ts';

export interface OrderKey {
  column: string;
  direction: 'asc' | 'desc';
}

/** `$orderby=col1 asc, col2 desc`: column names, each optionally followed by asc (the default) or desc. */
export function parseOrderBy(text: string, visible: ColumnSet): OrderKey[] {
  const stream = TokenStream.of(text, ORDERBY);
  const keys: OrderKey[] = [];
  do {
    const token = stream.next();
    if (token.kind !== 'ident') throw stream.error(token, `expected a column name, found ${describeToken(token)}`);
    if (stream.peek().kind === '(' || stream.peek().kind === '/') {
      throw stream.error(stream.peek(), '$orderby takes plain column names (no paths or functions)');
    }
    const column = visible.get(token.text, token.pos, ORDERBY);
    if (keys.some((k) => k.column === column.name)) throw stream.error(token, `column '${column.name}' is listed twice`);
    keys.push({ column: column.name, direction: direction(stream) });
  } while (stream.accept(','));
  const rest = stream.peek();
  if (rest.kind !== 'eof') throw stream.error(rest, `expected ',' before the next column, found ${describeToken(rest)}`);
  return keys;
}

function direction(stream: TokenStream): 'asc' | 'desc' {
  const token = stream.peek();
  if (token.kind !== 'ident') return 'asc';
  stream.next();
  if (token.text === 'asc' || token.text === 'desc') return token.text;
  const lower = token.text.toLowerCase();
  if (lower === 'asc' || lower === 'desc') throw stream.error(token, `write '${lower}' in lowercase`);
  throw stream.error(token, `expected asc, desc or ',' after the column name, found ${describeToken(token)}`);
}
