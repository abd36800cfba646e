import { lineColumn } from '../../../core/engine/index.ts';
import { AppError } from '../../../core/errors/index.ts';

/** A span of the user's SQL text (UTF-16 offsets, end exclusive) for the check endpoint to underline. */
export interface Span {
  start: number;
  end: number;
}

/**
 * An error in a Lakeport statement, with the place in the text it is about. Raised by the parser and
 * by the statement checks before anything is changed; the submit answers it as an HTTP error (400
 * unless said otherwise) and the check endpoint as `ok: false` with the span underlined.
 *
 * Messages never quote a value of a CREATE SECRET: they name keys, parameters and kinds of token only.
 */
export class StatementError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly span?: Span,
    readonly status = 400,
  ) {
    super(message);
  }
}

/** The place of a span in the text: offsets and 1-based line and column of its start. */
export function placeOf(sql: string, span: Span | undefined) {
  if (!span) return { position: null, line: null, column: null, start: null, end: null };
  return { position: span.start, ...lineColumn(sql, span.start), start: span.start, end: Math.max(span.end, span.start + 1) };
}

/** The HTTP error a submit answers for a StatementError: `{detail, code, position, line, column, start, end}`. */
export function toHttpError(sql: string, error: StatementError): AppError {
  const place = placeOf(sql, error.span);
  return new AppError(error.status, error.code, error.message, { extra: error.span ? place : {} });
}
