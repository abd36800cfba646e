import { lineColumn } from '../../../core/engine/index.ts';
import type { AppError, ErrorCode } from '../../../core/errors/index.ts';
import { jobsError, type JobsErrorCode } from '../errors.ts';

/** A span of the user's SQL text (UTF-16 offsets, end exclusive) for the check endpoint to underline. */
export interface Span {
  start: number;
  end: number;
}

/**
 * An error in a Lakeport statement, with the place in the text it is about. Raised by the parser and
 * by the statement checks before anything is changed; the submit answers it as its HTTP error and the
 * check endpoint as `ok: false` with the span underlined.
 *
 * Messages never quote a value of a CREATE SECRET: they name keys, parameters and kinds of token only.
 */
export class StatementError extends Error {
  constructor(
    /** What a submit answers, without the place. */
    readonly http: AppError,
    readonly span?: Span,
  ) {
    super(http.message);
  }

  get code(): ErrorCode {
    return this.http.code;
  }
}

/** A statement's own error about `span`. */
export function statementError(code: JobsErrorCode, message: string, span?: Span): StatementError {
  return new StatementError(jobsError(code, message), span);
}

/** The place of a span in the text: offsets and 1-based line and column of its start. */
export function placeOf(sql: string, span: Span | undefined) {
  if (!span) return { position: null, line: null, column: null, start: null, end: null };
  return { position: span.start, ...lineColumn(sql, span.start), start: span.start, end: Math.max(span.end, span.start + 1) };
}

/** The HTTP error a submit answers for a StatementError: `{detail, code, position, line, column, start, end}`. */
export function toHttpError(sql: string, error: StatementError): AppError {
  const place = placeOf(sql, error.span);
  return error.http.withExtra(error.span ? place : {});
}
