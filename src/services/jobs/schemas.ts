import { z } from 'zod';
import { sqlTextViolation, valueViolation, type LimitViolation } from '../../core/engine/input-limits.ts';
import { queryBoolean } from '../../core/http/index.ts';

/** Text the metadata database can store: PostgreSQL's text and jsonb hold no NUL character. */
const NO_NUL = (value: unknown): boolean => {
  if (typeof value === 'string') return !value.includes('\u0000');
  if (Array.isArray(value)) return value.every(NO_NUL);
  if (value && typeof value === 'object') return Object.entries(value).every(([k, v]) => NO_NUL(k) && NO_NUL(v));
  return true;
};
const NUL_MESSAGE = 'must not contain a NUL character';

/** Refuses text past a limit of core/engine/input-limits.ts (size, nesting), before it reaches DuckDB. */
const within = (violation: (value: string) => LimitViolation | undefined) => (value: string, ctx: z.RefinementCtx) => {
  const found = violation(value);
  if (found) ctx.addIssue({ code: 'custom', message: `${found.message} (at character ${found.position + 1})` });
};

const ParamValue = z.union([z.string().refine(NO_NUL, NUL_MESSAGE).superRefine(within(valueViolation)), z.number(), z.boolean(), z.null()]);
const SqlText = z.string().min(1).max(1_000_000).superRefine(within(sqlTextViolation));

export const JobCreateRequest = z.object({
  sql_text: SqlText.refine(NO_NUL, NUL_MESSAGE),
  client_info: z.record(z.string(), z.unknown()).refine(NO_NUL, NUL_MESSAGE).nullish(),
  parameters: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'a parameter name is letters, digits and underscores'), ParamValue).nullish(),
});

export const QueryCheckRequest = z.object({
  sql_text: SqlText,
  parameters: z.record(z.string(), ParamValue).nullish(),
});

export const JobParams = z.object({ identifier: z.string().min(1).max(64) });

const nonNegative = (fallback: number, max?: number) => {
  let schema = z.coerce.number().int().min(0);
  if (max !== undefined) schema = schema.max(max);
  return schema.default(fallback);
};

export const StatusQuery = z.object({ wait: z.coerce.number().min(0).max(30).default(0).describe('Seconds to wait for the job to leave queued/running (at most 30)') });
export const ResultsQuery = z.object({ num_rows: nonNegative(5000, 100_000).pipe(z.number().min(1)), offset: nonNegative(0), verbose: queryBoolean(false) });
/** Rows a download holds unless its `limit` says otherwise (the spec's default). */
export const DOWNLOAD_LIMIT = 10_000;
export const DownloadQuery = z.object({
  file_format: z.enum(['csv', 'json', 'parquet']).default('csv'),
  limit: nonNegative(DOWNLOAD_LIMIT).describe('Rows in the file (default 10000); the Lakeport-Total-Rows, Lakeport-Range, Lakeport-Truncated and Link headers say what the file holds of the whole result'),
  offset: nonNegative(0),
});
export const RecentQuery = z.object({ filter: z.string().max(1000).nullish() });

export const VariableParams = z.object({ name: z.string().min(1).max(64) });
export const VariableUpsertRequest = z.object({
  type: z.enum(['string', 'number', 'boolean']),
  value: z.union([z.string().superRefine(within(valueViolation)), z.number(), z.boolean()]),
});

// ── answers ──

const JobStatusName = z.enum(['queued', 'running', 'succeeded', 'failed', 'cancelled']);
const Column = z.object({ name: z.string(), type: z.string() });

export const JobSubmitted = z.object({ execution_id: z.string(), status: JobStatusName, status_url: z.string() }).meta({ id: 'JobSubmitted' });

/** Where an error is in sql_text: 1-based line and column (null or absent when it has no place). */
const ErrorPlace = { line: z.number().int().nullish(), column: z.number().int().nullish() };

export const JobError = z.looseObject({ code: z.string(), message: z.string(), position: z.number().int().nullish().describe('0-based offset into sql_text'), ...ErrorPlace }).meta({ id: 'JobError' });

export const Job = z
  .object({
    execution_id: z.string(),
    status: JobStatusName,
    in_progress: z.boolean(),
    sql_text: z.string(),
    client_info: z.record(z.string(), z.unknown()).nullable(),
    created_at: z.string(),
    started_at: z.string().nullable(),
    finished_at: z.string().nullable(),
    timings: z.object({ queued_ms: z.number().nullable(), running_ms: z.number().nullable(), total_ms: z.number().nullable() }),
    row_count: z.number().nullable(),
    error: JobError.nullable(),
    status_url: z.string(),
    results_url: z.string().optional().describe('Once the job succeeded'),
    download_url: z.string().optional().describe('Once the job succeeded: the first range as CSV, its limit (the default, 10000 rows) explicit; the answer\'s Link rel="next" continues it'),
  })
  .meta({ id: 'Job' });

export const RecentJobs = z.array(Job);

export const ResultsPage = z
  .object({
    execution_id: z.string(),
    total_rows: z.number().int(),
    offset: z.number().int(),
    num_rows: z.number().int(),
    columns: z.union([z.array(z.string()), z.array(Column)]).describe('Column names; with verbose=true, names and types'),
    data: z.array(z.array(z.unknown())).describe('Rows, each an array of values in column order'),
    next_page: z.string().nullable(),
  })
  .meta({ id: 'ResultsPage' });

export const CheckResult = z
  .object({
    ok: z.boolean(),
    columns: z.array(Column).nullish().describe('The result columns (null for a statement that reads private storage)'),
    error: z.looseObject({ code: z.string(), message: z.string(), ...ErrorPlace, start: z.number().int().nullish().describe('0-based offset'), end: z.number().int().nullish() }).optional(),
    relations: z.array(z.object({ name: z.string(), kind: z.string(), columns: z.array(Column) })),
  })
  .meta({ id: 'CheckResult' });

export const Variables = z
  .object({ variables: z.array(z.object({ name: z.string(), type: z.enum(['string', 'number', 'boolean']), value: z.union([z.string(), z.number(), z.boolean()]), updated_at: z.string() })) })
  .meta({ id: 'Variables' });
