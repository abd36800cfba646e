import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.ts';
import { InvalidBlobKeyError, parseStorageUrl } from './blob-store.ts';
import { createBlobStore, LocalBlobStore } from './index.ts';

/** A fresh temp directory (not test/harness.ts: these tests need none of the app). */
function tempDir(prefix: string): { dir: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

describe('LocalBlobStore', () => {
  let dir: { dir: string; remove(): void };
  let store: LocalBlobStore;
  beforeEach(() => {
    dir = tempDir('lakeport-local-');
    store = new LocalBlobStore(dir.dir);
  });
  afterEach(() => dir.remove());

  it('keeps blobs as plain files under its root', async () => {
    await store.put('lake/ws/c/d/a.parquet', 'a');
    expect(fs.readFileSync(path.join(dir.dir, 'lake/ws/c/d/a.parquet'), 'utf8')).toBe('a');
    expect(await store.localPath('lake/ws/c/d/a.parquet')).toBe(path.join(dir.dir, 'lake/ws/c/d/a.parquet'));
    expect(store.location).toBe(pathToFileURL(dir.dir).href);
  });

  it('moves a tempPath file into place, and copies any other file', async () => {
    const temp = await store.tempPath('.parquet');
    expect(path.dirname(temp)).toBe(path.join(dir.dir, '.tmp'));
    fs.writeFileSync(temp, 'moved');
    const inode = fs.statSync(temp).ino;
    await store.putFile('lake/ws/c/d/moved.parquet', temp);
    expect(fs.existsSync(temp)).toBe(false);
    expect(fs.statSync(path.join(dir.dir, 'lake/ws/c/d/moved.parquet')).ino).toBe(inode); // a rename, not a copy

    const other = path.join(dir.dir, 'outside.csv');
    fs.writeFileSync(other, 'copied');
    await store.putFile('lake/ws/c/d/copied.csv', other);
    expect(fs.readFileSync(other, 'utf8')).toBe('copied');
    expect(fs.readFileSync(path.join(dir.dir, 'lake/ws/c/d/copied.csv'), 'utf8')).toBe('copied');
  });

  it('leaves no temp files behind', async () => {
    await store.put('a/b.txt', 'x');
    await store.put('a/c.txt', Buffer.from('y'));
    expect(fs.readdirSync(path.join(dir.dir, '.tmp'))).toEqual([]);
  });

  it('clears temp files a crash left behind more than a day ago', async () => {
    fs.mkdirSync(path.join(dir.dir, '.tmp'));
    const old = path.join(dir.dir, '.tmp', 'old.part');
    const recent = path.join(dir.dir, '.tmp', 'recent.part');
    fs.writeFileSync(old, 'x');
    fs.writeFileSync(recent, 'y');
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
    fs.utimesSync(old, twoDaysAgo, twoDaysAgo);
    await new LocalBlobStore(dir.dir).tempPath('.parquet');
    expect(fs.existsSync(old)).toBe(false);
    expect(fs.existsSync(recent)).toBe(true);
  });

  it('refuses keys inside its temp directory', async () => {
    await expect(store.put('.tmp/x', 'x')).rejects.toBeInstanceOf(InvalidBlobKeyError);
    await store.put('lake/.tmp/x', 'fine deeper down');
  });

  it('lists in byte-wise key order and skips the temp directory', async () => {
    for (const k of ['a/b', 'a-c', 'a.d', 'a/a/z', 'b', 'A']) await store.put(k, k);
    fs.writeFileSync(await store.tempPath('.part'), 'temp');
    const keys: string[] = [];
    for await (const b of store.list('')) keys.push(b.key);
    expect(keys).toEqual(['A', 'a-c', 'a.d', 'a/a/z', 'a/b', 'b']);
  });

  it('removes directories a delete leaves empty, up to the root', async () => {
    await store.put('lake/ws/c/d/x.parquet', 'x');
    await store.put('lake/ws/other/y.parquet', 'y');
    await store.delete('lake/ws/c/d/x.parquet');
    expect(fs.existsSync(path.join(dir.dir, 'lake/ws/c'))).toBe(false);
    expect(fs.existsSync(path.join(dir.dir, 'lake/ws/other/y.parquet'))).toBe(true);
    expect(await store.deletePrefix('lake/ws/')).toBe(1);
    expect(fs.existsSync(path.join(dir.dir, 'lake'))).toBe(false);
    expect(fs.existsSync(dir.dir)).toBe(true);
  });

  it('writes again into a directory a concurrent delete just pruned', async () => {
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        await store.put(`lake/race/d/${i}.bin`, 'x');
        await store.delete(`lake/race/d/${i}.bin`);
      }),
    );
    await store.put('lake/race/d/last.bin', 'last');
    expect(fs.readFileSync(path.join(dir.dir, 'lake/race/d/last.bin'), 'utf8')).toBe('last');
  });
});

