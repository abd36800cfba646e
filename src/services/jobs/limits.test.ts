/**
 * What one user's jobs cannot do to the server or to other users: crash it, stall it, fill its
 * memory or disk, or take every worker slot. Jobs run in a child process here, as in `lakeport serve`.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { INPUT_LIMITS } from '../../core/engine/index.ts';

let t: TestApp;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  t = await createTestApp({
    jobs: {
      timeoutMs: 20_000,
      workers: 3,
      memoryLimit: '256MB',
      threads: 1,
      isolation: 'process',
      memoryBudgetBytes: 1.5 * 2 ** 30,
      perIdentity: 2,
      results: { maxBytes: 2_000_000, quotaBytes: 3_000_000, retentionMs: 60_000 },
    },
  });
  alice = await signIn(t.app, t.adminToken, 'alice');
  bob = await signIn(t.app, t.adminToken, 'bob');
});
afterAll(async () => t.close());

async function submit(user: TestUser, sql: string, parameters?: Record<string, unknown>) {
  const response = await user.request('POST', '/jobs/api/v1/jobs', { sql_text: sql, ...(parameters ? { parameters } : {}) });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().execution_id as string;
}

async function finished(user: TestUser, id: string) {
  for (;;) {
    const status = (await user.request('GET', `/jobs/api/v1/jobs/${id}/status?wait=20`)).json();
    if (!status.in_progress) return status;
  }
}

describe('input limits', () => {
  it('refuses nested block comments, deep nesting and oversized text before anything is stored or parsed', async () => {
    // An identity of its own, so an empty history means none of these was stored (other tests' jobs are alice's and bob's).
    const ivan = await signIn(t.app, t.adminToken, 'ivan');
    const cases = [
      'SELECT 1 ' + '/*'.repeat(INPUT_LIMITS.commentDepth + 1) + '*/'.repeat(INPUT_LIMITS.commentDepth + 1),
      'SELECT ' + '('.repeat(INPUT_LIMITS.nestingDepth + 1) + '1' + ')'.repeat(INPUT_LIMITS.nestingDepth + 1),
      `SELECT json_structure('${'['.repeat(100_000)}')`,
    ];
    for (const sql of cases) {
      for (const path of ['/jobs/api/v1/jobs', '/jobs/api/v1/check']) {
        const response = await ivan.request('POST', path, { sql_text: sql });
        expect(response.statusCode, `${path}: ${response.body.slice(0, 200)}`).toBe(422);
        expect(response.json().detail[0]).toMatchObject({ loc: ['body', 'sql_text'] });
      }
    }
    const deepParameter = await ivan.request('POST', '/jobs/api/v1/jobs', { sql_text: 'SELECT json_structure($doc)', parameters: { doc: '['.repeat(100_000) + ']'.repeat(100_000) } });
    expect(deepParameter.statusCode).toBe(422);
    expect(deepParameter.json().detail[0].loc).toEqual(['body', 'parameters', 'doc']);
    const deepVariable = await ivan.request('PUT', '/jobs/api/v1/variables/doc', { type: 'string', value: '{"a":'.repeat(1000) + '1' + '}'.repeat(1000) });
    expect(deepVariable.statusCode).toBe(422);
    expect((await ivan.request('GET', '/jobs/api/v1/jobs/recent')).json()).toEqual([]);
  });
});

