import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';

let t: TestApp;
let alice: TestUser;

beforeAll(async () => {
  t = await createTestApp({ jobs: { timeoutMs: 400, workers: 2, memoryLimit: '256MB', threads: 1 } });
  alice = await signIn(t.app, t.adminToken, 'alice');
});
afterAll(async () => t.close());

describe('job time limit', () => {
  it('stops a job that runs past its limit and says so', async () => {
    const started = Date.now();
    const { execution_id } = (await alice.request('POST', '/jobs/api/v1/jobs', { sql_text: 'SELECT count(*) FROM range(1000000000000) t(i)' })).json();
    const status = (await alice.request('GET', `/jobs/api/v1/jobs/${execution_id}/status?wait=20`)).json();
    expect(status).toMatchObject({ status: 'failed', error: { code: 'JOB_TIMEOUT' } });
    expect(Date.now() - started).toBeLessThan(15_000);
    // The server is still answering quickly afterwards.
    const quick = (await alice.request('POST', '/jobs/api/v1/jobs', { sql_text: 'SELECT 1 AS one' })).json();
    expect((await alice.request('GET', `/jobs/api/v1/jobs/${quick.execution_id}/status?wait=20`)).json().status).toBe('succeeded');
  });
});
