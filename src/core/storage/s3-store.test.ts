import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { streamText } from '../../../test/async.ts';
import { startFaultProxy, type FaultProxy } from '../../../test/cluster/fault-proxy.ts';
import { startS3Server, type TestS3Server } from '../../../test/s3-server.ts';
import { BlobNotFoundError } from './blob-store.ts';
import { createBlobStore } from './index.ts';
import { S3BlobStore, type S3BlobStoreOptions } from './s3-store.ts';

/** A fresh temp directory (not test/harness.ts: these tests need none of the app). */
function tempDir(prefix: string): { dir: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

describe('S3BlobStore (s3rver on loopback)', () => {
  let server: TestS3Server;
  let raw: S3Client;
  const stores: S3BlobStore[] = [];
  const dirs: { remove(): void }[] = [];

  beforeAll(async () => {
    server = await startS3Server();
    raw = new S3Client({
      endpoint: server.endpoint,
      region: server.region,
      forcePathStyle: true,
      credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
    });
  });
  afterAll(async () => {
    for (const s of stores) s.close();
    raw?.destroy();
    await server?.stop();
    for (const d of dirs) d.remove();
  });

  function open(options: Partial<S3BlobStoreOptions> = {}): S3BlobStore {
    const cache = tempDir('lakeport-s3cache-');
    dirs.push(cache);
    const store = new S3BlobStore({
      bucket: server.bucket,
      prefix: `p-${crypto.randomBytes(4).toString('hex')}`,
      endpoint: server.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
      cacheDir: cache.dir,
      ...options,
    });
    stores.push(store);
    return store;
  }

  /** Counts the GetObject requests the store sends. */
  function countDownloads(store: S3BlobStore): () => number {
    const send = vi.spyOn(store.client, 'send');
    return () => send.mock.calls.filter(([command]) => command instanceof GetObjectCommand).length;
  }

  async function rawKeys(prefix?: string): Promise<string[]> {
    const res = await raw.send(new ListObjectsV2Command({ Bucket: server.bucket, Prefix: prefix }));
    return (res.Contents ?? []).map((o) => o.Key!).sort();
  }

  it('keeps keys under the configured prefix', async () => {
    const store = open({ prefix: '/team-a/lakeport/' });
    expect(store.location).toBe('s3://lakeport/team-a/lakeport');
    await store.put('lake/ws/c/d/x.parquet', 'x');
    await store.put('results/e1.parquet', 'r');
    expect(await rawKeys('team-a/')).toEqual(['team-a/lakeport/lake/ws/c/d/x.parquet', 'team-a/lakeport/results/e1.parquet']);
    const listed = [];
    for await (const b of store.list('')) listed.push(b.key);
    expect(listed.sort()).toEqual(['lake/ws/c/d/x.parquet', 'results/e1.parquet']);
    // another prefix in the same bucket sees none of it
    const other = open({ prefix: 'team-b' });
    for await (const b of other.list('')) expect.fail(`unexpected ${b.key}`);
    expect(await other.head('results/e1.parquet')).toBeUndefined();
  });

  it('works at the bucket root without a prefix', async () => {
    const store = open({ prefix: '' });
    expect(store.location).toBe('s3://lakeport');
    await store.put('rootonly/a.txt', 'a');
    expect(await rawKeys('rootonly/')).toEqual(['rootonly/a.txt']);
    expect(await store.deletePrefix('rootonly/')).toBe(1);
    expect(await rawKeys('rootonly/')).toEqual([]);
  });

  it('caches localPath: a second call does not download again', async () => {
    const store = open();
    const downloads = countDownloads(store);
    await store.put('lake/ws/c/d/cached.parquet', 'cached bytes');
    const first = await store.localPath('lake/ws/c/d/cached.parquet');
    expect(downloads()).toBe(1);
    expect(first.startsWith(store.cacheDir + path.sep)).toBe(true);
    expect(path.basename(first)).toMatch(/^[0-9a-f]{64}-cached\.parquet$/);
    const second = await store.localPath('lake/ws/c/d/cached.parquet');
    expect(second).toBe(first);
    expect(downloads()).toBe(1);
    expect(fs.readFileSync(second, 'utf8')).toBe('cached bytes');
    // the cache directory holds no leftovers of the download
    expect(fs.readdirSync(path.join(store.cacheDir, '.tmp'))).toEqual([]);
  });

  it('shares one download among concurrent localPath calls', async () => {
    const store = open();
    await store.put('lake/ws/c/d/shared.parquet', crypto.randomBytes(256 * 1024));
    const downloads = countDownloads(store);
    const paths = await Promise.all(Array.from({ length: 8 }, () => store.localPath('lake/ws/c/d/shared.parquet')));
    expect(new Set(paths).size).toBe(1);
    expect(downloads()).toBe(1);
  });

  it('reuses copies a previous process left in the cache directory', async () => {
    const first = open();
    await first.put('lake/ws/c/d/persist.parquet', 'persisted');
    const p = await first.localPath('lake/ws/c/d/persist.parquet');
    const second = open({ prefix: first.prefix, cacheDir: first.cacheDir });
    const downloads = countDownloads(second);
    expect(await second.localPath('lake/ws/c/d/persist.parquet')).toBe(p);
    expect(downloads()).toBe(0);
    expect(second.cachedBytes).toBe('persisted'.length);
  });

  it('keeps cached copies of stores on other prefixes apart in a shared cache directory', async () => {
    const one = open();
    const two = open({ cacheDir: one.cacheDir });
    await one.put('results/same-key.parquet', 'one');
    await two.put('results/same-key.parquet', 'two');
    expect(fs.readFileSync(await one.localPath('results/same-key.parquet'), 'utf8')).toBe('one');
    expect(fs.readFileSync(await two.localPath('results/same-key.parquet'), 'utf8')).toBe('two');
  });

  it('evicts least-recently-used copies above the size limit', async () => {
    const store = open({ cacheMaxBytes: 2500, cacheGraceMs: 0 });
    for (const k of ['a', 'b', 'c']) await store.put(`lake/ev/${k}.bin`, Buffer.alloc(1000, k));
    const downloads = countDownloads(store);
    const a = await store.localPath('lake/ev/a.bin');
    const b = await store.localPath('lake/ev/b.bin');
    expect(store.cachedBytes).toBe(2000);
    const c = await store.localPath('lake/ev/c.bin');
    // a was least recently used
    expect(fs.existsSync(a)).toBe(false);
    expect(fs.existsSync(b) && fs.existsSync(c)).toBe(true);
    expect(store.cachedBytes).toBe(2000);

    await store.localPath('lake/ev/b.bin'); // b is now the most recent: c goes next
    expect(downloads()).toBe(3);
    expect(await store.localPath('lake/ev/a.bin')).toBe(a);
    expect(downloads()).toBe(4);
    expect(fs.existsSync(c)).toBe(false);
    expect(fs.existsSync(a) && fs.existsSync(b)).toBe(true);
    expect(fs.readFileSync(a)).toEqual(Buffer.alloc(1000, 'a'));
  });

  it('spares recently used copies (the grace period) even above the limit', async () => {
    const store = open({ cacheMaxBytes: 1500, cacheGraceMs: 60_000 });
    for (const k of ['a', 'b']) await store.put(`lake/grace/${k}.bin`, Buffer.alloc(1000, k));
    const a = await store.localPath('lake/grace/a.bin');
    const b = await store.localPath('lake/grace/b.bin');
    expect(fs.existsSync(a) && fs.existsSync(b)).toBe(true);
    expect(store.cachedBytes).toBe(2000);
  });

  it('keeps a putFile temp file as the cached copy', async () => {
    const store = open();
    const temp = await store.tempPath('.parquet');
    expect(temp.startsWith(path.join(store.cacheDir, '.tmp') + path.sep)).toBe(true);
    fs.writeFileSync(temp, 'written by duckdb');
    await store.putFile('results/e2.parquet', temp);
    const downloads = countDownloads(store);
    const p = await store.localPath('results/e2.parquet');
    expect(downloads()).toBe(0);
    expect(fs.readFileSync(p, 'utf8')).toBe('written by duckdb');
    expect(await rawKeys(`${store.prefix}/results/`)).toEqual([`${store.prefix}/results/e2.parquet`]);
  });

  it('drops the cached copy when a blob is deleted', async () => {
    const store = open();
    await store.put('lake/gone/x.parquet', 'x');
    await store.put('lake/gone/y.parquet', 'y');
    const x = await store.localPath('lake/gone/x.parquet');
    const y = await store.localPath('lake/gone/y.parquet');
    await store.delete('lake/gone/x.parquet');
    expect(fs.existsSync(x)).toBe(false);
    expect(await store.deletePrefix('lake/gone/')).toBe(1);
    expect(fs.existsSync(y)).toBe(false);
    expect(store.cachedBytes).toBe(0);
    await expect(store.localPath('lake/gone/x.parquet')).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it('lists across pages and deletes across DeleteObjects batches', async () => {
    const store = open({ listPageSize: 2, deleteBatchSize: 3 });
    const list = vi.spyOn(store.client, 'send');
    const keys = Array.from({ length: 7 }, (_, i) => `lake/_staging/many/${i}.bin`);
    for (const k of keys) await store.put(k, k);
    await store.put('lake/_staging/other/keep.bin', 'keep');
    const listed = [];
    for await (const b of store.list('lake/_staging/many/')) listed.push(b.key);
    expect(listed.sort()).toEqual([...keys].sort());
    expect(list.mock.calls.filter(([c]) => c instanceof ListObjectsV2Command).length).toBe(4); // 2+2+2+1
    expect(await store.deletePrefix('lake/_staging/many/')).toBe(7);
    expect(list.mock.calls.filter(([c]) => c instanceof DeleteObjectsCommand).length).toBe(3); // 3+3+1
    expect(await rawKeys(`${store.prefix}/lake/_staging/`)).toEqual([`${store.prefix}/lake/_staging/other/keep.bin`]);
  });

  it('is what createBlobStore builds for s3:// URLs', async () => {
    const data = tempDir('lakeport-data-');
    dirs.push(data);
    const store = await createBlobStore({
      storageUrl: 's3://lakeport/from-config',
      dataDir: data.dir,
      s3Endpoint: server.endpoint,
      s3Region: 'us-east-1',
      s3AccessKeyId: server.accessKeyId,
      s3SecretAccessKey: server.secretAccessKey,
      s3CacheMaxBytes: 10_000,
    });
    expect(store).toBeInstanceOf(S3BlobStore);
    stores.push(store as S3BlobStore);
    expect(store.location).toBe('s3://lakeport/from-config');
    await store.put('lake/ws/c/d/cfg.parquet', 'cfg');
    expect(await rawKeys('from-config/')).toEqual(['from-config/lake/ws/c/d/cfg.parquet']);
    const p = await store.localPath('lake/ws/c/d/cfg.parquet');
    expect(p.startsWith(path.join(data.dir, 'cache', 's3') + path.sep)).toBe(true);
  });

  describe('when the S3 server fails (a fault-injecting proxy in front of it)', () => {
    let proxy: FaultProxy;
    beforeAll(async () => {
      proxy = await startFaultProxy(server.endpoint);
    });
    afterAll(async () => proxy?.close());
    const unavailable = { status: 503, code: 'STORAGE_UNAVAILABLE', headers: { 'retry-after': '5' } };

    it.each(['slowdown', 'stall'] as const)('retries a %s of first attempts unseen, and answers a clear 503 when every attempt fails', async (kind) => {
      const store = open({ endpoint: proxy.endpoint, timeoutMs: 300 });
      await store.put('lake/a.bin', 'before');
      try {
        proxy.inject({ kind, attempts: 'first' });
        const hits = proxy.stats[kind];
        await store.put('lake/b.bin', 'through retries');
        expect(await streamText(await store.get('lake/b.bin'))).toBe('through retries');
        expect(proxy.stats[kind]).toBeGreaterThan(hits);

        proxy.inject({ kind, attempts: 'all' });
        await expect(store.put('lake/c.bin', 'refused')).rejects.toMatchObject(unavailable);
        await expect(store.get('lake/a.bin')).rejects.toMatchObject(unavailable);
        await expect(store.localPath('lake/a.bin')).rejects.toMatchObject(unavailable);
      } finally {
        proxy.clear();
      }
      expect(await streamText(await store.get('lake/a.bin'))).toBe('before');
      expect(await store.head('lake/c.bin')).toBeUndefined();
      // A missing key is still just missing.
      await expect(store.get('lake/none.bin')).rejects.toBeInstanceOf(BlobNotFoundError);
    });

    it('answers a clear 503 when the server cannot be reached at all', async () => {
      const store = open({ endpoint: 'http://127.0.0.1:9', timeoutMs: 300 });
      await expect(store.put('lake/x.bin', 'x')).rejects.toMatchObject({ ...unavailable, message: expect.stringContaining('ECONNREFUSED') });
    });
  });
});
