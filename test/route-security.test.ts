/**
 * Route-table security walk: every route the application registers must refuse a caller without
 * valid credentials, unless it is on the explicit public allow-list below.
 *
 * How the route table is collected. `buildApp` (src/app.ts) creates its own Fastify instance and
 * registers every route before returning, and Fastify refuses `addHook('onRoute')` once routes are
 * in (and after ready). Parsing `printRoutes()` means parsing an ASCII tree whose shape changes
 * between Fastify versions, and `hasRoute` can only confirm routes we already know. So this file
 * wraps the `fastify` factory with `vi.mock`: every instance it creates gets an `onRoute` hook at
 * construction, before any plugin runs, and onRoute hooks are inherited by every encapsulated
 * child context (services, prefixes, sub-contexts). We therefore see each route exactly as Fastify
 * registered it — full URL with prefix, methods, including the HEAD routes Fastify adds for GETs —
 * without touching src/. Each collected route is cross-checked with `app.hasRoute`.
 *
 * A new route is walked automatically; if it is not protected the test fails until it either is,
 * or it is added (with a reason) to PUBLIC_ROUTES.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RouteOptions } from 'fastify';

const collected = vi.hoisted(() => [] as Array<{ method: string; url: string }>);

vi.mock('fastify', async (importOriginal) => {
  const actual = await importOriginal<typeof import('fastify')>();
  const original = actual.default as unknown as (...args: unknown[]) => any;
  const wrapped = (...args: unknown[]) => {
    const app = original(...args);
    app.addHook('onRoute', (route: RouteOptions) => {
      for (const method of [route.method].flat()) collected.push({ method: String(method).toUpperCase(), url: route.url });
    });
    return app;
  };
  Object.assign(wrapped, actual);
  return { ...actual, default: wrapped, fastify: wrapped };
});

import { SCOPES } from '../src/core/authz/principal.ts';
import { createTestApp, type TestApp } from './harness.ts';
import { createWorkspace, signIn, type TestUser } from './clients.ts';

/**
 * Routes that answer without any credential, each checked against the code:
 * - GET /healthz: liveness probe of the runtime contract (DESIGN.md), `{"status":"ok"}` only (src/app.ts).
 * - GET /readyz: readiness probe of the runtime contract, `{status, checks: {database, storage}}` with
 *   `ok`/`failed`/`timeout` only, never why (core/http/readiness.ts; docs/deploy.md).
 * GET /metrics is not public: the admin token or LAKEPORT_METRICS_TOKEN (ADMIN_ONLY below).
 * - POST /auth/token: the OAuth 2.0 token endpoint; the client authenticates with its secret in the
 *   request itself (src/services/auth/routes.ts), so it cannot require a bearer token.
 * - GET /auth/jwks: public signing keys, needed by anyone verifying tokens (RFC 7517).
 * - GET /auth/.well-known/{openid-configuration,oauth-authorization-server}: discovery under the
 *   issuer (docs/auth.md "Discovery and keys"); and the RFC 8414 root form
 *   /.well-known/{oauth-authorization-server,openid-configuration}/auth and the bare root
 *   /.well-known/openid-configuration (auth.rootWellKnown).
 * - POST /iceberg/v1/oauth/tokens: the Iceberg REST catalog's token endpoint, which exchanges a client
 *   credential (its secret in the request) through the auth service's grants (src/services/iceberg/routes.ts).
 * - GET /<prefix>/openapi.json for the eight services: the OpenAPI document served by
 *   core/http/openapi.ts `serviceDocs` with no hook (DESIGN.md: "GET <prefix>/openapi.json per service").
 * - GET /odata/.well-known/llms.txt: directives for automated agents, registered outside the
 *   authenticated OData context and documented "no authentication" (docs/odata.md).
 * - GET /auth/providers, GET /auth/login, GET /auth/callback: interactive sign-in
 *   (src/services/auth/interactive-routes.ts) — the person has no token yet; the callback is
 *   authenticated by its single-use state and the provider's code and ID token.
 * - POST /auth/logout: ends the session named by the refresh cookie or a bearer token, if any;
 *   without either it only clears cookies (204).
 * OData's service document and $metadata are NOT public: they sit behind requireODataAuth.
 * HEAD variants Fastify adds for these GETs are public as well.
 */
