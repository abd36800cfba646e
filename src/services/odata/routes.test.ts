import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RowReader } from '../../core/engine/index.ts';
import { KEPT_READ_TTL_MS } from '../../core/kept.ts';
import { createTestApp, tempDir, type TestApp } from '../../../test/harness.ts';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { seedSnapshot } from '../../../test/seed.ts';

const SALES = { workspace: 'acme', collection: 'sales', dataset: 'orders' };
const COLUMNS = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'region', type: 'VARCHAR', nullable: true },
  { name: 'amount', type: 'DECIMAL(18,2)', nullable: true },
  { name: 'ratio', type: 'DOUBLE', nullable: true },
  { name: 'day', type: 'DATE', nullable: true },
  { name: 'at', type: 'TIMESTAMP WITH TIME ZONE', nullable: true },
  { name: 'ip', type: 'IPV4', nullable: true },
];
const ROWS_SQL = (n: number, offset = 0) => `
  SELECT i + ${offset} AS id, ['north','south','east'][i % 3 + 1] AS region, CAST(i * 1.25 AS DECIMAL(18,2)) AS amount,
         CASE WHEN i = 0 THEN 'nan'::DOUBLE ELSE i / 4 END AS ratio, DATE '2024-01-01' + (i % 60)::INT AS day,
         TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_hours(i) AS at, '10.0.' || (i % 256) || '.1' AS ip
  FROM range(${n}) r(i)`;

