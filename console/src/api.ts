/**
 * The console's one way to the API: an openapi-fetch client typed by the services' generated OpenAPI
 * types (src/client/generated, `npm run openapi:types`), authenticated by the session cookies.
 *
 * - Unsafe methods carry `X-CSRF-Token` (the readable `lakeport_csrf` cookie; docs/auth.md#cookies).
 * - A 401 from any call but sign-in ends the session: `onSessionExpired` listeners run (the app
 *   returns to sign-in and back to the same page after).
 * - `data()` turns every failure into an ApiError: plain words + the API's code, which
 *   errors.tsx renders (the one place errors are shown).
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths as AuthPaths } from '../../src/client/generated/auth.ts';
import type { paths as BillingPaths } from '../../src/client/generated/billing.ts';
import type { paths as ControlPaths } from '../../src/client/generated/control.ts';
import type { paths as IcebergPaths } from '../../src/client/generated/iceberg.ts';
import type { paths as JobsPaths, components as JobsComponents } from '../../src/client/generated/jobs.ts';
import type { paths as ODataPaths } from '../../src/client/generated/odata.ts';
import type { paths as PolicyPaths } from '../../src/client/generated/policy.ts';
import type { paths as UploadPaths } from '../../src/client/generated/upload.ts';

export type Paths = AuthPaths & BillingPaths & ControlPaths & IcebergPaths & JobsPaths & ODataPaths & PolicyPaths & UploadPaths;
export type JobsSchemas = JobsComponents['schemas'];
export type Job = JobsSchemas['Job'];
export type ResultsPage = JobsSchemas['ResultsPage'];
export type CheckResult = JobsSchemas['CheckResult'];

export const CSRF_COOKIE = 'lakeport_csrf';
export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function csrfToken(): string | undefined {
  const entry = document.cookie.split('; ').find((c) => c.startsWith(`${CSRF_COOKIE}=`));
  return entry ? decodeURIComponent(entry.slice(CSRF_COOKIE.length + 1)) : undefined;
}

/** Headers a hand-made fetch needs (uploads with progress use XMLHttpRequest): the CSRF header for unsafe methods. */
export function sessionHeaders(method: string): Record<string, string> {
  const token = SAFE_METHODS.has(method.toUpperCase()) ? undefined : csrfToken();
  return token ? { [CSRF_HEADER]: token } : {};
}

type Listener = () => void;
const expiredListeners = new Set<Listener>();
/** Called when the API answers 401 (the session cookie is missing, expired or revoked). */
export function onSessionExpired(listener: Listener): () => void {
  expiredListeners.add(listener);
  return () => expiredListeners.delete(listener);
}
/** Bumped at each sign-in: a 401 to a request sent before it belongs to the old session and is ignored. */
let sessionEpoch = 0;
const sentIn = new WeakMap<Request, number>();

export function sessionExpired(epoch = sessionEpoch): void {
  if (epoch !== sessionEpoch) return;
  for (const listener of expiredListeners) listener();
}

const session: Middleware = {
  onRequest({ request }) {
    sentIn.set(request, sessionEpoch);
    for (const [name, value] of Object.entries(sessionHeaders(request.method))) request.headers.set(name, value);
    if (!request.headers.has('accept')) request.headers.set('accept', 'application/json');
    return request;
  },
  onResponse({ request, response }) {
    const url = new URL(request.url);
    if (response.status === 401 && url.pathname !== '/auth/token') sessionExpired(sentIn.get(request));
    return response;
  },
};

export const api = createClient<Paths>({ baseUrl: location.origin, credentials: 'same-origin' });
api.use(session);

