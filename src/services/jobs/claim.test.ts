import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../test/harness.ts';
import { JobRepo } from './repo.ts';

let t: TestDb;
let repo: JobRepo;
let n = 0;

beforeAll(async () => {
  t = await createTestDb();
  repo = new JobRepo(t.db);
});
afterAll(async () => t.dispose());

const enqueue = (owner: string) => repo.enqueue({ execution_id: `job_claim_${n++}`, owner, sql_text: 'SELECT 1', parameters: {}, permissions: '[]', timeout_ms: 1000 } as never);

describe('claiming queued jobs', () => {
  it('takes at most its limit, oldest first, and skips identities that have their share running', async () => {
    for (const owner of ['hog', 'hog', 'hog', 'bob']) await enqueue(owner);
    const first = await repo.claim('w1', 3, 2);
    // hog's third job waits in the same claim: its first two make its share.
    expect(first.map((j) => j.owner)).toEqual(['hog', 'hog', 'bob']);
    expect(await repo.claim('w1', 2, 2)).toEqual([]);
    await repo.finish(first[0].execution_id, 'w1', { status: 'succeeded' });
    expect((await repo.claim('w2', 5, 2)).map((j) => j.owner)).toEqual(['hog']);
  });

  it('puts a job whose engine died back in the queue, and the next claim counts a second attempt', async () => {
    const { execution_id } = await enqueue('carol');
    const [job] = await repo.claim('w1', 1);
    expect(job).toMatchObject({ execution_id, attempts: 1 });
    expect(await repo.requeue(execution_id, 'w2')).toBe(false); // not that worker's
    expect(await repo.requeue(execution_id, 'w1')).toBe(true);
    const [again] = await repo.claim('w1', 1);
    expect(again).toMatchObject({ execution_id, attempts: 2 });
  });

  it('takes every timestamp from one clock: a job claimed as it is inserted never started before it was created', async () => {
    const gaps: number[] = [];
    for (let i = 0; i < 40; i++) {
      // The claim is asked for while the insert is on its way, so it runs right after it.
      const inserted = enqueue(`racer_${i}`);
      const claimed = repo.claim(`wr_${i}`, 1);
      const { execution_id } = await inserted;
      let job = (await claimed).find((j) => j.execution_id === execution_id);
      // (Where the two statements ran side by side, the claim did not see the job: claim it now.)
      job ??= (await repo.claim(`wr_${i}`, 1)).find((j) => j.execution_id === execution_id);
      expect(job).toBeDefined();
      const finished = await repo.finish(execution_id, `wr_${i}`, { status: 'succeeded' });
      gaps.push(job!.started_at!.getTime() - job!.created_at.getTime(), finished!.finished_at!.getTime() - job!.started_at!.getTime());
    }
    expect(gaps.filter((g) => g < 0)).toEqual([]);
  });
});
