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
export const DownloadQuery = z.object({
  file_format: z.enum(['csv', 'json', 'parquet']).default('csv'),
  limit: nonNegative(10_000),
  offset: nonNegative(0),
});
export const RecentQuery = z.object({ filter: z.string().max(1000).nullish() });

export const VariableParams = z.object({ name: z.string().min(1).max(64) });
export const VariableUpsertRequest = z.object({
  type: z.enum(['string', 'number', 'boolean']),
  value: z.union([z.string().superRefine(within(valueViolation)), z.number(), z.boolean()]),
});
