/**
 * Iceberg interoperability: Lakeport started as `npm start` starts it (test/e2e/server.ts), data
 * uploaded with `lakeport upload`, then read only by other people's code:
 *   - iceberg-js (supabase's Iceberg REST client): config, namespaces, tables, load, with a Lakeport
 *     client credential exchanged at /iceberg/v1/oauth/tokens; what a second identity and another
 *     tenant may see; the spec's errors for writes;
 *   - icebird (hyparam's Iceberg reader over hyparquet): every row, from the metadata location the
 *     catalog answers, at the current snapshot, at a tag and at an older snapshot id;
 *   - fastavro: every manifest list and manifest, against the Avro schemas of the Iceberg spec
 *     (./iceberg_avro_check.py, written from the spec's tables);
 *   - a second Lakeport, whose workspace is bound to this one's /iceberg with client credentials
 *     (docs/catalog-bindings.md): its sync lists what that credential may read.
 * See docs/iceberg.md.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { IcebergError, IcebergRestCatalog } from 'iceberg-js';
import { icebergRead } from 'icebird';
import { afterAll, describe, expect, it } from 'vitest';
import { once } from '../async.ts';
import { describeRun, lakeport } from '../e2e/cli.ts';
import { httpApi } from '../e2e/http.ts';
import { serverForSuite } from '../e2e/server.ts';
import { lakeportPython } from '../python.ts';

const suite = serverForSuite('iceberg');
const { call, expectStatus, ownWorkspace } = httpApi(() => suite.server);

const OWNER = 'ice_owner';
const READER = 'ice_reader';
const OUTSIDER = 'ice_outsider';
const TABLE = { namespace: ['lake', 'sales'], name: 'orders' };

/** The rows of each upload: A (the first snapshot, tagged v1), B appended, C replacing them all. */
function rowsSql(from: number, count: number) {
  return `SELECT i AS id, ['Zürich','Kraków','São Paulo'][i % 3 + 1] AS city, CAST(i * 1.25 AS DECIMAL(12,2)) AS amount, i / 8 AS ratio,
                 DATE '2024-01-01' + (i % 90)::INT AS day, TIMESTAMPTZ '2024-03-01 00:00:00+00' + to_minutes(i) AS at, i % 2 = 0 AS even,
                 CASE WHEN i % 5 = 0 THEN NULL ELSE 'note ' || i END AS note
          FROM range(${from}, ${from + count}) r(i)`;
}
const UPLOADS = { a: [0, 700], b: [700, 300], c: [5000, 450] } as const;

/** A row as compared: what DuckDB reads from the uploaded Parquet, and what icebird gives, in the same plain form. */
type Row = Record<string, string | number | boolean | null>;
function plain(row: Record<string, unknown>): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) {
    if (v === null || v === undefined) out[k] = null;
    else if (typeof v === 'bigint') out[k] = Number(v);
    else if (v instanceof Date) out[k] = k === 'day' ? v.toISOString().slice(0, 10) : v.toISOString();
    else if (typeof v === 'number') out[k] = Math.round(v * 1e6) / 1e6;
    else out[k] = v as string | boolean;
  }
  return out;
}
const byId = (a: Row, b: Row) => Number(a.id) - Number(b.id);

const secrets = once(async () => {
  expectStatus(await call('GET', '/healthz'), 200);
  const secret = async (id: string) => expectStatus(await call('POST', `/auth/clients/${id}/credentials`, { admin: true, json: {} }), 200).secret as string;
  return { [OWNER]: await secret(OWNER), [READER]: await secret(READER), [OUTSIDER]: await secret(OUTSIDER) } as Record<string, string>;
});