describe('OData service', () => {
  let t: TestApp;
  let alice: TestUser; // owner of acme
  let rita: TestUser; // reader on acme.sales.* only
  let bob: TestUser; // another tenant
  let snapshots: number[];
  // The reader's own scratch directory, where cursors write their ranges.
  const scratch = tempDir('lakeport-odata-scratch-');
  let reader: RowReader;
  const rangeFiles = () => new Set(fs.readdirSync(scratch.dir).filter((name) => name.startsWith('rows-')));

  const get = (user: TestUser | undefined, url: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url, headers: { ...(user ? { authorization: `Bearer ${user.token}` } : {}), ...headers } });
  const rows = (user: TestUser, path: string) => get(user, `/odata/api/v4/${path}`);

  beforeAll(async () => {
    reader = await RowReader.create({ threads: 2, memoryLimit: '512MB', scratchDirectory: scratch.dir });
    t = await createTestApp({ reader }, { workers: false });
    [alice, rita, bob] = await Promise.all(['alice', 'rita', 'bob'].map((id) => signIn(t.app, t.adminToken, id)));
    await createWorkspace(alice, 'acme');
    await createWorkspace(bob, 'bobco');
    const grant = await alice.request('POST', '/policy/v1/access/workspace/acme/policies', { principal: { identity: 'rita', type: 'user' }, role: 'reader', pattern: 'acme.sales.*' });
    expect(grant.statusCode).toBeLessThan(300);
    snapshots = [
      await seedSnapshot(t, SALES, COLUMNS, ROWS_SQL(250), { message: 'first load' }),
      await seedSnapshot(t, SALES, COLUMNS, ROWS_SQL(300, 1000), { overwrite: true, message: 'reload' }),
    ];
    await seedSnapshot(t, { workspace: 'acme', collection: 'hr', dataset: 'salaries' }, [{ name: 'pay', type: 'BIGINT', nullable: false }], 'SELECT 1 AS pay');
    await seedSnapshot(t, { workspace: 'bobco', collection: 'secret', dataset: 'plans' }, [{ name: 'x', type: 'BIGINT', nullable: false }], 'SELECT 42 AS x');
    await t.app.lakeport.catalog.createTag(SALES, 'first', snapshots[0], 'alice');
  });
  afterAll(async () => {
    await t?.close();
    reader?.close();
    scratch.remove();
  });

  describe('authentication', () => {
    it('answers 401 offering Bearer and Basic when there are no credentials', async () => {
      const res = await get(undefined, '/odata/api/v4/');
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/Bearer/);
      expect(res.headers['www-authenticate']).toMatch(/Basic/);
      expect(res.json().code).toBeTruthy();
    });

    it('answers 401 for a bad token or malformed Basic credentials', async () => {
      expect((await get(undefined, '/odata/api/v4/', { authorization: 'Bearer nope' })).statusCode).toBe(401);
      expect((await get(undefined, '/odata/api/v4/', { authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` })).statusCode).toBe(401);
    });

    it('takes HTTP Basic with a client_id and credential secret, and refuses a wrong secret', async () => {
      const created = await t.app.inject({ method: 'POST', url: '/auth/clients/rita/credentials', headers: { 'x-admin-token': t.adminToken }, payload: {} });
      const { secret } = created.json();
      const basic = (s: string) => ({ authorization: `Basic ${Buffer.from(`rita:${s}`).toString('base64')}` });
      const ok = await get(undefined, '/odata/api/v4/acme/sales/orders?$top=1', basic(secret));
      expect(ok.statusCode).toBe(200);
      expect(ok.json().value).toHaveLength(1);
      const wrong = await get(undefined, '/odata/api/v4/acme/sales/orders', basic(`${secret.slice(0, -1)}${secret.endsWith('x') ? 'y' : 'x'}`));
      expect(wrong.statusCode).toBe(401);
      expect(wrong.headers['www-authenticate']).toMatch(/Basic/);
    });

    it('refuses a token without the odata scope (403)', async () => {
      const narrow = await signIn(t.app, t.adminToken, 'alice', { scopes: ['jobs'] });
      expect((await get(narrow, '/odata/api/v4/')).statusCode).toBe(403);
    });

    it('serves llms.txt without authentication', async () => {
      const res = await get(undefined, '/odata/.well-known/llms.txt');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.body).toMatch(/\$filter/);
    });
  });

  describe('service document', () => {
    it('lists exactly the entity sets the caller may read', async () => {
      // A workspace of its own, laid out like acme, so datasets other tests add to acme do not show up here.
      const [dora, reed] = await Promise.all(['dora', 'reed'].map((id) => signIn(t.app, t.adminToken, id)));
      await createWorkspace(dora, 'listing');
      const grant = await dora.request('POST', '/policy/v1/access/workspace/listing/policies', { principal: { identity: 'reed', type: 'user' }, role: 'reader', pattern: 'listing.sales.*' });
      expect(grant.statusCode).toBe(201);
      await seedSnapshot(t, { workspace: 'listing', collection: 'sales', dataset: 'orders' }, COLUMNS, ROWS_SQL(3));
      await seedSnapshot(t, { workspace: 'listing', collection: 'hr', dataset: 'salaries' }, [{ name: 'pay', type: 'BIGINT', nullable: false }], 'SELECT 1 AS pay');
      const res = await get(dora, '/odata/api/v4/');
      expect(res.statusCode).toBe(200);
      expect(res.headers['odata-version']).toBe('4.0');
      const doc = res.json();
      expect(doc['@odata.context']).toMatch(/\/odata\/api\/v4\/\$metadata$/);
      expect(doc.value.map((s: { url: string }) => s.url).sort()).toEqual(['listing/hr/salaries', 'listing/sales/orders']);
      const reeds = (await get(reed, '/odata/api/v4')).json().value.map((s: { url: string }) => s.url);
      expect(reeds).toEqual(['listing/sales/orders']);
      const bobs = (await get(bob, '/odata/api/v4/')).json().value.map((s: { url: string }) => s.url);
      expect(bobs).toEqual(['bobco/secret/plans']);
    });
  });

  describe('authorization', () => {
    it('answers 403 without a grant, whether or not the dataset exists, and 404 inside a granted scope', async () => {
      expect((await rows(rita, 'acme/hr/salaries')).statusCode).toBe(403);
      expect((await rows(alice, 'bobco/secret/plans')).statusCode).toBe(403);
      expect((await rows(alice, 'bobco/secret/nothing')).statusCode).toBe(403);
      expect((await rows(alice, 'bobco/secret/plans/$metadata')).statusCode).toBe(403);
      const missing = await rows(alice, 'acme/sales/nothing');
      expect(missing.statusCode).toBe(404);
      expect(missing.json().code).toBe('DATASET_NOT_FOUND');
      expect((await rows(rita, 'acme/sales/nothing')).statusCode).toBe(404);
    });
  });

  describe('rows', () => {
    it('pages through server-driven paging without gaps or repeats', async () => {
      const seen: number[] = [];
      let url: string | undefined = '/odata/api/v4/acme/sales/orders';
      let pages = 0;
      while (url) {
        const res = await get(rita, url);
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        const page = res.json();
        expect(page['@odata.context']).toMatch(/\$metadata#acme__sales__orders$/);
        seen.push(...page.value.map((r: { id: number }) => r.id));
        url = page['@odata.nextLink']?.replace(/^https?:\/\/[^/]+/, '');
        pages++;
      }
      expect(pages).toBe(3);
      expect(seen).toEqual(Array.from({ length: 300 }, (_, i) => 1000 + i));
    });

    it('writes values as OData JSON', async () => {
      const [first, second] = (await rows(rita, 'acme/sales/orders?$top=2')).json().value;
      expect(first).toEqual({ id: 1000, region: 'north', amount: 0, ratio: 'NaN', day: '2024-01-01', at: '2024-01-01T00:00:00.000000Z', ip: '10.0.0.1', _lakeport_row_id: 0 });
      expect(second).toMatchObject({ amount: 1.25, ratio: 0.25, at: '2024-01-01T01:00:00.000000Z' });
    });

    it('counts, and counts alone with $top=0', async () => {
      const page = (await rows(rita, 'acme/sales/orders?$count=true&$top=5')).json();
      expect(page['@odata.count']).toBe(300);
      expect(page.value).toHaveLength(5);
      const only = (await rows(rita, 'acme/sales/orders?$count=true&$top=0')).json();
      expect(only).toMatchObject({ '@odata.count': 300, value: [] });
      expect(only['@odata.nextLink']).toBeUndefined();
    });

    it('filters, selects, orders and skips', async () => {
      const res = await rows(rita, `acme/sales/orders?$filter=${encodeURIComponent("region eq 'south' and amount ge 100")}&$select=id,amount&$orderby=${encodeURIComponent('amount desc')}&$skip=1&$top=2&$count=true`);
      expect(res.statusCode).toBe(200);
      const page = res.json();
      expect(page['@odata.context']).toMatch(/#acme__sales__orders\(id,amount\)$/);
      expect(page['@odata.count']).toBe(73);
      expect(page.value).toEqual([
        { id: 1295, amount: 368.75 },
        { id: 1292, amount: 365 },
      ]);
      const next = page['@odata.nextLink'] as string;
      expect(decodeURIComponent(next)).toContain('$skip=1');
      const more = (await get(rita, next.replace(/^https?:\/\/[^/]+/, ''))).json();
      expect(more.value[0]).toEqual({ id: 1289, amount: 361.25 });
    });

    it('aggregates with $apply', async () => {
      const apply = encodeURIComponent('groupby((region),aggregate(amount with sum as total,$count as n))');
      const page = (await rows(rita, `acme/sales/orders?$apply=${apply}&$orderby=region`)).json();
      expect(page.value.map((r: { region: string; n: number }) => [r.region, r.n])).toEqual([
        ['east', 100],
        ['north', 100],
        ['south', 100],
      ]);
    });

    it('streams a full 25 000-row page', async () => {
      const big = { workspace: 'acme', collection: 'sales', dataset: 'big' };
      await seedSnapshot(t, big, [{ name: 'n', type: 'BIGINT', nullable: false }], 'SELECT i AS n FROM range(30000) r(i)');
      const page = (await rows(rita, 'acme/sales/big?$top=25000')).json();
      expect(page.value).toHaveLength(25_000);
      expect(page.value[24_999]).toEqual({ n: 24_999, _lakeport_row_id: 24_999 });
      const rest = (await get(rita, page['@odata.nextLink'].replace(/^https?:\/\/[^/]+/, ''))).json();
      expect(rest.value).toHaveLength(5_000);
      expect(rest.value[0]).toEqual({ n: 25_000, _lakeport_row_id: 25_000 });
      expect(rest['@odata.nextLink']).toBeUndefined();
    });

    it('pages across files, with a filter, and stops where the data stops', async () => {
      const multi = { workspace: 'acme', collection: 'sales', dataset: 'multi' };
      const columns = [{ name: 'n', type: 'BIGINT', nullable: false }];
      // Three files of 1 000, 7 and 2 000 rows.
      await seedSnapshot(t, multi, columns, 'SELECT i AS n FROM range(0, 1000) r(i)');
      await seedSnapshot(t, multi, columns, 'SELECT i AS n FROM range(1000, 1007) r(i)');
      await seedSnapshot(t, multi, columns, 'SELECT i AS n FROM range(1007, 3007) r(i)');
      const readAll = async (query: string) => {
        const seen: number[] = [];
        let url: string | undefined = `/odata/api/v4/acme/sales/multi?${query}`;
        while (url) {
          const page: any = (await get(rita, url)).json();
          seen.push(...page.value.map((r: { n: number }) => r.n));
          url = page['@odata.nextLink']?.replace(/^https?:\/\/[^/]+/, '');
        }
        return seen;
      };
      expect(await readAll('$top=1000')).toEqual(Array.from({ length: 3007 }, (_, i) => i));
      expect(await readAll('$top=1007')).toEqual(Array.from({ length: 3007 }, (_, i) => i));
      expect(await readAll(`$top=333&$filter=${encodeURIComponent('n ge 990 and n lt 1500')}&$select=n`)).toEqual(Array.from({ length: 510 }, (_, i) => 990 + i));
      // An ordered read pages by position, in blocks, in exact order.
      expect(await readAll(`$top=2500&$orderby=${encodeURIComponent('n desc')}`)).toEqual(Array.from({ length: 3007 }, (_, i) => 3006 - i));
      const last = (await rows(rita, 'acme/sales/multi?$top=7&$skiptoken=3000')).json();
      expect(last.value.map((r: { n: number }) => r.n)).toEqual([3000, 3001, 3002, 3003, 3004, 3005, 3006]);
      expect(last['@odata.nextLink']).toBeUndefined();
    });

    it('seeks a deep $skip in row order: the same rows as a $skiptoken and as a sorted read', async () => {
      const deep = { workspace: 'acme', collection: 'sales', dataset: 'deep' };
      const columns = [{ name: 'n', type: 'BIGINT', nullable: false }];
      // Files of 1 500, 10 and 2 500 rows: the page at 1 505 spans the second file into the third.
      await seedSnapshot(t, deep, columns, 'SELECT i * 3 AS n FROM range(0, 1500) r(i)');
      await seedSnapshot(t, deep, columns, 'SELECT i * 3 AS n FROM range(1500, 1510) r(i)');
      await seedSnapshot(t, deep, columns, 'SELECT i * 3 AS n FROM range(1510, 4010) r(i)');
      const page = async (query: string) => (await rows(rita, `acme/sales/deep?${query}`)).json();
      const expected = Array.from({ length: 20 }, (_, i) => ({ n: (1505 + i) * 3, _lakeport_row_id: 1505 + i }));
      const skipped = await page('$top=20&$orderby=_lakeport_row_id&$skip=1505');
      expect(skipped.value).toEqual(expected);
      expect((await page('$top=20&$skiptoken=1505')).value).toEqual(expected);
      // Sorted on a column (the rows' order too): the way the server read $skip before it sought.
      expect((await page(`$top=20&$orderby=${encodeURIComponent('n asc')}&$skip=1505`)).value).toEqual(expected);
      expect((await page(`$top=20&$orderby=${encodeURIComponent('_lakeport_row_id asc')}&$skip=1505&$count=true`))['@odata.count']).toBe(4010);
      // The next page follows on after $skip, and the last page ends where the data ends.
      const next = (await get(rita, skipped['@odata.nextLink'].replace(/^https?:\/\/[^/]+/, ''))).json();
      expect(next.value[0]).toEqual({ n: 1525 * 3, _lakeport_row_id: 1525 });
      const last = await page('$top=20&$orderby=_lakeport_row_id&$skip=4000');
      expect(last.value.map((r: { _lakeport_row_id: number }) => r._lakeport_row_id)).toEqual(Array.from({ length: 10 }, (_, i) => 4000 + i));
      expect(last['@odata.nextLink']).toBeUndefined();
      // Descending, or with a filter, $skip still counts sorted, matching rows.
      expect((await page(`$top=2&$orderby=${encodeURIComponent('_lakeport_row_id desc')}&$skip=10`)).value.map((r: { n: number }) => r.n)).toEqual([3999 * 3, 3998 * 3]);
      expect((await page(`$top=2&$orderby=_lakeport_row_id&$skip=10&$filter=${encodeURIComponent('n ge 4500')}`)).value.map((r: { n: number }) => r.n)).toEqual([4530, 4533]);
    });

    it('checks the grant and the workspace on every page: a revoked grant or a deleted workspace stops a client mid-way', async () => {
      const carol = await signIn(t.app, t.adminToken, 'carol');
      await createWorkspace(carol, 'brief');
      await seedSnapshot(t, { workspace: 'brief', collection: 'data', dataset: 'items' }, COLUMNS, ROWS_SQL(3_000));
      const grant = await carol.request('POST', '/policy/v1/access/workspace/brief/policies', { principal: { identity: 'rita', type: 'user' }, role: 'reader', pattern: 'brief.data.*' });
      expect(grant.statusCode).toBe(201);
      const nextOf = (res: { json(): any }) => res.json()['@odata.nextLink'].replace(/^https?:\/\/[^/]+/, '');
      const before = rangeFiles();
      const first = await rows(rita, 'brief/data/items?$top=1000');
      expect(first.statusCode).toBe(200);
      const ritasCursor = [...rangeFiles()].filter((name) => !before.has(name));
      expect(ritasCursor.length).toBeGreaterThan(0);
      expect((await carol.request('DELETE', `/policy/v1/access/workspace/brief/policies/${grant.json().policy_id}`)).statusCode).toBe(200);
      expect((await get(carol, nextOf(first))).statusCode).toBe(200); // the link itself still works, for a caller who may read
      // Rita's cursor reads her next page while she is authorized, and drops it, with its files, on the 403.
      expect((await get(rita, nextOf(first))).statusCode).toBe(403);
      await vi.waitFor(() => expect(ritasCursor.filter((name) => rangeFiles().has(name))).toEqual([]));

      const own = await rows(carol, 'brief/data/items?$top=1000');
      expect(own.statusCode).toBe(200);
      expect((await carol.request('DELETE', '/billing/v1/workspaces/brief')).statusCode).toBeLessThan(300);
      const gone = await get(carol, nextOf(own));
      expect(gone.statusCode).toBe(409);
      expect(gone.json().code).toBe('WORKSPACE_DELETED');
    });

    it('continues a plain read from any page token, on a new cursor or page by page, with the same rows', async () => {
      const big = { workspace: 'acme', collection: 'sales', dataset: 'wide' };
      // Two files, the first longer than a range, with every kind of value the JSON writer meets.
      await seedSnapshot(t, big, COLUMNS, ROWS_SQL(40_000));
      // The second file has no NaN: its DOUBLE column is written without the special-value case.
      await seedSnapshot(t, big, COLUMNS, `SELECT * REPLACE ((id - 40000) / 4 AS ratio) FROM (${ROWS_SQL(3_000, 40_000)})`);
      const pages = async (user: TestUser, query: string) => {
        const found: any[] = [];
        let url: string | undefined = `/odata/api/v4/acme/sales/wide?${query}`;
        while (url) {
          const res = await get(user, url);
          expect(res.statusCode).toBe(200);
          found.push(res.json());
          url = found.at(-1)['@odata.nextLink']?.replace(/^https?:\/\/[^/]+/, '');
        }
        return found;
      };
      const filter = `$filter=${encodeURIComponent("region ne 'east' and id ge 7")}&$select=id,region,ratio,at,ip,amount,day`;
      // Through cursors (a plain read), and page by page ($count=true reads each page by itself).
      const ranged = await pages(rita, `${filter}&$top=4000`);
      const single = await pages(rita, `${filter}&$top=4000&$count=true`);
      const values = (found: any[]) => found.flatMap((p) => p.value);
      expect(values(ranged)).toEqual(values(single));
      expect(values(ranged).map((r) => r.id)).toEqual(Array.from({ length: 43_000 }, (_, i) => i).filter((i) => i >= 7 && (i % 40_000) % 3 !== 2));
      expect(values(ranged)[0]).toEqual(values(single)[0]);
      expect(ranged.every((p, i) => p.value.length === (i < ranged.length - 1 ? 4000 : values(ranged).length % 4000 || 4000))).toBe(true);
      // Every page's token leads to the same next page: page by page, and on a new cursor (another caller's).
      for (const page of ranged.slice(0, -1)) {
        const link = page['@odata.nextLink'].replace(/^https?:\/\/[^/]+/, '');
        const expected = (await get(rita, link)).json().value;
        expect((await get(alice, link)).json().value).toEqual(expected);
        expect((await get(rita, `${link}&$count=true`)).json().value).toEqual(expected);
      }
      // Another tenant cannot use the link at all.
      expect((await get(bob, ranged[0]['@odata.nextLink'].replace(/^https?:\/\/[^/]+/, ''))).statusCode).toBe(403);
    });

    it.each([
      ['$top=25001', 400, 'INVALID_TOP'],
      ['$top=-1', 400, 'INVALID_TOP'],
      ['$top=abc', 400, 'INVALID_TOP'],
      ['$skip=-1&$orderby=id', 400, 'INVALID_SKIP'],
      ['$skip=5', 400, 'SKIP_WITHOUT_ORDERBY'],
      ['$count=yes', 400, 'INVALID_COUNT'],
      ['$filter=id%20eq', 400, 'INVALID_FILTER'],
      ['$apply=groupby((region),aggregate(sum(amount)%20as%20x))', 400, 'INVALID_APPLY'],
      ['$search=north', 501, 'NOT_IMPLEMENTED'],
      ['$expand=x', 501, 'NOT_IMPLEMENTED'],
      ['$Top=1', 400, 'UNSUPPORTED_QUERY_OPTION'],
      ['$top=1&$top=2', 400, 'DUPLICATE_QUERY_OPTION'],
      ['$skiptoken=x', 400, 'INVALID_SKIPTOKEN'],
      ['$format=xml', 406, 'UNSUPPORTED_FORMAT'],
    ])('refuses %s with %i %s', async (queryText, status, code) => {
      const res = await rows(rita, `acme/sales/orders?${queryText}`);
      expect(res.statusCode).toBe(status);
      expect(res.json().code).toBe(code);
    });

    it('ignores custom query options and honours $format=json', async () => {
      expect((await rows(rita, 'acme/sales/orders?$format=json&foo=bar&$top=1')).statusCode).toBe(200);
    });

    it('refuses writes', async () => {
      const res = await t.app.inject({ method: 'POST', url: '/odata/api/v4/acme/sales/orders', headers: { authorization: `Bearer ${rita.token}` }, payload: {} });
      expect([404, 405]).toContain(res.statusCode);
    });
  });

  describe('entity set names', () => {
    it('address a dataset as clients that build URLs from $metadata do', async () => {
      const byPath = (await rows(rita, 'acme/sales/orders?$top=3&$select=id')).json();
      const byName = (await rows(rita, 'acme__sales__orders?$top=3&$select=id')).json();
      expect(byName.value).toEqual(byPath.value);
      expect(byName['@odata.context']).toBe(byPath['@odata.context']);
      expect(byName['@odata.nextLink']).toContain('/odata/api/v4/acme__sales__orders?');
      expect((await rows(rita, 'acme__sales__orders@first?$count=true&$top=0')).json()['@odata.count']).toBe(250);
      const metadata = await rows(rita, 'acme__sales__orders/$metadata');
      expect(metadata.statusCode).toBe(200);
      expect(metadata.body).toContain('acme__sales__orders');
    });

    it('answers 404 for an unknown name and 403 for a dataset the caller may not read', async () => {
      expect((await rows(rita, 'nothing_here')).statusCode).toBe(404);
      expect((await rows(rita, 'acme__sales__nothing')).statusCode).toBe(404);
      expect((await rows(rita, 'acme__hr__salaries')).statusCode).toBe(403);
      expect((await rows(alice, 'bobco__secret__plans')).statusCode).toBe(403);
    });
  });

  describe('version selectors', () => {
    it('reads @current, @previous, @<tag> and @<snapshot_id>', async () => {
      const ids = async (selector: string) => (await rows(rita, `acme/sales/orders${selector}?$top=1&$count=true`)).json();
      expect((await ids('')).value[0].id).toBe(1000);
      expect((await ids('@current'))['@odata.count']).toBe(300);
      expect((await ids('@previous'))['@odata.count']).toBe(250);
      expect((await ids('@first'))['@odata.count']).toBe(250);
      expect((await ids(`@${snapshots[0]}`)).value[0].id).toBe(0);
    });

    it('answers 404 for an unknown tag, snapshot or previous version, and 400 for a malformed label', async () => {
      expect((await rows(rita, 'acme/sales/orders@nosuchtag')).statusCode).toBe(404);
      expect((await rows(rita, 'acme/sales/orders@999999')).statusCode).toBe(404);
      expect((await rows(alice, 'acme/hr/salaries@previous')).statusCode).toBe(404);
      const bad = await rows(rita, 'acme/sales/orders@bad%20label!');
      expect(bad.statusCode).toBe(400);
      expect(bad.json().code).toBe('INVALID_SELECTOR');
      expect((await rows(rita, 'acme/sales/orders@')).statusCode).toBe(400);
    });

    it('pages a tag consistently while @current follows new commits', async () => {
      // A dataset of its own, loaded and tagged like orders: the commits below leave orders' versions alone.
      const other = { ...SALES, dataset: 'paged' };
      const first = await seedSnapshot(t, other, COLUMNS, ROWS_SQL(250));
      await seedSnapshot(t, other, COLUMNS, ROWS_SQL(300, 1000), { overwrite: true });
      await t.app.lakeport.catalog.createTag(other, 'first', first, 'alice');
      const tagged = (await rows(rita, 'acme/sales/paged@first?$top=200')).json();
      const current = (await rows(rita, 'acme/sales/paged?$top=200')).json();
      await seedSnapshot(t, other, COLUMNS, ROWS_SQL(10, 5000), { overwrite: true });
      const taggedNext = (await get(rita, tagged['@odata.nextLink'].replace(/^https?:\/\/[^/]+/, ''))).json();
      expect(taggedNext.value.map((r: { id: number }) => r.id)).toEqual(Array.from({ length: 50 }, (_, i) => 200 + i));
      const currentNext = (await get(rita, current['@odata.nextLink'].replace(/^https?:\/\/[^/]+/, ''))).json();
      expect(currentNext.value).toEqual([]);
    });
  });

  describe('$metadata', () => {
    it('serves EDMX for all readable datasets and for one, with OData-Version', async () => {
      const all = await get(rita, '/odata/api/v4/$metadata');
      expect(all.statusCode).toBe(200);
      expect(all.headers['content-type']).toMatch(/^application\/xml/);
      expect(all.headers['odata-version']).toBe('4.0');
      expect(all.body).toContain('acme__sales__orders');
      expect(all.body).not.toContain('salaries');
      const one = await get(rita, '/odata/api/v4/acme/sales/orders@first/$metadata');
      expect(one.statusCode).toBe(200);
      expect(one.body).toContain(String(snapshots[0]));
    });

    it('lists at once what this process changed, though listings are kept', async () => {
      const names = async () => (await get(rita, '/odata/api/v4/')).json().value.map((e: { name: string }) => e.name);
      const sets = async () => (await get(rita, '/odata/api/v4/$metadata')).body;
      expect(await names()).not.toContain('acme__sales__fresh');
      expect(await sets()).not.toContain('acme__sales__fresh');
      await seedSnapshot(t, { workspace: 'acme', collection: 'sales', dataset: 'fresh' }, [{ name: 'x', type: 'BIGINT', nullable: false }], 'SELECT 7 AS x');
      expect(await names()).toContain('acme__sales__fresh');
      expect(await sets()).toContain('acme__sales__fresh');
      const grant = await alice.request('POST', '/policy/v1/access/workspace/acme/policies', { principal: { identity: 'rita', type: 'user' }, role: 'reader', pattern: 'acme.hr.*' });
      expect(await names()).toContain('acme__hr__salaries');
      await alice.request('DELETE', `/policy/v1/access/workspace/acme/policies/${grant.json().policy_id}`);
      expect(await names()).not.toContain('acme__hr__salaries');
      expect(await sets()).not.toContain('acme__hr__salaries');
      await t.app.lakeport.catalog.dropDataset({ workspace: 'acme', collection: 'sales', dataset: 'fresh' }, 'alice');
      expect(await sets()).not.toContain('acme__sales__fresh');
    });

    it('describes each dataset at its current snapshot and tags, reading only snapshots it has not kept', async () => {
      const ref = { workspace: 'acme', collection: 'sales', dataset: 'moving' };
      const columns = [{ name: 'x', type: 'BIGINT', nullable: false }];
      const described = async () => {
        const xml = (await get(rita, '/odata/api/v4/$metadata')).body;
        const at = xml.indexOf('Target="Lakeport.Container/acme__sales__moving"');
        return xml.slice(at, xml.indexOf('</Annotations>', at));
      };
      const first = await seedSnapshot(t, ref, columns, 'SELECT range AS x FROM range(5)');
      expect(await described()).toContain(`<PropertyValue Property="Id" Int="${first}"/>`);
      const second = await seedSnapshot(t, ref, columns, 'SELECT range AS x FROM range(12)', { overwrite: true });
      const now = await described();
      expect(now).toContain(`<PropertyValue Property="Id" Int="${second}"/>`);
      expect(now).toContain('<PropertyValue Property="TotalRecords" Int="12"/>');
      await t.app.lakeport.catalog.createTag(ref, 'moved', second, 'alice');
      expect(await described()).toContain('<PropertyValue Property="Name" String="moved"/>');
      // Past the time the listings are kept: the snapshots and their files are not read again, the tags are.
      await new Promise((resolve) => setTimeout(resolve, KEPT_READ_TTL_MS + 50));
      const snapshots = vi.spyOn(t.app.lakeport.catalog, 'snapshotsById');
      const files = vi.spyOn(t.app.lakeport.catalog, 'filesOfSnapshots');
      const tags = vi.spyOn(t.app.lakeport.catalog, 'tagsOfSnapshots');
      expect(await described()).toContain('<PropertyValue Property="Name" String="moved"/>');
      expect(snapshots.mock.calls.flatMap(([ids]) => ids)).not.toContain(second);
      expect(files.mock.calls.flatMap(([ids]) => ids)).not.toContain(second);
      expect(tags.mock.calls.flatMap(([ids]) => ids)).toContain(second);
    });

    it('answers 504 when the datasets cannot be enumerated', async () => {
      // Past the time the listing read by earlier requests is kept (core/kept.ts), so this one reads.
      await new Promise((resolve) => setTimeout(resolve, KEPT_READ_TTL_MS + 50));
      vi.spyOn(t.app.lakeport.catalog, 'listDatasetsIn').mockRejectedValueOnce(new Error('connection reset'));
      const res = await get(rita, '/odata/api/v4/$metadata');
      expect(res.statusCode).toBe(504);
      expect(res.json()).toMatchObject({ code: 'CATALOG_UNAVAILABLE' });
      expect(res.body).not.toContain('connection reset');
      expect((await get(rita, '/odata/api/v4/$metadata')).statusCode).toBe(200);
    });

    it('marks every answer private to the caller', async () => {
      expect((await get(rita, '/odata/api/v4/$metadata')).headers['cache-control']).toBe('private');
      expect((await rows(rita, 'acme/sales/orders?$top=1')).headers['cache-control']).toBe('private');
    });

    it('answers 400 for a dataset kind without snapshot versions', async () => {
      await t.app.lakeport.catalog.createDataset({ workspace: 'acme', collection: 'sales', dataset: 'stub' }, { kind: 'external', columns: [] }, 'alice');
      const res = await rows(alice, 'acme/sales/stub/$metadata');
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('DATASET_NOT_VERSIONED');
    });
  });
  describe('key access and $count', () => {
    const refusal = (res: { statusCode: number; json(): unknown }) => ({ status: res.statusCode, body: res.json() });

    it('answers /$count with the number of rows matching $filter, as text', async () => {
      const all = await rows(rita, 'acme/sales/orders/$count');
      expect(all.statusCode).toBe(200);
      expect(all.headers['content-type']).toMatch(/^text\/plain/);
      expect(all.headers['odata-version']).toBe('4.0');
      expect(all.body).toBe('300');
      expect((await rows(rita, `acme/sales/orders/$count?$filter=${encodeURIComponent("region eq 'north'")}`)).body).toBe('100');
      expect((await rows(rita, 'acme/sales/orders@first/$count')).body).toBe('250');
      expect((await rows(rita, 'acme__sales__orders/$count?$filter=id%20lt%201010')).body).toBe('10');
      const bad = await rows(rita, 'acme/sales/orders/$count?$filter=nope%20eq%201');
      expect(bad.statusCode).toBe(400);
      expect(bad.json().code).toBe('INVALID_FILTER');
    });

    it('answers Set(n) with the row numbered n in the version', async () => {
      const first = await rows(rita, 'acme/sales/orders(0)');
      expect(first.statusCode).toBe(200);
      expect(first.headers['content-type']).toMatch(/^application\/json/);
      const entity = first.json();
      expect(entity['@odata.context']).toMatch(/\/acme\/sales\/orders\/\$metadata#acme__sales__orders\/\$entity$/);
      expect(entity).toMatchObject({ id: 1000, region: 'north', _lakeport_row_id: 0 });
      expect(entity.value).toBeUndefined();
      expect((await rows(rita, 'acme/sales/orders(_lakeport_row_id=299)')).json()).toMatchObject({ id: 1299, _lakeport_row_id: 299 });
      expect((await rows(rita, 'acme/sales/orders@first(5)')).json()).toMatchObject({ id: 5, _lakeport_row_id: 5 });
      expect((await rows(rita, 'acme__sales__orders(7)')).json()).toMatchObject({ id: 1007, _lakeport_row_id: 7 });
      // Key access agrees with the row a page carries under that key.
      const page = (await rows(rita, 'acme/sales/orders?$top=1&$skiptoken=123')).json().value[0];
      const { ['@odata.context']: _context, ...byKey } = (await rows(rita, 'acme/sales/orders(123)')).json();
      expect(byKey).toEqual(page);
      const selected = (await rows(rita, 'acme/sales/orders(2)?$select=id')).json();
      expect(selected).toEqual({ '@odata.context': expect.stringMatching(/#acme__sales__orders\(id\)\/\$entity$/), id: 1002 });
    });

    it('answers 404 past the last row and 400 for a key that is not a row number', async () => {
      const past = await rows(rita, 'acme/sales/orders(300)');
      expect(past.statusCode).toBe(404);
      expect(past.json()).toMatchObject({ code: 'ENTITY_NOT_FOUND' });
      for (const key of ['x', "'a'", '-1', 'id=3']) {
        const bad = await rows(rita, `acme/sales/orders(${encodeURIComponent(key)})`);
        expect(bad.statusCode, key).toBe(400);
        expect(bad.json().code, key).toBe('INVALID_KEY');
      }
    });

    it('refuses another tenant exactly as it refuses the set', async () => {
      for (const path of ['acme/sales/orders', 'acme__sales__orders', 'acme/sales/nothing']) {
        const set = refusal(await rows(bob, path));
        expect(set.status).toBe(403);
        expect(refusal(await rows(bob, `${path}(0)`))).toEqual(set);
        expect(refusal(await rows(bob, `${path}/$count`))).toEqual(set);
      }
      expect(refusal(await rows(rita, 'acme/hr/salaries(0)'))).toEqual(refusal(await rows(rita, 'acme/hr/salaries')));
      expect(refusal(await rows(rita, 'acme/hr/salaries/$count'))).toEqual(refusal(await rows(rita, 'acme/hr/salaries')));
    });
  });

  describe('IEEE754Compatible', () => {
    const IEEE = { accept: 'application/json;odata.metadata=minimal;IEEE754Compatible=true' };
    const local = (link: string) => link.replace(/^https?:\/\/[^/]+/, '');

    it('writes Int64 and Decimal values as strings when the Accept header asks, and says so', async () => {
      const res = await get(rita, '/odata/api/v4/acme/sales/orders?$top=2', IEEE);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/IEEE754Compatible=true/);
      const [first, second] = res.json().value;
      expect(first).toMatchObject({ id: '1000', amount: '0.00', ratio: 'NaN', region: 'north', _lakeport_row_id: '0' });
      expect(second).toMatchObject({ id: '1001', amount: '1.25', ratio: 0.25, _lakeport_row_id: '1' });
      // The next page, asked the same way, continues in strings; asked without, in numbers.
      const next = local(res.json()['@odata.nextLink']);
      expect((await get(rita, next, IEEE)).json().value[0]).toMatchObject({ id: '1002', amount: '2.50' });
      const plain = await get(rita, next);
      expect(plain.headers['content-type']).toMatch(/IEEE754Compatible=false/);
      expect(plain.json().value[0]).toMatchObject({ id: 1002, amount: 2.5, _lakeport_row_id: 2 });
    });

    it('takes it from $format too, on ordered and aggregated pages, the count and single entities', async () => {
      const format = `$format=${encodeURIComponent('application/json;IEEE754Compatible=true')}`;
      const ordered = await rows(rita, `acme/sales/orders?$orderby=id%20desc&$top=1&$count=true&${format}`);
      expect(ordered.statusCode).toBe(200);
      expect(ordered.headers['content-type']).toMatch(/IEEE754Compatible=true/);
      expect(ordered.json()).toMatchObject({ '@odata.count': '300', value: [{ id: '1299', amount: '373.75' }] });
      const grouped = await rows(rita, `acme/sales/orders?$apply=${encodeURIComponent('groupby((region),aggregate(amount with sum as total))')}&$orderby=region&${format}`);
      expect(grouped.statusCode).toBe(200);
      expect(typeof grouped.json().value[0].total).toBe('string');
      const entity = await get(rita, '/odata/api/v4/acme/sales/orders(3)', IEEE);
      expect(entity.headers['content-type']).toMatch(/IEEE754Compatible=true/);
      expect(entity.json()).toMatchObject({ id: '1003', amount: '3.75', _lakeport_row_id: '3' });
    });

    it('writes numbers by default', async () => {
      const res = await rows(rita, 'acme/sales/orders?$top=1&$count=true&$orderby=id');
      expect(res.headers['content-type']).toMatch(/IEEE754Compatible=false/);
      expect(res.json()).toMatchObject({ '@odata.count': 300, value: [{ id: 1000, amount: 0 }] });
    });
  });

  describe('errors from any layer', () => {
    /** The raw answer to `head` (request line and headers, as bytes) from the app listening on a socket. */
    const rawRequest = async (requestLine: Buffer, headers: string[]) => {
      const address = t.app.server.address() ?? (await t.app.listen({ port: 0, host: '127.0.0.1' }), t.app.server.address());
      const port = (address as net.AddressInfo).port;
      return new Promise<{ status: number; headers: string; body: string }>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () => socket.write(Buffer.concat([requestLine, Buffer.from(`\r\n${[...headers, 'host: x', 'connection: close'].join('\r\n')}\r\n\r\n`)])));
        const chunks: Buffer[] = [];
        socket.on('data', (chunk) => chunks.push(chunk));
        socket.on('error', reject);
        socket.on('close', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const [head, body = ''] = text.split('\r\n\r\n');
          resolve({ status: Number(head.split(' ')[1]), headers: head, body });
        });
      });
    };

    it("carries OData's error member beside Lakeport's detail and code", async () => {
      const missing = await rows(rita, 'acme/sales/orders(100000)');
      expect(missing.statusCode).toBe(404);
      const body = missing.json();
      expect(body).toEqual({ detail: expect.stringMatching(/No row 100000/), code: 'ENTITY_NOT_FOUND', error: { code: 'ENTITY_NOT_FOUND', message: body.detail } });
      const filter = (await rows(rita, `acme/sales/orders?$filter=${encodeURIComponent('region eq')}`)).json();
      expect(filter.error).toEqual({ code: filter.code, message: filter.detail });
      const unauthenticated = (await get(undefined, '/odata/api/v4/')).json();
      expect(unauthenticated.error).toEqual({ code: unauthenticated.code, message: unauthenticated.detail });
    });

    it("answers a raw UTF-8 character in the query string in Lakeport's shape", async () => {
      const line = Buffer.concat([Buffer.from("GET /odata/api/v4/acme/sales/orders?$filter=region%20eq%20'"), Buffer.from('Zürich', 'utf8'), Buffer.from("' HTTP/1.1")]);
      const res = await rawRequest(line, [`authorization: Bearer ${rita.token}`]);
      expect(res.status).toBe(400);
      expect(res.headers).toMatch(/content-type: application\/json/i);
      const body = JSON.parse(res.body);
      expect(body).toEqual({ detail: expect.stringMatching(/percent-encoded/), code: 'BAD_REQUEST' });
      // Percent-encoded, the same filter is read as UTF-8; so is raw text that reaches Fastify (as app.inject hands it over).
      const encoded = await rows(rita, `acme/sales/orders?$filter=${encodeURIComponent("region eq 'Zürich'")}`);
      expect(encoded.statusCode).toBe(200);
      expect(encoded.json().value).toEqual([]);
      const raw = await rows(rita, "acme/sales/orders/$count?$filter=region eq 'Zürich' or region eq 'north'");
      expect(raw.statusCode).toBe(200);
      expect(raw.body).toBe('100');
    });

    it("answers a malformed request line in Lakeport's shape", async () => {
      const res = await rawRequest(Buffer.from('GET /odata/api/v4/ HTTP/1.1 extra'), []);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ code: 'BAD_REQUEST' });
    });

    it("answers headers over the limit in Lakeport's shape (431)", async () => {
      const res = await rawRequest(Buffer.from('GET /odata/api/v4/ HTTP/1.1'), [`x-big: ${'a'.repeat(20_000)}`]);
      expect(res.status).toBe(431);
      expect(JSON.parse(res.body)).toEqual({ detail: expect.any(String), code: 'HEADERS_TOO_LARGE' });
    });

    it("answers a path that does not decode in Lakeport's shape", async () => {
      const res = await get(rita, '/odata/api/v4/acme/sales/%E0%A4%A');
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ detail: expect.any(String), code: 'BAD_REQUEST' });
    });
  });
});
