import type { ODataColumn } from '../model.ts';
import type { ColumnSet } from './columns.ts';
import { SELECT } from './errors.ts';
import { describeToken } from './lexer.ts';
import { TokenStream } from './parser.ts';

/**
 * `$select=col1,col2` or `*`: the output columns in the order named (a column named twice appears
 * once; `*` anywhere means all columns).
 */
export function parseSelect(text: string, visible: ColumnSet): ODataColumn[] {
  const stream = TokenStream.of(text, SELECT);
  const picked = new Map<string, ODataColumn>();
  let all = false;
  do {
    const token = stream.next();
    if (token.kind === '*') {
      all = true;
      continue;
    }
    if (token.kind !== 'ident') throw stream.error(token, `expected a column name or *, found ${describeToken(token)}`);
    const after = stream.peek();
    if (after.kind === '/' || after.kind === '(') throw stream.error(after, '$select takes plain column names (no paths or functions)');
    const column = visible.get(token.text, token.pos, SELECT);
    picked.set(column.name, column);
  } while (stream.accept(','));
  const rest = stream.peek();
  if (rest.kind !== 'eof') throw stream.error(rest, `expected ',' between column names, found ${describeToken(rest)}`);
  return all ? [...visible.columns] : [...picked.values()];
}