/** A token of every scope from /auth/token, for setting the lake up (the Iceberg exchange gives the read scope only). */
async function lakeportToken(identity: string): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: identity, client_secret: (await secrets())[identity] });
  const response = await fetch(`${suite.server.url}/auth/token`, { method: 'POST', body: form });
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** A Lakeport client credential exchanged at the Iceberg token endpoint, as Iceberg clients do (form body, scope `catalog`). */
async function icebergToken(identity: string): Promise<string> {
  const secret = (await secrets())[identity];
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: identity, client_secret: secret, scope: 'catalog' });
  const response = await fetch(`${suite.server.url}/iceberg/v1/oauth/tokens`, { method: 'POST', body: form });
  const body = (await response.json()) as Record<string, unknown>;
  expect(response.status, JSON.stringify(body)).toBe(200);
  expect(body).toMatchObject({ token_type: 'bearer', issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', scope: 'odata' });
  return body.access_token as string;
}

const catalogFor = (token: string, warehouse?: string) => new IcebergRestCatalog({ baseUrl: `${suite.server.url}/iceberg`, auth: { type: 'bearer', token }, ...(warehouse ? { warehouse } : {}) });

async function job(token: string, sql: string) {
  const { execution_id } = expectStatus(await call('POST', '/jobs/api/v1/jobs', { token, json: { sql_text: sql } }), 201);
  for (;;) {
    const status = expectStatus(await call('GET', `/jobs/api/v1/jobs/${execution_id}/status?wait=30`, { token }), 200);
    if (status.in_progress) continue;
    expect(status.status, JSON.stringify(status.error)).toBe('succeeded');
    return status;
  }
}

/**
 * The lake: workspace `lake` of OWNER with sales.orders (three uploads, a tag), hr.salaries and a
 * view; READER may read sales.orders only; OUTSIDER owns workspace `other`. The snapshot ids and the
 * rows each state holds, read back by DuckDB from the uploaded files.
 */
const lake = once(async () => {
  const owner = await lakeportToken(OWNER);
  await ownWorkspace(owner, OWNER, 'lake');
  await ownWorkspace(await lakeportToken(OUTSIDER), OUTSIDER, 'other');
  expectStatus(
    await call('POST', '/policy/v1/access/workspace/lake/policies', { token: owner, json: { principal: { identity: READER, type: 'user' }, role: 'reader', pattern: 'lake.sales.orders' } }),
    201,
  );
  const duck = await DuckDBInstance.create(':memory:');
  const c = await duck.connect();
  const rows: Record<string, Row[]> = {};
  const files: Record<string, string> = {};
  for (const [name, [from, count]] of Object.entries(UPLOADS)) {
    files[name] = path.join(suite.work, `orders_${name}.parquet`);
    await c.run(`COPY (${rowsSql(from, count)}) TO '${files[name]}' (FORMAT parquet)`);
    rows[name] = ((await c.runAndReadAll(`SELECT * FROM read_parquet('${files[name]}')`)).getRowObjectsJS() as Record<string, unknown>[]).map(plain);
  }
  c.closeSync();
  const upload = async (file: string, to: string, ...extra: string[]) => {
    const identity = to.startsWith('other.') ? OUTSIDER : OWNER;
    const env: NodeJS.ProcessEnv = { ...process.env, LAKEPORT_URL: suite.server.url, LAKEPORT_CLIENT_ID: identity, LAKEPORT_CLIENT_SECRET: (await secrets())[identity] };
    delete env.LAKEPORT_TOKEN;
    const run = await lakeport(['upload', file, '--to', to, '--accept', ...extra], env);
    expect(run.code, describeRun(run)).toBe(0);
  };
  await upload(files.a, 'lake.sales.orders');
  await job(owner, 'CREATE TAG v1 ON lake.sales.orders');
  await upload(files.b, 'lake.sales.orders');
  await upload(files.c, 'lake.sales.orders', '--replace');
  await upload(files.a, 'lake.hr.salaries');
  await job(owner, 'CREATE VIEW lake.sales.v_orders AS SELECT id FROM lake.sales.orders');
  await upload(files.b, 'other.x.y');
  return { owner: await icebergToken(OWNER), rows: { current: rows.c, v1: rows.a, second: [...rows.a, ...rows.b] } };
});

/** Reads a table state with icebird from the metadata location the catalog answers for `name` (orders, orders@v1, orders@<id>). */
async function readWithIcebird(token: string, name: string) {
  const result = (await catalogFor(token).loadTableResult({ namespace: TABLE.namespace, name }))!;
  const metadataLocation = result['metadata-location'] as string;
  const tableUrl = result.metadata.location as string;
  expect(metadataLocation.startsWith(`${tableUrl}/metadata/`)).toBe(true);
  const headers = { authorization: `Bearer ${token}` };
  // icebird 0.3.1 passes requestInit to the metadata and data file fetches but not to its manifest
  // list and manifest fetches (src/manifest.js calls fetch without it), so those get the same header
  // here, as a browser's cookie would carry it; the route refuses them without (see the file tests).
  const original = globalThis.fetch;
  let patched = 0;
  globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input instanceof Request ? input.url : input);
    if (url.startsWith(suite.server.url) && !new Headers(init?.headers).has('authorization')) {
      patched++;
      return original(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), ...headers } });
    }
    return original(input, init);
  };
  try {
    const rows = await icebergRead({ tableUrl, metadataFileName: metadataLocation.slice(tableUrl.length + '/metadata/'.length), requestInit: { headers } });
    return { rows: rows.map(plain).sort(byId), metadata: result.metadata, metadataLocation, patched };
  } finally {
    globalThis.fetch = original;
  }
}