const PUBLIC_ROUTES = new Set<string>([
  'GET /healthz',
  'GET /readyz',
  'POST /auth/token',
  'GET /auth/providers',
  'GET /auth/login',
  'GET /auth/callback',
  'POST /auth/logout',
  'GET /auth/jwks',
  'GET /auth/.well-known/openid-configuration',
  'GET /auth/.well-known/oauth-authorization-server',
  'GET /.well-known/oauth-authorization-server/auth',
  'GET /.well-known/openid-configuration/auth',
  'GET /.well-known/openid-configuration',
  'GET /auth/openapi.json',
  'GET /upload/openapi.json',
  'GET /jobs/openapi.json',
  'GET /billing/openapi.json',
  'GET /control/openapi.json',
  'GET /policy/openapi.json',
  'GET /odata/openapi.json',
  'GET /iceberg/openapi.json',
  'GET /odata/.well-known/llms.txt',
  'POST /iceberg/v1/oauth/tokens',
]);
/** Public GETs that need query parameters answer this without them (not 200). */
const PUBLIC_STATUS: Record<string, number> = { 'GET /auth/login': 422, 'GET /auth/callback': 400 };
const isPublic = (method: string, url: string) => PUBLIC_ROUTES.has(`${method === 'HEAD' ? 'GET' : method} ${url}`);

/** The scope each service prefix needs (docs/auth.md "Scopes"); /auth's own endpoints need none. */
const PREFIX_SCOPE: Record<string, string | null> = {
  '/auth': null,
  '/upload': 'upload',
  '/jobs': 'jobs',
  '/billing': 'accounts',
  '/control': 'accounts',
  '/policy': 'policy',
  '/odata': 'odata',
  // The Iceberg REST catalog reads what OData reads, under the same scope (docs/iceberg.md).
  '/iceberg': 'odata',
};
const PREFIXES = Object.keys(PREFIX_SCOPE);
const prefixOf = (url: string) => PREFIXES.find((p) => url === p || url.startsWith(`${p}/`));

/**
 * Routes that take only the x-admin-token (no bearer token of any scope opens them); GET /metrics
 * also takes LAKEPORT_METRICS_TOKEN as a bearer token, which is not set here (test/operations.test.ts).
 */
const ADMIN_ONLY = new Set(['POST /auth/admin/keys/rotate', 'GET /metrics']);

const OWNER = 'sec-owner';
const WORKSPACE = 'sec_ws';

interface Fixtures {
  accountId: string;
  credentialId: string;
}

/** A plausible value for each path parameter, so the request reaches the route rather than a 404/422. */
function expand(url: string, f: Fixtures): string {
  const values: Record<string, string> = {
    workspace: WORKSPACE,
    name: WORKSPACE,
    collection: 'sales',
    dataset: 'orders',
    entitySet: `${WORKSPACE}_sales_orders`,
    client_id: OWNER,
    credential_id: f.credentialId,
    account_id: f.accountId,
    identity: OWNER,
    policy_id: 'pol_doesnotexist0001',
    contract_id: 'ctr_doesnotexist0001',
    identifier: '01HZZZZZZZZZZZZZZZZZZZZZZZ',
    invoice_id: 'inv_doesnotexist0001',
    domain: 'example.com',
    notification_id: 'ntf_doesnotexist0001',
    prefix: 'lakeport',
    namespace: WORKSPACE,
    table: 'orders',
    dataset_id: 'ds_doesnotexist0001',
    file: 'snap-1-000000000000.avro',
  };
  const expanded = url.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_m, name: string) => {
    if (!(name in values)) throw new Error(`route ${url}: no sample value for path parameter :${name} — add one to expand()`);
    return encodeURIComponent(values[name]);
  });
  // A trailing catch-all (OData's `/api/v4/*`, which answers 404/405 to the authenticated) gets a path
  // that no other route matches; any other wildcard needs a deliberate sample.
  if (expanded.endsWith('/*') && !expanded.slice(0, -1).includes('*')) return `${expanded.slice(0, -1)}no/such/resource`;
  if (expanded.includes('*')) throw new Error(`route ${url}: wildcard routes need a sample value in expand()`);
  return expanded;
}

