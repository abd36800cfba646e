import type { Readable } from 'node:stream';

/**
 * Adapters that read objects from a customer's own cloud storage with the customer's credentials
 * (a secret's values): Amazon S3 (and S3-compatible servers) with an access key, Google Cloud Storage
 * with a service-account key. They only list and download; the job service decides what may be read
 * (a secret's SCOPE) before it asks, and copies what it reads into a job's private directory.
 *
 * Every failure is an ExternalStoreError whose message names the object and what went wrong, never
 * a credential (a store's own error text can quote request details, so it is not passed on).
 */

/** An object found by a listing. */
export interface ExternalObject {
  /** The key within the bucket. */
  key: string;
  /** Bytes, as the listing reports them. */
  size: number;
}

export type ExternalErrorCode = 'EXTERNAL_CREDENTIALS_REJECTED' | 'EXTERNAL_OBJECT_NOT_FOUND' | 'EXTERNAL_STORAGE_ERROR';

export class ExternalStoreError extends Error {
  constructor(
    readonly code: ExternalErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ExternalStoreError';
  }
}

export interface ExternalStore {
  /** The URL scheme the store reads: `s3` or `gs`. */
  readonly scheme: 's3' | 'gs';
  /** Every object whose key starts with `prefix`, in key order, page by page. */
  list(bucket: string, prefix: string, signal?: AbortSignal): AsyncIterable<ExternalObject>;
  /** One object's bytes; `size` when the store says. Rejects with EXTERNAL_OBJECT_NOT_FOUND for a missing key. */
  get(bucket: string, key: string, signal?: AbortSignal): Promise<{ body: Readable; size?: number }>;
  /** Releases connections. */
  close(): void;
}

/** `s3://bucket/key` or `gs://bucket/key`, for messages. */
export function objectUrl(scheme: string, bucket: string, key: string): string {
  return `${scheme}://${bucket}/${key}`;
}

/** An aborted operation (cancel, timeout): passed through untouched so the caller can tell. */
export function isAbort(error: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted) return true;
  const name = (error as { name?: string } | undefined)?.name;
  return name === 'AbortError';
}