describe('a job that crashes the query engine', () => {
  it('fails as a poison job after one isolated retry, and the server and other jobs carry on', async () => {
    // Built at run time, so no text limit sees it: DuckDB recurses 100 000 levels and crashes.
    const poison = await submit(alice, "SELECT json_structure(repeat('[', 100000) || repeat(']', 100000)) AS s");
    const status = await finished(alice, poison);
    expect(status).toMatchObject({ status: 'failed', error: { code: 'ENGINE_CRASHED' } });
    const row = await t.db.kysely.selectFrom('jobs').select('attempts').where('execution_id', '=', poison).executeTakeFirstOrThrow();
    expect(row.attempts).toBe(2);
    const after = await finished(bob, await submit(bob, 'SELECT 42 AS answer'));
    expect(after.status).toBe('succeeded');
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});

describe('memory and result size', () => {
  it('fails a job that allocates past the memory budget with a clear error, and the engine keeps serving', async () => {
    const status = await finished(alice, await submit(alice, "SELECT length(repeat('x', 2000000000)) AS n"));
    expect(status).toMatchObject({ status: 'failed', error: { code: 'QUERY_ERROR' } });
    expect(status.error.message).toMatch(/memory/i);
    expect((await finished(alice, await submit(alice, 'SELECT 1 AS one'))).status).toBe('succeeded');
  });

  it('stops a job whose result grows past the per-job cap, and leaves no result file', async () => {
    const id = await submit(alice, 'SELECT range AS n, md5(range::VARCHAR) AS h FROM range(50000000)');
    expect(await finished(alice, id)).toMatchObject({ status: 'failed', error: { code: 'RESULT_TOO_LARGE' } });
    expect(fs.existsSync(await t.deps.blobs.localPath(`results/${id}.parquet`).catch(() => '/nonexistent'))).toBe(false);
  });

  it('refuses to run jobs of an identity whose kept results fill its quota, until they expire', async () => {
    // ~1.2 MB each against a 3 MB quota.
    const big = 'SELECT range AS n, md5(range::VARCHAR) AS h FROM range(40000)';
    const kept: string[] = [];
    for (;;) {
      const status = await finished(bob, await submit(bob, big));
      if (status.status !== 'succeeded') {
        expect(status.error.code).toBe('RESULT_QUOTA_EXCEEDED');
        break;
      }
      kept.push(status.execution_id);
      expect(kept.length).toBeLessThan(10);
    }
    expect(kept.length).toBeGreaterThanOrEqual(2);
    // Alice's quota is her own.
    expect((await finished(alice, await submit(alice, 'SELECT 1 AS one'))).status).toBe('succeeded');

    // Retention: results finished before the cut are removed, their jobs say so with 410.
    await t.db.kysely.updateTable('jobs').set({ finished_at: new Date(Date.now() - 120_000) }).where('owner', '=', 'bob').execute();
    expect(await t.app.lakeport.jobs.sweepExpiredResults()).toBeGreaterThanOrEqual(kept.length);
    const gone = await bob.request('GET', `/jobs/api/v1/jobs/${kept[0]}/results`);
    expect(gone.statusCode).toBe(410);
    expect(gone.json()).toMatchObject({ code: 'RESULTS_EXPIRED' });
    expect(fs.existsSync(await t.deps.blobs.localPath(`results/${kept[0]}.parquet`).catch(() => '/nonexistent'))).toBe(false);
    expect((await finished(bob, await submit(bob, big))).status).toBe('succeeded');
  });
});

describe('worker slots', () => {
  it('runs at most perIdentity jobs of one identity at once, so others still get a slot', async () => {
    const forever = 'SELECT count(*) FROM range(1000000000000) a';
    const hogs = [];
    for (let i = 0; i < 5; i++) hogs.push(await submit(alice, forever));
    await expect.poll(async () => (await t.db.kysely.selectFrom('jobs').select('execution_id').where('owner', '=', 'alice').where('status', '=', 'running').execute()).length).toBe(2);
    expect((await finished(bob, await submit(bob, 'SELECT 7 AS seven'))).status).toBe('succeeded');
    // bob got a slot while alice's jobs held theirs: none of hers has finished (none timed out to free one).
    const hogsFinished = await t.db.kysely.selectFrom('jobs').select('execution_id').where('execution_id', 'in', hogs).where('finished_at', 'is not', null).execute();
    expect(hogsFinished).toEqual([]);
    const running = await t.db.kysely.selectFrom('jobs').select('execution_id').where('owner', '=', 'alice').where('status', '=', 'running').execute();
    expect(running.length).toBe(2);
    for (const id of hogs) await alice.request('POST', `/jobs/api/v1/jobs/${id}/cancel`);
    // Leave no job of alice's running for the tests after this one.
    for (const id of hogs) expect((await finished(alice, id)).status).toBe('cancelled');
  });
});
