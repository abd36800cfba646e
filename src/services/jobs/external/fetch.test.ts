/** ExternalFetcher: caps, aborts and cleanup of a job's copies; and the sandbox reading exactly those copies. */
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sandbox, SandboxQueryError } from '../../../core/engine/index.ts';
import type { ExternalStore } from '../../../core/storage/external/index.ts';
import { tempDir } from '../../../../test/harness.ts';
import { startS3Server, type TestS3Server } from '../../../../test/s3-server.ts';
import { ExternalFetcher, ExternalReadFailure, type SecretValues } from './fetch.ts';
import type { ExternalRead } from './reads.ts';

let s3: TestS3Server;
const work = tempDir('lakeport-fetch-');
const BUCKET = 'acme-lake';

const secrets = (scope = `s3://${BUCKET}/team/`): SecretValues & { uses: number } => ({
  uses: 0,
  async use() {
    this.uses++;
    return { type: 's3_access_key', values: { ACCESS_KEY_ID: s3.accessKeyId, SECRET_ACCESS_KEY: s3.secretAccessKey, SCOPE: scope } };
  },
});

/** A read of `keys` (exact, or globs) with secret ws.s. */
function readOf(...keys: string[]): ExternalRead {
  return {
    fn: 'read_csv',
    format: 'csv',
    position: 0,
    secret: { workspace: 'ws', name: 's', label: 'ws.s', position: 5 },
    options: [],
    urls: keys.map((key, i) => {
      const glob = key.search(/[*?[]/);
      const matcher = glob < 0 ? undefined : new RegExp(`^${key.replace(/[.]/g, '\\.').replace(/\*/g, '[^/]*')}$`);
      return { text: `s3://${BUCKET}/${key}`, scheme: 's3' as const, bucket: BUCKET, key, prefix: glob < 0 ? key : key.slice(0, glob), ...(matcher ? { matcher } : {}), position: 100 + i };
    }),
  };
}

let dirCount = 0;
const jobDir = () => {
  const dir = path.join(work.dir, `job-${dirCount++}`);
  fs.mkdirSync(dir);
  return dir;
};
const fetcher = (options: ConstructorParameters<typeof ExternalFetcher>[1] = {}, s = secrets()) =>
  new ExternalFetcher(s, { stores: { s3: { endpoint: s3.endpoint, maxAttempts: 1 } }, ...options });

beforeAll(async () => {
  s3 = await startS3Server({ bucket: BUCKET, verifySignatures: true });
  const admin = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
  for (let i = 0; i < 5; i++) await admin.send(new PutObjectCommand({ Bucket: BUCKET, Key: `team/part-${i}.csv`, Body: `n\n${'x'.repeat(1000)}\n` }));
  await admin.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'team/dir/', Body: Buffer.alloc(0) }));
  await admin.send(new PutObjectCommand({ Bucket: BUCKET, Key: "team/odd name (1)'.csv.gz", Body: 'gz?' }));
  admin.destroy();
});
afterAll(async () => {
  await s3.stop();
  work.remove();
});

