import type { ODataColumn } from '../model.ts';
import { invalid, type OptionContext } from './errors.ts';

/** The columns a query step can see, looked up by exact (case-sensitive) name. */
export class ColumnSet {
  private readonly byName: Map<string, ODataColumn>;

  constructor(readonly columns: readonly ODataColumn[]) {
    this.byName = new Map(columns.map((c) => [c.name, c]));
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The column, or a 400 naming it and suggesting a close match. */
  get(name: string, pos: number, ctx: OptionContext): ODataColumn {
    const column = this.byName.get(name);
    if (column) return column;
    throw invalid(ctx, pos, `unknown column '${name}'${this.suggestion(name)}`);
  }

  private suggestion(name: string): string {
    const names = this.columns.map((c) => c.name);
    const sameLetters = names.find((n) => n.toLowerCase() === name.toLowerCase());
    if (sameLetters) return `; did you mean '${sameLetters}'? (column names are case-sensitive)`;
    const close = names
      .map((n) => ({ n, distance: editDistance(n.toLowerCase(), name.toLowerCase()) }))
      .filter((c) => c.distance <= Math.max(1, Math.floor(name.length / 3)))
      .sort((a, b) => a.distance - b.distance)[0];
    if (close) return `; did you mean '${close.n}'?`;
    if (names.length === 0) return '';
    const listed = names.slice(0, 10).join(', ');
    return `; the columns are ${listed}${names.length > 10 ? `, … (${names.length} in all)` : ''}`;
  }
}

/** Edit distance counting a swap of neighbours as one edit, for "did you mean" (names are short). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3 || a.length > 64 || b.length > 64) return Infinity;
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}
