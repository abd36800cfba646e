import type { GcsExternalOptions, GcsServiceAccountKey } from './gcs.ts';
import type { S3Credentials, S3ExternalOptions } from './s3.ts';
import type { ExternalStore } from './types.ts';

export { ExternalStoreError, objectUrl, type ExternalErrorCode, type ExternalObject, type ExternalStore } from './types.ts';
export type { S3Credentials, S3ExternalOptions } from './s3.ts';
export type { GcsExternalOptions, GcsServiceAccountKey } from './gcs.ts';

/** Endpoint overrides and tuning of the adapters (S3's endpoint comes from configuration; GCS's from tests only). */
export interface ExternalStoreOptions {
  s3?: S3ExternalOptions;
  gcs?: GcsExternalOptions;
}

export type ExternalCredentials = { kind: 's3'; credentials: S3Credentials } | { kind: 'gs'; key: GcsServiceAccountKey };

/**
 * An adapter for one set of credentials. Async because each adapter's module is loaded on first
 * use (the AWS SDK costs ~0.3 s to load; a server that never reads external storage never pays).
 */
export async function openExternalStore(credentials: ExternalCredentials, options: ExternalStoreOptions = {}): Promise<ExternalStore> {
  if (credentials.kind === 's3') {
    const { S3ExternalStore } = await import('./s3.ts');
    return new S3ExternalStore(credentials.credentials, options.s3);
  }
  const { GcsExternalStore } = await import('./gcs.ts');
  return new GcsExternalStore(credentials.key, options.gcs);
}