/**
 * Bodies for routes that authenticate inside the handler (after body validation), so a refusal is
 * the authentication's and not a 422: the token-action endpoints (form) and JSON bodies that pass
 * validation. Routes behind an onRequest auth hook refuse before the body is even parsed.
 */
function bodyFor(method: string, url: string): { payload?: string; contentType?: string } {
  if (method === 'GET' || method === 'HEAD') return {};
  if (url === '/auth/revoke' || url === '/auth/introspect') {
    return { payload: 'token=not-a-real-token', contentType: 'application/x-www-form-urlencoded' };
  }
  if (url.endsWith('/genesis')) return { payload: JSON.stringify({ grants: [{ identity: OWNER, role: 'owner' }] }), contentType: 'application/json' };
  if (url.endsWith('/contracts/:contract_id/data')) return { payload: 'a,b\n1,2\n', contentType: 'text/csv' };
  return { payload: '{}', contentType: 'application/json' };
}

describe('route table security', () => {
  let t: TestApp;
  let owner: TestUser;
  let fixtures: Fixtures;
  let routes: Array<{ method: string; url: string }>;
  let protectedRoutes: Array<{ method: string; url: string }>;
  /** A token of the owner whose credential lacks exactly the scope of each prefix. */
  const unscoped = new Map<string, string>();
  let revokedByCredential: string;
  let revokedByRevoke: string;

  /**
   * Each request from its own source address: failed client authentications (a revoked Basic
   * credential) are throttled per address, and the walk is about authentication, not the throttle.
   */
  let source = 0;
  async function call(method: string, url: string, headers: Record<string, string> = {}) {
    const { payload, contentType } = bodyFor(method, url);
    source++;
    return t.app.inject({
      method: method as 'GET',
      remoteAddress: `10.77.${(source >> 8) & 255}.${source & 255}`,
      url: expand(url, fixtures),
      headers: { ...headers, ...(contentType ? { 'content-type': contentType } : {}) },
      ...(payload !== undefined ? { payload } : {}),
    });
  }

  function expectErrorBody(res: { statusCode: number; body: string; json(): any; headers: Record<string, unknown> }, method: string, label: string, code?: string | string[]) {
    if (method === 'HEAD') return; // no body on HEAD
    const body = res.json();
    if (label.includes(' /iceberg/')) {
      // The Iceberg REST catalog answers in the Iceberg spec's shape, Lakeport's code in a header (docs/iceberg.md).
      expect(body.error, `${label}: error in ${res.body}`).toMatchObject({ message: expect.any(String), type: expect.any(String), code: res.statusCode });
      if (code !== undefined) expect([code].flat(), `${label}: code header`).toContain(res.headers['x-lakeport-error-code']);
      return;
    }
    expect(typeof body.detail, `${label}: detail in ${res.body}`).toBe('string');
    expect(typeof body.code, `${label}: code in ${res.body}`).toBe('string');
    if (code !== undefined) expect([code].flat(), `${label}: code in ${res.body}`).toContain(body.code);
  }

  beforeAll(async () => {
    collected.length = 0;
    t = await createTestApp({}, { workers: false });
    // De-duplicate (a route registered for several methods arrives once per method).
    const seen = new Set<string>();
    routes = collected.filter((r) => {
      const key = `${r.method} ${r.url}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    protectedRoutes = routes.filter((r) => !isPublic(r.method, r.url));

    owner = await signIn(t.app, t.adminToken, OWNER);
    const accountId = await createWorkspace(owner, WORKSPACE);
    fixtures = { accountId, credentialId: owner.credentialId };

    for (const [prefix, scope] of Object.entries(PREFIX_SCOPE)) {
      if (!scope) continue;
      const user = await signIn(t.app, t.adminToken, OWNER, { scopes: SCOPES.filter((s) => s !== scope) });
      unscoped.set(prefix, user.token);
    }

    // Revoked by deleting its credential (takes effect at once on this server: docs/auth.md).
    const a = await signIn(t.app, t.adminToken, OWNER);
    expect((await a.request('GET', '/auth/me')).statusCode).toBe(200);
    const del = await t.app.inject({
      method: 'DELETE',
      url: `/auth/clients/${OWNER}/credentials/${a.credentialId}`,
      headers: { 'x-admin-token': t.adminToken },
    });
    expect(del.statusCode, del.body).toBe(200);
    revokedByCredential = a.token;

    // The access token itself revoked through RFC 7009 /auth/revoke (the documented immediate path).
    const b = await signIn(t.app, t.adminToken, OWNER);
    expect((await b.request('GET', '/auth/me')).statusCode).toBe(200);
    const rev = await t.app.inject({
      method: 'POST',
      url: '/auth/revoke',
      headers: { authorization: `Bearer ${b.token}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: b.token }).toString(),
    });
    expect(rev.statusCode, rev.body).toBe(200);
    revokedByRevoke = b.token;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('collects a non-trivial, real route table across all eight service prefixes', () => {
    for (const r of routes) {
      expect(t.app.hasRoute({ method: r.method as 'GET', url: r.url }), `${r.method} ${r.url}`).toBe(true);
    }
    expect(routes.length).toBeGreaterThanOrEqual(60);
    expect(protectedRoutes.length).toBeGreaterThanOrEqual(40);
    for (const prefix of PREFIXES) {
      const n = protectedRoutes.filter((r) => prefixOf(r.url) === prefix).length;
      expect(n, `protected routes under ${prefix}`).toBeGreaterThanOrEqual(prefix === '/auth' ? 4 : 3);
    }
    // Every allow-listed route still exists (a stale entry would hide nothing, but should be pruned).
    for (const entry of PUBLIC_ROUTES) {
      const [method, url] = entry.split(' ');
      expect(t.app.hasRoute({ method: method as 'GET', url }), `allow-listed ${entry}`).toBe(true);
    }
    // Nothing outside the service prefixes except the allow-listed root routes and the admin's /metrics.
    const stray = protectedRoutes.filter((r) => prefixOf(r.url) === undefined && !ADMIN_ONLY.has(`${r.method === 'HEAD' ? 'GET' : r.method} ${r.url}`));
    expect(stray, 'protected routes outside the service prefixes').toEqual([]);
  });

  it('the public routes answer without credentials', async () => {
    for (const r of routes.filter((x) => isPublic(x.method, x.url) && x.method === 'GET')) {
      const res = await call(r.method, r.url);
      expect(res.statusCode, `${r.method} ${r.url}: ${res.body}`).toBe(PUBLIC_STATUS[`GET ${r.url}`] ?? 200);
    }
  });

  it('every other route refuses a request without a token (401 {detail, code})', async () => {
    const failures: string[] = [];
    for (const r of protectedRoutes) {
      const res = await call(r.method, r.url);
      if (res.statusCode !== 401) failures.push(`${r.method} ${r.url} → ${res.statusCode} ${res.body.slice(0, 200)}`);
      else expectErrorBody(res, r.method, `${r.method} ${r.url}`);
    }
    expect(failures).toEqual([]);
  });

  it('every scoped route refuses a token that lacks its service scope (403 INSUFFICIENT_SCOPE)', async () => {
    const failures: string[] = [];
    let walked = 0;
    for (const r of protectedRoutes) {
      const prefix = prefixOf(r.url)!;
      const token = unscoped.get(prefix);
      if (!token) continue; // /auth: no scope by design (docs/auth.md)
      walked++;
      const res = await call(r.method, r.url, { authorization: `Bearer ${token}` });
      if (res.statusCode !== 403) failures.push(`${r.method} ${r.url} → ${res.statusCode} ${res.body.slice(0, 200)}`);
      else expectErrorBody(res, r.method, `${r.method} ${r.url}`, 'INSUFFICIENT_SCOPE');
    }
    expect(walked).toBeGreaterThanOrEqual(30);
    expect(failures).toEqual([]);
  });

  it('the sanity of the scope case: each narrowed token works where it has the scope', async () => {
    for (const [prefix, token] of unscoped) {
      const res = await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${token}` } });
      expect(res.statusCode, `${prefix} token on /auth/me`).toBe(200);
      expect(res.json().scopes).not.toContain(PREFIX_SCOPE[prefix]);
    }
    const other = await t.app.inject({ method: 'GET', url: '/jobs/api/v1/variables', headers: { authorization: `Bearer ${unscoped.get('/upload')}` } });
    expect(other.statusCode, other.body).toBe(200);
  });

  it('admin-only routes refuse a full-scope bearer token without x-admin-token', async () => {
    for (const r of protectedRoutes.filter((x) => ADMIN_ONLY.has(`${x.method} ${x.url}`))) {
      const res = await call(r.method, r.url, { authorization: `Bearer ${owner.token}` });
      expect(res.statusCode, `${r.method} ${r.url}: ${res.body}`).toBe(401);
      expectErrorBody(res, r.method, `${r.method} ${r.url}`);
    }
    expect(protectedRoutes.some((x) => ADMIN_ONLY.has(`${x.method} ${x.url}`))).toBe(true);
  });

  it('OData routes refuse HTTP Basic credentials that lack the odata scope (403) or are revoked (401)', async () => {
    const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
    const create = async (body: Record<string, unknown>) => {
      const res = await t.app.inject({ method: 'POST', url: `/auth/clients/${OWNER}/credentials`, headers: { 'x-admin-token': t.adminToken }, payload: body });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as { secret: string; credential_id: string };
    };
    const noOdata = await create({ scopes: SCOPES.filter((s) => s !== 'odata') });
    const revoked = await create({});
    const del = await t.app.inject({ method: 'DELETE', url: `/auth/clients/${OWNER}/credentials/${revoked.credential_id}`, headers: { 'x-admin-token': t.adminToken } });
    expect(del.statusCode, del.body).toBe(200);
    const odataRoutes = protectedRoutes.filter((r) => prefixOf(r.url) === '/odata');
    expect(odataRoutes.length).toBeGreaterThan(0);
    const failures: string[] = [];
    for (const r of odataRoutes) {
      const scoped = await call(r.method, r.url, { authorization: basic(OWNER, noOdata.secret) });
      if (scoped.statusCode !== 403) failures.push(`scope: ${r.method} ${r.url} → ${scoped.statusCode} ${scoped.body.slice(0, 200)}`);
      else expectErrorBody(scoped, r.method, `${r.method} ${r.url}`, 'INSUFFICIENT_SCOPE');
      const gone = await call(r.method, r.url, { authorization: basic(OWNER, revoked.secret) });
      if (gone.statusCode !== 401) failures.push(`revoked: ${r.method} ${r.url} → ${gone.statusCode} ${gone.body.slice(0, 200)}`);
      else expectErrorBody(gone, r.method, `${r.method} ${r.url}`, 'INVALID_CREDENTIALS');
    }
    expect(failures).toEqual([]);
  });

  for (const [label, pick] of [
    ['its credential deleted', () => revokedByCredential],
    ['revoked through /auth/revoke', () => revokedByRevoke],
  ] as const) {
    it(`every route refuses an access token ${label} (401 {detail, code})`, async () => {
      const token = pick();
      const failures: string[] = [];
      for (const r of protectedRoutes) {
        const res = await call(r.method, r.url, { authorization: `Bearer ${token}` });
        if (res.statusCode !== 401) failures.push(`${r.method} ${r.url} → ${res.statusCode} ${res.body.slice(0, 200)}`);
        // Admin-only routes never look at the bearer token: they refuse for want of x-admin-token.
        else if (ADMIN_ONLY.has(`${r.method} ${r.url}`)) expectErrorBody(res, r.method, `${r.method} ${r.url}`, 'UNAUTHORIZED');
        else expectErrorBody(res, r.method, `${r.method} ${r.url}`, 'INVALID_TOKEN');
      }
      expect(failures).toEqual([]);
    });
  }
});
