/**
 * The OData routes under NUL characters (in path segments, query options and Basic credentials) and
 * deeply nested query options: a 4xx in Lakeport's shapes, never a 5xx. (The query compiler itself is
 * fuzzed in query/fuzz.test.ts.)
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { expectNoServerError, expectRefused, nulish, withNul } from '../../../test/fuzz.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { seedSnapshot } from '../../../test/seed.ts';

let t: TestApp;
let alice: TestUser;

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'acme');
  await seedSnapshot(t, { workspace: 'acme', collection: 'sales', dataset: 'orders' }, [{ name: 'id', type: 'BIGINT', nullable: false }, { name: 'region', type: 'VARCHAR', nullable: true }], "SELECT i AS id, 'r' || i AS region FROM range(10) t(i)");
});
afterAll(async () => t.close());

const get = (url: string, headers: Record<string, string> = { authorization: `Bearer ${alice.token}` }) => t.app.inject({ method: 'GET', url, headers });
const OPTIONS = ['$filter', '$select', '$orderby', '$apply', '$top', '$skip', '$count', '$format', '$skiptoken'];

describe('fuzzing the OData routes with NULs and deep nesting', () => {
  it('a NUL in a path segment or a query option', async () => {
    await fc.assert(
      fc.asyncProperty(withNul, fc.nat(3), fc.constantFrom(...OPTIONS), async (value, at, option) => {
        const segments = ['acme', 'sales', 'orders'];
        if (at < 3) segments[at] = value;
        const path = `/odata/api/v4/${segments.map(encodeURIComponent).join('/')}`;
        expectRefused(await get(at < 3 ? path : `${path}?${option}=${encodeURIComponent(value)}`));
        expectRefused(await get(`/odata/api/v4/${encodeURIComponent(`acme__sales__${value}`)}/$metadata`));
      }),
      { numRuns: 150 },
    );
  });

  it('Basic credentials with a NUL in the user name or the secret', async () => {
    await fc.assert(
      fc.asyncProperty(nulish, nulish, async (user, secret) => {
        fc.pre(`${user}${secret}`.includes('\u0000'));
        const res = await get('/odata/api/v4/acme/sales/orders', { authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}` });
        expectRefused(res);
      }),
      { numRuns: 100 },
    );
  });

  it('query options nested far past any limit', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 100, max: 50_000 }), fc.constantFrom('$filter', '$apply', '$orderby', '$select'), async (depth, option) => {
        const nested = option === '$apply' ? `${'filter('.repeat(depth)}id gt 1${')'.repeat(depth)}` : `${'('.repeat(depth)}id eq 1${')'.repeat(depth)}`;
        expectNoServerError(await get(`/odata/api/v4/acme/sales/orders?${option}=${encodeURIComponent(nested)}`));
      }),
      { numRuns: 30 },
    );
  });
});
