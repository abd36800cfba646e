import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Server, type TestS3Server } from '../../../test/s3-server.ts';
import { BlobNotFoundError, compareKeys, InvalidBlobKeyError, type BlobInfo, type BlobStore } from './blob-store.ts';
import { LocalBlobStore } from './local-store.ts';
import { S3BlobStore } from './s3-store.ts';

/** A fresh temp directory (not test/harness.ts: these tests need none of the app). */
function tempDir(prefix: string): { dir: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

interface Fixture {
  store: BlobStore;
  dispose(): Promise<void>;
}

const implementations: { name: string; open(): Promise<Fixture> }[] = [
  {
    name: 'LocalBlobStore',
    async open() {
      const dir = tempDir('lakeport-blobs-');
      return { store: new LocalBlobStore(dir.dir), dispose: async () => dir.remove() };
    },
  },
  {
    name: 'S3BlobStore (s3rver on loopback)',
    async open() {
      const server: TestS3Server = await startS3Server();
      const cache = tempDir('lakeport-s3cache-');
      const store = new S3BlobStore({
        bucket: server.bucket,
        prefix: 'tenant/lakeport',
        endpoint: server.endpoint,
        region: server.region,
        forcePathStyle: true,
        credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
        cacheDir: cache.dir,
      });
      return {
        store,
        async dispose() {
          store.close();
          await server.stop();
          cache.remove();
        },
      };
    },
  },
];

async function read(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return buffer(stream as Readable);
}

async function collect(iterable: AsyncIterable<BlobInfo>): Promise<BlobInfo[]> {
  const out: BlobInfo[] = [];
  for await (const b of iterable) out.push(b);
  return out;
}

/** A deterministic pseudo-random stream of `chunks` × 1 MiB, and the sha256 of what it yields. */
function bigStream(chunks: number): { stream: Readable; sha256: string; size: number } {
  const seed = crypto.createHash('sha256').update('lakeport').digest();
  const block = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < block.length; i += seed.length) seed.copy(block, i);
  const hash = crypto.createHash('sha256');
  const parts: Buffer[] = [];
  for (let i = 0; i < chunks; i++) {
    const part = Buffer.from(block);
    part.writeUInt32BE(i, 0);
    hash.update(part);
    parts.push(part);
  }
  return { stream: Readable.from(parts), sha256: hash.digest('hex'), size: chunks * block.length };
}

const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

