import path from 'node:path';
import { parseStorageUrl, type BlobStore } from './blob-store.ts';
import { LocalBlobStore } from './local-store.ts';
import type { Logger } from '../logger.ts';

export {
  BlobNotFoundError,
  InvalidBlobKeyError,
  parseStorageUrl,
  validateBlobKey,
  validateBlobPrefix,
  type BlobInfo,
  type BlobStore,
  type ParsedStorageUrl,
} from './blob-store.ts';
export { LocalBlobStore } from './local-store.ts';
export { sweepScratch, SCRATCH_STALE_MS } from './scratch-sweep.ts';
// Types only: the AWS SDK is loaded (by createBlobStore) only when S3 is configured.
export type { S3BlobStore, S3BlobStoreOptions } from './s3-store.ts';

export interface BlobStoreOptions {
  /** `LAKEPORT_STORAGE_URL`: unset → `file://<dataDir>`; `file:///abs/dir`; `s3://bucket[/prefix]`. */
  storageUrl: string | undefined;
  dataDir: string;
  s3Endpoint?: string;
  s3Region?: string;
  s3AccessKeyId?: string;
  s3SecretAccessKey?: string;
  s3SessionToken?: string;
  s3CacheMaxBytes?: number;
  s3TimeoutSeconds?: number;
  log?: Logger;
}

/**
 * The configured blob store. Keys are `lake/…` and `results/…`, so with the default
 * (`file://<dataDir>`) data files land in `<dataDir>/lake/…` and results in `<dataDir>/results/…`.
 * `Config` has these fields under the same names: `await createBlobStore(config)` works. Async
 * because the AWS SDK is imported only when the store is S3 (it costs ~0.3 s to load).
 */
export async function createBlobStore(options: BlobStoreOptions): Promise<BlobStore> {
  const dataDir = path.resolve(options.dataDir);
  const parsed = options.storageUrl ? parseStorageUrl(options.storageUrl) : ({ kind: 'file', root: dataDir } as const);
  if (parsed.kind === 'file') return new LocalBlobStore(parsed.root, { log: options.log });
  if (Boolean(options.s3AccessKeyId) !== Boolean(options.s3SecretAccessKey)) {
    throw new Error('S3 credentials need both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or neither, for the default provider chain)');
  }
  const { S3BlobStore } = await import('./s3-store.ts');
  return new S3BlobStore({
    bucket: parsed.bucket,
    prefix: parsed.prefix,
    endpoint: options.s3Endpoint,
    region: options.s3Region ?? 'us-east-1',
    credentials:
      options.s3AccessKeyId && options.s3SecretAccessKey
        ? { accessKeyId: options.s3AccessKeyId, secretAccessKey: options.s3SecretAccessKey, sessionToken: options.s3SessionToken }
        : undefined,
    forcePathStyle: options.s3Endpoint ? true : undefined,
    cacheDir: path.join(dataDir, 'cache', 's3'),
    cacheMaxBytes: options.s3CacheMaxBytes,
    timeoutMs: options.s3TimeoutSeconds === undefined ? undefined : options.s3TimeoutSeconds * 1000,
    log: options.log,
  });
}
