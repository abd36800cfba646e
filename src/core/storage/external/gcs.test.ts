/** The GCS adapter against a fake of Google's token endpoint and storage JSON API on loopback (test/gcs-server.ts). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGcs, type FakeGcs } from '../../../../test/gcs-server.ts';
import { GcsExternalStore, type GcsServiceAccountKey } from './gcs.ts';
import type { ExternalObject } from './types.ts';
import { collect, streamText } from '../../../../test/async.ts';

let gcs: FakeGcs;

const text = streamText;
const all = collect<ExternalObject>;
const store = (key: string) => new GcsExternalStore(JSON.parse(key) as GcsServiceAccountKey, { tokenUrl: gcs.tokenUrl, apiBase: gcs.url, pageSize: 2 });

beforeAll(async () => {
  gcs = await startFakeGcs({ pageSize: 2 });
  for (const name of ['exports/a.csv', 'exports/b.csv', 'exports/c d.csv', 'exports/sub/e.csv', 'other/f.csv']) gcs.put('gcs-lake', name, `x\n${name}\n`);
  gcs.put('locked-lake', 'exports/a.csv', 'x\n1\n');
  gcs.forbid('locked-lake');
});
afterAll(async () => gcs.stop());

describe('GcsExternalStore', () => {
  it('signs a JWT with the key, exchanges it once, lists page by page and downloads', async () => {
    const s = store(gcs.key);
    gcs.requests.length = 0;
    const listed = await all(s.list('gcs-lake', 'exports/'));
    expect(listed.map((o) => o.key)).toEqual(['exports/a.csv', 'exports/b.csv', 'exports/c d.csv', 'exports/sub/e.csv']);
    expect(listed[0].size).toBe('x\nexports/a.csv\n'.length);
    const { body, size } = await s.get('gcs-lake', 'exports/c d.csv');
    expect(size).toBe('x\nexports/c d.csv\n'.length);
    expect(await text(body)).toBe('x\nexports/c d.csv\n');
    // One token exchange; two listing pages; the object name is one encoded path segment.
    expect(gcs.requests.filter((r) => r.startsWith('POST /token'))).toHaveLength(1);
    expect(gcs.requests.filter((r) => r.startsWith('GET /storage/v1/b/gcs-lake/o?'))).toHaveLength(2);
    expect(gcs.requests).toContain('GET /storage/v1/b/gcs-lake/o/exports%2Fc%20d.csv?alt=media');
    s.close();
  });

  it('maps a key the token endpoint refuses, and a malformed private key, to EXTERNAL_CREDENTIALS_REJECTED', async () => {
    await expect(all(store(gcs.wrongKey).list('gcs-lake', 'exports/'))).rejects.toMatchObject({
      code: 'EXTERNAL_CREDENTIALS_REJECTED',
      message: "Google Cloud Storage refused the secret's service-account key: the token endpoint answered 400 (invalid_grant: Invalid JWT Signature.)",
    });
    const broken = JSON.stringify({ ...JSON.parse(gcs.key), private_key: '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n' });
    const error = await store(broken).get('gcs-lake', 'exports/a.csv').then(() => undefined, (e: Error & { code: string }) => e);
    expect(error).toMatchObject({ code: 'EXTERNAL_CREDENTIALS_REJECTED', message: expect.stringContaining('not a usable RSA private key') });
    expect(error!.message).not.toContain('MIIE');
  });

  it('maps 403 to EXTERNAL_CREDENTIALS_REJECTED and 404 to EXTERNAL_OBJECT_NOT_FOUND', async () => {
    const s = store(gcs.key);
    await expect(s.get('locked-lake', 'exports/a.csv')).rejects.toMatchObject({ code: 'EXTERNAL_CREDENTIALS_REJECTED', message: expect.stringContaining('HTTP 403') });
    await expect(s.get('gcs-lake', 'exports/zzz.csv')).rejects.toMatchObject({ code: 'EXTERNAL_OBJECT_NOT_FOUND', message: 'gs://gcs-lake/exports/zzz.csv: no such object or bucket' });
    await expect(all(s.list('no-lake', 'x/'))).rejects.toMatchObject({ code: 'EXTERNAL_OBJECT_NOT_FOUND' });
  });

  it('reports an unreachable token endpoint as EXTERNAL_STORAGE_ERROR', async () => {
    const s = new GcsExternalStore(JSON.parse(gcs.key) as GcsServiceAccountKey, { tokenUrl: 'http://127.0.0.1:9/token', apiBase: gcs.url });
    await expect(s.get('gcs-lake', 'exports/a.csv')).rejects.toMatchObject({ code: 'EXTERNAL_STORAGE_ERROR' });
  });
});
