import type { JobError } from '../../core/db/index.ts';
import { defineErrors } from '../../core/errors/index.ts';

export const JOBS_ERRORS = {
  // jobs and their results
  JOB_NOT_FOUND: 404,
  JOB_IN_PROGRESS: 409,
  JOB_HAS_NO_RESULTS: 409,
  RESULTS_EXPIRED: 410,
  // Lakeport statements (the check endpoint answers them as `ok: false`)
  SYNTAX_ERROR: 400,
  EMPTY_STATEMENT: 400,
  MULTIPLE_STATEMENTS: 400,
  STATEMENT_NOT_SUPPORTED: 400,
  UNSUPPORTED_PARAMETER: 400,
  CONTRADICTORY_OPTIONS: 400,
  INVALID_PATTERN: 400,
  INVALID_PRINCIPAL: 400,
  UNKNOWN_PROPERTY: 400,
  INVALID_INTERVAL: 400,
  /** A statement naming a dataset of another kind (DROP DATASET of a view, REFRESH of a table, …). */
  WRONG_OBJECT_KIND: 409,
  PARAMETER_NOT_DEFINED: 400,
  INVALID_PARAMETER: 400,
  INVALID_SECRET_TYPE: 400,
  UNKNOWN_SECRET_KEY: 400,
  DUPLICATE_SECRET_KEY: 400,
  MISSING_SECRET_KEY: 400,
  INVALID_SECRET_VALUE: 400,
  SESSION_TOKEN_REQUIRED: 400,
  NO_BILLING_ACCOUNT: 409,
  SECRET_EXISTS: 409,
  SECRET_TYPE_MISMATCH: 409,
  // views, COMMENT ON, ALTER DATASET … SORTED BY
  INVALID_VIEW_DEFINITION: 400,
  VIEW_SOURCE_NOT_READABLE: 403,
  VIEW_CYCLE: 400,
  COLUMN_NOT_FOUND: 400,
  // materialized views
  INVALID_MATERIALIZED_VIEW: 400,
  // READ_* of private storage, refused at submit
  TABLE_FUNCTION_NOT_ALLOWED: 400,
  FILE_ACCESS_NOT_ALLOWED: 400,
  INVALID_EXTERNAL_READ: 400,
  INVALID_SECRET_REFERENCE: 400,
  SECRET_TYPE_NOT_READABLE: 400,
  EXTERNAL_SCOPE_VIOLATION: 403,
  SECRET_NOT_FOUND: 404,
} as const;

declare module '../../core/errors/app-error.ts' {
  interface ErrorStatuses extends Readonly<typeof JOBS_ERRORS> {}
}

export const jobsError = defineErrors(JOBS_ERRORS);

/** A READ_* call refused: at submit an HTTP error, when planned a job's failure. */
export type ExternalRefusalCode =
  | 'TABLE_FUNCTION_NOT_ALLOWED'
  | 'FILE_ACCESS_NOT_ALLOWED'
  | 'INVALID_EXTERNAL_READ'
  | 'INVALID_SECRET_REFERENCE'
  | 'SECRET_TYPE_NOT_READABLE'
  | 'EXTERNAL_SCOPE_VIOLATION'
  | 'SECRET_NOT_FOUND';
/** The codes jobsError takes: the job service's and core's. */
export type JobsErrorCode = Parameters<typeof jobsError>[0];

/** Why a job failed (or was cancelled): its `error.code`. Not HTTP errors: the job ends `failed` with one. */
export const JOB_FAILURE_CODES = [
  // refused when planned: the SQL analysis's and the planner's
  'EMPTY_STATEMENT',
  'MULTIPLE_STATEMENTS',
  'SYNTAX_ERROR',
  'STATEMENT_NOT_ALLOWED',
  'STATEMENT_NOT_SUPPORTED',
  'NOT_A_QUERY',
  'QUERY_TOO_COMPLEX',
  'UNSUPPORTED_PARAMETER',
  'PARAMETER_NOT_DEFINED',
  'FUNCTION_NOT_ALLOWED',
  'TABLE_FUNCTION_NOT_ALLOWED',
  'FILE_ACCESS_NOT_ALLOWED',
  'UNKNOWN_TABLE',
  'DATASET_NOT_FOUND',
  'VERSIONING_NOT_SUPPORTED',
  'INVALID_TIME_TRAVEL',
  'SNAPSHOT_NOT_FOUND',
  'WORKSPACE_DELETED',
  // logical views (docs/views.md)
  'VIEW_SOURCE_NOT_READABLE',
  'VIEW_CYCLE',
  'SNAPSHOT_EXPIRED',
  // READ_* of private storage
  'INVALID_EXTERNAL_READ',
  'INVALID_SECRET_REFERENCE',
  'SECRET_NOT_FOUND',
  'SECRET_TYPE_NOT_READABLE',
  'EXTERNAL_SCOPE_VIOLATION',
  'EXTERNAL_READ_NOT_AVAILABLE',
  'EXTERNAL_READ_TOO_LARGE',
  'EXTERNAL_OBJECT_NOT_FOUND',
  'EXTERNAL_CREDENTIALS_REJECTED',
  'EXTERNAL_STORAGE_ERROR',
  // running
  'QUERY_ERROR',
  'JOB_TIMEOUT',
  'RESULT_TOO_LARGE',
  'RESULT_QUOTA_EXCEEDED',
  'ENGINE_CRASHED',
  'WORKER_LOST',
  'INTERNAL_ERROR',
  'STORAGE_UNAVAILABLE',
  'METADATA_UNAVAILABLE',
  'DISK_FULL',
  'CANCELLED',
  // a materialized view's refresh
  'REFRESH_FAILED',
  'MATERIALIZED_VIEW_NOT_FOUND',
  'COMMIT_CONFLICT',
] as const;

export type JobFailureCode = (typeof JOB_FAILURE_CODES)[number];

/** A job's error, with one of the failure codes. */
export interface JobFailure extends JobError {
  code: JobFailureCode;
}
