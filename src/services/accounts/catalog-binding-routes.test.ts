/**
 * Catalog bindings on /control (spec behaviours 8–12 of the control-only endpoints, roles rules 3 and
 * 6, the kinds cache): catalog kinds and its ETag/304, reading (native when unbound), binding with a
 * sealed and redacted credential, draft and saved tests (ok: false when the catalog fails, 4xx for
 * the caller's own errors), sync into stub datasets against a spec-conformant Iceberg REST fake
 * (pagination, nested namespaces, names, preserve_sql_case), a failing catalog (hang → 504, 500 and
 * garbage → 502) leaving the stored listing unchanged, revert, roles and cross-tenant refusals,
 * stubs refused by jobs and OData, workspace create's `catalog`, the address guard, and no secret
 * in any answer or log line.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindAndSyncIcebergCatalog } from '../../../test/catalog-binding.ts';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { startFakeIcebergCatalog, type FakeIcebergCatalog } from '../../../test/iceberg-rest-fake.ts';
import { seedSnapshot } from '../../../test/seed.ts';

const C = '/control/v1';
const SECRET = `s3cr3t-${crypto.randomBytes(8).toString('hex')}`;
const BEARER = `bearer-${crypto.randomBytes(8).toString('hex')}`;
const TABLES = {
  sales: ['orders', 'Items'],
  'sales.eu': ['invoices'],
  hr: ['staff'],
  'bad-ns': ['x'],
  mixed: ['Case', 'case'],
};
/** What the tables above become without preserve_sql_case. */
const EXPECTED = ['sales.orders', 'sales.items', 'sales__eu.invoices', 'hr.staff'];

let t: TestApp;
let fake: FakeIcebergCatalog;
let alice: TestUser; // billing_admin of A, owner of `lake`
let ada: TestUser; // admin on `lake`
let wes: TestUser; // writer on `lake`
let rita: TestUser; // reader on `lake`
let bob: TestUser; // billing_admin of B, owner of `other`
let carol: TestUser; // no account, no grant
const logged: string[] = [];

const url = (ws: string, rest = '') => `${C}/workspaces/${ws}/catalog${rest}`;
const oauth = () => ({ type: 'oauth2' as const, client_id: 'lp-client', client_secret: SECRET });
const binding = (over: Record<string, unknown> = {}) => ({ kind: 'iceberg_rest', config: { uri: fake.url, warehouse: 'lake' }, auth: oauth(), ...over });

function refused(res: { statusCode: number; body: string; json(): any }, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().code, res.body).toBe(code);
}

/** Another workspace of alice's account, alice its owner. */
async function newWorkspace(name: string) {
  const account = (await alice.request('GET', `${C}/accounts`)).json()[0].account_id;
  const res = await alice.request('PUT', `${C}/workspaces/${name}`, { billing_account: account, members: [{ identity: 'alice', role: 'owner' }] });
  expect(res.statusCode, res.body).toBe(200);
}

const stubs = async (ws: string) =>
  (await t.app.lakeport.catalog.listDatasets(ws))
    .filter((d) => d.kind === 'external')
    .map((d) => ({ name: `${d.collection}.${d.name}`, id: d.dataset_id }))
    .sort((a, b) => a.name.localeCompare(b.name));

beforeAll(async () => {
  fake = await startFakeIcebergCatalog({ prefix: 'wh1', warehouse: 'lake', clients: { 'lp-client': SECRET }, token: BEARER, tables: TABLES, pageSize: 2 });
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged.push(chunk.toString('utf8'));
      done();
    },
  });
  t = await createTestApp({ catalogs: { timeoutMs: 1_000, allowPrivateNetworks: true } }, { logger: { level: 'trace', stream } });
  [alice, ada, wes, rita, bob, carol] = await Promise.all(['alice', 'ada', 'wes', 'rita', 'bob', 'carol'].map((id) => signIn(t.app, t.adminToken, id)));
  await createWorkspace(alice, 'lake', { ada: 'admin', wes: 'writer', rita: 'reader' });
  await createWorkspace(bob, 'other');
}, 60_000);
afterAll(async () => {
  await t?.close();
  await fake?.stop();
});

