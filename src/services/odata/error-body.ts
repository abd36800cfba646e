/**
 * OData clients find an error by its `error` member (OData JSON Format §21); Lakeport's errors are
 * `{detail, code}`. An OData error answer carries both: Lakeport's fields and, beside them,
 * `error: {code, message}` with the same code and text, so @odata/client, Power BI and .NET clients
 * report the error instead of taking the body for data.
 */
export function withODataErrorMember(payload: string): string {
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return payload;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body) || 'error' in body) return payload;
  const { detail, code } = body as { detail?: unknown; code?: unknown };
  // A 422's detail is FastAPI's list of issues; its first message stands for the whole.
  const message = typeof detail === 'string' ? detail : Array.isArray(detail) ? (detail as { msg?: string }[]).map((d) => d.msg).filter(Boolean).join('; ') : undefined;
  if (message === undefined) return payload;
  return JSON.stringify({ ...body, error: { code: typeof code === 'string' ? code : 'VALIDATION_ERROR', message } });
}
