/**
 * The catalog sweeper on both blob stores: files an expiry or a purge queued are deleted from storage
 * once their grace has passed, files still named by a catalog row never are.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../test/harness.ts';
import { startS3Server } from '../../../test/s3-server.ts';
import { silentLogger } from '../logger.ts';
import { LocalBlobStore } from '../storage/local-store.ts';
import { S3BlobStore } from '../storage/s3-store.ts';
import type { BlobStore } from '../storage/index.ts';
import { Catalog, CatalogSweeper } from './index.ts';

const stores: { name: string; open(): Promise<{ store: BlobStore; dispose(): Promise<void> }> }[] = [
  {
    name: 'local',
    async open() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-sweep-'));
      return { store: new LocalBlobStore(dir), dispose: async () => fs.rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'S3',
    async open() {
      const server = await startS3Server();
      const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-sweep-cache-'));
      const store = new S3BlobStore({
        bucket: server.bucket,
        prefix: 'lake-test',
        endpoint: server.endpoint,
        region: server.region,
        forcePathStyle: true,
        credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
        cacheDir: cache,
      });
      return {
        store,
        async dispose() {
          store.close();
          await server.stop();
          fs.rmSync(cache, { recursive: true, force: true });
        },
      };
    },
  },
];

describe.each(stores)('catalog sweeper ($name store)', ({ open }) => {
  let t: TestDb;
  let fixture: Awaited<ReturnType<(typeof stores)[number]['open']>>;
  let n = 0;

  beforeAll(async () => {
    t = await createTestDb();
    fixture = await open();
  });
  afterAll(async () => {
    await fixture.dispose();
    await t.dispose();
  });

  async function blob(ref: { workspace: string; collection: string; dataset: string }) {
    const key = `lake/${ref.workspace}/${ref.collection}/${ref.dataset}/${crypto.randomUUID()}.parquet`;
    const info = await fixture.store.put(key, 'not really parquet');
    return { path: key, row_count: 1, size_bytes: info.size };
  }
  const exists = async (key: string) => (await fixture.store.head(key)) !== undefined;

  async function dataset(catalog: Catalog) {
    n += 1;
    const ref = { workspace: `sweep_${n}`, collection: 'c', dataset: 'd' };
    await catalog.claimNamespace(ref.workspace, 'acct');
    await catalog.createDataset(ref, { columns: [{ name: 'id', type: 'BIGINT', nullable: false }] }, 'a');
    return ref;
  }

  it('deletes expired files only after the grace', async () => {
    const patient = new Catalog(t.db, { fileGraceMs: 3_600_000 });
    const ref = await dataset(patient);
    const old = await blob(ref);
    const live = await blob(ref);
    await patient.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [old] });
    await patient.commitSnapshot({ dataset: ref, operation: 'overwrite', removeAllFiles: true, author: 'a', addFiles: [live] });
    expect(await patient.expireSnapshots(ref, { olderThanMs: 0 })).toMatchObject({ filesQueued: 1, bytesQueued: old.size_bytes });
    await new CatalogSweeper(patient, fixture.store, silentLogger).run();
    expect(await exists(old.path)).toBe(true); // within its grace

    // The same queue seen by a catalog with no grace: due now.
    const eager = new Catalog(t.db, { fileGraceMs: 0 });
    const ref2 = await dataset(eager);
    const old2 = await blob(ref2);
    await eager.commitSnapshot({ dataset: ref2, operation: 'create', author: 'a', addFiles: [old2] });
    await eager.commitSnapshot({ dataset: ref2, operation: 'overwrite', removeAllFiles: true, author: 'a', addFiles: [await blob(ref2)] });
    await eager.expireSnapshots(ref2, { olderThanMs: 0 });
    expect((await new CatalogSweeper(eager, fixture.store, silentLogger).run()).blobs).toBe(1);
    expect(await exists(old2.path)).toBe(false);
    expect(await exists(old.path)).toBe(true);
    expect(await exists(live.path)).toBe(true);
  });

  it('purges dropped datasets past the window and deletes their files', async () => {
    const catalog = new Catalog(t.db, { undropRetentionMs: 0, fileGraceMs: 0 });
    const ref = await dataset(catalog);
    const f = await blob(ref);
    await catalog.commitSnapshot({ dataset: ref, operation: 'create', author: 'a', addFiles: [f] });
    await catalog.dropDataset(ref, 'a');
    expect(await new CatalogSweeper(catalog, fixture.store, silentLogger).run()).toMatchObject({ datasets: 1, blobs: 1 });
    expect(await exists(f.path)).toBe(false);
    await expect(catalog.undropDataset(ref)).rejects.toMatchObject({ code: 'DATASET_NOT_FOUND' });
  });
});