async function snapshotsOf(token: string) {
  const metadata = await catalogFor(token).loadTable(TABLE);
  return (metadata.snapshots ?? []).map((s) => Number(s['snapshot-id']));
}

describe('iceberg-js against the catalog', () => {
  it('reads the config, namespaces and tables, and loads a table, with an exchanged Lakeport credential', async () => {
    const { owner } = await lake();
    const catalog = catalogFor(owner);
    const config = await catalog.loadConfig();
    expect(config.overrides).toEqual({});
    expect(config.endpoints).toContain('GET /v1/{prefix}/namespaces/{namespace}/tables/{table}');
    expect((await catalog.listNamespaces()).namespaces).toEqual([{ namespace: ['lake'] }]);
    expect((await catalog.listNamespaces({ parent: { namespace: ['lake'] } })).namespaces).toEqual([{ namespace: ['lake', 'hr'] }, { namespace: ['lake', 'sales'] }]);
    // The view is not an Iceberg table.
    expect((await catalog.listTables({ namespace: ['lake', 'sales'] })).identifiers).toEqual([TABLE]);
    expect(await catalog.namespaceExists({ namespace: ['lake', 'sales'] })).toBe(true);
    expect(await catalog.namespaceExists({ namespace: ['lake', 'nope'] })).toBe(false);
    expect(await catalog.tableExists(TABLE)).toBe(true);
    expect(await catalog.tableExists({ namespace: TABLE.namespace, name: 'nope' })).toBe(false);

    const result = (await catalog.loadTableResult(TABLE))!;
    const metadata = result.metadata;
    expect(metadata['format-version']).toBe(2);
    const snapshots = metadata.snapshots ?? [];
    expect(snapshots.map((s) => s.summary.operation)).toEqual(['append', 'append', 'overwrite']);
    expect(metadata['current-snapshot-id']).toBe(snapshots[2]['snapshot-id']);
    expect(metadata.refs).toEqual({ main: { 'snapshot-id': snapshots[2]['snapshot-id'], type: 'branch' }, v1: { 'snapshot-id': snapshots[0]['snapshot-id'], type: 'tag' } });
    expect(snapshots[2].summary['total-records']).toBe(String(UPLOADS.c[1]));
    // Loading again gives the same metadata file; the ETag answers 304.
    const again = (await catalog.loadTableResult(TABLE))!;
    expect(again['metadata-location']).toBe(result['metadata-location']);
    expect(await catalog.loadTable(TABLE, { ifNoneMatch: again.etag! })).toBeNull();

    // The warehouse: config answers its prefix, and iceberg-js uses it.
    const prefixed = catalogFor(owner, 'lakeport');
    expect((await prefixed.loadConfig()).overrides).toEqual({ prefix: 'lakeport' });
    expect((await prefixed.loadTableResult(TABLE))!['metadata-location']).toBe(result['metadata-location']);
  });

  it('answers writes with the spec error for an unsupported operation (406)', async () => {
    const catalog = catalogFor((await lake()).owner);
    const attempts: [string, () => Promise<unknown>][] = [
      ['createNamespace', () => catalog.createNamespace({ namespace: ['lake', 'new'] })],
      ['dropNamespace', () => catalog.dropNamespace({ namespace: ['lake', 'hr'] })],
      ['dropTable', () => catalog.dropTable(TABLE)],
      ['renameTable', () => catalog.renameTable({ source: TABLE, destination: { namespace: TABLE.namespace, name: 'renamed' } })],
      ['updateNamespaceProperties', () => catalog.updateNamespaceProperties({ namespace: ['lake'] }, { updates: { a: 'b' } })],
    ];
    for (const [name, attempt] of attempts) {
      const error = await attempt().then(() => undefined, (e: unknown) => e);
      expect(error, name).toBeInstanceOf(IcebergError);
      expect({ name, status: (error as IcebergError).status, type: (error as IcebergError).icebergType }).toEqual({ name, status: 406, type: 'UnsupportedOperationException' });
    }
    expect(await catalog.tableExists(TABLE)).toBe(true);
  });

  it('shows a second identity only what it may read, and another tenant nothing of the lake', async () => {
    await lake();
    const reader = catalogFor(await icebergToken(READER));
    expect((await reader.listNamespaces()).namespaces).toEqual([{ namespace: ['lake'] }]);
    expect((await reader.listNamespaces({ parent: { namespace: ['lake'] } })).namespaces).toEqual([{ namespace: ['lake', 'sales'] }]);
    expect((await reader.listTables({ namespace: ['lake', 'sales'] })).identifiers).toEqual([TABLE]);
    expect((await reader.loadTable(TABLE))['format-version']).toBe(2);
    const refused = async (attempt: Promise<unknown>) => {
      const error = await attempt.then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(IcebergError);
      return { status: (error as IcebergError).status, type: (error as IcebergError).icebergType };
    };
    expect(await refused(reader.loadTable({ namespace: ['lake', 'hr'], name: 'salaries' }))).toEqual({ status: 403, type: 'ForbiddenException' });
    expect(await refused(reader.listTables({ namespace: ['lake', 'hr'] }))).toEqual({ status: 403, type: 'ForbiddenException' });

    const outsider = catalogFor(await icebergToken(OUTSIDER));
    expect((await outsider.listNamespaces()).namespaces).toEqual([{ namespace: ['other'] }]);
    expect(await refused(outsider.loadTable(TABLE))).toEqual({ status: 403, type: 'ForbiddenException' });
    expect(await refused(outsider.listNamespaces({ parent: { namespace: ['lake'] } }))).toEqual({ status: 403, type: 'ForbiddenException' });
    expect(await refused(outsider.loadNamespaceMetadata({ namespace: ['lake'] }))).toEqual({ status: 403, type: 'ForbiddenException' });
    // Its own table loads; the lake's files refuse its token.
    expect((await outsider.loadTable({ namespace: ['other', 'x'], name: 'y' }))['format-version']).toBe(2);
    const { metadataLocation } = await readWithIcebird((await lake()).owner, 'orders');
    const stolen = await fetch(metadataLocation, { headers: { authorization: `Bearer ${await icebergToken(OUTSIDER)}` } });
    expect(stolen.status).toBe(403);
    expect(((await stolen.json()) as { error: { type: string } }).error.type).toBe('ForbiddenException');
  });
});

