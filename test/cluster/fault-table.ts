/** One fault the cluster suite caused: how many requests it sent, how many failed (only those in flight may), how many acknowledged writes were lost (must be 0). */
export interface FaultRow {
  fault: string;
  requests: number;
  failed: number;
  lost: number;
  seconds: number;
  /** What failed and how, what recovered, or why the case was skipped. */
  notes: string;
}

/** The suite's fault table, printed at its end so that CI logs show it. */
export class FaultTable {
  readonly rows: FaultRow[] = [];

  add(row: FaultRow): void {
    this.rows.push(row);
  }

  render(): string {
    const head = ['fault', 'requests', 'failed', 'lost', 'seconds', 'notes'];
    const body = this.rows.map((r) => [r.fault, String(r.requests), String(r.failed), String(r.lost), r.seconds.toFixed(1), r.notes]);
    const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => (i === head.length - 1 ? 0 : row[i].length))));
    const line = (cells: string[]) => `| ${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join(' | ')} |`;
    return ['cluster fault table', line(head), line(widths.map((w, i) => '-'.repeat(i === head.length - 1 ? 5 : w))), ...body.map(line)].join('\n');
  }
}
