/**
 * Fuzzing the account (/billing, /control) and policy (/policy) routes: arbitrary bodies, ids and
 * query strings never give a 5xx, and NUL characters (in every path parameter, query value and body
 * string) or deeply nested JSON are refused with a 4xx in Lakeport's shapes.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { deepJson, expectNoServerError, expectRefused, poison, withNul } from '../../../test/fuzz.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';

let t: TestApp;
let alice: TestUser;
let account: string;

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  alice = await signIn(t.app, t.adminToken, 'alice');
  account = await createWorkspace(alice, 'sales', { bob: 'reader' });
});
afterAll(async () => t.close());

/** Every route of the three prefixes, with `{…}` for its path parameters. */
const ROUTES: [string, string][] = [
  ...['/billing', '/control'].flatMap((p): [string, string][] => [
    ['GET', `${p}/v1/accounts`],
    ['POST', `${p}/v1/accounts`],
    ['GET', `${p}/v1/accounts/{account_id}`],
    ['PATCH', `${p}/v1/accounts/{account_id}`],
    ['DELETE', `${p}/v1/accounts/{account_id}`],
    ['GET', `${p}/v1/accounts/{account_id}/members`],
    ['POST', `${p}/v1/accounts/{account_id}/members`],
    ['PATCH', `${p}/v1/accounts/{account_id}/members/{identity}`],
    ['DELETE', `${p}/v1/accounts/{account_id}/members/{identity}`],
    ['POST', `${p}/v1/accounts/{account_id}/members/{identity}/accept`],
    ['GET', `${p}/v1/invoices`],
    ['GET', `${p}/v1/invoices/{invoice_id}`],
    ['PUT', `${p}/v1/workspaces/{name}`],
    ['GET', `${p}/v1/accounts/{account_id}/workspaces`],
    ['POST', `${p}/v1/access/workspace/{workspace}/genesis`],
  ]),
  ['DELETE', '/billing/v1/workspaces/{name}'],
  ['POST', '/billing/v1/workspaces/{name}/restore'],
  ['GET', '/control/v1/workspaces/{name}/properties'],
  ['GET', '/control/v1/accounts/{account_id}/idp-policy'],
  ['PUT', '/control/v1/accounts/{account_id}/idp-policy'],
  ['DELETE', '/control/v1/accounts/{account_id}/idp-policy'],
  ['GET', '/control/v1/accounts/{account_id}/idp-policy/denials'],
  ['POST', '/control/v1/accounts/{account_id}/idp-policy/preview'],
  ['POST', '/policy/v1/access/workspace/{workspace}/genesis'],
  ['GET', '/policy/v1/access/workspace/{workspace}'],
  ['GET', '/policy/v1/access/workspace/{workspace}/effective-permissions.csv'],
  ['POST', '/policy/v1/access/workspace/{workspace}/policies'],
  ['GET', '/policy/v1/access/workspace/{workspace}/policies/{policy_id}'],
  ['PUT', '/policy/v1/access/workspace/{workspace}/policies/{policy_id}'],
  ['DELETE', '/policy/v1/access/workspace/{workspace}/policies/{policy_id}'],
];
const WITH_PARAMS = ROUTES.filter(([, p]) => p.includes('{'));
const WITH_BODY = ROUTES.filter(([m]) => m !== 'GET' && m !== 'DELETE');

/** A body with every field these routes read, each a plausible value. */
const plausible = () => ({
  name: 'renamed',
  billing_account: account,
  identity: 'bob',
  role: 'reader',
  members: [{ identity: 'alice', role: 'owner' }, { identity: 'bob', role: 'reader' }],
  principal: { identity: 'bob', type: 'user' },
  pattern: 'sales.*',
  grants: { carol: 'reader' },
  deletion_protection: false,
});

/** The route's URL with each parameter filled in (`value` for the one at `at`, the real ones elsewhere). */
function urlOf(path: string, at: number, value: string) {
  const real: Record<string, string> = { account_id: account, identity: 'bob', name: 'sales', workspace: 'sales', invoice_id: 'inv_x', policy_id: 'pol_x' };
  let k = 0;
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(k++ === at ? value : real[name]));
}

const send = (method: string, url: string, payload?: string) =>
  t.app.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${alice.token}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) }, ...(payload === undefined ? {} : { payload }) });

describe('fuzzing the account and policy routes', () => {
  it('arbitrary JSON bodies, ids and query strings never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), fc.nat(2), fc.string({ maxLength: 40 }), fc.jsonValue(), async ([method, path], at, value, body) => {
        const url = `${urlOf(path, at, value || 'x')}?state=${encodeURIComponent(value)}`;
        expectNoServerError(await send(method, url, method === 'GET' || method === 'DELETE' ? undefined : JSON.stringify(body)));
      }),
      { numRuns: 300 },
    );
  });

  it('a NUL in any path parameter', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...WITH_PARAMS), fc.nat(2), withNul, async ([method, path], at, value) => {
        const params = path.match(/\{/g)!.length;
        expectRefused(await send(method, urlOf(path, at % params, value), method === 'GET' || method === 'DELETE' ? undefined : JSON.stringify(plausible())));
      }),
      { numRuns: 200 },
    );
  });

  it('a NUL in a query value', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), fc.constantFrom('state', 'status', 'role', 'x'), withNul, async ([method, path], name, value) => {
        expectRefused(await send(method, `${urlOf(path, -1, '')}?${name}=${encodeURIComponent(value)}`));
      }),
      { numRuns: 150 },
    );
  });

  it('a NUL in any string of a body, and bodies nested too deep', async () => {
    const body = fc.oneof(fc.nat().map((i) => JSON.stringify(poison(plausible(), i))), deepJson);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...WITH_BODY), body, async ([method, path], payload) => {
        expectRefused(await send(method, urlOf(path, -1, ''), payload));
      }),
      { numRuns: 200 },
    );
  });

  it('IdP policy documents with arbitrary domains, groups, providers and hours never give a 5xx', async () => {
    const doc = fc.record(
      {
        enforced: fc.boolean(),
        providers: fc.option(fc.array(fc.oneof(fc.constantFrom('idp_a', 'idp_b'), fc.string()), { maxLength: 3 })),
        email_domains: fc.option(fc.array(fc.oneof(fc.domain(), fc.string()), { maxLength: 3 })),
        idp_a: fc.option(fc.record({ allowed_email_domains: fc.option(fc.array(fc.string(), { maxLength: 2 })), required_groups: fc.option(fc.array(fc.string(), { maxLength: 2 })) }, { requiredKeys: [] })),
        max_auth_age_hours: fc.option(fc.oneof(fc.integer(), fc.double())),
        machine_credentials: fc.option(fc.record({ members_may_mint: fc.boolean(), max_lifetime_days: fc.option(fc.integer()) }, { requiredKeys: [] })),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('PUT', 'POST'), doc, async (method, body) => {
        const url = `/control/v1/accounts/${account}/idp-policy${method === 'POST' ? '/preview' : '?force=true'}`;
        expectNoServerError(await send(method, url, JSON.stringify(body)));
      }),
      { numRuns: 150 },
    );
  });
});