describe.each(implementations)('BlobStore contract: $name', ({ open }) => {
  let f: Fixture;
  let store: BlobStore;
  const scratch = tempDir('lakeport-blob-src-');
  beforeAll(async () => {
    f = await open();
    store = f.store;
  });
  afterAll(async () => {
    await f?.dispose();
    scratch.remove();
  });

  it('names its location', () => {
    expect(store.location).toMatch(store.kind === 'file' ? /^file:\/\/\// : /^s3:\/\/lakeport\/tenant\/lakeport$/);
  });

  it('round-trips a Buffer and a string', async () => {
    const bytes = crypto.randomBytes(1000);
    const info = await store.put('lake/ws/c/d/buffer.bin', bytes, { contentType: 'application/octet-stream' });
    expect(info).toMatchObject({ key: 'lake/ws/c/d/buffer.bin', size: 1000 });
    expect(info.lastModified).toBeInstanceOf(Date);
    expect(await read(await store.get('lake/ws/c/d/buffer.bin'))).toEqual(bytes);

    await store.put('lake/ws/c/d/text.txt', 'héllo, lake');
    expect((await read(await store.get('lake/ws/c/d/text.txt'))).toString('utf8')).toBe('héllo, lake');
    expect((await store.head('lake/ws/c/d/text.txt'))?.size).toBe(Buffer.byteLength('héllo, lake'));
  });

  it('round-trips an empty blob', async () => {
    await store.put('results/empty.bin', Buffer.alloc(0));
    expect((await read(await store.get('results/empty.bin'))).length).toBe(0);
    expect((await store.head('results/empty.bin'))?.size).toBe(0);
  });

  it('streams a 20 MiB body in and out', async () => {
    const big = bigStream(20);
    const info = await store.put('lake/_staging/big/20mb.bin', big.stream);
    expect(info.size).toBe(big.size);
    const hash = crypto.createHash('sha256');
    for await (const chunk of (await store.get('lake/_staging/big/20mb.bin')) as Readable) hash.update(chunk as Buffer);
    expect(hash.digest('hex')).toBe(big.sha256);
  });

  it('reads byte ranges, inclusive, clamped to the blob', async () => {
    await store.put('lake/ws/c/d/range.txt', '0123456789');
    const range = async (start: number, end?: number) => (await read(await store.get('lake/ws/c/d/range.txt', { start, end }))).toString();
    expect(await range(2, 5)).toBe('2345');
    expect(await range(0, 0)).toBe('0');
    expect(await range(7)).toBe('789');
    expect(await range(8, 100)).toBe('89');
    expect(await range(10)).toBe('');
    expect(await range(50, 60)).toBe('');
    await expect(store.get('lake/ws/c/d/range.txt', { start: 5, end: 4 })).rejects.toThrow(RangeError);
    await expect(store.get('lake/ws/c/d/range.txt', { start: -1 })).rejects.toThrow(RangeError);
  });

  it('heads a blob, and undefined for a missing one', async () => {
    await store.put('results/head.parquet', 'abc');
    const info = await store.head('results/head.parquet');
    expect(info).toMatchObject({ key: 'results/head.parquet', size: 3 });
    expect(Math.abs(info!.lastModified.getTime() - Date.now())).toBeLessThan(60_000);
    expect(await store.head('results/missing.parquet')).toBeUndefined();
    expect(await store.head('results')).toBeUndefined(); // a "directory" is not a blob
  });

  it('rejects get of a missing blob with BlobNotFoundError', async () => {
    await expect(store.get('lake/nope/x.parquet')).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(store.get('lake/nope/x.parquet', { start: 0, end: 1 })).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(store.localPath('lake/nope/x.parquet').then((p) => fs.promises.readFile(p))).rejects.toThrow();
  });

  it('lists by prefix, in key order, without other prefixes or temp files', async () => {
    await store.put('lake/listws/orders/daily/b.parquet', 'b');
    await store.put('lake/listws/orders/daily/a.parquet', 'a');
    await store.put('lake/listws/orders/monthly/m.parquet', 'mm');
    await store.put('lake/listws-other/x/y.parquet', 'x');
    await store.put('lake/listws.z', 'z');
    const temp = await store.tempPath('.parquet');
    fs.writeFileSync(temp, 'not yet a blob');

    // Sorted here: S3-compatible servers other than AWS need not list in key order.
    const keys = async (prefix: string) => (await collect(store.list(prefix))).map((b) => b.key).sort(compareKeys);
    expect(await keys('lake/listws/')).toEqual([
      'lake/listws/orders/daily/a.parquet',
      'lake/listws/orders/daily/b.parquet',
      'lake/listws/orders/monthly/m.parquet',
    ]);
    expect(await keys('lake/listws/orders/daily/')).toEqual(['lake/listws/orders/daily/a.parquet', 'lake/listws/orders/daily/b.parquet']);
    // a plain string prefix, as in S3
    expect(await keys('lake/listws')).toEqual([
      'lake/listws-other/x/y.parquet',
      'lake/listws.z',
      'lake/listws/orders/daily/a.parquet',
      'lake/listws/orders/daily/b.parquet',
      'lake/listws/orders/monthly/m.parquet',
    ]);
    expect(await keys('lake/listws/orders/mo')).toEqual(['lake/listws/orders/monthly/m.parquet']);
    expect(await keys('lake/absent/')).toEqual([]);
    const all = await collect(store.list(''));
    expect(all.map((b) => b.key)).toContain('lake/listws.z');
    expect(all.every((b) => !b.key.startsWith('.tmp') && !b.key.includes('.part'))).toBe(true);
    expect(all.find((b) => b.key === 'lake/listws/orders/monthly/m.parquet')?.size).toBe(2);
    fs.rmSync(temp);
  });

  it('deletes idempotently', async () => {
    await store.put('lake/del/one/x.parquet', 'x');
    await store.delete('lake/del/one/x.parquet');
    expect(await store.head('lake/del/one/x.parquet')).toBeUndefined();
    await store.delete('lake/del/one/x.parquet');
    await store.delete('lake/never/written.parquet');
    expect(await collect(store.list('lake/del/'))).toEqual([]);
  });

  it('deletes a prefix and nothing else', async () => {
    for (const k of ['a', 'b', 'c']) await store.put(`lake/_staging/contract-1/${k}.parquet`, k);
    await store.put('lake/_staging/contract-1/nested/d.parquet', 'd');
    await store.put('lake/_staging/contract-10/keep.parquet', 'keep');
    expect(await store.deletePrefix('lake/_staging/contract-1/')).toBe(4);
    expect(await collect(store.list('lake/_staging/contract-1/'))).toEqual([]);
    expect(await store.head('lake/_staging/contract-10/keep.parquet')).toBeDefined();
    expect(await store.deletePrefix('lake/_staging/contract-1/')).toBe(0);
    await expect(store.deletePrefix('lake/_staging/contract-10')).rejects.toBeInstanceOf(InvalidBlobKeyError);
    await expect(store.deletePrefix('')).rejects.toBeInstanceOf(InvalidBlobKeyError);
    expect(await store.head('lake/_staging/contract-10/keep.parquet')).toBeDefined();
  });

  it.each(['', '/abs/x.parquet', 'a/../b', '../x', './a', 'a/./b', 'a/.', 'a\\b', 'a\0b', 'a//b', 'a/'])('refuses the key %j', async (key) => {
    await expect(store.put(key, 'x')).rejects.toBeInstanceOf(InvalidBlobKeyError);
    await expect(store.get(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
    await expect(store.head(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
    await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
    await expect(store.localPath(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
  });

  it.each(['/lake', '../', 'lake/../x/', 'a\\b'])('refuses the prefix %j', async (prefix) => {
    await expect(collect(store.list(prefix))).rejects.toBeInstanceOf(InvalidBlobKeyError);
    await expect(store.deletePrefix(prefix)).rejects.toBeInstanceOf(InvalidBlobKeyError);
  });

  it('stores a local file with putFile and leaves it in place', async () => {
    const src = path.join(scratch.dir, 'upload.csv');
    fs.writeFileSync(src, 'id,name\n1,a\n');
    const info = await store.putFile('lake/_staging/c2/upload.csv', src, { contentType: 'text/csv' });
    expect(info.size).toBe(12);
    expect(fs.readFileSync(src, 'utf8')).toBe('id,name\n1,a\n');
    expect((await read(await store.get('lake/_staging/c2/upload.csv'))).toString()).toBe('id,name\n1,a\n');
  });

  it('puts a large local file (multipart on S3)', async () => {
    const src = path.join(scratch.dir, 'large.bin');
    const big = bigStream(12);
    await new Promise<void>((resolve, reject) => big.stream.pipe(fs.createWriteStream(src)).on('finish', resolve).on('error', reject));
    const info = await store.putFile('lake/ws/c/d/large.bin', src);
    expect(info.size).toBe(big.size);
    expect(sha256(fs.readFileSync(await store.localPath('lake/ws/c/d/large.bin')))).toBe(big.sha256);
    expect(fs.existsSync(src)).toBe(true);
  });

  it('gives a local path whose contents equal the blob', async () => {
    const bytes = crypto.randomBytes(4096);
    await store.put('lake/ws/c/d/local.parquet', bytes);
    const p = await store.localPath('lake/ws/c/d/local.parquet');
    expect(path.isAbsolute(p)).toBe(true);
    expect(fs.readFileSync(p)).toEqual(bytes);
  });

  it('takes a file written at tempPath with putFile (the temp file is consumed)', async () => {
    const temp = await store.tempPath('.parquet');
    expect(temp.endsWith('.parquet')).toBe(true);
    expect(fs.existsSync(temp)).toBe(false);
    expect(await store.tempPath('.parquet')).not.toBe(temp);
    fs.writeFileSync(temp, 'PAR1 … PAR1');
    const info = await store.putFile('results/exec-1.parquet', temp);
    expect(info.size).toBe(Buffer.byteLength('PAR1 … PAR1'));
    expect(fs.existsSync(temp)).toBe(false);
    expect((await read(await store.get('results/exec-1.parquet'))).toString()).toBe('PAR1 … PAR1');
    expect(fs.readFileSync(await store.localPath('results/exec-1.parquet'), 'utf8')).toBe('PAR1 … PAR1');
    await expect(store.tempPath('../x')).rejects.toBeInstanceOf(InvalidBlobKeyError);
  });

  it('never shows a blob whose body failed midway', async () => {
    async function* failing() {
      yield Buffer.from('partial data');
      throw new Error('client went away');
    }
    await expect(store.put('lake/_staging/c3/broken.parquet', Readable.from(failing()))).rejects.toThrow('client went away');
    expect(await store.head('lake/_staging/c3/broken.parquet')).toBeUndefined();
    expect(await collect(store.list('lake/_staging/c3/'))).toEqual([]);
  });

  it('keeps concurrent writers apart', async () => {
    const bodies = Array.from({ length: 12 }, (_, i) => crypto.randomBytes(1000 + i));
    await Promise.all(bodies.map((b, i) => store.put(`lake/conc/d/${String(i).padStart(2, '0')}.bin`, Readable.from([b]))));
    const listed = await collect(store.list('lake/conc/'));
    expect(listed.map((b) => b.size)).toEqual(bodies.map((b) => b.length));
    for (const [i, b] of bodies.entries()) expect(await read(await store.get(`lake/conc/d/${String(i).padStart(2, '0')}.bin`))).toEqual(b);
  });
});
