import { z } from 'zod';
import { OutboundError, type OutboundHttp, type OutboundRequest, type OutboundResponse } from '../../core/net/index.ts';

/**
 * The client side of the Apache Iceberg REST catalog protocol, as much as a binding needs: the
 * OAuth2 client-credentials exchange, `GET /v1/config`, and listing namespaces and tables with
 * pagination (docs/catalog-bindings.md). Every call goes through the guarded outbound client.
 */

/** Where the catalog is: `uri` (its base URL), `warehouse` and `prefix` as PyIceberg and Spark name them. */
export interface IcebergRestTarget {
  uri: string;
  warehouse?: string;
  prefix?: string;
}

export type CatalogAuth =
  | { type: 'bearer'; token: string }
  | { type: 'oauth2'; client_id: string; client_secret: string; oauth2_server_uri?: string; scope?: string };

/** A table of the external catalog. */
export interface TableIdentifier {
  namespace: string[];
  name: string;
}

/** Why the catalog failed (not the caller): what `ok: false` and the 502/504 of a sync report. */
export type CatalogFailureReason = 'timeout' | 'unreachable' | 'auth_refused' | 'http_error' | 'invalid_response' | 'too_large';

export class CatalogCallError extends Error {
  constructor(
    readonly reason: CatalogFailureReason,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** How much of a catalog a sync reads at most (a bigger one is refused, `too_large`). */
export const LISTING_LIMITS = { namespaces: 10_000, tables: 10_000, depth: 8, pages: 1_000 };

/** The token endpoint clients use when none is configured (the REST spec's, relative to `uri`). */
export const DEFAULT_TOKEN_PATH = '/v1/oauth/tokens';
export const DEFAULT_SCOPE = 'catalog';

const ConfigResponse = z.object({
  defaults: z.record(z.string(), z.unknown()).nullish(),
  overrides: z.record(z.string(), z.unknown()).nullish(),
});
const TokenResponse = z.object({ access_token: z.string().min(1), token_type: z.string().optional() });
const PageToken = z.string().nullish();
const NamespacesPage = z.object({ namespaces: z.array(z.array(z.string())), 'next-page-token': PageToken });
const TablesPage = z.object({ identifiers: z.array(z.object({ namespace: z.array(z.string()), name: z.string() })), 'next-page-token': PageToken });
/** The catalog's own error answer (IcebergErrorResponse) or an OAuth2 one (RFC 6749 §5.2). */
const ErrorBody = z.union([
  z.object({ error: z.object({ message: z.string().optional(), type: z.string().optional() }) }),
  z.object({ error: z.string(), error_description: z.string().optional() }),
]);

/** The base URL without a trailing slash, with `path` appended. */
export function endpoint(uri: string, path: string): string {
  return `${uri.replace(/\/+$/, '')}${path}`;
}

/** A namespace as one path segment: its parts joined by the unit separator (0x1F), percent-encoded. */
export function namespacePath(namespace: readonly string[]): string {
  return encodeURIComponent(namespace.join('\u001f'));
}

/** A session with one catalog: authenticated (if it needs it) and configured by its `/v1/config`. */
export class IcebergRestSession {
  private constructor(
    private readonly http: OutboundHttp,
    private readonly target: IcebergRestTarget,
    private readonly headers: Record<string, string>,
    /** The effective prefix (the server's overrides over the client's config over its defaults). */
    readonly prefix: string | undefined,
    /** Secret values never to be repeated in a message. */
    private readonly secrets: string[],
  ) {}

  /** The token exchange when configured, then `GET {uri}/v1/config?warehouse=…`. */
  static async open(http: OutboundHttp, target: IcebergRestTarget, auth: CatalogAuth | undefined): Promise<IcebergRestSession> {
    const secrets = auth?.type === 'bearer' ? [auth.token] : auth?.type === 'oauth2' ? [auth.client_secret] : [];
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'lakeport' };
    if (auth) {
      const token = auth.type === 'bearer' ? auth.token : await exchangeToken(http, target, auth, secrets);
      headers.authorization = `Bearer ${token}`;
      secrets.push(token);
    }
    const query = target.warehouse === undefined ? '' : `?${new URLSearchParams({ warehouse: target.warehouse })}`;
    const config = parse(ConfigResponse, await call(http, endpoint(target.uri, `/v1/config${query}`), { headers }, secrets), 'GET /v1/config');
    const merged = { ...config.defaults, ...(target.prefix === undefined ? {} : { prefix: target.prefix }), ...config.overrides };
    const prefix = typeof merged.prefix === 'string' && merged.prefix !== '' ? merged.prefix : undefined;
    return new IcebergRestSession(http, target, headers, prefix, secrets);
  }

  private path(rest: string): string {
    const prefix = this.prefix === undefined ? '' : `/${this.prefix.split('/').map(encodeURIComponent).join('/')}`;
    return endpoint(this.target.uri, `/v1${prefix}${rest}`);
  }

  /** Every page of a listing: `pageToken` empty at first, then each `next-page-token` until none. */
  private async pages<T>(base: string, schema: z.ZodType<T & { 'next-page-token'?: string | null }>, what: string): Promise<T[]> {
    const pages: T[] = [];
    const seen = new Set<string>();
    let token = '';
    for (;;) {
      if (pages.length >= LISTING_LIMITS.pages) throw new CatalogCallError('too_large', `${what}: more than ${LISTING_LIMITS.pages} pages`);
      const url = `${base}${base.includes('?') ? '&' : '?'}${new URLSearchParams({ pageToken: token })}`;
      const page = parse(schema, await call(this.http, url, { headers: this.headers }, this.secrets), what);
      pages.push(page);
      const next = page['next-page-token'];
      if (next === undefined || next === null || next === '') return pages;
      if (seen.has(next)) throw new CatalogCallError('invalid_response', `${what}: the catalog repeated a page token`);
      seen.add(next);
      token = next;
    }
  }

  /** The namespaces directly under `parent` (top-level ones without it). */
  async listNamespaces(parent: readonly string[] = []): Promise<string[][]> {
    const query = parent.length === 0 ? '' : `?parent=${namespacePath(parent)}`;
    const pages = await this.pages(this.path(`/namespaces${query}`), NamespacesPage, 'GET namespaces');
    return pages.flatMap((p) => p.namespaces);
  }

  async listTables(namespace: readonly string[]): Promise<TableIdentifier[]> {
    const pages = await this.pages(this.path(`/namespaces/${namespacePath(namespace)}/tables`), TablesPage, 'GET tables');
    return pages.flatMap((p) => p.identifiers);
  }
}

/** The test: a session (token, config), then the top-level namespaces. */
export async function probeCatalog(http: OutboundHttp, target: IcebergRestTarget, auth: CatalogAuth | undefined) {
  const session = await IcebergRestSession.open(http, target, auth);
  const namespaces = await session.listNamespaces();
  return { prefix: session.prefix ?? null, namespaces: namespaces.length };
}

/**
 * Everything a sync needs, read before anything is written: every namespace (nested ones through
 * `parent`, up to LISTING_LIMITS.depth levels) and the tables of each. A server that ignores
 * `parent` and answers every namespace is fine: only namespaces below the parent are followed, once.
 */
export async function listCatalog(http: OutboundHttp, target: IcebergRestTarget, auth: CatalogAuth | undefined) {
  const session = await IcebergRestSession.open(http, target, auth);
  const namespaces: string[][] = [];
  const seen = new Set<string>();
  const queue: string[][] = [[]];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    if (parent.length >= LISTING_LIMITS.depth) continue;
    for (const namespace of await session.listNamespaces(parent)) {
      const key = namespace.join('\u001f');
      const below = namespace.length > parent.length && parent.every((part, i) => namespace[i] === part);
      if (!below || seen.has(key) || namespace.length === 0) continue;
      seen.add(key);
      if (seen.size > LISTING_LIMITS.namespaces) throw new CatalogCallError('too_large', `the catalog has more than ${LISTING_LIMITS.namespaces} namespaces`);
      namespaces.push(namespace);
      queue.push(namespace);
    }
  }
  const tables: TableIdentifier[] = [];
  for (const namespace of namespaces) {
    tables.push(...(await session.listTables(namespace)));
    if (tables.length > LISTING_LIMITS.tables) throw new CatalogCallError('too_large', `the catalog has more than ${LISTING_LIMITS.tables} tables`);
  }
  return { prefix: session.prefix ?? null, namespaces, tables };
}