describe('GET /control/v1/catalog-kinds', () => {
  it('lists native and iceberg_rest with their config and auth fields', async () => {
    const res = await carol.request('GET', `${C}/catalog-kinds`);
    expect(res.statusCode, res.body).toBe(200);
    const kinds = res.json().kinds as any[];
    expect(kinds.map((k) => k.kind)).toEqual(['native', 'iceberg_rest']);
    const iceberg = kinds[1];
    expect(iceberg.config.map((f: any) => [f.name, f.required])).toEqual([
      ['uri', true],
      ['warehouse', false],
      ['prefix', false],
    ]);
    expect(iceberg.auth.map((a: any) => [a.type, a.fields.map((f: any) => `${f.name}${f.required ? '' : '?'}${f.secret ? '*' : ''}`)])).toEqual([
      ['bearer', ['token*']],
      ['oauth2', ['client_id', 'client_secret*', 'oauth2_server_uri?', 'scope?']],
    ]);
    expect(iceberg.auth[1].fields[2].description).toContain('/v1/oauth/tokens');
    expect(iceberg.description).toMatch(/Polaris.*Snowflake Open Catalog.*Unity Catalog.*Glue.*Lakeport/);
    expect(iceberg.operations).toEqual(['test', 'sync']);
  });

  it('is cached privately for five minutes, with a strong ETag over the body; If-None-Match answers 304', async () => {
    const res = await rita.request('GET', `${C}/catalog-kinds`);
    expect(res.headers['cache-control']).toBe('private, max-age=300');
    const etag = res.headers.etag as string;
    expect(etag).toBe(`"${crypto.createHash('sha256').update(res.body).digest('base64url').slice(0, 32)}"`);
    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const again = await t.app.inject({ method: 'GET', url: `${C}/catalog-kinds`, headers: { authorization: `Bearer ${rita.token}`, 'if-none-match': ifNoneMatch } });
      expect(again.statusCode, ifNoneMatch).toBe(304);
      expect(again.body).toBe('');
      expect(again.headers.etag).toBe(etag);
      expect(again.headers['cache-control']).toBe('private, max-age=300');
    }
    const stale = await t.app.inject({ method: 'GET', url: `${C}/catalog-kinds`, headers: { authorization: `Bearer ${rita.token}`, 'if-none-match': '"stale"' } });
    expect(stale.statusCode).toBe(200);
    expect(stale.body).toBe(res.body);
  });

  it('needs a signed-in caller, and is on /control only', async () => {
    expect((await t.app.inject({ method: 'GET', url: `${C}/catalog-kinds` })).statusCode).toBe(401);
    expect((await alice.request('GET', '/billing/v1/catalog-kinds')).statusCode).toBe(404);
    expect((await alice.request('GET', '/billing/v1/workspaces/lake/catalog')).statusCode).toBe(404);
  });
});