/** An API failure in plain words: `title` says what kind, `detail` the server's words, `code` its code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    readonly detail: string,
  ) {
    super(`${title}: ${detail} (${code})`);
  }
}

const TITLES: Record<number, string> = {
  400: 'The request was not accepted',
  401: 'You are not signed in',
  403: 'You are not allowed to do this',
  404: 'Not found',
  409: 'Conflict',
  410: 'Gone',
  413: 'Too large',
  422: 'Some input is not valid',
  429: 'Too many requests: wait a moment',
  501: 'Not available',
  502: 'A service Lakeport depends on failed',
  503: 'Lakeport is unavailable right now',
  504: 'A service Lakeport depends on did not answer in time',
};

const titleOf = (status: number) => TITLES[status] ?? (status >= 500 ? 'Lakeport failed to answer' : `The request failed (HTTP ${status})`);

/**
 * Reads any of the API's error shapes: `{detail, code}`, FastAPI's 422 `{detail: [{loc, msg}]}`,
 * OAuth's `{error, error_description}` and Iceberg's `{error: {message, type}}`.
 */
export function toApiError(status: number, body: unknown): ApiError {
  const title = titleOf(status);
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    if (Array.isArray(b.detail)) {
      const issues = (b.detail as { loc?: unknown[]; msg?: string }[]).map((d) => `${(d.loc ?? []).filter((l) => l !== 'body').join('.')}: ${d.msg ?? 'invalid'}`);
      return new ApiError(status, 'VALIDATION_ERROR', title, issues.join('; '));
    }
    if (b.error && typeof b.error === 'object') {
      const e = b.error as { message?: string; type?: string };
      return new ApiError(status, String(b.code ?? e.type ?? `HTTP_${status}`), title, e.message ?? 'no details');
    }
    const detail = typeof b.detail === 'string' ? b.detail : typeof b.error_description === 'string' ? b.error_description : undefined;
    const code = typeof b.code === 'string' ? b.code : typeof b.error === 'string' ? b.error : `HTTP_${status}`;
    if (detail) return new ApiError(status, code, title, detail);
  }
  if (typeof body === 'string' && body.trim()) return new ApiError(status, `HTTP_${status}`, title, body.trim().slice(0, 300));
  return new ApiError(status, `HTTP_${status}`, title, 'The server gave no details.');
}

export const networkError = (cause: unknown) =>
  new ApiError(0, 'NETWORK_ERROR', 'Lakeport could not be reached', `Check the connection and try again (${cause instanceof Error ? cause.message : String(cause)}).`);

/** The answer's data, or an ApiError for a failure (never a silent undefined). */
export async function data<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await call;
  } catch (error) {
    throw error instanceof ApiError ? error : networkError(error);
  }
  if (!result.response.ok) throw toApiError(result.response.status, result.error);
  return result.data as T;
}

/** A GET of a path the generated types do not describe as JSON (OData $metadata XML, files): the text, or an ApiError. */
export async function getText(path: string, accept = '*/*'): Promise<string> {
  let response: Response;
  const epoch = sessionEpoch;
  try {
    response = await fetch(path, { credentials: 'same-origin', headers: { accept } });
  } catch (error) {
    throw networkError(error);
  }
  if (response.status === 401) sessionExpired(epoch);
  const text = await response.text();
  if (!response.ok) {
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON: shown as text */
    }
    throw toApiError(response.status, body);
  }
  return text;
}

// ---- session ----------------------------------------------------------------------------------

/** Exchanges a client id + credential secret for the session cookies (`POST /auth/token?set_cookie=true`); the token itself is dropped. */
export async function signInWithSecret(clientId: string, secret: string): Promise<void> {
  await data(
    api.POST('/auth/token', {
      params: { query: { set_cookie: true } },
      body: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret },
      bodySerializer: (body) => new URLSearchParams(body as Record<string, string>).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }),
  );
  sessionEpoch++;
}

export async function signOut(): Promise<void> {
  await data(api.POST('/auth/logout', {}));
}

export const whoAmI = () => data(api.GET('/auth/me', {}));
export type Me = Awaited<ReturnType<typeof whoAmI>>;
export const identityProviders = () => data(api.GET('/auth/providers', {}));