describe('ExternalFetcher', () => {
  it('copies listed and exact objects into the job directory, in key order, opening each secret once', async () => {
    const s = secrets();
    const dir = jobDir();
    const fetched = await fetcher({}, s).fetch([readOf('team/part-*.csv'), readOf("team/odd name (1)'.csv.gz")], dir, new AbortController().signal);
    expect(s.uses).toBe(1);
    expect(fetched.files[0].map((f) => path.basename(f))).toEqual(['0-part-0.csv', '1-part-1.csv', '2-part-2.csv', '3-part-3.csv', '4-part-4.csv']);
    // The name keeps the extension (DuckDB detects compression by it) and nothing unsafe.
    expect(fetched.files[1].map((f) => path.basename(f))).toEqual(['5-odd_name__1__.csv.gz']);
    expect(fetched.urls.get(fetched.files[1][0])).toBe(`s3://${BUCKET}/team/odd name (1)'.csv.gz`);
    expect(fs.readFileSync(fetched.files[0][2], 'utf8')).toBe(`n\n${'x'.repeat(1000)}\n`);
    expect(fetched.bytes).toBe(5 * 1003 + 3);
    expect((fs.statSync(fetched.files[0][0]).mode & 0o777).toString(8)).toBe('600');
  });

  it('refuses past the byte cap (listed sizes, and bytes as they stream) and the object cap', async () => {
    await expect(fetcher({ maxBytes: 2500 }).fetch([readOf('team/part-*.csv')], jobDir(), new AbortController().signal)).rejects.toMatchObject({
      code: 'EXTERNAL_READ_TOO_LARGE',
      position: 100,
      message: expect.stringContaining('LAKEPORT_EXTERNAL_READ_MAX_BYTES'),
    });
    // Exact keys are not listed: the cap holds while they stream.
    const dir = jobDir();
    await expect(fetcher({ maxBytes: 2500, concurrency: 1 }).fetch([readOf('team/part-0.csv', 'team/part-1.csv', 'team/part-2.csv')], dir, new AbortController().signal)).rejects.toMatchObject({
      code: 'EXTERNAL_READ_TOO_LARGE',
      position: 102,
    });
    await expect(fetcher({ maxObjects: 3 }).fetch([readOf('team/part-*.csv')], jobDir(), new AbortController().signal)).rejects.toMatchObject({
      code: 'EXTERNAL_READ_TOO_LARGE',
      message: expect.stringContaining('more than 3 objects'),
    });
  });

  it('checks the secret again when it runs: a SCOPE replaced since planning refuses', async () => {
    const error = await fetcher({}, secrets(`s3://${BUCKET}/elsewhere/`))
      .fetch([readOf('team/part-0.csv')], jobDir(), new AbortController().signal)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExternalReadFailure);
    expect(error).toMatchObject({ code: 'EXTERNAL_SCOPE_VIOLATION', position: 100 });
    const gone = await new ExternalFetcher({ use: async () => undefined }).fetch([readOf('team/part-0.csv')], jobDir(), new AbortController().signal).catch((e: unknown) => e);
    expect(gone).toMatchObject({ code: 'SECRET_NOT_FOUND', position: 5 });
  });

  it('stops every download when the job is cancelled, and rejects with the abort reason', async () => {
    const started: string[] = [];
    const streams: PassThrough[] = [];
    const hanging: ExternalStore = {
      scheme: 's3',
      async *list() {
        yield* [];
      },
      async get(_bucket, key) {
        started.push(key);
        const body = new PassThrough();
        body.write('partial');
        streams.push(body);
        return { body };
      },
      close() {},
    };
    const f = new ExternalFetcher(secrets(), { concurrency: 2 }, async () => hanging);
    const abort = new AbortController();
    const dir = jobDir();
    const done = f.fetch([readOf('team/a.csv', 'team/b.csv', 'team/c.csv')], dir, abort.signal).catch((e: unknown) => e);
    await expect.poll(() => started.length).toBe(2);
    const reason = new Error('cancelled');
    abort.abort(reason);
    expect(await done).toBe(reason);
    expect(started).toEqual(['team/a.csv', 'team/b.csv']); // the third never started
    expect(streams.every((s) => s.destroyed)).toBe(true);
  });

  it('maps the store’s failures to the place of the URL', async () => {
    const failing: ExternalStore = {
      scheme: 's3',
      async *list() {
        yield* [];
      },
      async get() {
        return { body: Readable.from(['x']) };
      },
      close() {},
    };
    const f = new ExternalFetcher(secrets(), {}, async () => failing);
    await expect(f.fetch([readOf('team/none-*.csv')], jobDir(), new AbortController().signal)).rejects.toMatchObject({ code: 'EXTERNAL_OBJECT_NOT_FOUND', position: 100 });
  });
});

describe('a sandbox with read paths', () => {
  it('reads exactly the declared copies, not their neighbours', async () => {
    const dir = jobDir();
    const mine = path.join(dir, '0-a.csv');
    const other = path.join(dir, '1-b.csv');
    fs.writeFileSync(mine, 'n\n1\n2\n');
    fs.writeFileSync(other, 'n\n3\n');
    const sandbox = await Sandbox.open([], { readPaths: [mine], threads: 1, memoryLimit: '128MB' });
    const out = path.join(work.dir, 'out.parquet');
    try {
      expect((await sandbox.runToParquet(`SELECT sum(n) AS s FROM read_csv(['${mine}'], header = true)`, {}, out)).rowCount).toBe(1);
      const refused = await sandbox.runToParquet(`SELECT * FROM read_csv(['${other}'])`, {}, out).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(SandboxQueryError);
      expect((refused as SandboxQueryError).errorType).toBe('Permission');
    } finally {
      sandbox.close();
    }
  });
});
