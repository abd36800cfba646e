/**
 * Automatic compaction as a user meets it: commits through the upload API schedule it, and uploads
 * running while a compaction runs lose no row (docs/compaction.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';

let t: TestApp;
let alice: TestUser;

beforeAll(async () => {
  t = await createTestApp({ compaction: { automatic: true, minSmallFiles: 3, smallFileBytes: 8 * 2 ** 20, targetFileBytes: 128 * 2 ** 20, delayMs: 30 } });
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
});
afterAll(async () => t.close());

/** Negotiates, accepts, writes and commits a CSV as an append to sales.c.<dataset>. */
async function upload(dataset: string, content: string): Promise<void> {
  const body = await multipartBody({ contract: { destination: `sales.c.${dataset}` }, samples: [{ name: 'rows.csv', content }] });
  const res = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload });
  expect(res.statusCode, res.body).toBe(201);
  const c = res.json();
  if (c.state === 'proposed') {
    const accepted = await alice.request('PUT', `/upload/v2/contracts/${c.contract_id}/accept`, { schema_fingerprint: c.schema_fingerprint });
    expect(accepted.statusCode, accepted.body).toBe(200);
  }
  const w = await t.app.inject({
    method: 'POST',
    url: `/upload/v2/contracts/${c.contract_id}/data`,
    headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'text/csv', 'x-file-name': 'rows.csv' },
    payload: content,
  });
  expect(w.statusCode, w.body).toBe(200);
  const done = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${c.contract_id}/commit`, headers: { authorization: `Bearer ${alice.token}` } });
  expect(done.statusCode, done.body).toBe(200);
}

async function ids(dataset: string): Promise<number[]> {
  const res = await alice.request('GET', `/odata/api/v4/sales/c/${dataset}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().value.map((r: { id: number }) => r.id);
}

async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('automatic compaction', () => {
  it('compacts a dataset once upload commits leave enough small files, keeping the rows in order', async () => {
    const { catalog } = t.app.lakeport;
    for (let i = 0; i < 4; i++) await upload('feed', `id,label\n${i},row ${i}\n`);
    await until(async () => (await catalog.getSnapshot((await catalog.getDataset({ workspace: 'sales', collection: 'c', dataset: 'feed' })).current_snapshot_id!)).operation === 'maintenance');
    const dataset = await catalog.getDataset({ workspace: 'sales', collection: 'c', dataset: 'feed' });
    expect(await catalog.getSnapshot(dataset.current_snapshot_id!)).toMatchObject({ author: 'lakeport:compaction', total_records: 4, changed_rows: false });
    expect((await catalog.snapshotFiles(dataset.current_snapshot_id!)).length).toBeLessThan(4);
    expect(await ids('feed')).toEqual([0, 1, 2, 3]);
  });

  it('loses no row when uploads run during a compaction', async () => {
    for (let i = 0; i < 6; i++) await upload('busy', `id,label\n${i},row ${i}\n`);
    // A compaction by hand (or the automatic one, whichever holds the lease) while three more uploads commit.
    const compact = alice.request('POST', '/jobs/api/v1/jobs', { sql_text: 'ALTER DATASET sales.c.busy COMPACT' });
    for (let i = 6; i < 9; i++) await upload('busy', `id,label\n${i},row ${i}\n`);
    const res = await compact;
    expect([201, 409], res.body).toContain(res.statusCode);
    if (res.statusCode === 409) expect(res.json().code).toBe('COMPACTION_IN_PROGRESS');
    await t.app.lakeport.compactor.compact((await t.app.lakeport.catalog.getDataset({ workspace: 'sales', collection: 'c', dataset: 'busy' })).dataset_id, 'alice').catch(() => undefined);
    expect(await ids('busy')).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    const snapshots = await t.app.lakeport.catalog.listSnapshots({ workspace: 'sales', collection: 'c', dataset: 'busy' });
    expect(snapshots.filter((s) => s.operation === 'maintenance').length).toBeGreaterThanOrEqual(1);
    expect(snapshots.at(-1)!.total_records).toBe(9);
  });
});
