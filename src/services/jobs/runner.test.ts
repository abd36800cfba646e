import { describe, expect, it } from 'vitest';
import { recordingLogger } from '../../../test/recording-logger.ts';
import { InlineQueryEngine } from '../../core/engine/index.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import type { QueryPlanner } from './planner.ts';
import type { JobRow } from './repo.ts';
import { SandboxJobRunner } from './runner.ts';

const job = { execution_id: 'job_stuck', owner: 'alice', sql_text: 'SELECT 1', parameters: {}, permissions: [], timeout_ms: 100, attempts: 1 } as unknown as JobRow;

describe('the time limit covers the whole job', () => {
  it('finishes a job whose planning never returns, soon after its timeout', async () => {
    // Planning stands for everything before the query: parsing, grants, copies of private files.
    const stuck = { prepare: () => new Promise(() => undefined) } as unknown as QueryPlanner;
    const engine = new InlineQueryEngine({ threads: 1, memoryLimit: '64MB' });
    const runner = new SandboxJobRunner(stuck, {} as BlobStore, { shared: engine, isolated: () => engine }, { perJob: 1, perIdentity: 1, retainedBy: async () => 0 });
    const handle = runner.start(job);
    const started = Date.now();
    setTimeout(() => handle.cancel('timeout'), job.timeout_ms);
    expect(await handle.done).toMatchObject({ status: 'failed', error: { code: 'JOB_TIMEOUT' } });
    expect(Date.now() - started).toBeLessThan(10_000);
    await runner.close();
  });

  it('logs a job it finishes without waiting for, and a failure that job meets afterwards', async () => {
    const { log, entries } = recordingLogger();
    let fail!: (error: Error) => void;
    const late = { prepare: () => new Promise((_, reject) => (fail = reject)), releaseLeases: async () => undefined } as unknown as QueryPlanner;
    const engine = new InlineQueryEngine({ threads: 1, memoryLimit: '64MB' });
    const runner = new SandboxJobRunner(late, {} as BlobStore, { shared: engine, isolated: () => engine }, { perJob: 1, perIdentity: 1, retainedBy: async () => 0 }, undefined, log);
    const handle = runner.start(job);
    handle.cancel('cancelled');
    expect(await handle.done).toMatchObject({ status: 'cancelled' });
    fail(new Error('the catalog went away'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(entries.map((e) => [e.level, e.fields.execution_id, e.message])).toEqual([
      ['warn', 'job_stuck', 'a job did not stop within its grace time; it is finished without waiting for it'],
      ['warn', 'job_stuck', 'a job finished without waiting for it failed afterwards'],
    ]);
    expect(entries[1].fields.err).toMatchObject({ message: 'the catalog went away' });
    await runner.close();
  });
});
