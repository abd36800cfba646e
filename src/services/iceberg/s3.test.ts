import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import avro from 'avsc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { startS3Server, type TestS3Server } from '../../../test/s3-server.ts';
import { seedSnapshot } from '../../../test/seed.ts';
import { S3BlobStore } from '../../core/storage/s3-store.ts';

const REF = { workspace: 'acme', collection: 'sales', dataset: 'orders' };
const COLUMNS = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'city', type: 'VARCHAR', nullable: true },
];
const ROWS = (from: number, n: number) => `SELECT i AS id, 'city ' || i AS city FROM range(${from}, ${from + n}) r(i)`;
const TABLE_URL = '/iceberg/v1/namespaces/acme%1Fsales/tables/orders';

/** The records of an Avro object container file, as avsc reads them. */
async function avroRecords(bytes: Buffer): Promise<any[]> {
  const records: any[] = [];
  const decoder = Readable.from([bytes]).pipe(new avro.streams.BlockDecoder());
  for await (const record of decoder) records.push(record);
  return records;
}

/**
 * Both storage backends hold the metadata: with S3, the metadata files are objects beside the
 * workspace's data, the file route serves them and the data files from S3, and with
 * LAKEPORT_ICEBERG_LOCATIONS=storage the metadata names the objects' own s3:// URIs, every snapshot's
 * manifests written up front for readers that go to S3 directly (docs/iceberg.md).
 */
describe.each(['http', 'storage'] as const)('the Iceberg catalog on S3 (%s locations)', (locations) => {
  let s3: TestS3Server;
  let client: S3Client;
  let t: TestApp;
  let alice: TestUser;
  let store: S3BlobStore;
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-iceberg-s3-'));
  const prefix = `lp-${locations}`;
  let snapshots: number[];

  const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${alice.token}`, ...headers } });
  const object = async (key: string) => {
    const out = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
    return Buffer.from(await out.Body!.transformToByteArray());
  };
  const keyOf = (uri: string) => uri.replace(`s3://${s3.bucket}/`, '');
  const keysUnder = async (start: string) =>
    ((await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: start }))).Contents ?? []).map((o) => o.Key!).sort();

  beforeAll(async () => {
    s3 = await startS3Server();
    client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    store = new S3BlobStore({
      bucket: s3.bucket,
      prefix,
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      cacheDir: cache,
    });
    t = await createTestApp({ blobs: store, icebergLocations: locations }, { workers: false });
    alice = await signIn(t.app, t.adminToken, 'alice');
    await createWorkspace(alice, 'acme');
    snapshots = [await seedSnapshot(t, REF, COLUMNS, ROWS(0, 40)), await seedSnapshot(t, REF, COLUMNS, ROWS(40, 25))];
  });
  afterAll(async () => {
    await t?.close();
    store?.close();
    client?.destroy();
    await s3?.stop();
    fs.rmSync(cache, { recursive: true, force: true });
  });

  it('writes the metadata file to S3 once, beside the workspace data', async () => {
    const load = await get(TABLE_URL);
    expect(load.statusCode, load.body).toBe(200);
    const { 'metadata-location': location, metadata } = load.json();
    const dataset = await t.app.lakeport.catalog.getDataset(REF);
    const metadataPrefix = `${prefix}/lake/acme/iceberg-metadata/${dataset.dataset_id}/metadata/`;
    const name = location.split('/').at(-1);
    expect(await keysUnder(metadataPrefix)).toContain(`${metadataPrefix}${name}`);
    expect(JSON.parse((await object(`${metadataPrefix}${name}`)).toString('utf8'))).toEqual(metadata);
    const { LastModified } = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: `${metadataPrefix}${name}` }));
    expect((await get(TABLE_URL)).json()['metadata-location']).toBe(location);
    expect((await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: `${metadataPrefix}${name}` }))).LastModified).toEqual(LastModified);
  });

  it('serves the metadata and data files from S3 through the file route', async () => {
    const { metadata } = (await get(TABLE_URL)).json();
    const dataset = await t.app.lakeport.catalog.getDataset(REF);
    const files = await t.app.lakeport.catalog.snapshotFiles(snapshots[1]);
    const route = `/iceberg/v1/files/${dataset.dataset_id}`;
    const list = await get(`${route}/metadata/${metadata.snapshots[1]['manifest-list'].split('/').at(-1)}`);
    expect(list.statusCode, list.body).toBe(200);
    const [entry] = await avroRecords(list.rawPayload);
    const manifest = await get(`${route}/metadata/${entry.manifest_path.split('/').at(-1)}`);
    expect(manifest.statusCode).toBe(200);
    expect(manifest.rawPayload.length).toBe(Number(entry.manifest_length));
    expect((await avroRecords(manifest.rawPayload)).map((e) => e.data_file.record_count)).toEqual([40, 25]);
    // The route reads S3: the bytes of a data file and a range of them are the object's.
    const bytes = await object(`${prefix}/${files[1].path}`);
    expect((await get(`${route}/data/${files[1].file_id}.parquet`)).rawPayload).toEqual(bytes);
    const range = await get(`${route}/data/${files[1].file_id}.parquet`, { range: 'bytes=4-19' });
    expect(range.statusCode).toBe(206);
    expect(range.rawPayload).toEqual(bytes.subarray(4, 20));
    // Written on first read, and now in S3.
    expect(await keysUnder(`${prefix}/lake/acme/iceberg-metadata/${dataset.dataset_id}/metadata/snap-${snapshots[1]}`)).toHaveLength(1);
  });

  it(locations === 'storage' ? "names the objects' own s3:// URIs, every snapshot's manifests written up front" : 'names Lakeport URLs', async () => {
    const { 'metadata-location': location, metadata } = (await get(TABLE_URL)).json();
    if (locations === 'http') {
      expect(location.startsWith('http://lakeport.test/iceberg/v1/files/')).toBe(true);
      return;
    }
    expect(metadata.location).toMatch(new RegExp(`^s3://${s3.bucket}/${prefix}/lake/acme/iceberg-metadata/ds_`));
    expect(location.startsWith(`${metadata.location}/metadata/`)).toBe(true);
    expect(JSON.parse((await object(keyOf(location))).toString('utf8'))).toEqual(metadata);
    const expected = [[40], [40, 25]];
    for (const [i, snapshot] of metadata.snapshots.entries()) {
      const [entry] = await avroRecords(await object(keyOf(snapshot['manifest-list'])));
      const entries = await avroRecords(await object(keyOf(entry.manifest_path)));
      expect(entries.map((e) => e.data_file.record_count)).toEqual(expected[i]);
      for (const e of entries) {
        const head = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: keyOf(e.data_file.file_path) }));
        expect(head.ContentLength).toBe(Number(e.data_file.file_size_in_bytes));
      }
    }
  });
});