describe('reading and binding', () => {
  it('reads kind native while unbound, to any role on the workspace; others are refused', async () => {
    for (const user of [alice, ada, wes, rita]) {
      const res = await user.request('GET', url('lake'));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ workspace: 'lake', kind: 'native', config: {}, auth: null, preserve_sql_case: false, updated_by: null, updated_at: null, last_sync: null });
    }
    refused(await bob.request('GET', url('lake')), 403, 'PERMISSION_DENIED');
    refused(await carol.request('GET', url('lake')), 403, 'PERMISSION_DENIED');
    refused(await carol.request('GET', url('nowhere')), 403, 'PERMISSION_DENIED');
  });

  it('refuses a malformed binding with 422 at the field', async () => {
    const cases: [object, (string | number)[]][] = [
      [{ kind: 'glue', config: { uri: fake.url } }, ['body', 'kind']],
      [{ kind: 'iceberg_rest', config: {} }, ['body', 'config', 'uri']],
      [{ kind: 'iceberg_rest', config: { uri: 'ftp://x.example' } }, ['body', 'config', 'uri']],
      [{ kind: 'iceberg_rest', config: { uri: `${fake.url}?token=x` } }, ['body', 'config', 'uri']],
      [{ kind: 'iceberg_rest', config: { uri: fake.url, region: 'eu' } }, ['body', 'config']],
      [{ kind: 'iceberg_rest', config: { uri: fake.url }, auth: { type: 'basic', user: 'u' } }, ['body', 'auth', 'type']],
      [{ kind: 'iceberg_rest', config: { uri: fake.url }, auth: { type: 'oauth2', client_id: 'x' } }, ['body', 'auth', 'client_secret']],
      [{ kind: 'native', config: { uri: fake.url } }, ['body', 'config']],
    ];
    for (const [body, loc] of cases) {
      const res = await ada.request('PUT', url('lake'), body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json().detail.map((d: any) => d.loc), JSON.stringify(body)).toContainEqual(loc);
    }
    expect((await ada.request('GET', url('lake'))).json().kind).toBe('native');
  });

  it('change needs owner or admin on the workspace; another account cannot touch it', async () => {
    refused(await wes.request('PUT', url('lake'), binding()), 403, 'PERMISSION_DENIED');
    refused(await rita.request('PUT', url('lake'), binding()), 403, 'PERMISSION_DENIED');
    refused(await bob.request('PUT', url('lake'), binding()), 403, 'PERMISSION_DENIED');
    refused(await wes.request('DELETE', url('lake')), 403, 'PERMISSION_DENIED');
    refused(await bob.request('DELETE', url('lake')), 403, 'PERMISSION_DENIED');
    refused(await alice.request('PUT', url('other'), binding()), 403, 'PERMISSION_DENIED');
    // a credential narrowed below admin on the workspace may read but not change it
    const narrowed = await signIn(t.app, t.adminToken, 'ada', { permissions: [['lake.*', 'reader']] });
    refused(await narrowed.request('PUT', url('lake'), binding()), 403, 'PERMISSION_DENIED');
    expect((await narrowed.request('GET', url('lake'))).statusCode).toBe(200);
  });

  it('stores the credential sealed with the account data key and shows it redacted', async () => {
    const res = await ada.request('PUT', url('lake'), binding({ auth: { ...oauth(), scope: 'PRINCIPAL_ROLE:ALL' } }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      workspace: 'lake',
      kind: 'iceberg_rest',
      config: { uri: fake.url, warehouse: 'lake' },
      auth: { type: 'oauth2', client_id: 'lp-client', client_secret: 'redacted', scope: 'PRINCIPAL_ROLE:ALL' },
      preserve_sql_case: false,
      updated_by: 'ada',
      last_sync: null,
    });
    expect(res.body).not.toContain(SECRET);
    const read = await rita.request('GET', url('lake'));
    expect(read.json()).toEqual(res.json());
    const row = await t.db.kysely.selectFrom('workspace_catalog_bindings').selectAll().where('workspace', '=', 'lake').executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(SECRET);
    expect(row.sealed_auth).toMatch(/^v1\./);
    expect(row.billing_account).toBe((await t.db.kysely.selectFrom('workspaces').select('billing_account').where('name', '=', 'lake').executeTakeFirstOrThrow()).billing_account);
  });

  it('a bearer token is redacted the same way', async () => {
    await newWorkspace('bearer_ws');
    const res = await alice.request('PUT', url('bearer_ws'), binding({ auth: { type: 'bearer', token: BEARER } }));
    expect(res.json().auth).toEqual({ type: 'bearer', token: 'redacted' });
    expect(res.body).not.toContain(BEARER);
    const tested = await alice.request('POST', url('bearer_ws', '/test'));
    expect(tested.json(), tested.body).toMatchObject({ ok: true, prefix: 'wh1' });
    expect(fake.requests.at(-1)?.authorization).toBe(`Bearer ${BEARER}`);
  });
});

