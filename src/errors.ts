import { CORE_ERRORS, type ErrorCode } from './core/errors/index.ts';
import { ACCOUNTS_ERRORS } from './services/accounts/errors.ts';
import { AUTH_ERRORS } from './services/auth/errors.ts';
import { JOBS_ERRORS } from './services/jobs/errors.ts';
import { ODATA_ERRORS } from './services/odata/errors.ts';
import { ICEBERG_ERRORS } from './services/iceberg/errors.ts';
import { POLICY_ERRORS } from './services/policy/errors.ts';
import { UPLOAD_ERRORS } from './services/upload/errors.ts';

export { JOB_FAILURE_CODES } from './services/jobs/errors.ts';

/** Each module's error codes with their HTTP status (docs/errors.md lists them, by module). */
export const ERROR_TABLES = {
  core: CORE_ERRORS,
  auth: AUTH_ERRORS,
  accounts: ACCOUNTS_ERRORS,
  policy: POLICY_ERRORS,
  upload: UPLOAD_ERRORS,
  jobs: JOBS_ERRORS,
  odata: ODATA_ERRORS,
  iceberg: ICEBERG_ERRORS,
};

/** Every error code the server answers; typed so that a module's table missing above fails to compile. */
export const ERRORS: Record<ErrorCode, number> = { ...CORE_ERRORS, ...AUTH_ERRORS, ...ACCOUNTS_ERRORS, ...POLICY_ERRORS, ...UPLOAD_ERRORS, ...JOBS_ERRORS, ...ODATA_ERRORS, ...ICEBERG_ERRORS };
