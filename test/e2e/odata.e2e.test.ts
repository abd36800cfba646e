/**
 * End to end: `npm start` as a user runs it; alice uploads a CSV with `lakeport upload`, then reads it
 * as a BI tool would: with a real OData client library (@odata/client, HTTP Basic with her credential),
 * following @odata.nextLink through every page, and with `$metadata` parsed by a real EDMX parser
 * (@sap-ux/edmx-parser). With DATABASE_URL set the server runs on PostgreSQL, else on PGlite.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { OData } from '@odata/client';
import { convert } from '@sap-ux/annotation-converter';
import { parse } from '@sap-ux/edmx-parser';
import { describe, expect, it } from 'vitest';
import { once } from '../async.ts';
import { describeRun, lakeport } from './cli.ts';
import { httpApi } from './http.ts';
import { serverForSuite } from './server.ts';

const ROWS = 2_500;
const PAGE = 1_000;

const orderOf = (id: number) => ({ id, region: ['north', 'south', 'east'][id % 3], amount: (id % 400) / 4, placed_on: `2024-0${(id % 9) + 1}-15` });

describe('OData end to end', { timeout: 120_000 }, () => {
  const suite = serverForSuite('odata');
  let secret: string;


  const { call, expectStatus, ownWorkspace } = httpApi(() => suite.server);
  const client = () =>
    OData.New4({
      serviceEndpoint: `${suite.server.url}/odata/api/v4/`,
      commonHeaders: { authorization: `Basic ${Buffer.from(`alice:${secret}`).toString('base64')}` },
    });

  /** alice set up and her dataset uploaded: run once by the first test that needs it (any test runs alone, in any order). */
  const uploaded = once(async () => {
    secret = expectStatus(await call('POST', '/auth/clients/alice/credentials', { admin: true, json: {} }), 200).secret;
    const token = (await (await fetch(`${suite.server.url}/auth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'alice', client_secret: secret }) })).json()).access_token;
    await ownWorkspace(token, 'alice', 'sales');

    const file = path.join(suite.work, 'orders.csv');
    const lines = ['id,region,amount,placed_on', ...Array.from({ length: ROWS }, (_, i) => Object.values(orderOf(i + 1)).join(','))];
    await fs.writeFile(file, `${lines.join('\n')}\n`);
    const env: NodeJS.ProcessEnv = { ...process.env, LAKEPORT_URL: suite.server.url, LAKEPORT_CLIENT_ID: 'alice', LAKEPORT_CLIENT_SECRET: secret };
    delete env.LAKEPORT_TOKEN;
    return lakeport(['upload', file, '--to', 'sales.orders.daily', '--accept'], env);
  });

  it('sets up alice and uploads a dataset with lakeport upload', async () => {
    const run = await uploaded();
    expect(run.code, describeRun(run)).toBe(0);
  });

  it('reads every row with an OData client library, following nextLink through all pages', async () => {
    expect((await uploaded()).code).toBe(0);
    const odata = client();
    const seen: number[] = [];
    let response = await odata.newRequest({
      // Entity sets by name, as in $metadata (the path form sales/orders/daily works too).
      collection: 'sales__orders__daily',
      params: odata.newParam().filter(odata.newFilter().property('amount').ge(10)).top(PAGE).count(true).orderby('id', 'asc'),
    });
    let pages = 0;
    for (;;) {
      expect(response.error, JSON.stringify(response.error)).toBeUndefined();
      pages++;
      seen.push(...(response.value as { id: number }[]).map((r) => r.id));
      const next = (response as Record<string, unknown>)['@odata.nextLink'] as string | undefined;
      if (!next) break;
      // The library addresses entity sets relative to the service root; a nextLink is such a URL too.
      const relative = next.slice(next.indexOf('/odata/api/v4/') + '/odata/api/v4/'.length);
      response = await odata.newRequest({ collection: relative });
    }
    const expected = Array.from({ length: ROWS }, (_, i) => orderOf(i + 1)).filter((o) => o.amount >= 10).map((o) => o.id);
    expect(pages).toBe(Math.ceil(expected.length / PAGE));
    expect(seen).toEqual(expected);
  });

  it('serves $metadata that a real EDMX parser accepts', async () => {
    expect((await uploaded()).code).toBe(0);
    for (const url of ['/odata/api/v4/$metadata', '/odata/api/v4/sales/orders/daily/$metadata']) {
      const response = await fetch(`${suite.server.url}${url}`, { headers: { authorization: `Basic ${Buffer.from(`alice:${secret}`).toString('base64')}` } });
      expect(response.status).toBe(200);
      expect(response.headers.get('odata-version')).toBe('4.0');
      const model = convert(parse(await response.text()));
      const set = model.entitySets.find((s) => s.name === 'sales__orders__daily');
      expect(set, JSON.stringify(model.entitySets.map((s) => s.name))).toBeDefined();
      const type = model.entityTypes.find((t) => t.fullyQualifiedName === set!.entityTypeName);
      expect(type?.entityProperties.map((p) => [p.name, p.type])).toEqual(
        expect.arrayContaining([
          ['id', 'Edm.Int64'],
          ['region', 'Edm.String'],
          ['placed_on', 'Edm.Date'],
        ]),
      );
    }
  });
});
