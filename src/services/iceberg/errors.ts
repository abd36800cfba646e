import { z } from 'zod';
import { defineErrors } from '../../core/errors/index.ts';

export const ICEBERG_ERRORS = {
  UNSUPPORTED_OPERATION: 406,
  WAREHOUSE_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
  RANGE_NOT_SATISFIABLE: 416,
} as const;

declare module '../../core/errors/app-error.ts' {
  interface ErrorStatuses extends Readonly<typeof ICEBERG_ERRORS> {}
}

export const icebergError = defineErrors(ICEBERG_ERRORS);

/** The Iceberg REST spec's error body (`IcebergErrorResponse`), which every /iceberg answer of 400 or more has. */
export const IcebergErrorResponse = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string().describe('The Iceberg exception type, e.g. NoSuchTableException'),
      code: z.number().int().describe('The HTTP status'),
    }),
  })
  .meta({ id: 'IcebergErrorResponse' });

/** The header that carries Lakeport's own error code beside the Iceberg body. */
export const ERROR_CODE_HEADER = 'x-lakeport-error-code';

/** Iceberg exception types by Lakeport code, where the status alone does not say (a 404 of a namespace or of a table). */
const TYPE_BY_CODE: Record<string, string> = {
  NAMESPACE_NOT_FOUND: 'NoSuchNamespaceException',
  COLLECTION_NOT_FOUND: 'NoSuchNamespaceException',
  WORKSPACE_NOT_FOUND: 'NoSuchNamespaceException',
  DATASET_NOT_FOUND: 'NoSuchTableException',
  SNAPSHOT_NOT_FOUND: 'NoSuchTableException',
  TAG_NOT_FOUND: 'NoSuchTableException',
  SNAPSHOT_EXPIRED: 'NoSuchTableException',
  WAREHOUSE_NOT_FOUND: 'NoSuchWarehouseException',
  UNSUPPORTED_OPERATION: 'UnsupportedOperationException',
};

/** Iceberg exception types by status (those of Iceberg's REST ErrorHandlers). */
const TYPE_BY_STATUS: Record<number, string> = {
  400: 'BadRequestException',
  401: 'NotAuthorizedException',
  403: 'ForbiddenException',
  404: 'NotFoundException',
  405: 'BadRequestException',
  406: 'UnsupportedOperationException',
  409: 'ConflictException',
  416: 'BadRequestException',
  429: 'TooManyRequestsException',
  503: 'ServiceUnavailableException',
};

/**
 * Lakeport's error body (`{detail, code}`, or a 422's list of issues) in the Iceberg REST shape
 * `{"error": {message, type, code: <status>}}`: the one error handler answers every /iceberg route,
 * and this rewrites its body on the way out (see routes.ts). A validation error becomes the spec's
 * 400 BadRequestException. OAuth errors of the token endpoint (`error` a string) stay as they are,
 * as do bodies that are not errors. Lakeport's code goes in the ERROR_CODE_HEADER.
 */
export function icebergErrorBody(status: number, payload: string): { status: number; body: string; code?: string } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const { detail, code, error } = parsed as { detail?: unknown; code?: unknown; error?: unknown };
  if (typeof error === 'string' || (detail === undefined && code === undefined)) return undefined;
  const validation = Array.isArray(detail);
  const message = validation ? (detail as { loc?: unknown[]; msg?: string }[]).map((d) => `${(d.loc ?? []).join('.')}: ${d.msg ?? 'invalid'}`).join('; ') : String(detail);
  const answered = validation ? 400 : status;
  const lakeportCode = typeof code === 'string' ? code : validation ? 'VALIDATION_ERROR' : undefined;
  const type = (lakeportCode && TYPE_BY_CODE[lakeportCode]) ?? TYPE_BY_STATUS[answered] ?? (answered >= 500 ? 'InternalServerError' : 'BadRequestException');
  return { status: answered, body: JSON.stringify({ error: { message, type, code: answered } }), code: lakeportCode };
}
