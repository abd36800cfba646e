/** Stable, documented error codes. Every non-validation error response carries one. */
export type ErrorCode =
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'INVALID_TOKEN'
  | 'FORBIDDEN'
  | 'INSUFFICIENT_SCOPE'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT'
  | 'GONE'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'TOO_MANY_REQUESTS'
  | 'LOCKED'
  | 'NOT_IMPLEMENTED'
  | 'BAD_GATEWAY'
  | 'GATEWAY_TIMEOUT'
  | 'INTERNAL_ERROR'
  | 'CREDENTIAL_NOT_FOUND'
  | (string & {});

export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly headers: Record<string, string>;
  /** Extra fields merged into the body (e.g. OAuth's `error`). */
  readonly extra: Record<string, unknown>;

  constructor(
    status: number,
    code: ErrorCode,
    detail: string,
    options: { headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
  ) {
    super(detail);
    this.status = status;
    this.code = code;
    this.headers = options.headers ?? {};
    this.extra = options.extra ?? {};
  }

  static badRequest(detail: string, code: ErrorCode = 'BAD_REQUEST') {
    return new AppError(400, code, detail);
  }
  static unauthorized(detail = 'Not authenticated', code: ErrorCode = 'UNAUTHORIZED') {
    return new AppError(401, code, detail, { headers: { 'www-authenticate': 'Bearer realm="lakeport"' } });
  }
  static forbidden(detail: string, code: ErrorCode = 'FORBIDDEN') {
    return new AppError(403, code, detail);
  }
  static notFound(detail: string, code: ErrorCode = 'NOT_FOUND') {
    return new AppError(404, code, detail);
  }
  static conflict(detail: string, code: ErrorCode = 'CONFLICT') {
    return new AppError(409, code, detail);
  }
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