describe('POST /control/v1/catalog-connections/test (draft)', () => {
  const draft = (over: Record<string, unknown> = {}) => ({ kind: 'iceberg_rest', config: { uri: fake.url, warehouse: 'lake' }, auth: oauth(), ...over });

  it('probes: token exchange, /v1/config with the warehouse, then the namespaces', async () => {
    const before = fake.requests.length;
    const res = await ada.request('POST', `${C}/catalog-connections/test`, draft());
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, kind: 'iceberg_rest', prefix: 'wh1', namespaces: 4 });
    expect(res.json().elapsed_ms).toBeGreaterThanOrEqual(0);
    const calls = fake.requests.slice(before);
    expect(calls.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/oauth/tokens', 'GET /v1/config', 'GET /v1/wh1/namespaces', 'GET /v1/wh1/namespaces']);
    expect(Object.fromEntries(new URLSearchParams(calls[0].body))).toEqual({ grant_type: 'client_credentials', client_id: 'lp-client', client_secret: SECRET, scope: 'catalog' });
    expect(calls[1].query.get('warehouse')).toBe('lake');
    expect(calls[2].authorization).toMatch(/^Bearer tok-/);
    expect(calls[2].query.get('pageToken')).toBe('');
    expect(calls[3].query.get('pageToken')).toBe('2');
  });

  it('answers 200 ok: false when the catalog fails: refused credentials, unreachable, 500, garbage, timeout', async () => {
    const wrong = await ada.request('POST', `${C}/catalog-connections/test`, draft({ auth: { ...oauth(), client_secret: 'not-it' } }));
    expect(wrong.statusCode).toBe(200);
    expect(wrong.json()).toMatchObject({ ok: false, reason: 'auth_refused', status: 401 });
    expect(wrong.json().detail).toContain('invalid_client');
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    expect((await ada.request('POST', `${C}/catalog-connections/test`, draft({ config: { uri: closedUrl } }))).json()).toMatchObject({ ok: false, reason: 'unreachable' });
    const cases = [
      ['error500', 'config', 'http_error'],
      ['garbage', 'config', 'invalid_response'],
      ['not_json', 'namespaces', 'invalid_response'],
      ['garbage', 'token', 'invalid_response'],
      ['hang', 'namespaces', 'timeout'],
    ] as const;
    try {
      for (const [failure, step, reason] of cases) {
        fake.fail(failure, step);
        const res = await ada.request('POST', `${C}/catalog-connections/test`, draft());
        expect(res.statusCode, `${failure} at ${step}`).toBe(200);
        expect(res.json(), `${failure} at ${step}`).toMatchObject({ ok: false, kind: 'iceberg_rest', reason });
        expect(res.body).not.toContain(SECRET);
      }
    } finally {
      fake.fail(undefined);
    }
  });

  it("keeps the caller's own errors 4xx: bad kind or config (422), no standing (403), a narrowed credential (403)", async () => {
    expect((await ada.request('POST', `${C}/catalog-connections/test`, { kind: 'hive', config: {} })).statusCode).toBe(422);
    expect((await ada.request('POST', `${C}/catalog-connections/test`, { kind: 'iceberg_rest', config: { uri: 'nope' } })).statusCode).toBe(422);
    refused(await carol.request('POST', `${C}/catalog-connections/test`, draft()), 403, 'NOT_A_MEMBER');
    // A workspace admin with no account may test (ada holds no account); an account member too.
    expect((await alice.request('POST', `${C}/catalog-connections/test`, draft())).json().ok).toBe(true);
    const narrowed = await signIn(t.app, t.adminToken, 'ada', { permissions: [['lake.*', 'admin']] });
    refused(await narrowed.request('POST', `${C}/catalog-connections/test`, draft()), 403, 'CREDENTIAL_NARROWED');
  });
});

describe('POST …/catalog/test (saved)', () => {
  it('probes the stored binding with its credential, opened for the probe', async () => {
    const before = fake.requests.length;
    const res = await ada.request('POST', url('lake', '/test'), { ignored: true });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, kind: 'iceberg_rest', prefix: 'wh1', namespaces: 4 });
    expect(new URLSearchParams(fake.requests[before].body).get('client_secret')).toBe(SECRET);
    expect(res.body).not.toContain(SECRET);
  });

  it('needs owner or admin (spec rule 3); another account is refused; an unbound workspace is 409', async () => {
    refused(await wes.request('POST', url('lake', '/test')), 403, 'PERMISSION_DENIED');
    refused(await rita.request('POST', url('lake', '/test')), 403, 'PERMISSION_DENIED');
    refused(await bob.request('POST', url('lake', '/test')), 403, 'PERMISSION_DENIED');
    refused(await bob.request('POST', url('other', '/test')), 409, 'CATALOG_NOT_BOUND');
  });

  it('answers ok: false when the saved catalog fails', async () => {
    fake.fail('error500');
    try {
      expect((await alice.request('POST', url('lake', '/test'))).json()).toMatchObject({ ok: false, reason: 'http_error', status: 500 });
    } finally {
      fake.fail(undefined);
    }
  });
});

