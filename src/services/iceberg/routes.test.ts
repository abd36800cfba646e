import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { seedSnapshot } from '../../../test/seed.ts';

const SALES = { workspace: 'acme', collection: 'sales', dataset: 'orders' };
const HISTORY = { workspace: 'acme', collection: 'sales', dataset: 'history' };
const COLUMNS = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'region', type: 'VARCHAR', nullable: true },
  { name: 'amount', type: 'DECIMAL(18,2)', nullable: true },
  { name: 'day', type: 'DATE', nullable: true },
  { name: 'at', type: 'TIMESTAMP WITH TIME ZONE', nullable: true },
  { name: 'ip', type: 'VARCHAR', nullable: true, logical_type: 'ipv4' },
];
const ROWS_SQL = (n: number, offset = 0) => `
  SELECT i + ${offset} AS id, ['north','south','east'][i % 3 + 1] AS region, CAST(i * 1.25 AS DECIMAL(18,2)) AS amount,
         DATE '2024-01-01' + (i % 60)::INT AS day, TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_hours(i) AS at, '10.0.' || (i % 256) || '.1' AS ip
  FROM range(${n}) r(i)`;
const TABLE_URL = '/iceberg/v1/namespaces/acme%1Fsales/tables/orders';
const PUBLIC = 'http://lakeport.test';

type Reply = { statusCode: number; json(): any; body: string; headers: Record<string, unknown>; rawPayload: Buffer };

/** The Iceberg REST error body (spec: IcebergErrorResponse, nothing beside `error`) with its status, type and Lakeport's code. */
function expectIcebergError(res: Reply, status: number, type: string, code?: string) {
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json();
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error).toMatchObject({ type, code: status });
  expect(typeof body.error.message).toBe('string');
  if (code) expect(res.headers['x-lakeport-error-code']).toBe(code);
}

