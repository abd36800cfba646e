import { CORE_ERRORS } from './codes.ts';

/**
 * Every error code with its HTTP status: core's, merged with each service's table by
 * `declare module '…/core/errors/app-error.ts' { interface ErrorStatuses extends … }` in its errors.ts.
 */
export interface ErrorStatuses extends Readonly<typeof CORE_ERRORS> {}

/** Stable, documented error codes. Every non-validation error response carries one. */
export type ErrorCode = keyof ErrorStatuses;

export interface AppErrorOptions {
  headers?: Record<string, string>;
  /** Extra fields merged into the body (e.g. OAuth's `error`). */
  extra?: Record<string, unknown>;
}

/** An error answered as `{detail, code}`. Made by an error constructor (appError or a service's), which knows the status. */
export class AppError extends Error {
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    detail: string,
    options: AppErrorOptions = {},
  ) {
    super(detail);
    this.headers = options.headers ?? {};
    this.extra = options.extra ?? {};
  }

  /** The same error with more fields in its body. */
  withExtra(extra: Record<string, unknown>): AppError {
    return new AppError(this.status, this.code, this.message, { headers: this.headers, extra: { ...this.extra, ...extra } });
  }
}

/** The error constructor of a service's codes (and core's): `defineErrors({ JOB_NOT_FOUND: 404 })('JOB_NOT_FOUND', detail)`. */
export function defineErrors<const T extends Record<string, number>>(table: T) {
  const statuses: Record<string, number> = { ...CORE_ERRORS, ...table };
  return (code: keyof typeof CORE_ERRORS | (keyof T & ErrorCode), detail: string, options?: AppErrorOptions) => new AppError(statuses[code], code, detail, options);
}

/** An error of one of core's codes. */
export const appError = defineErrors({});

/** Whether `error` is an AppError with one of `codes`: `isAppError(error, 'DEFINITION_CONFLICT', 'ALREADY_EXISTS')`. */
export function isAppError<C extends ErrorCode>(error: unknown, ...codes: [C, ...C[]]): error is AppError & { code: C } {
  return error instanceof AppError && (codes as ErrorCode[]).includes(error.code);
}

/** A 422 found by a service after schema validation, answered in FastAPI's HTTPValidationError shape. */
export class RequestValidationError extends Error {
  constructor(readonly issues: { loc: (string | number)[]; msg: string; type: string }[]) {
    super(issues.map((i) => i.msg).join('; '));
  }

  static at(loc: (string | number)[], msg: string, type = 'value_error') {
    return new RequestValidationError([{ loc, msg, type }]);
  }
}
