/**
 * A small Apache Iceberg REST catalog for binding tests, following the REST spec
 * (open-api/rest-catalog-open-api.yaml) for what a binding calls: `GET /v1/config` (prefix in the
 * overrides), the OAuth2 client-credentials token endpoint, listing namespaces (`parent`, 0x1F
 * separators) and tables, both paginated (`pageToken` / `next-page-token`) when the client sends a
 * `pageToken`; errors as IcebergErrorResponse. It can also misbehave on demand: hang, answer 500 or
 * answer garbage, at any one step. It listens on 127.0.0.1 (port 0) and records every request.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeFailure = 'hang' | 'error500' | 'garbage' | 'not_json';
export type FakeStep = 'token' | 'config' | 'namespaces' | 'tables';

export interface FakeCatalogOptions {
  /** The prefix the catalog asks clients to use (its /v1/config `overrides.prefix`). */
  prefix?: string;
  /** The warehouse it serves: /v1/config with another `warehouse` is 400. */
  warehouse?: string;
  /** Credentials it accepts: client credentials (exchanged at /v1/oauth/tokens) or a fixed bearer token; none: open. */
  clients?: Record<string, string>;
  token?: string;
  /** Listing: namespace (parts joined by '.') → its tables. Parent namespaces are implied. */
  tables: Record<string, string[]>;
  /** Items per page when the client asks for pages. */
  pageSize?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  authorization: string | undefined;
  body: string;
}

export interface FakeIcebergCatalog {
  url: string;
  requests: RecordedRequest[];
  /** Misbehave at `step` (every step when omitted) from now on; `undefined` heals it. */
  fail(failure: FakeFailure | undefined, step?: FakeStep): void;
  setTables(tables: Record<string, string[]>): void;
  stop(): Promise<void>;
}

const SEP = '\u001f';

export async function startFakeIcebergCatalog(options: FakeCatalogOptions): Promise<FakeIcebergCatalog> {
  let tables = options.tables;
  let failure: { kind: FakeFailure; step?: FakeStep } | undefined;
  const issued = new Set<string>();
  const requests: RecordedRequest[] = [];
  const prefix = options.prefix;

  const namespaces = () => {
    const all = new Map<string, string[]>();
    for (const ns of Object.keys(tables)) {
      const parts = ns.split('.');
      for (let i = 1; i <= parts.length; i++) all.set(parts.slice(0, i).join(SEP), parts.slice(0, i));
    }
    return [...all.values()];
  };

  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const icebergError = (res: http.ServerResponse, status: number, type: string, message: string) => json(res, status, { error: { message, type, code: status } });

  /** One page of `items` (all of them when the client did not ask for pages). */
  const page = (query: URLSearchParams, items: unknown[]) => {
    const token = query.get('pageToken');
    if (token === null || !options.pageSize) return { items, next: undefined };
    const start = token === '' ? 0 : Number(token);
    const end = start + options.pageSize;
    return { items: items.slice(start, end), next: end < items.length ? String(end) : null };
  };

  const misbehave = (res: http.ServerResponse, step: FakeStep): boolean => {
    if (!failure || (failure.step && failure.step !== step)) return false;
    if (failure.kind === 'hang') return true; // never answers
    if (failure.kind === 'error500') icebergError(res, 500, 'ServerError', 'the catalog fell over');
    else if (failure.kind === 'garbage') json(res, 200, { tables: 'no', namespaces: 42, overrides: 'x', access_token: 7 });
    else {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>a login page</html>');
    }
    return true;
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method ?? '', path: url.pathname, query: url.searchParams, authorization: req.headers.authorization, body });

      if (req.method === 'POST' && url.pathname === '/v1/oauth/tokens') {
        if (misbehave(res, 'token')) return;
        const form = new URLSearchParams(body);
        const secret = options.clients?.[form.get('client_id') ?? ''];
        if (form.get('grant_type') !== 'client_credentials' || secret === undefined || secret !== form.get('client_secret')) {
          return json(res, 401, { error: 'invalid_client', error_description: `client ${form.get('client_id')} is unknown or its secret is wrong` });
        }
        const token = `tok-${issued.size + 1}-${Math.random().toString(36).slice(2)}`;
        issued.add(token);
        return json(res, 200, { access_token: token, token_type: 'bearer', expires_in: 3600, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' });
      }

      const bearer = req.headers.authorization?.replace(/^Bearer /, '');
      const open = !options.clients && !options.token;
      if (!open && !(bearer && (issued.has(bearer) || bearer === options.token))) return icebergError(res, 401, 'NotAuthorizedException', 'Not authorized');

      if (req.method === 'GET' && url.pathname === '/v1/config') {
        if (misbehave(res, 'config')) return;
        if (options.warehouse && url.searchParams.get('warehouse') !== options.warehouse) return icebergError(res, 400, 'BadRequestException', 'unknown warehouse');
        return json(res, 200, { defaults: { 'clients': '4' }, overrides: prefix ? { prefix } : {} });
      }

      const base = prefix ? `/v1/${prefix}` : '/v1';
      if (req.method === 'GET' && url.pathname === `${base}/namespaces`) {
        if (misbehave(res, 'namespaces')) return;
        const parent = url.searchParams.get('parent');
        const parts = parent ? parent.split(SEP) : [];
        if (parent && !namespaces().some((ns) => ns.join(SEP) === parent)) return icebergError(res, 404, 'NoSuchNamespaceException', 'no such namespace');
        const children = namespaces().filter((ns) => ns.length === parts.length + 1 && parts.every((p, i) => ns[i] === p));
        const { items, next } = page(url.searchParams, children);
        return json(res, 200, { namespaces: items, ...(next === undefined ? {} : { 'next-page-token': next }) });
      }
      const tablesPath = new RegExp(`^${base}/namespaces/([^/]+)/tables$`).exec(url.pathname);
      if (req.method === 'GET' && tablesPath) {
        if (misbehave(res, 'tables')) return;
        const ns = decodeURIComponent(tablesPath[1]).split(SEP);
        if (!namespaces().some((n) => n.join(SEP) === ns.join(SEP))) return icebergError(res, 404, 'NoSuchNamespaceException', 'no such namespace');
        const identifiers = (tables[ns.join('.')] ?? []).map((name) => ({ namespace: ns, name }));
        const { items, next } = page(url.searchParams, identifiers);
        return json(res, 200, { identifiers: items, ...(next === undefined ? {} : { 'next-page-token': next }) });
      }
      return icebergError(res, 404, 'NotFoundException', `no route ${req.method} ${url.pathname}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    fail: (kind, step) => void (failure = kind && { kind, step }),
    setTables: (next) => void (tables = next),
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