describe('Iceberg REST catalog', () => {
  let t: TestApp;
  let alice: TestUser; // owner of acme
  let rita: TestUser; // reader on acme.sales.orders only
  let bob: TestUser; // another tenant
  let snapshots: number[];

  const request = (method: string, user: TestUser | undefined, url: string, headers: Record<string, string> = {}, payload?: string) =>
    t.app.inject({ method: method as 'GET', url, headers: { ...(user ? { authorization: `Bearer ${user.token}` } : {}), ...headers }, ...(payload === undefined ? {} : { payload }) }) as Promise<Reply>;
  const get = (user: TestUser | undefined, url: string, headers: Record<string, string> = {}) => request('GET', user, url, headers);
  const local = (url: string) => url.replace(PUBLIC, '');
  const load = async (user: TestUser, url = TABLE_URL) => {
    const res = await get(user, url);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { 'metadata-location': string; metadata: any; config: Record<string, string> };
  };

  beforeAll(async () => {
    t = await createTestApp({}, { workers: false });
    [alice, rita, bob] = await Promise.all(['alice', 'rita', 'bob'].map((id) => signIn(t.app, t.adminToken, id)));
    await createWorkspace(alice, 'acme');
    await createWorkspace(bob, 'bobco');
    const grant = await alice.request('POST', '/policy/v1/access/workspace/acme/policies', { principal: { identity: 'rita', type: 'user' }, role: 'reader', pattern: 'acme.sales.orders' });
    expect(grant.statusCode).toBeLessThan(300);
    snapshots = [
      await seedSnapshot(t, SALES, COLUMNS, ROWS_SQL(250), { message: 'first load' }),
      await seedSnapshot(t, SALES, COLUMNS, ROWS_SQL(100, 1000)),
      await seedSnapshot(t, SALES, COLUMNS, ROWS_SQL(300, 5000), { overwrite: true, message: 'reload' }),
    ];
    await t.app.lakeport.catalog.createTag(SALES, 'first', snapshots[0], 'alice');
    await seedSnapshot(t, { workspace: 'acme', collection: 'hr', dataset: 'salaries' }, [{ name: 'pay', type: 'BIGINT', nullable: false }], 'SELECT 1 AS pay');
    await t.app.lakeport.catalog.createDataset({ workspace: 'acme', collection: 'sales', dataset: 'a_view' }, { kind: 'view', columns: [{ name: 'id', type: 'BIGINT', nullable: true }] }, 'alice');
    await seedSnapshot(t, { workspace: 'bobco', collection: 'secret', dataset: 'plans' }, [{ name: 'x', type: 'BIGINT', nullable: false }], 'SELECT 42 AS x');
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('authentication, configuration and the token endpoint', () => {
    it('refuses a request without a token (401) or without the odata scope (403), in the Iceberg error shape', async () => {
      const none = await get(undefined, '/iceberg/v1/config');
      expectIcebergError(none, 401, 'NotAuthorizedException', 'UNAUTHORIZED');
      expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
      const noOdata = await signIn(t.app, t.adminToken, 'alice', { scopes: ['jobs'] });
      expectIcebergError(await get(noOdata, '/iceberg/v1/namespaces'), 403, 'ForbiddenException', 'INSUFFICIENT_SCOPE');
      expectIcebergError(await get(undefined, `${TABLE_URL}`), 401, 'NotAuthorizedException');
    });

    it('answers the config: no prefix without a warehouse, prefix lakeport for it, 404 for another', async () => {
      const plain = await get(alice, '/iceberg/v1/config');
      expect(plain.json()).toEqual({
        defaults: {},
        overrides: {},
        endpoints: expect.arrayContaining(['GET /v1/{prefix}/namespaces', 'HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}']),
      });
      expect(plain.json().endpoints.every((e: string) => /^(GET|HEAD) /.test(e))).toBe(true);
      expect((await get(alice, '/iceberg/v1/config?warehouse=lakeport')).json().overrides).toEqual({ prefix: 'lakeport' });
      expectIcebergError(await get(alice, '/iceberg/v1/config?warehouse=s3://bucket/wh'), 404, 'NoSuchWarehouseException', 'WAREHOUSE_NOT_FOUND');
      expect((await get(alice, '/iceberg/v1/lakeport/namespaces')).json()).toEqual({ namespaces: [['acme']] });
      expectIcebergError(await get(alice, '/iceberg/v1/elsewhere/namespaces'), 404, 'NoSuchWarehouseException');
    });

    it("exchanges a Lakeport client credential for a read token (scope 'catalog' is odata), with OAuth errors", async () => {
      const created = await t.app.inject({ method: 'POST', url: '/auth/clients/tina/credentials', headers: { 'x-admin-token': t.adminToken }, payload: {} });
      const { secret } = created.json();
      const exchange = (form: Record<string, string>, headers: Record<string, string> = {}) =>
        t.app.inject({ method: 'POST', url: '/iceberg/v1/oauth/tokens', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload: new URLSearchParams(form).toString() });
      const ok = await exchange({ grant_type: 'client_credentials', client_id: 'tina', client_secret: secret, scope: 'catalog' });
      expect(ok.statusCode, ok.body).toBe(200);
      expect(ok.json()).toMatchObject({ token_type: 'bearer', scope: 'odata', issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', expires_in: expect.any(Number) });
      expect(ok.headers['cache-control']).toBe('no-store');
      const me = await t.app.inject({ method: 'GET', url: '/iceberg/v1/namespaces', headers: { authorization: `Bearer ${ok.json().access_token}` } });
      expect(me.json()).toEqual({ namespaces: [] });
      const basic = await exchange({ grant_type: 'client_credentials' }, { authorization: `Basic ${Buffer.from(`tina:${secret}`).toString('base64')}` });
      expect(basic.json().scope).toBe('odata');
      // OAuth's own error shape (the spec's OAuthError), not the catalog's.
      const wrong = await exchange({ grant_type: 'client_credentials', client_id: 'tina', client_secret: 'lp_sec_wrong' });
      expect(wrong.statusCode).toBe(401);
      expect(wrong.json().error).toBe('invalid_client');
      const exchangeGrant = await exchange({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: 'x', subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' });
      expect(exchangeGrant.statusCode).toBe(400);
      expect(exchangeGrant.json().error).toBe('unsupported_grant_type');
      const narrow = await t.app.inject({ method: 'POST', url: '/auth/clients/tina/credentials', headers: { 'x-admin-token': t.adminToken }, payload: { scopes: ['jobs'] } });
      const noRead = await exchange({ grant_type: 'client_credentials', client_id: 'tina', client_secret: narrow.json().secret, scope: 'catalog' });
      expect(noRead.statusCode).toBe(400);
      expect(noRead.json().error).toBe('invalid_scope');
    });
  });

  describe('namespaces', () => {
    it('lists the workspaces and collections the caller may read in, and no others', async () => {
      expect((await get(alice, '/iceberg/v1/namespaces')).json()).toEqual({ namespaces: [['acme']] });
      expect((await get(alice, '/iceberg/v1/namespaces?parent=acme')).json()).toEqual({ namespaces: [['acme', 'hr'], ['acme', 'sales']] });
      expect((await get(alice, '/iceberg/v1/namespaces?parent=acme%1Fsales')).json()).toEqual({ namespaces: [] });
      expect((await get(rita, '/iceberg/v1/namespaces')).json()).toEqual({ namespaces: [['acme']] });
      expect((await get(rita, '/iceberg/v1/namespaces?parent=acme')).json()).toEqual({ namespaces: [['acme', 'sales']] });
      expect((await get(bob, '/iceberg/v1/namespaces')).json()).toEqual({ namespaces: [['bobco']] });
    });

    it('loads a namespace, and refuses before telling whether it exists (403), else 404', async () => {
      expect((await get(alice, '/iceberg/v1/namespaces/acme%1Fsales')).json()).toEqual({ namespace: ['acme', 'sales'], properties: {} });
      expect((await get(rita, '/iceberg/v1/namespaces/ACME')).json()).toEqual({ namespace: ['acme'], properties: {} });
      expectIcebergError(await get(alice, '/iceberg/v1/namespaces/acme%1Fnope'), 404, 'NoSuchNamespaceException', 'NAMESPACE_NOT_FOUND');
      expectIcebergError(await get(alice, '/iceberg/v1/namespaces/acme%1Fsales%1Forders'), 404, 'NoSuchNamespaceException');
      expectIcebergError(await get(alice, '/iceberg/v1/namespaces/not-a-name'), 404, 'NoSuchNamespaceException');
      expectIcebergError(await get(rita, '/iceberg/v1/namespaces/acme%1Fhr'), 403, 'ForbiddenException', 'PERMISSION_DENIED');
      expectIcebergError(await get(bob, '/iceberg/v1/namespaces/acme'), 403, 'ForbiddenException');
      expectIcebergError(await get(bob, '/iceberg/v1/namespaces/nosuchworkspace'), 403, 'ForbiddenException');
      expectIcebergError(await get(bob, '/iceberg/v1/namespaces?parent=acme'), 403, 'ForbiddenException');
      expectIcebergError(await get(bob, '/iceberg/v1/namespaces/acme%1Fsales/tables'), 403, 'ForbiddenException');
    });

    it('answers HEAD with 204, 404 or 403 and no body', async () => {
      const head = (user: TestUser, ns: string) => request('HEAD', user, `/iceberg/v1/namespaces/${ns}`);
      expect((await head(alice, 'acme%1Fsales')).statusCode).toBe(204);
      expect((await head(alice, 'acme%1Fnope')).statusCode).toBe(404);
      expect((await head(bob, 'acme')).statusCode).toBe(403);
      expect((await head(alice, 'acme')).body).toBe('');
    });
  });

  describe('tables', () => {
    it('lists the tables and materialized views of a collection the caller may read; views and workspaces hold none', async () => {
      expect((await get(alice, '/iceberg/v1/namespaces/acme%1Fsales/tables')).json()).toEqual({ identifiers: [{ namespace: ['acme', 'sales'], name: 'orders' }] });
      expect((await get(alice, '/iceberg/v1/namespaces/acme/tables')).json()).toEqual({ identifiers: [] });
      expect((await get(rita, '/iceberg/v1/namespaces/acme%1Fsales/tables')).json()).toEqual({ identifiers: [{ namespace: ['acme', 'sales'], name: 'orders' }] });
      expectIcebergError(await get(alice, '/iceberg/v1/namespaces/acme%1Fsales/tables/a_view'), 404, 'NoSuchTableException', 'DATASET_NOT_FOUND');
      expectIcebergError(await get(alice, '/iceberg/v1/namespaces/acme%1Fsales/tables/nope'), 404, 'NoSuchTableException');
      expectIcebergError(await get(rita, '/iceberg/v1/namespaces/acme%1Fhr/tables/salaries'), 403, 'ForbiddenException');
      expectIcebergError(await get(bob, TABLE_URL), 403, 'ForbiddenException');
      expectIcebergError(await get(bob, '/iceberg/v1/namespaces/acme%1Fsales/tables/nope'), 403, 'ForbiddenException');
      expect((await request('HEAD', rita, TABLE_URL)).statusCode).toBe(204);
      expect((await request('HEAD', alice, '/iceberg/v1/namespaces/acme%1Fsales/tables/nope')).statusCode).toBe(404);
      expect((await request('HEAD', bob, TABLE_URL)).statusCode).toBe(403);
    });

    it('loads format v2 metadata: the schema with field ids and types, every snapshot, main and the tag, the name mapping', async () => {
      const { 'metadata-location': location, metadata, config } = await load(alice);
      const dataset = await t.app.lakeport.catalog.getDataset(SALES);
      expect(config).toEqual({});
      expect(location).toMatch(new RegExp(`^${PUBLIC}/iceberg/v1/files/${dataset.dataset_id}/metadata/${snapshots[2]}-[0-9a-f]{16}\\.metadata\\.json$`));
      expect(metadata).toMatchObject({
        'format-version': 2,
        location: `${PUBLIC}/iceberg/v1/files/${dataset.dataset_id}`,
        'current-snapshot-id': snapshots[2],
        'last-sequence-number': 3,
        'current-schema-id': 1,
        'last-column-id': 6,
        'default-spec-id': 0,
        'partition-specs': [{ 'spec-id': 0, fields: [] }],
        'default-sort-order-id': 0,
        refs: { main: { 'snapshot-id': snapshots[2], type: 'branch' }, first: { 'snapshot-id': snapshots[0], type: 'tag' } },
        'metadata-log': [],
      });
      expect(metadata['table-uuid']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(metadata.schemas[0].fields).toEqual([
        { id: 1, name: 'id', required: true, type: 'long' },
        { id: 2, name: 'region', required: false, type: 'string' },
        { id: 3, name: 'amount', required: false, type: 'decimal(18,2)' },
        { id: 4, name: 'day', required: false, type: 'date' },
        { id: 5, name: 'at', required: false, type: 'timestamptz' },
        { id: 6, name: 'ip', required: false, type: 'string', doc: expect.stringContaining('IPv4') },
      ]);
      expect(JSON.parse(metadata.properties['schema.name-mapping.default'])).toEqual(COLUMNS.map((c, i) => ({ 'field-id': i + 1, names: [c.name] })));
      expect(JSON.parse(metadata.properties['lakeport.logical-types'])).toEqual({ ip: 'ipv4' });
      expect(metadata.properties['lakeport.dataset']).toBe('acme.sales.orders');
      expect(metadata.snapshots.map((s: any) => [s['snapshot-id'], s['parent-snapshot-id'], s['sequence-number'], s.summary.operation])).toEqual([
        [snapshots[0], undefined, 1, 'append'],
        [snapshots[1], snapshots[0], 2, 'append'],
        [snapshots[2], snapshots[1], 3, 'overwrite'],
      ]);
      expect(metadata.snapshots[2].summary).toMatchObject({ 'added-records': '300', 'deleted-records': '350', 'deleted-data-files': '2', 'total-records': '300', 'total-data-files': '1' });
      expect(metadata.snapshots[1].summary).toMatchObject({ 'added-records': '100', 'total-records': '350', 'total-data-files': '2' });
      expect(metadata['snapshot-log'].map((l: any) => l['snapshot-id'])).toEqual(snapshots);
      // The file holds what the load answered.
      const file = await get(alice, local(location));
      expect(file.statusCode).toBe(200);
      expect(file.headers['content-type']).toMatch(/^application\/json/);
      expect(file.json()).toEqual(metadata);
    });

    it('gives the same metadata file for the same state, a new one after a change, and 304 for its ETag', async () => {
      const first = await get(alice, TABLE_URL);
      const again = await get(alice, TABLE_URL);
      expect(again.json()['metadata-location']).toBe(first.json()['metadata-location']);
      expect(first.headers.etag).toBeDefined();
      expect((await get(alice, TABLE_URL, { 'if-none-match': String(first.headers.etag) })).statusCode).toBe(304);
      const refs = await get(alice, `${TABLE_URL}?snapshots=refs`);
      expect(refs.json().metadata.snapshots.map((s: any) => s['snapshot-id'])).toEqual([snapshots[0], snapshots[2]]);
      expect(refs.headers.etag).not.toBe(first.headers.etag);
      expectIcebergError(await get(alice, `${TABLE_URL}?snapshots=some`), 400, 'BadRequestException', 'VALIDATION_ERROR');

      await t.app.lakeport.catalog.createTag(SALES, 'second', snapshots[1], 'alice');
      const tagged = (await get(alice, TABLE_URL)).json();
      expect(tagged['metadata-location']).not.toBe(first.json()['metadata-location']);
      expect(tagged.metadata.refs.second).toEqual({ 'snapshot-id': snapshots[1], type: 'tag' });
      expect((await get(alice, TABLE_URL, { 'if-none-match': String(first.headers.etag) })).statusCode).toBe(200);
      // A sort order declared on the dataset (ALTER DATASET … SET SORTED BY) becomes the default sort order.
      await t.app.lakeport.catalog.alterDataset(SALES, { properties: { sort_order: [{ column: 'day', direction: 'desc' }, 'id'] } }, 'alice');
      const sorted = (await get(alice, TABLE_URL)).json().metadata;
      expect(sorted['sort-orders'][1]).toEqual({
        'order-id': 1,
        fields: [
          { transform: 'identity', 'source-id': 4, direction: 'desc', 'null-order': 'nulls-last' },
          { transform: 'identity', 'source-id': 1, direction: 'asc', 'null-order': 'nulls-last' },
        ],
      });
      expect(sorted['default-sort-order-id']).toBe(1);
      await t.app.lakeport.catalog.alterDataset(SALES, { properties: { sort_order: null } }, 'alice');
    });

    it('loads an earlier state by name@label: a tag, a snapshot id, previous', async () => {
      const tag = (await load(alice, `${TABLE_URL}@first`)).metadata;
      expect(tag['current-snapshot-id']).toBe(snapshots[0]);
      expect(tag.snapshots.map((s: any) => s['snapshot-id'])).toEqual([snapshots[0]]);
      const byId = (await load(rita, `${TABLE_URL}@${snapshots[1]}`)).metadata;
      expect(byId['current-snapshot-id']).toBe(snapshots[1]);
      expect(byId.refs.main).toEqual({ 'snapshot-id': snapshots[1], type: 'branch' });
      expect((await load(alice, `${TABLE_URL}%40previous`)).metadata['current-snapshot-id']).toBe(snapshots[1]);
      expectIcebergError(await get(alice, `${TABLE_URL}@nosuchtag`), 404, 'NoSuchTableException', 'TAG_NOT_FOUND');
      expectIcebergError(await get(alice, `${TABLE_URL}@99999999`), 404, 'NoSuchTableException', 'SNAPSHOT_NOT_FOUND');
      expectIcebergError(await get(alice, `${TABLE_URL}@bad!label`), 400, 'BadRequestException', 'INVALID_SELECTOR');
      expectIcebergError(await get(bob, `${TABLE_URL}@first`), 403, 'ForbiddenException');
    });

    it('leaves expired snapshots out, and their history before them', async () => {
      const ids = [
        await seedSnapshot(t, HISTORY, COLUMNS, ROWS_SQL(10)),
        await seedSnapshot(t, HISTORY, COLUMNS, ROWS_SQL(10, 100)),
        await seedSnapshot(t, HISTORY, COLUMNS, ROWS_SQL(10, 200)),
        await seedSnapshot(t, HISTORY, COLUMNS, ROWS_SQL(10, 300)),
      ];
      await t.app.lakeport.catalog.createTag(HISTORY, 'keep', ids[0], 'alice');
      const before = (await load(alice, '/iceberg/v1/namespaces/acme%1Fsales/tables/history')).metadata;
      const expiry = await t.app.lakeport.catalog.expireSnapshots(HISTORY, { olderThanMs: 0, retainLast: 2 });
      expect(expiry.expired).toEqual([ids[1]]);
      const after = (await load(alice, '/iceberg/v1/namespaces/acme%1Fsales/tables/history')).metadata;
      expect(after['last-updated-ms']).toBeGreaterThanOrEqual(before['last-updated-ms']);
      expect(after.snapshots.map((s: any) => s['snapshot-id'])).toEqual([ids[0], ids[2], ids[3]]);
      expect(after['snapshot-log'].map((l: any) => l['snapshot-id'])).toEqual([ids[2], ids[3]]);
      // What a snapshot whose parent expired removed is no longer known; what it holds is.
      expect(after.snapshots[1].summary).not.toHaveProperty('deleted-data-files');
      expect(after.snapshots[1].summary).toMatchObject({ 'total-data-files': '3', 'total-records': '30' });
      expect(after.snapshots[1]['parent-snapshot-id']).toBe(ids[1]);
      expectIcebergError(await get(alice, `/iceberg/v1/namespaces/acme%1Fsales/tables/history@${ids[1]}`), 410, 'NoSuchTableException', 'SNAPSHOT_EXPIRED');
    });

    it('keeps a load while nothing is written: a new snapshot and a revoked grant are seen at the next load', async () => {
      const url = '/iceberg/v1/namespaces/acme%1Fsales/tables/history';
      const grant = await alice.request('POST', '/policy/v1/access/workspace/acme/policies', { principal: { identity: 'rita', type: 'user' }, role: 'reader', pattern: 'acme.sales.history' });
      expect(grant.statusCode, grant.body).toBe(201);
      const first = await load(rita, url);
      const lookups = vi.spyOn(t.app.lakeport.catalog, 'listSnapshots');
      try {
        expect((await load(rita, url))['metadata-location']).toBe(first['metadata-location']);
        if (t.db.changes) expect(lookups).not.toHaveBeenCalled();
        const next = await seedSnapshot(t, HISTORY, COLUMNS, ROWS_SQL(5, 900));
        const after = await load(rita, url);
        expect(after.metadata['current-snapshot-id']).toBe(next);
        expect(after['metadata-location']).not.toBe(first['metadata-location']);
      } finally {
        lookups.mockRestore();
      }
      const revoked = await alice.request('DELETE', `/policy/v1/access/workspace/acme/policies/${grant.json().policy_id}`);
      expect(revoked.statusCode, revoked.body).toBeLessThan(300);
      expectIcebergError(await get(rita, url), 403, 'ForbiddenException', 'PERMISSION_DENIED');
    });
  });

  describe('writes and everything else', () => {
    it('answers every write with the spec error for an unsupported operation (406)', async () => {
      const writes: [string, string][] = [
        ['POST', '/iceberg/v1/namespaces'],
        ['DELETE', '/iceberg/v1/namespaces/acme%1Fsales'],
        ['POST', '/iceberg/v1/namespaces/acme%1Fsales/properties'],
        ['POST', '/iceberg/v1/namespaces/acme%1Fsales/tables'],
        ['POST', TABLE_URL],
        ['DELETE', TABLE_URL],
        ['POST', '/iceberg/v1/namespaces/acme%1Fsales/register'],
        ['POST', '/iceberg/v1/tables/rename'],
        ['POST', '/iceberg/v1/transactions/commit'],
        ['POST', '/iceberg/v1/lakeport/transactions/commit'],
        ['POST', `${TABLE_URL}/metrics`],
      ];
      for (const [method, url] of writes) {
        expectIcebergError(await request(method, alice, url, { 'content-type': 'application/json' }, '{}'), 406, 'UnsupportedOperationException', 'UNSUPPORTED_OPERATION');
      }
      expectIcebergError(await request('POST', undefined, '/iceberg/v1/namespaces', { 'content-type': 'application/json' }, '{}'), 401, 'NotAuthorizedException');
      expectIcebergError(await get(alice, '/iceberg/v1/namespaces/acme%1Fsales/views'), 404, 'NotFoundException', 'NOT_FOUND');
      expect((await get(alice, TABLE_URL)).statusCode).toBe(200);
    });
  });

  describe('the file route', () => {
    const current = async () => {
      const { metadata } = await load(alice);
      const listUrl = local(metadata.snapshots.at(-1)['manifest-list']);
      return { metadata, listUrl, base: local(metadata.location) };
    };

    it('serves the manifest list, built on first read, and the data files the catalog names', async () => {
      const { listUrl, base } = await current();
      const list = await get(alice, listUrl);
      expect(list.statusCode, list.body).toBe(200);
      expect(list.headers['content-type']).toBe('application/avro');
      expect(list.rawPayload.subarray(0, 4).toString('latin1')).toBe('Obj\u0001');
      const [file] = await t.app.lakeport.catalog.snapshotFiles(snapshots[2]);
      const data = await get(alice, `${base}/data/${file.file_id}.parquet`);
      expect(data.statusCode).toBe(200);
      expect(data.rawPayload.length).toBe(Number(file.size_bytes));
      expect(data.rawPayload.subarray(0, 4).toString('latin1')).toBe('PAR1');
      expect(data.headers['accept-ranges']).toBe('bytes');
      // The manifest the list names; a manifest of another schema or location was never written.
      const name = listUrl.split('/').at(-1)!.replace(/^snap-(\d+)-(\w+)\.avro$/, '$1-$2-m0.avro');
      expect((await get(alice, `${base}/metadata/${name}`)).statusCode).toBe(200);
      expectIcebergError(await get(alice, `${base}/metadata/${snapshots[2]}-000000000000-m0.avro`), 404, 'NotFoundException', 'FILE_NOT_FOUND');
    });

    it('answers HEAD and byte ranges: 206 with Content-Range, the suffix form, 416 past the end', async () => {
      const { base } = await current();
      const [file] = await t.app.lakeport.catalog.snapshotFiles(snapshots[2]);
      const url = `${base}/data/${file.file_id}.parquet`;
      const size = Number(file.size_bytes);
      const head = await request('HEAD', alice, url);
      expect(head.statusCode).toBe(200);
      expect(head.headers['content-length']).toBe(String(size));
      expect(head.headers['accept-ranges']).toBe('bytes');
      expect(head.body).toBe('');
      const whole = (await get(alice, url)).rawPayload;
      const first = await get(alice, url, { range: 'bytes=0-9' });
      expect(first.statusCode).toBe(206);
      expect(first.headers['content-range']).toBe(`bytes 0-9/${size}`);
      expect(first.rawPayload).toEqual(whole.subarray(0, 10));
      const middle = await get(alice, url, { range: `bytes=100-` });
      expect(middle.rawPayload).toEqual(whole.subarray(100));
      const tail = await get(alice, url, { range: 'bytes=-8' });
      expect(tail.headers['content-range']).toBe(`bytes ${size - 8}-${size - 1}/${size}`);
      expect(tail.rawPayload.subarray(4).toString('latin1')).toBe('PAR1');
      const headRange = await request('HEAD', alice, url, { range: 'bytes=0-99' });
      expect([headRange.statusCode, headRange.headers['content-length']]).toEqual([206, '100']);
      const past = await get(alice, url, { range: `bytes=${size}-` });
      expectIcebergError(past, 416, 'BadRequestException', 'RANGE_NOT_SATISFIABLE');
      expect(past.headers['content-range']).toBe(`bytes */${size}`);
      // Several ranges: the whole file (a server may ignore Range).
      expect((await get(alice, url, { range: 'bytes=0-1,5-6' })).rawPayload).toEqual(whole);
    });

    it('never lets a request path reach a blob: traversal, other datasets and directories are 404, other tenants 403', async () => {
      const { base, metadata } = await current();
      const dataset = await t.app.lakeport.catalog.getDataset(SALES);
      const [file] = await t.app.lakeport.catalog.snapshotFiles(snapshots[2]);
      const bobs = await t.app.lakeport.catalog.getDataset({ workspace: 'bobco', collection: 'secret', dataset: 'plans' });
      const [bobFile] = await t.app.lakeport.catalog.snapshotFiles(bobs.current_snapshot_id!);
      const attempts = [
        `${base}/data/..%2F..%2F..%2F${encodeURIComponent(file.path)}`,
        `${base}/data/${encodeURIComponent(file.path)}`,
        `${base}/data/${file.file_id}`,
        `${base}/data/${bobFile.file_id}.parquet`,
        `${base}/metadata/..%2F..%2F${file.file_id}.parquet`,
        `${base}/metadata/%2E%2E%2Fmetadata%2Fx.metadata.json`,
        `${base}/metadata/`,
        `${base}/data/`,
        `${base}/metadata/${metadata['current-snapshot-id']}-0000000000000000.metadata.json`,
        `/iceberg/v1/files/ds_nosuchdataset/data/${file.file_id}.parquet`,
        `/iceberg/v1/files/..%2F..%2Flake/data/${file.file_id}.parquet`,
        `/iceberg/v1/files/${dataset.dataset_id}/..%2F..%2F..%2Fetc/passwd`,
        `/iceberg/v1/files/${dataset.dataset_id}`,
        `/iceberg/v1/files/`,
      ];
      for (const url of attempts) {
        const res = await get(alice, url);
        expect([url, res.statusCode]).toEqual([url, 404]);
        expect(res.json().error.type, url).toMatch(/NotFoundException/);
      }
      expectIcebergError(await get(bob, `${base}/data/${file.file_id}.parquet`), 403, 'ForbiddenException', 'PERMISSION_DENIED');
      expectIcebergError(await get(bob, local(metadata.snapshots[0]['manifest-list'])), 403, 'ForbiddenException');
      expectIcebergError(await get(undefined, `${base}/data/${file.file_id}.parquet`), 401, 'NotAuthorizedException');
      expect((await get(rita, `${base}/data/${file.file_id}.parquet`)).statusCode).toBe(200);
    });

    it('decides again after a grant is revoked: the lookup kept between ranges does not outlive a write', async () => {
      const { base } = await current();
      const [file] = await t.app.lakeport.catalog.snapshotFiles(snapshots[2]);
      const url = `${base}/data/${file.file_id}.parquet`;
      const grant = await alice.request('POST', '/policy/v1/access/workspace/acme/policies', { principal: { identity: 'rita', type: 'user' }, role: 'reader', pattern: 'acme.hr.*' });
      expect(grant.statusCode, grant.body).toBe(201);
      const salaries = await load(rita, '/iceberg/v1/namespaces/acme%1Fhr/tables/salaries');
      const hrFile = `${local(salaries.metadata.location)}/data/${(await t.app.lakeport.catalog.snapshotFiles(salaries.metadata['current-snapshot-id']))[0].file_id}.parquet`;
      expect((await get(rita, hrFile, { range: 'bytes=0-3' })).statusCode).toBe(206);
      expect((await get(rita, hrFile, { range: 'bytes=4-7' })).statusCode).toBe(206);
      const revoked = await alice.request('DELETE', `/policy/v1/access/workspace/acme/policies/${grant.json().policy_id}`);
      expect(revoked.statusCode, revoked.body).toBeLessThan(300);
      expectIcebergError(await get(rita, hrFile, { range: 'bytes=8-11' }), 403, 'ForbiddenException', 'PERMISSION_DENIED');
      expect((await get(rita, url, { range: 'bytes=0-3' })).statusCode).toBe(206);
    });
  });
});
