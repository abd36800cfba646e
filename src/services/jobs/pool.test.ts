import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { seedSnapshot } from '../../../test/seed.ts';
import type { InlineQueryEngine } from '../../core/engine/index.ts';
import type { SandboxJobRunner } from './runner.ts';

/** Warm sandbox engines through the job service: grants, snapshots, identities, cancel. */
let t: TestApp;
let alice: TestUser; // owner of sales

const J = '/jobs/api/v1';
const columns = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'amount', type: 'DECIMAL(18,2)', nullable: true },
];

const sandboxes = () => ((t.app.lakeport.workers as unknown as { runner: { queries: SandboxJobRunner } }).runner.queries.engines.shared as InlineQueryEngine).sandboxes;

async function run(user: TestUser, sql: string) {
  const { execution_id } = (await user.request('POST', `${J}/jobs`, { sql_text: sql })).json();
  const status = (await user.request('GET', `${J}/jobs/${execution_id}/status?wait=30`)).json();
  const data = status.status === 'succeeded' ? (await user.request('GET', `${J}/jobs/${execution_id}/results`)).json().data : undefined;
  return { status, data };
}

/** A dataset of its own for one test (sales.orders.<name>), with ids 1..100: no test sees another's snapshots or engines. */
async function seedDaily(name: string) {
  const ref = { workspace: 'sales', collection: 'orders', dataset: name };
  await seedSnapshot(t, ref, columns, 'SELECT i AS id, (i * 1.5)::DECIMAL(18,2) AS amount FROM range(1, 101) t(i)');
  return ref;
}

/** A reader of its own for one test, granted sales.orders.<dataset>; returns the user and the policy id. */
async function reader(identity: string, dataset: string) {
  const user = await signIn(t.app, t.adminToken, identity);
  const policy = await alice.request('POST', '/policy/v1/access/workspace/sales/policies', { principal: { identity }, role: 'reader', pattern: `sales.orders.${dataset}` });
  expect(policy.statusCode, policy.body).toBe(201);
  return { user, policyId: policy.json().policy_id as string };
}

beforeAll(async () => {
  t = await createTestApp({ jobs: { timeoutMs: 30_000, workers: 2, memoryLimit: '256MB', threads: 1 } });
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
});
afterAll(async () => t.close());

describe('pooled sandboxes behind the job service', () => {
  it('reuses an engine for the same identity and views, and never across identities', async () => {
    await seedDaily('reuse');
    const { user: rita } = await reader('rita', 'reuse');
    const before = sandboxes().stats();
    expect((await run(alice, 'SELECT count(*) AS n FROM sales.orders.reuse')).data).toEqual([[100]]);
    expect((await run(alice, 'SELECT max(id) AS m FROM sales.orders.reuse')).data).toEqual([[100]]);
    const afterAlice = sandboxes().stats();
    expect(afterAlice.misses - before.misses).toBe(1);
    expect(afterAlice.hits - before.hits).toBe(1);
    // rita reads the same dataset: her own engine, not alice's.
    expect((await run(rita, 'SELECT count(*) AS n FROM sales.orders.reuse')).data).toEqual([[100]]);
    expect(sandboxes().stats().misses - afterAlice.misses).toBe(1);
  });

  it('sees a new snapshot at once (other files: another engine)', async () => {
    const daily = await seedDaily('fresh');
    expect((await run(alice, 'SELECT count(*) AS n FROM sales.orders.fresh')).data).toEqual([[100]]);
    await seedSnapshot(t, daily, columns, 'SELECT i AS id, 1.00::DECIMAL(18,2) AS amount FROM range(101, 111) t(i)');
    const before = sandboxes().stats();
    expect((await run(alice, 'SELECT count(*) AS n FROM sales.orders.fresh')).data).toEqual([[110]]);
    expect(sandboxes().stats().misses - before.misses).toBe(1);
    expect(sandboxes().stats().evicted.superseded - before.evicted.superseded).toBeGreaterThanOrEqual(1);
  });

  it('refuses a dataset once its grant is gone, even with a warm engine for it', async () => {
    await seedDaily('revoked');
    const { user: rosa, policyId } = await reader('rosa', 'revoked');
    expect((await run(rosa, 'SELECT count(*) AS n FROM sales.orders.revoked')).data).toEqual([[100]]);
    const removed = await alice.request('DELETE', `/policy/v1/access/workspace/sales/policies/${policyId}`);
    expect(removed.statusCode, removed.body).toBe(200);
    const refused = await run(rosa, 'SELECT count(*) AS n FROM sales.orders.revoked');
    expect(refused.status).toMatchObject({ status: 'failed', error: { code: 'DATASET_NOT_FOUND' } });
  });

  it('runs the next job normally after a job on a pooled engine was cancelled', async () => {
    // Warm an engine for alice's empty view set, then cancel a job on it.
    expect((await run(alice, 'SELECT 1 AS one')).data).toEqual([[1]]);
    const submittedRes = await alice.request('POST', `${J}/jobs`, { sql_text: 'SELECT count(*) FROM range(1000000000000) a' });
    expect(submittedRes.statusCode, submittedRes.body).toBe(201);
    const submitted = submittedRes.json();
    // Cancel a job that is really running (not one still queued), without guessing how long that takes.
    await expect.poll(async () => (await alice.request('GET', `${J}/jobs/${submitted.execution_id}/status`)).json().status, { timeout: 10_000, interval: 25 }).toBe('running');
    // 'running' is set when a worker claims the job; the cancel must find it on a pooled engine.
    await expect.poll(() => sandboxes().stats().leased, { timeout: 10_000, interval: 10 }).toBeGreaterThanOrEqual(1);
    expect((await alice.request('POST', `${J}/jobs/${submitted.execution_id}/cancel`)).statusCode).toBe(200);
    expect((await alice.request('GET', `${J}/jobs/${submitted.execution_id}/status?wait=20`)).json().status).toBe('cancelled');
    const discarded = sandboxes().stats().evicted.discarded;
    expect(discarded).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < 3; i++) expect((await run(alice, `SELECT ${i} AS n`)).data).toEqual([[i]]);
  });
});