describe('icebird reads the tables end to end', () => {
  it('every row at the current snapshot, at a tag and at an older snapshot id', async () => {
    const { owner, rows } = await lake();
    const [, second] = await snapshotsOf(owner);
    const current = await readWithIcebird(owner, 'orders');
    expect(current.rows).toEqual([...rows.current].sort(byId));
    const tagged = await readWithIcebird(owner, 'orders@v1');
    expect(tagged.rows).toEqual([...rows.v1].sort(byId));
    const older = await readWithIcebird(owner, `orders@${second}`);
    expect(older.rows).toEqual([...rows.second].sort(byId));
    // Each state is its own metadata file, whose main branch is that snapshot.
    expect(new Set([current.metadataLocation, tagged.metadataLocation, older.metadataLocation]).size).toBe(3);
    expect(older.metadata['current-snapshot-id']).toBe(second);
    expect(current.patched).toBeGreaterThan(0);
  });

  it('reads as the second identity, and not without a token', async () => {
    const { rows } = await lake();
    const reader = await icebergToken(READER);
    expect((await readWithIcebird(reader, 'orders')).rows).toEqual([...rows.current].sort(byId));
    const { metadata } = await readWithIcebird(reader, 'orders');
    const listUrl = (metadata.snapshots ?? []).at(-1)!['manifest-list'];
    expect((await fetch(listUrl)).status).toBe(401);
  });
});