describe('POST …/catalog/sync', () => {
  it('lists every namespace (nested, paginated) and table into stubs, shown in the catalog, the service document and effective permissions', async () => {
    const result = await bindAndSyncIcebergCatalog(t, alice, 'lake', { uri: fake.url, warehouse: 'lake', auth: oauth() }, EXPECTED);
    expect(result).toMatchObject({ workspace: 'lake', kind: 'iceberg_rest', prefix: 'wh1', namespaces: 5, tables: 7, kept: 0, removed: [] });
    expect([...result.added].sort()).toEqual([...EXPECTED].sort());
    expect(result.skipped).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ namespace: ['bad-ns'], table: 'x', reason: 'invalid_name' }),
        expect.objectContaining({ namespace: ['mixed'], table: 'Case', reason: 'name_collision' }),
        expect.objectContaining({ namespace: ['mixed'], table: 'case', reason: 'name_collision' }),
      ]),
    );
    expect(result.skipped).toHaveLength(3);
    // nested namespaces through `parent` with the unit separator; later pages through next-page-token
    expect(fake.requests.some((r) => r.path === '/v1/wh1/namespaces' && r.query.get('parent') === 'sales')).toBe(true);
    expect(fake.requests.some((r) => r.path === '/v1/wh1/namespaces/sales%1Feu/tables')).toBe(true);
    const orders = await t.app.lakeport.catalog.getDataset({ workspace: 'lake', collection: 'sales', dataset: 'items' });
    expect(orders).toMatchObject({ kind: 'external', columns: [], properties: { external: { kind: 'iceberg_rest', namespace: ['sales'], name: 'Items' } } });
    const read = (await rita.request('GET', url('lake'))).json();
    expect(read.last_sync).toMatchObject({ by: 'alice', namespaces: 5, tables: 7, added: 4, removed: 0, kept: 0, skipped: 3 });
  });

  it('re-lists: new tables added, gone ones removed, the rest kept with their ids', async () => {
    const before = await stubs('lake');
    fake.setTables({ ...TABLES, hr: ['payroll'] });
    try {
      const res = await ada.request('POST', url('lake', '/sync'));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ added: ['hr.payroll'], removed: ['hr.staff'], kept: 3 });
      const after = await stubs('lake');
      const ids = (list: { name: string; id: string }[]) => Object.fromEntries(list.map((s) => [s.name, s.id]));
      for (const name of ['sales.orders', 'sales.items', 'sales__eu.invoices']) expect(ids(after)[name]).toBe(ids(before)[name]);
    } finally {
      fake.setTables(TABLES);
    }
    expect((await ada.request('POST', url('lake', '/sync'))).json()).toMatchObject({ added: ['hr.staff'], removed: ['hr.payroll'] });
  });

  it('an unreachable catalog leaves the stored listing unchanged: 504 on a timeout, 502 on a 500 or garbage, at any step', async () => {
    const listing = await stubs('lake');
    const lastSync = (await ada.request('GET', url('lake'))).json().last_sync;
    fake.setTables({ only: ['one'] }); // what a sync would store if it got through
    const cases = [
      ['hang', 'tables', 504, 'EXTERNAL_CATALOG_TIMEOUT', 'timeout'],
      ['error500', 'namespaces', 502, 'EXTERNAL_CATALOG_FAILED', 'http_error'],
      ['garbage', 'tables', 502, 'EXTERNAL_CATALOG_FAILED', 'invalid_response'],
      ['not_json', 'config', 502, 'EXTERNAL_CATALOG_FAILED', 'invalid_response'],
      ['error500', 'token', 502, 'EXTERNAL_CATALOG_FAILED', 'http_error'],
    ] as const;
    try {
      for (const [failure, step, status, code, reason] of cases) {
        fake.fail(failure, step);
        const res = await ada.request('POST', url('lake', '/sync'));
        refused(res, status, code);
        expect(res.json().reason, `${failure} at ${step}`).toBe(reason);
        expect(res.json().detail).toContain('unchanged');
        expect(res.body).not.toContain(SECRET);
        expect(await stubs('lake')).toEqual(listing);
      }
    } finally {
      fake.fail(undefined);
      fake.setTables(TABLES);
    }
    expect((await ada.request('GET', url('lake'))).json().last_sync).toEqual(lastSync);
  });

  it('honours preserve_sql_case: names not already lowercase are skipped, never folded', async () => {
    await newWorkspace('cased');
    const result = await bindAndSyncIcebergCatalog(t, alice, 'cased', { uri: fake.url, warehouse: 'lake', auth: oauth(), preserve_sql_case: true }, ['sales.orders', 'sales__eu.invoices', 'hr.staff', 'mixed.case']);
    expect(result.skipped.map((s: any) => `${s.namespace.join('.')}.${s.table}:${s.reason}`).sort()).toEqual(['bad-ns.x:invalid_name', 'mixed.Case:case_not_preserved', 'sales.Items:case_not_preserved']);
    expect((await alice.request('GET', url('cased'))).json().preserve_sql_case).toBe(true);
  });

  it('never replaces a dataset of another kind: the stub is skipped as dataset_exists', async () => {
    await newWorkspace('mixed_ws');
    await seedSnapshot(t, { workspace: 'mixed_ws', collection: 'hr', dataset: 'staff' }, [{ name: 'id', type: 'BIGINT', nullable: false }], 'SELECT 1 AS id');
    expect((await alice.request('PUT', url('mixed_ws'), binding())).statusCode).toBe(200);
    const res = await alice.request('POST', url('mixed_ws', '/sync'));
    expect(res.json().skipped).toContainEqual(expect.objectContaining({ namespace: ['hr'], table: 'staff', reason: 'dataset_exists' }));
    expect((await t.app.lakeport.catalog.getDataset({ workspace: 'mixed_ws', collection: 'hr', dataset: 'staff' })).kind).toBe('table');
  });

  it('needs owner or admin; another account is refused; a native workspace is 409', async () => {
    refused(await wes.request('POST', url('lake', '/sync')), 403, 'PERMISSION_DENIED');
    refused(await rita.request('POST', url('lake', '/sync')), 403, 'PERMISSION_DENIED');
    refused(await bob.request('POST', url('lake', '/sync')), 403, 'PERMISSION_DENIED');
    refused(await carol.request('POST', url('lake', '/sync')), 403, 'PERMISSION_DENIED');
    const native = await bob.request('POST', url('other', '/sync'));
    refused(native, 409, 'CATALOG_NOT_BOUND');
    expect(native.json().detail).toContain('native catalog');
  });
});

