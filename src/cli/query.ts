import { parseArgs } from 'node:util';
import { LakeportApiError, LakeportClient, type DownloadFormat } from '../client/index.ts';
import { httpFetch } from './http-fetch.ts';
import { argumentError, commandAt } from './usage.ts';


/** The file format `--output FILE` implies by its extension (CSV unless it names JSON or Parquet). */
function formatOfFile(file: string): DownloadFormat {
  const extension = file.toLowerCase().split('.').pop();
  return extension === 'parquet' ? 'parquet' : extension === 'json' || extension === 'jsonl' || extension === 'ndjson' ? 'json' : 'csv';
}

/**
 * `lakeport query "SQL" [--param k=v]… [--format table|csv|json]`: submit, wait, print every row.
 * With `--output FILE`, the whole result is downloaded into FILE instead (csv, newline-delimited json
 * or parquet: `--format`, else the file's extension), every range of it, not only the first.
 */
export async function queryCommand(args: string[], io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream } = process): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { param: { type: 'string', multiple: true, default: [] }, format: { type: 'string' }, output: { type: 'string', short: 'o' } } });
  } catch (error) {
    io.stderr.write(`lakeport: ${argumentError(error, ['query']).message}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const output = values.output;
  const format = values.format ?? (output === undefined ? 'table' : formatOfFile(output));
  if (positionals.length !== 1 || output === '' || !(output === undefined ? ['table', 'csv', 'json'] : ['csv', 'json', 'parquet']).includes(format)) {
    io.stderr.write(`lakeport: usage: lakeport query ${commandAt(['query'])!.synopsis}\n`);
    return 2;
  }
  const parameters: Record<string, string | number | boolean> = {};
  for (const p of values.param) {
    const at = p.indexOf('=');
    if (at <= 0) {
      io.stderr.write(`lakeport: --param ${p}: write name=value\n`);
      return 2;
    }
    const raw = p.slice(at + 1);
    parameters[p.slice(0, at)] = raw === 'true' ? true : raw === 'false' ? false : raw !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw;
  }
  try {
    const client = LakeportClient.fromEnv(process.env, { fetch: httpFetch });
    const job = await client.submitJob({ sql_text: positionals[0], parameters, client_info: { application: 'lakeport-cli' } });
    const status = await client.waitForJob(job.execution_id);
    if (status.status !== 'succeeded') {
      const where = status.error?.line ? ` (line ${status.error.line}, column ${status.error.column})` : '';
      io.stderr.write(`lakeport: query ${status.status}: ${status.error?.code ?? ''} ${status.error?.message ?? ''}${where}`.replace(/\s+/g, ' ').trimEnd() + '\n');
      return 1;
    }
    if (output !== undefined) {
      // Parquet cannot be joined from ranges: ask for all of it at once (the status gave its size).
      const limit = format === 'parquet' && typeof status.row_count === 'number' ? status.row_count : undefined;
      const written = await client.downloadJobResult(job.execution_id, output, { file_format: format as DownloadFormat, limit });
      io.stdout.write(`${written.rows} row${written.rows === 1 ? '' : 's'} written to ${output}\n`);
      return 0;
    }
    let first = true;
    let offset = 0;
    const rows: unknown[][] = [];
    let columns: string[] = [];
    for (;;) {
      const page = await client.jobResults(job.execution_id, { offset, num_rows: 5000, verbose: true });
      columns = page.columns.map((c) => (typeof c === 'string' ? c : c.name));
      if (format === 'table') rows.push(...page.data);
      else {
        for (const row of page.data) io.stdout.write(format === 'json' ? `${JSON.stringify(Object.fromEntries(columns.map((c, i) => [c, row[i]])))}\n` : `${first ? `${csvLine(columns)}\n` : ''}${csvLine(row)}\n`);
        if (first && page.data.length === 0 && format === 'csv') io.stdout.write(`${csvLine(columns)}\n`);
        first = false;
      }
      offset += page.data.length;
      if (!page.next_page || page.data.length === 0) break;
    }
    if (format === 'table') io.stdout.write(table(columns, rows));
    return 0;
  } catch (error) {
    const message = error instanceof LakeportApiError ? `${error.status} ${error.code ?? ''} ${typeof error.detail === 'string' ? error.detail : JSON.stringify(error.detail)}` : (error as Error).message;
    io.stderr.write(`lakeport: ${message.split('\n')[0]}\n`);
    return 1;
  }
}

function cell(value: unknown): string {
  return value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function csvLine(values: unknown[]): string {
  return values.map((v) => (/[",\n\r]/.test(cell(v)) ? `"${cell(v).replace(/"/g, '""')}"` : cell(v))).join(',');
}

function table(header: string[], rows: unknown[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => cell(r[i]).length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i])).join(' | ').trimEnd();
  return `${[line(header), widths.map((w) => '-'.repeat(w)).join('-+-'), ...rows.map((r) => line(r.map(cell)))].join('\n')}\n(${rows.length} row${rows.length === 1 ? '' : 's'})\n`;
}
