/**
 * Binding a workspace to an Iceberg REST catalog and syncing it, end to end through /control, with
 * the checks the spec asks of the result: the stubs are in the catalog, the OData service document and
 * the effective-permissions CSV, and neither the catalog nor the answers ever show the credential.
 * Written against any spec-conformant Iceberg REST server: the fake in test/iceberg-rest-fake.ts, and
 * (for the lead to add) a second Lakeport serving `/iceberg`, bound with its client credentials.
 */
import { expect } from 'vitest';
import type { TestUser } from './clients.ts';
import type { TestApp } from './harness.ts';

export interface IcebergBinding {
  uri: string;
  warehouse?: string;
  prefix?: string;
  auth?: { type: 'bearer'; token: string } | { type: 'oauth2'; client_id: string; client_secret: string; oauth2_server_uri?: string; scope?: string };
  preserve_sql_case?: boolean;
}

/** The secret values of a binding (never to appear in an answer). */
export function secretsOf(binding: IcebergBinding): string[] {
  const auth = binding.auth;
  return auth?.type === 'bearer' ? [auth.token] : auth?.type === 'oauth2' ? [auth.client_secret] : [];
}

/**
 * PUT the binding, test the saved binding (ok), sync, and check that the workspace's external
 * stubs are exactly `expected` (`collection.dataset`), listed in the catalog, the OData service
 * document and the effective-permissions CSV. `owner` owns `workspace`. Returns the sync's answer.
 */
export async function bindAndSyncIcebergCatalog(t: TestApp, owner: TestUser, workspace: string, binding: IcebergBinding, expected: string[]) {
  const url = `/control/v1/workspaces/${workspace}/catalog`;
  const { preserve_sql_case, auth, ...config } = binding;
  const put = await owner.request('PUT', url, { kind: 'iceberg_rest', config, ...(auth ? { auth } : {}), ...(preserve_sql_case === undefined ? {} : { preserve_sql_case }) });
  expect(put.statusCode, put.body).toBe(200);
  expect(put.json()).toMatchObject({ workspace, kind: 'iceberg_rest', config });

  const tested = await owner.request('POST', `${url}/test`);
  expect(tested.statusCode, tested.body).toBe(200);
  expect(tested.json(), tested.body).toMatchObject({ ok: true, kind: 'iceberg_rest' });

  const synced = await owner.request('POST', `${url}/sync`);
  expect(synced.statusCode, synced.body).toBe(200);
  const result = synced.json();

  const stubs = (await t.app.lakeport.catalog.listDatasets(workspace)).filter((d) => d.kind === 'external');
  expect(stubs.map((d) => `${d.collection}.${d.name}`).sort()).toEqual([...expected].sort());

  const service = await owner.request('GET', '/odata/api/v4/');
  expect(service.statusCode, service.body).toBe(200);
  const urls = (service.json().value as { url: string }[]).map((e) => e.url);
  for (const name of expected) expect(urls).toContain(`${workspace}/${name.replace('.', '/')}`);

  const csv = await owner.request('GET', `/policy/v1/access/workspace/${workspace}/effective-permissions.csv`);
  expect(csv.statusCode, csv.body).toBe(200);
  for (const name of expected) expect(csv.body).toContain(`${workspace}.${name},${name.split('.')[0]},external`);

  for (const secret of secretsOf(binding)) {
    for (const answer of [put, tested, synced, service, await owner.request('GET', url)]) expect(answer.body).not.toContain(secret);
  }
  return result;
}