describe('external stubs elsewhere', () => {
  it('a job reading a stub fails with a clear error', async () => {
    const submitted = await alice.request('POST', '/jobs/api/v1/jobs', { sql_text: 'SELECT * FROM lake.sales.orders' });
    expect(submitted.statusCode, submitted.body).toBe(201);
    const done = (await alice.request('GET', `/jobs/api/v1/jobs/${submitted.json().execution_id}/status?wait=30`)).json();
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: 'VERSIONING_NOT_SUPPORTED' });
    expect(done.error.message).toContain('external catalog');
  });

  it('OData refuses its rows and its own $metadata (400), and lists it in the service document and $metadata', async () => {
    for (const path of ['lake/sales/orders', 'lake/sales/orders/$metadata', 'lake/sales/orders/$count', 'lake__sales__orders']) {
      const res = await rita.request('GET', `/odata/api/v4/${path}`);
      expect(res.statusCode, path).toBe(400);
      expect(res.json().code).toBe('DATASET_NOT_VERSIONED');
      expect(res.json().detail).toContain('external catalog');
    }
    const service = (await rita.request('GET', '/odata/api/v4/')).json();
    expect(service.value).toContainEqual({ name: 'lake__sales__orders', kind: 'EntitySet', url: 'lake/sales/orders', title: 'lake / sales / orders' });
    const metadata = await rita.request('GET', '/odata/api/v4/$metadata');
    expect(metadata.statusCode).toBe(200);
    expect(metadata.body).toContain('<EntitySet Name="lake__sales__orders"');
    // another tenant sees none of them
    expect(((await bob.request('GET', '/odata/api/v4/')).json().value as any[]).some((e) => e.url.startsWith('lake/'))).toBe(false);
  });
});