describe('createBlobStore and LAKEPORT_STORAGE_URL', () => {
  it('defaults to a file store rooted at the data directory, so lake/… lands in <dataDir>/lake/…', async () => {
    const data = tempDir('lakeport-data-');
    try {
      const store = await createBlobStore({ storageUrl: undefined, dataDir: data.dir });
      expect(store.kind).toBe('file');
      expect(store.location).toBe(pathToFileURL(data.dir).href);
      await store.put('lake/ws/c/d/x.parquet', 'x');
      expect(fs.existsSync(path.join(data.dir, 'lake/ws/c/d/x.parquet'))).toBe(true);
    } finally {
      data.remove();
    }
  });

  it('roots a file:// URL at that directory', async () => {
    const store = await createBlobStore({ storageUrl: 'file:///srv/lakeport-store', dataDir: '/tmp/unused' });
    expect(store).toBeInstanceOf(LocalBlobStore);
    expect((store as LocalBlobStore).root).toBe('/srv/lakeport-store');
  });

  it('parses storage URLs', () => {
    expect(parseStorageUrl('file:///a/b')).toEqual({ kind: 'file', root: '/a/b' });
    expect(parseStorageUrl('s3://my-bucket')).toEqual({ kind: 's3', bucket: 'my-bucket', prefix: '' });
    expect(parseStorageUrl('s3://my-bucket/team/lake/')).toEqual({ kind: 's3', bucket: 'my-bucket', prefix: 'team/lake' });
    for (const bad of ['http://x/y', 'file:relative', 'file://host/x', 's3://', 's3://Bad_Bucket', 's3://b/a/../c', '/plain/path']) {
      expect(() => parseStorageUrl(bad), bad).toThrow();
    }
  });

  it('refuses half-given credentials', async () => {
    await expect(createBlobStore({ storageUrl: 's3://bkt', dataDir: '/tmp/x', s3AccessKeyId: 'AKIA' })).rejects.toThrow(/AWS_SECRET_ACCESS_KEY/);
  });

  it('reads the storage variables in config', () => {
    const c = loadConfig({
      LAKEPORT_STORAGE_URL: 's3://lake-bucket/prod',
      S3_ENDPOINT: 'http://127.0.0.1:9000',
      AWS_ACCESS_KEY_ID: 'id',
      AWS_SECRET_ACCESS_KEY: 'secret',
      LAKEPORT_S3_CACHE_MAX_BYTES: '1048576',
    });
    expect(c).toMatchObject({
      storageUrl: 's3://lake-bucket/prod',
      s3Endpoint: 'http://127.0.0.1:9000',
      s3Region: 'us-east-1',
      s3AccessKeyId: 'id',
      s3SecretAccessKey: 'secret',
      s3CacheMaxBytes: 1048576,
    });
    expect(loadConfig({ S3_REGION: 'eu-central-1' }).s3Region).toBe('eu-central-1');
    expect(loadConfig({}).s3CacheMaxBytes).toBeUndefined();
    expect(() => loadConfig({ LAKEPORT_STORAGE_URL: 'ftp://x' })).toThrow(/LAKEPORT_STORAGE_URL: unsupported storage URL/);
    expect(() => loadConfig({ LAKEPORT_S3_CACHE_MAX_BYTES: '-5' })).toThrow(/LAKEPORT_S3_CACHE_MAX_BYTES/);
  });
});