describe('a second Lakeport bound to this catalog', () => {
  const other = serverForSuite('iceberg-bound', { env: { LAKEPORT_CATALOG_ALLOW_PRIVATE_NETWORKS: 'true' } });
  const api = httpApi(() => other.server);

  it('tests and syncs the binding with client credentials: stubs for what the credential may read', async () => {
    await lake();
    const secret = api.expectStatus(await api.call('POST', '/auth/clients/binder/credentials', { admin: true, json: {} }), 200).secret as string;
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'binder', client_secret: secret });
    const token = ((await (await fetch(`${other.server.url}/auth/token`, { method: 'POST', body: form })).json()) as { access_token: string }).access_token;
    await api.ownWorkspace(token, 'binder', 'mirror');
    const binding = {
      kind: 'iceberg_rest',
      config: { uri: `${suite.server.url}/iceberg`, warehouse: 'lakeport' },
      auth: { type: 'oauth2', client_id: READER, client_secret: (await secrets())[READER] },
    };
    api.expectStatus(await api.call('PUT', '/control/v1/workspaces/mirror/catalog', { token, json: binding }), 200);
    expect(api.expectStatus(await api.call('POST', '/control/v1/workspaces/mirror/catalog/test', { token, json: {} }), 200)).toMatchObject({ ok: true, prefix: 'lakeport', namespaces: 1 });
    const synced = api.expectStatus(await api.call('POST', '/control/v1/workspaces/mirror/catalog/sync', { token }), 200);
    // The reader may read lake.sales.orders only: not lake.hr.salaries, not the view, not the other tenant.
    expect(synced).toMatchObject({ namespaces: 2, tables: 1, added: ['lake__sales.orders'], skipped: [] });
    // A wrong secret is the catalog's refusal, not the caller's error.
    api.expectStatus(await api.call('PUT', '/control/v1/workspaces/mirror/catalog', { token, json: { ...binding, auth: { ...binding.auth, client_secret: 'lp_sec_wrong' } } }), 200);
    expect(api.expectStatus(await api.call('POST', '/control/v1/workspaces/mirror/catalog/test', { token, json: {} }), 200)).toMatchObject({ ok: false, reason: 'auth_refused', status: 401 });
  });
});

describe('fastavro against the Iceberg spec', () => {
  const scratch = once(async () => fs.mkdtemp(path.join(suite.work, 'avro-')));
  afterAll(async () => {
    await fs.rm(await scratch(), { recursive: true, force: true });
  });

  it('validates every manifest list and manifest of every snapshot', async () => {
    const python = await lakeportPython();
    if (!python) {
      // Skipped only on a developer machine without Python; CI makes the environment first (.ci/run).
      expect(process.env.CI, 'no Python with fastavro, and CI is set').toBeFalsy();
      return;
    }
    const { owner } = await lake();
    const headers = { authorization: `Bearer ${owner}` };
    const dir = await scratch();
    const download = async (url: string) => {
      const response = await fetch(url, { headers });
      expect(response.status, url).toBe(200);
      const file = path.join(dir, url.split('/').at(-1)!);
      await fs.writeFile(file, Buffer.from(await response.arrayBuffer()));
      return file;
    };
    const check = async (args: string[]) => {
      const { stdout } = await promisify(execFile)(python, [path.join(import.meta.dirname, 'iceberg_avro_check.py'), ...args]).catch((error: { stdout?: string; stderr?: string }) => {
        throw new Error(`fastavro check failed:\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
      });
      return stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, any>);
    };
    const metadata = await catalogFor(owner).loadTable(TABLE);
    const snapshots = metadata.snapshots ?? [];
    expect(snapshots).toHaveLength(3);
    const lists = await check(await Promise.all(snapshots.map(async (s) => `list:${await download(s['manifest-list'])}`)));
    expect(lists.map((l) => l.records)).toEqual([1, 1, 1]);
    const manifests = await check(await Promise.all(lists.map(async (l) => `manifest:${await download(l.manifests[0])}`)));
    // Every file of each snapshot, its records, and bounds for the columns the statistics cover.
    expect(manifests.map((m) => m.record_count)).toEqual([UPLOADS.a[1], UPLOADS.a[1] + UPLOADS.b[1], UPLOADS.c[1]]);
    expect(manifests.map((m) => m.statuses)).toEqual([[1], [0, 1], [1]]);
    expect(lists.map((l) => l.added_rows + l.existing_rows)).toEqual(manifests.map((m) => m.record_count));
    for (const m of manifests) expect(m.bounds).toBeGreaterThan(0);
    expect(new Set([...lists, ...manifests].map((f) => f.codec))).toEqual(new Set(['deflate']));
  });
});