/** POST the client credentials to the token endpoint (form-encoded, RFC 6749 §4.4); the access token. */
async function exchangeToken(http: OutboundHttp, target: IcebergRestTarget, auth: Extract<CatalogAuth, { type: 'oauth2' }>, secrets: string[]): Promise<string> {
  const url = auth.oauth2_server_uri ?? endpoint(target.uri, DEFAULT_TOKEN_PATH);
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: auth.client_id, client_secret: auth.client_secret, scope: auth.scope ?? DEFAULT_SCOPE });
  const init = { method: 'POST' as const, headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'lakeport' }, body: body.toString() };
  // A token endpoint refuses bad client credentials with 400 (invalid_client, invalid_grant) or 401.
  const answer = await call(http, url, init, secrets, [400, 401, 403]);
  return parse(TokenResponse, answer, 'the token exchange').access_token;
}

/**
 * One call; a non-2xx answer or a failed call is a CatalogCallError (`refusals`: the statuses that
 * mean the credentials were refused). Address refusals and bad URLs stay OutboundErrors: the caller's.
 */
async function call(http: OutboundHttp, url: string, init: OutboundRequest, secrets: string[], refusals = [401, 403, 419]): Promise<unknown> {
  const what = `${init.method ?? 'GET'} ${describeUrl(url)}`;
  let answer: OutboundResponse;
  try {
    answer = await http.request(url, init);
  } catch (error) {
    if (!(error instanceof OutboundError) || error.kind === 'address_refused' || error.kind === 'invalid_url') throw error;
    const reason = error.kind === 'too_large' ? 'too_large' : error.kind;
    throw new CatalogCallError(reason, `${what}: ${error.message}`);
  }
  if (answer.status < 200 || answer.status > 299) {
    const said = scrub(catalogMessage(answer.body), secrets);
    const reason = refusals.includes(answer.status) ? 'auth_refused' : 'http_error';
    throw new CatalogCallError(reason, `${what} answered ${answer.status}${said ? `: ${said}` : ''}`, answer.status);
  }
  try {
    return JSON.parse(answer.body.toString('utf8'));
  } catch {
    throw new CatalogCallError('invalid_response', `${what} answered ${answer.status} with something that is not JSON`, answer.status);
  }
}

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new CatalogCallError('invalid_response', `${what}: the answer is not an Iceberg REST ${what.startsWith('GET') ? 'listing' : 'answer'} (${parsed.error.issues[0]?.path.join('.') || 'body'})`);
  return parsed.data;
}

/** The catalog's own words from an error answer, short; nothing when it gave none. */
function catalogMessage(body: Buffer): string {
  try {
    const parsed = ErrorBody.safeParse(JSON.parse(body.toString('utf8')));
    if (!parsed.success) return '';
    const answer = parsed.data;
    const parts = typeof answer.error === 'string' ? [answer.error, 'error_description' in answer ? answer.error_description : undefined] : [answer.error.type, answer.error.message];
    const text = parts.filter(Boolean).join(': ');
    return text.replace(/[\u0000-\u001f]+/g, ' ').slice(0, 200);
  } catch {
    return '';
  }
}

/** A message with every secret value taken out (a catalog could echo what it was sent). */
function scrub(text: string, secrets: readonly string[]): string {
  return secrets.filter((s) => s.length > 0).reduce((out, secret) => out.split(secret).join('[redacted]'), text);
}

/** The URL as messages show it: scheme, host and path (no query string). */
function describeUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}
