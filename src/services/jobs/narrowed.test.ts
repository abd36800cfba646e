/**
 * A credential narrowed by permissions sees only the jobs it could have run itself: those made
 * under permissions within its own (core/authz `mayAccessOwned`). Everything else of its identity
 * is 404, like an unknown id.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { seedSnapshot } from '../../../test/seed.ts';

let t: TestApp;
let alice: TestUser; // owner of sales, unnarrowed
let ordersReader: TestUser; // alice narrowed to [sales.orders.*, reader]
let salesReader: TestUser; // alice narrowed to [sales.*, reader] (wider than ordersReader)
let ordersWriter: TestUser; // alice narrowed to [sales.orders.*, writer] (wider than ordersReader)
let dailyReader: TestUser; // alice narrowed to [sales.orders.daily, reader] (narrower than ordersReader)
let hrReader: TestUser; // alice narrowed to [sales.hr.*, reader] (beside ordersReader)

const J = '/jobs/api/v1';

beforeAll(async () => {
  t = await createTestApp();
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
  [ordersReader, salesReader, ordersWriter, dailyReader, hrReader] = await Promise.all(
    (
      [
        ['sales.orders.*', 'reader'],
        ['sales.*', 'reader'],
        ['sales.orders.*', 'writer'],
        ['sales.orders.daily', 'reader'],
        ['sales.hr.*', 'reader'],
      ] as const
    ).map((pair) => signIn(t.app, t.adminToken, 'alice', { permissions: [pair] })),
  );
  await seedSnapshot(t, { workspace: 'sales', collection: 'orders', dataset: 'daily' }, [{ name: 'id', type: 'BIGINT', nullable: false }], 'SELECT i AS id FROM range(1, 11) t(i)');
  await seedSnapshot(t, { workspace: 'sales', collection: 'hr', dataset: 'people' }, [{ name: 'salary', type: 'BIGINT', nullable: true }], 'SELECT 123456 AS salary');
});
afterAll(async () => t.close());

async function run(user: TestUser, sql: string) {
  const submitted = await user.request('POST', `${J}/jobs`, { sql_text: sql });
  expect(submitted.statusCode, submitted.body).toBe(201);
  const done = await user.request('GET', `${J}/jobs/${submitted.json().execution_id}/status?wait=30`);
  expect(done.statusCode).toBe(200);
  return done.json() as { execution_id: string; status: string };
}

/** Every per-job endpoint's status code for `user`. */
async function access(user: TestUser, executionId: string) {
  return {
    status: (await user.request('GET', `${J}/jobs/${executionId}/status`)).statusCode,
    results: (await user.request('GET', `${J}/jobs/${executionId}/results`)).statusCode,
    download: (await user.request('GET', `${J}/jobs/${executionId}/download`)).statusCode,
    cancel: (await user.request('POST', `${J}/jobs/${executionId}/cancel`)).statusCode,
  };
}

const SEEN = { status: 200, results: 200, download: 200, cancel: 200 };
const HIDDEN = { status: 404, results: 404, download: 404, cancel: 404 };

async function recentIds(user: TestUser, filter?: string): Promise<string[]> {
  const res = await user.request('GET', `${J}/jobs/recent${filter ? `?filter=${encodeURIComponent(filter)}` : ''}`);
  expect(res.statusCode).toBe(200);
  return res.json().map((j: { execution_id: string }) => j.execution_id);
}

describe('jobs of a narrowed credential', () => {
  it("hides the identity's unnarrowed jobs: status, results, download and cancel are 404, recent leaves them out", async () => {
    const wide = await run(alice, 'SELECT salary FROM sales.hr.people');
    expect(wide.status).toBe('succeeded');
    expect(await access(alice, wide.execution_id)).toEqual(SEEN);
    for (const narrowed of [ordersReader, salesReader, hrReader]) {
      expect(await access(narrowed, wide.execution_id)).toEqual(HIDDEN);
      const res = await narrowed.request('GET', `${J}/jobs/${wide.execution_id}/results`);
      expect(res.json().code).toBe('JOB_NOT_FOUND');
      expect(await recentIds(narrowed)).not.toContain(wide.execution_id);
      expect(await recentIds(narrowed, 'salary')).toEqual([]);
    }
    expect(await recentIds(alice)).toContain(wide.execution_id);
  });

  it('shows a narrowed job to itself, to unnarrowed and to wider credentials, and to no narrower or other one', async () => {
    const job = await run(ordersReader, 'SELECT count(*) AS n FROM sales.orders.daily');
    expect(job.status).toBe('succeeded');
    for (const user of [ordersReader, alice, salesReader, ordersWriter]) {
      expect(await access(user, job.execution_id)).toEqual(SEEN);
      expect(await recentIds(user)).toContain(job.execution_id);
    }
    expect((await salesReader.request('GET', `${J}/jobs/${job.execution_id}/results`)).json().data).toEqual([[10]]);
    for (const user of [dailyReader, hrReader]) {
      expect(await access(user, job.execution_id)).toEqual(HIDDEN);
      expect(await recentIds(user)).not.toContain(job.execution_id);
    }
  });

  it('cancels only jobs it may see', async () => {
    const submitted = (await alice.request('POST', `${J}/jobs`, { sql_text: 'SELECT count(*) FROM range(1000000000000) a' })).json();
    const refused = await ordersReader.request('POST', `${J}/jobs/${submitted.execution_id}/cancel`);
    expect(refused.statusCode).toBe(404);
    expect((await alice.request('POST', `${J}/jobs/${submitted.execution_id}/cancel`)).statusCode).toBe(200);
    expect((await alice.request('GET', `${J}/jobs/${submitted.execution_id}/status?wait=20`)).json().status).toBe('cancelled');
  });

  it("finds its own jobs in recent behind more than a page of the identity's newer unnarrowed jobs", async () => {
    // An identity of its own (ann, and ann narrowed to [sales.orders.*, reader]): the page of newer
    // jobs it adds would otherwise push the other tests' jobs out of alice's recent list.
    const ann = await signIn(t.app, t.adminToken, 'ann');
    const ordersReader = await signIn(t.app, t.adminToken, 'ann', { permissions: [['sales.orders.*', 'reader']] });
    const own = await run(ordersReader, 'SELECT 1 AS mine');
    const later = Date.now() + 3_600_000;
    await t.db.kysely
      .insertInto('jobs')
      .values(
        Array.from({ length: 150 }, (_, i) => ({
          execution_id: `job_wide_${i}`,
          owner: 'ann',
          sql_text: `SELECT ${i} AS wide`,
          parameters: '{}',
          permissions: '[]',
          status: 'failed' as const,
          timeout_ms: 30_000,
          created_at: new Date(later + i),
          finished_at: new Date(later + i),
        })),
      )
      .execute();
    const narrowed = await recentIds(ordersReader);
    expect(narrowed).toContain(own.execution_id);
    expect(narrowed.some((id) => id.startsWith('job_wide_'))).toBe(false);
    expect(await recentIds(ordersReader, 'mine')).toEqual([own.execution_id]);
    const full = await recentIds(ann);
    expect(full).toHaveLength(100);
    expect(full.every((id) => id.startsWith('job_wide_'))).toBe(true);
  });
});