describe('reverting and rebinding', () => {
  it('PUT to the same catalog keeps the stubs; to another catalog removes them', async () => {
    await newWorkspace('rebind');
    await bindAndSyncIcebergCatalog(t, alice, 'rebind', { uri: fake.url, warehouse: 'lake', auth: oauth() }, EXPECTED);
    const same = await alice.request('PUT', url('rebind'), binding({ preserve_sql_case: true }));
    expect(same.statusCode).toBe(200);
    expect((await stubs('rebind')).map((s) => s.name).sort()).toEqual([...EXPECTED].sort());
    const elsewhere = await alice.request('PUT', url('rebind'), binding({ config: { uri: fake.url, warehouse: 'other' } }));
    expect(elsewhere.json().last_sync).toBeNull();
    expect(await stubs('rebind')).toEqual([]);
  });

  it('DELETE reverts to the native catalog (behaviour 12): the binding and its stubs go', async () => {
    expect((await stubs('lake')).length).toBe(4);
    const res = await ada.request('DELETE', url('lake'));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ workspace: 'lake', kind: 'native', auth: null });
    expect(await stubs('lake')).toEqual([]);
    expect(await t.app.lakeport.catalog.listCollections('lake')).toEqual([]);
    expect((await rita.request('GET', url('lake'))).json().kind).toBe('native');
    refused(await ada.request('POST', url('lake', '/sync')), 409, 'CATALOG_NOT_BOUND');
    expect((await ada.request('DELETE', url('lake'))).statusCode).toBe(200);
    // kind native through PUT is the same revert
    expect((await ada.request('PUT', url('lake'), binding())).statusCode).toBe(200);
    expect((await ada.request('PUT', url('lake'), { kind: 'native' })).json().kind).toBe('native');
    expect((await t.db.kysely.selectFrom('workspace_catalog_bindings').select('workspace').where('workspace', '=', 'lake').execute()).length).toBe(0);
  });
});

describe('a soft-deleted workspace', () => {
  it('refuses every binding endpoint with 409 WORKSPACE_DELETED until restored', async () => {
    await newWorkspace('gone');
    expect((await alice.request('PUT', url('gone'), binding())).statusCode).toBe(200);
    expect((await alice.request('DELETE', '/billing/v1/workspaces/gone')).statusCode).toBe(200);
    for (const [method, path] of [['GET', ''], ['PUT', ''], ['DELETE', ''], ['POST', '/test'], ['POST', '/sync']] as const) {
      refused(await alice.request(method, url('gone', path), method === 'PUT' ? binding() : undefined), 409, 'WORKSPACE_DELETED');
    }
    expect((await alice.request('POST', '/billing/v1/workspaces/gone/restore')).statusCode).toBe(200);
    expect((await alice.request('GET', url('gone'))).json().kind).toBe('iceberg_rest');
  });
});

describe('PUT /control/v1/workspaces/{name} with catalog', () => {
  it('stores the binding once the workspace exists; a retry keeps it', async () => {
    const account = (await alice.request('GET', '/control/v1/accounts')).json()[0].account_id;
    const body = { billing_account: account, members: [{ identity: 'alice', role: 'owner' }], catalog: binding() };
    const created = await alice.request('PUT', `${C}/workspaces/created_bound`, body);
    expect(created.statusCode, created.body).toBe(200);
    expect(created.body).not.toContain(SECRET);
    const read = (await alice.request('GET', url('created_bound'))).json();
    expect(read).toMatchObject({ kind: 'iceberg_rest', auth: { type: 'oauth2', client_secret: 'redacted' }, updated_by: 'alice' });
    const retry = await alice.request('PUT', `${C}/workspaces/created_bound`, { ...body, catalog: binding({ config: { uri: fake.url, warehouse: 'changed' } }) });
    expect(retry.statusCode).toBe(200);
    expect((await alice.request('GET', url('created_bound'))).json().config.warehouse).toBe('lake');
    expect((await alice.request('POST', url('created_bound', '/test'))).json().ok).toBe(true);
    const native = await alice.request('PUT', `${C}/workspaces/created_native`, { ...body, catalog: null });
    expect(native.statusCode).toBe(200);
    expect((await alice.request('GET', url('created_native'))).json().kind).toBe('native');
    expect((await alice.request('PUT', `${C}/workspaces/created_bad`, { ...body, catalog: { kind: 'glue' } })).statusCode).toBe(422);
  });
});

