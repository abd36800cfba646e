/** The S3 adapter against a real S3-compatible server (s3rver) on loopback. */
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Server, type TestS3Server } from '../../../../test/s3-server.ts';
import { S3ExternalStore } from './s3.ts';
import type { ExternalObject } from './types.ts';
import { collect, streamText } from '../../../../test/async.ts';

let s3: TestS3Server;
let good: S3ExternalStore;

const text = streamText;
const all = collect<ExternalObject>;

beforeAll(async () => {
  s3 = await startS3Server({ bucket: 'acme-lake', verifySignatures: true });
  const admin = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
  for (const [key, body] of [
    ['team/a.csv', 'x\n1\n'],
    ['team/b.csv', 'x\n2\n'],
    ['team/sub/c.csv', 'x\n3\n'],
    ['teamX/d.csv', 'x\n4\n'],
  ]) {
    await admin.send(new PutObjectCommand({ Bucket: 'acme-lake', Key: key, Body: body }));
  }
  await admin.send(new CreateBucketCommand({ Bucket: 'empty-lake' }));
  admin.destroy();
  good = new S3ExternalStore({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, region: 'eu-west-1' }, { endpoint: s3.endpoint, maxAttempts: 1 });
});
afterAll(async () => {
  good.close();
  await s3.stop();
});

describe('S3ExternalStore', () => {
  it('lists a prefix (no boundary of its own: the caller filters) and downloads objects', async () => {
    expect(await all(good.list('acme-lake', 'team/'))).toEqual([
      { key: 'team/a.csv', size: 4 },
      { key: 'team/b.csv', size: 4 },
      { key: 'team/sub/c.csv', size: 4 },
    ]);
    expect((await all(good.list('acme-lake', 'team'))).map((o) => o.key)).toContain('teamX/d.csv');
    expect(await all(good.list('empty-lake', ''))).toEqual([]);
    const { body, size } = await good.get('acme-lake', 'team/sub/c.csv');
    expect(size).toBe(4);
    expect(await text(body)).toBe('x\n3\n');
  });

  it('reports a missing object or bucket as EXTERNAL_OBJECT_NOT_FOUND', async () => {
    await expect(good.get('acme-lake', 'team/nope.csv')).rejects.toMatchObject({ code: 'EXTERNAL_OBJECT_NOT_FOUND', message: 's3://acme-lake/team/nope.csv: no such object' });
    await expect(all(good.list('no-such-lake', 'x/'))).rejects.toMatchObject({ code: 'EXTERNAL_OBJECT_NOT_FOUND', message: expect.stringContaining('bucket does not exist') });
  });

  it('maps a wrong secret key and an unknown key id to EXTERNAL_CREDENTIALS_REJECTED, without quoting them', async () => {
    const wrongSecret = new S3ExternalStore({ accessKeyId: s3.accessKeyId, secretAccessKey: 'not-the-secret-key' }, { endpoint: s3.endpoint, maxAttempts: 1 });
    const unknownId = new S3ExternalStore({ accessKeyId: 'AKIAUNKNOWNKEY000000', secretAccessKey: 'whatever-secret' }, { endpoint: s3.endpoint, maxAttempts: 1 });
    try {
      for (const attempt of [() => wrongSecret.get('acme-lake', 'team/a.csv'), () => all(wrongSecret.list('acme-lake', 'team/'))]) {
        const error = await attempt().then(() => undefined, (e: unknown) => e as Error & { code: string });
        expect(error).toMatchObject({ code: 'EXTERNAL_CREDENTIALS_REJECTED', message: expect.stringContaining('SignatureDoesNotMatch') });
        expect(error!.message).not.toContain('not-the-secret-key');
      }
      await expect(unknownId.get('acme-lake', 'team/a.csv')).rejects.toMatchObject({
        code: 'EXTERNAL_CREDENTIALS_REJECTED',
        message: 'S3 refused the secret\'s credentials for s3://acme-lake/team/a.csv: the access key id is not known to the store (InvalidAccessKeyId)',
      });
    } finally {
      wrongSecret.close();
      unknownId.close();
    }
  });

  it('reports an unreachable store as EXTERNAL_STORAGE_ERROR and passes an abort through', async () => {
    const nowhere = new S3ExternalStore({ accessKeyId: 'AKIAX', secretAccessKey: 'y' }, { endpoint: 'http://127.0.0.1:9', maxAttempts: 1 });
    try {
      await expect(nowhere.get('acme-lake', 'team/a.csv')).rejects.toMatchObject({ code: 'EXTERNAL_STORAGE_ERROR', message: expect.stringContaining('Could not reach S3') });
    } finally {
      nowhere.close();
    }
    const abort = new AbortController();
    abort.abort();
    await expect(good.get('acme-lake', 'team/a.csv', abort.signal)).rejects.not.toHaveProperty('code', 'EXTERNAL_STORAGE_ERROR');
  });
});
