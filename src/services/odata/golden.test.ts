import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { seedSnapshot } from '../../../test/seed.ts';

// The service document and $metadata of a small catalog, byte for byte as they were before they were
// streamed (test/fixtures/odata-golden; LAKEPORT_UPDATE_GOLDEN=1 writes them anew).
const GOLDEN = new URL('../../../test/fixtures/odata-golden/', import.meta.url);
const UPDATE = process.env.LAKEPORT_UPDATE_GOLDEN === '1';

const ORDERS = { workspace: 'acme', collection: 'sales', dataset: 'orders' };
const COLUMNS = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'Region name', type: 'VARCHAR', nullable: true, description: 'Where <it> was & "why"' },
  { name: 'amount', type: 'DECIMAL(18,2)', nullable: true },
  { name: 'day', type: 'DATE', nullable: true },
];
const ROWS = (n: number, offset = 0) =>
  `SELECT i + ${offset} AS id, ['north','south'][i % 2 + 1] AS "Region name", CAST(i * 1.5 AS DECIMAL(18,2)) AS amount, DATE '2024-01-01' + (i % 30)::INT AS day FROM range(${n}) r(i)`;

describe('OData documents, byte for byte', () => {
  let t: TestApp;
  let alice: TestUser; // owner of acme, reader on beta
  let bea: TestUser; // owner of beta
  let rita: TestUser; // reader on acme.sales.* only
  let nobody: TestUser; // no grant anywhere

  beforeAll(async () => {
    t = await createTestApp({}, { workers: false });
    [alice, bea, rita, nobody] = await Promise.all(['alice', 'bea', 'rita', 'nobody'].map((id) => signIn(t.app, t.adminToken, id)));
    await createWorkspace(alice, 'acme');
    await createWorkspace(bea, 'beta');
    const beta = await bea.request('POST', '/policy/v1/access/workspace/beta/policies', { principal: { identity: 'alice', type: 'user' }, role: 'reader', pattern: 'beta.*' });
    expect(beta.statusCode).toBeLessThan(300);
    const grant = await alice.request('POST', '/policy/v1/access/workspace/acme/policies', { principal: { identity: 'rita', type: 'user' }, role: 'reader', pattern: 'acme.sales.*' });
    expect(grant.statusCode).toBeLessThan(300);
    const first = await seedSnapshot(t, ORDERS, COLUMNS, ROWS(40), { message: 'first load' });
    const second = await seedSnapshot(t, ORDERS, COLUMNS, ROWS(30, 100), { message: 'second load' });
    await seedSnapshot(t, ORDERS, COLUMNS, ROWS(50, 200), { overwrite: true, message: 'reload' });
    const { catalog } = t.app.lakeport;
    await catalog.createTag(ORDERS, 'first', first, 'alice');
    await catalog.createTag(ORDERS, 'second', second, 'alice');
    const current = (await catalog.findDataset(ORDERS))!.current_snapshot_id!;
    await catalog.createTag(ORDERS, 'latest', current, 'rita');
    await catalog.createTag(ORDERS, 'also_latest', current, 'alice');
    await seedSnapshot(t, { workspace: 'acme', collection: 'hr', dataset: 'salaries' }, [{ name: 'pay', type: 'BIGINT', nullable: false }], 'SELECT 1 AS pay');
    await seedSnapshot(t, { workspace: 'acme', collection: 'sales', dataset: 'returns' }, [{ name: 'n', type: 'INTEGER', nullable: true }], 'SELECT 7 AS n');
    await seedSnapshot(t, { workspace: 'beta', collection: 'x', dataset: 'y' }, [{ name: 'v', type: 'VARCHAR', nullable: true }], "SELECT 'a' AS v");
    await catalog.createDataset({ workspace: 'acme', collection: 'sales', dataset: 'empty' }, { kind: 'table', columns: [{ name: 'a', type: 'BIGINT', nullable: true }] }, 'alice');
    await catalog.createDataset({ workspace: 'acme', collection: 'sales', dataset: 'stub' }, { kind: 'external', columns: [] }, 'alice');
  });
  afterAll(async () => {
    await t?.close();
  });

  const cases: [string, () => TestUser, string][] = [
    ['service-document-alice.json', () => alice, '/odata/api/v4'],
    ['service-document-rita.json', () => rita, '/odata/api/v4/'],
    ['service-document-nobody.json', () => nobody, '/odata/api/v4'],
    ['metadata-alice.xml', () => alice, '/odata/api/v4/$metadata'],
    ['metadata-rita.xml', () => rita, '/odata/api/v4/$metadata'],
    ['metadata-nobody.xml', () => nobody, '/odata/api/v4/$metadata'],
    ['metadata-orders-first.xml', () => alice, '/odata/api/v4/acme/sales/orders@first/$metadata'],
    ['metadata-orders.xml', () => rita, '/odata/api/v4/acme__sales__orders/$metadata'],
  ];
  it.each(cases)('%s', async (name, user, url) => {
    const res = await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${user().token}` } });
    expect(res.statusCode).toBe(200);
    // The server's own URL is the only thing that differs between runs.
    const body = res.body.replaceAll(/http:\/\/[^/"]+\/odata/g, 'http://lakeport.test/odata');
    const file = new URL(name, GOLDEN);
    if (UPDATE) fs.writeFileSync(file, body);
    expect(body).toBe(fs.readFileSync(file, 'utf8'));
  });
});