describe('with private networks refused (the default)', () => {
  let strict: TestApp;
  let owner: TestUser;
  let account: string;
  beforeAll(async () => {
    // metadata.test resolves to the cloud metadata address; api.catalog.test to a public one.
    const names: Record<string, string[]> = { 'metadata.test': ['169.254.169.254'], 'mixed.test': ['93.184.216.34', '10.0.0.7'] };
    strict = await createTestApp({ catalogs: { timeoutMs: 1_000, resolve: async (host) => names[host] ?? [] } }, { workers: false });
    owner = await signIn(strict.app, strict.adminToken, 'olga');
    account = await createWorkspace(owner, 'guarded');
  });
  afterAll(async () => strict?.close());

  it('refuses loopback, private, link-local and unspecified addresses, and http://, with 400', async () => {
    for (const uri of ['https://127.0.0.1', 'https://10.0.0.1', 'https://[fd00::1]', 'https://169.254.169.254', 'https://0.0.0.0', 'https://[::1]:8181', fake.url]) {
      const put = await owner.request('PUT', '/control/v1/workspaces/guarded/catalog', { kind: 'iceberg_rest', config: { uri } });
      refused(put, 400, 'CATALOG_ADDRESS_NOT_ALLOWED');
      refused(await owner.request('POST', '/control/v1/catalog-connections/test', { kind: 'iceberg_rest', config: { uri } }), 400, 'CATALOG_ADDRESS_NOT_ALLOWED');
    }
    const tokenUri = await owner.request('PUT', '/control/v1/workspaces/guarded/catalog', { kind: 'iceberg_rest', config: { uri: 'https://api.example.com' }, auth: { type: 'oauth2', client_id: 'c', client_secret: 's', oauth2_server_uri: 'https://192.168.1.1/token' } });
    refused(tokenUri, 400, 'CATALOG_ADDRESS_NOT_ALLOWED');
    const created = await owner.request('PUT', '/control/v1/workspaces/guarded2', { billing_account: account, members: [{ identity: 'olga', role: 'owner' }], catalog: { kind: 'iceberg_rest', config: { uri: 'https://10.1.1.1' } } });
    refused(created, 400, 'CATALOG_ADDRESS_NOT_ALLOWED');
    expect((await owner.request('GET', `/control/v1/accounts/${account}/workspaces`)).json().map((w: any) => w.name)).toEqual(['guarded']);
  });

  it('checks every address a name resolves to before connecting: a stored binding cannot reach them', async () => {
    const before = fake.requests.length;
    for (const host of ['metadata.test', 'mixed.test']) {
      const uri = `https://${host}`;
      expect((await owner.request('PUT', '/control/v1/workspaces/guarded/catalog', { kind: 'iceberg_rest', config: { uri } })).statusCode).toBe(200);
      refused(await owner.request('POST', '/control/v1/workspaces/guarded/catalog/test'), 400, 'CATALOG_ADDRESS_NOT_ALLOWED');
      refused(await owner.request('POST', '/control/v1/workspaces/guarded/catalog/sync'), 400, 'CATALOG_ADDRESS_NOT_ALLOWED');
      refused(await owner.request('POST', '/control/v1/catalog-connections/test', { kind: 'iceberg_rest', config: { uri } }), 400, 'CATALOG_ADDRESS_NOT_ALLOWED');
    }
    expect(fake.requests.length).toBe(before);
  });
});

describe('secrets in logs', () => {
  it('no log line carries the client secret, the bearer token or an issued access token', () => {
    const text = logged.join('');
    expect(text.length).toBeGreaterThan(0);
    expect(text).toContain('catalog synced');
    expect(text).toContain('catalog sync failed');
    const issued = fake.requests.flatMap((r) => (r.authorization?.startsWith('Bearer tok-') ? [r.authorization.slice(7)] : []));
    expect(issued.length).toBeGreaterThan(0);
    for (const secret of [SECRET, BEARER, ...new Set(issued)]) expect(text).not.toContain(secret);
  });
});
