/** Query jobs through the jobs service: submit, follow, cancel, results pages, downloads, variables. */
import { api, data, type Job } from './api.ts';

export type ParamValue = string | number | boolean | null;

export const checkSql = (sqlText: string, parameters: Record<string, ParamValue>) =>
  data(api.POST('/jobs/api/v1/check', { body: { sql_text: sqlText, parameters } }));

export const submitJob = (sqlText: string, parameters: Record<string, ParamValue>) =>
  data(api.POST('/jobs/api/v1/jobs', { body: { sql_text: sqlText, parameters, client_info: { application: 'lakeport-console' } } }));

/** The job's status, long-polling up to `wait` seconds for it to leave queued/running. */
export const jobStatus = (id: string, wait = 0) => data(api.GET('/jobs/api/v1/jobs/{identifier}/status', { params: { path: { identifier: id }, query: { wait } } }));

export const cancelJob = (id: string) => data(api.POST('/jobs/api/v1/jobs/{identifier}/cancel', { params: { path: { identifier: id } } }));

export const resultsPage = (id: string, offset: number, numRows: number) =>
  data(api.GET('/jobs/api/v1/jobs/{identifier}/results', { params: { path: { identifier: id }, query: { offset, num_rows: numRows, verbose: true } } }));

export const recentJobs = () => data(api.GET('/jobs/api/v1/jobs/recent', {}));

export const listVariables = async () => (await data(api.GET('/jobs/api/v1/variables', {}))).variables;

export const saveVariable = (name: string, value: string | number | boolean) =>
  data(api.PUT('/jobs/api/v1/variables/{name}', { params: { path: { name } }, body: { type: typeof value as 'string' | 'number' | 'boolean', value } }));

export const deleteVariable = (name: string) => data(api.DELETE('/jobs/api/v1/variables/{name}', { params: { path: { name } } }));

/** The whole result as a file (the download's limit set to the row count). */
export const downloadUrl = (job: Job, format: 'csv' | 'json' | 'parquet') =>
  `/jobs/api/v1/jobs/${encodeURIComponent(job.execution_id)}/download?file_format=${format}&limit=${Math.max(1, job.row_count ?? 0)}`;

/** The `:name` placeholders of a statement, in order of first use (not `::casts`, strings or comments). */
export function placeholders(sqlText: string): string[] {
  const code = sqlText
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"(?:[^"]|"")*"/g, '""')
    .replace(/--[^\n]*/g, '')
    .replace(/\/\*[\s\S]*?\*\//g, '');
  const names: string[] = [];
  for (const match of code.matchAll(/(?<![:\w]):([A-Za-z_]\w*)/g)) if (!names.includes(match[1])) names.push(match[1]);
  return names;
}

/** A form value as a parameter: numbers and booleans as such, else the text. */
export function parseParam(text: string): ParamValue {
  const t = text.trim();
  if (t === 'true' || t === 'false') return t === 'true';
  if (/^-?\d+(\.\d+)?$/.test(t) && Number.isFinite(Number(t))) return Number(t);
  return text;
}

export const isDone = (job: Job) => !job.in_progress;
