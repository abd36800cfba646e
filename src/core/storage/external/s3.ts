import { Readable } from 'node:stream';
import { GetObjectCommand, ListObjectsV2Command, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { ExternalStoreError, isAbort, objectUrl, type ExternalObject, type ExternalStore } from './types.ts';

/** An `s3_access_key` secret's values. */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Required by temporary (STS) key ids. */
  sessionToken?: string;
  /** The bucket's region; unset → us-east-1 (the client follows a region redirect). */
  region?: string;
}

export interface S3ExternalOptions {
  /**
   * An S3-compatible endpoint (`LAKEPORT_EXTERNAL_S3_ENDPOINT`, e.g. MinIO; s3rver in tests), used
   * path-style. Unset → Amazon S3.
   */
  endpoint?: string;
  /** Path-style URLs; default: on when an endpoint is given. */
  forcePathStyle?: boolean;
  /** Attempts per request (the SDK's retries on throttling and network errors; default 3). */
  maxAttempts?: number;
}

/** Error names S3 gives when it does not accept the credentials (or they may not read this). */
const REJECTED: Record<string, string> = {
  InvalidAccessKeyId: 'the access key id is not known to the store',
  SignatureDoesNotMatch: 'the secret access key does not match the access key id',
  AccessDenied: 'the key may not read it (access denied)',
  ExpiredToken: 'the session token has expired',
  InvalidToken: 'the session token is not valid',
  TokenRefreshRequired: 'the session token must be refreshed',
  AllAccessDisabled: 'all access to it is disabled',
  InvalidSecurity: 'the provided security credentials are not valid',
  AccountProblem: 'the account of the key has a problem',
};

const NOT_FOUND = new Set(['NoSuchKey', 'NoSuchBucket', 'NotFound']);

/** The store's answer as an ExternalStoreError (abort errors are passed through). */
function mapError(error: unknown, what: string, signal?: AbortSignal): unknown {
  if (isAbort(error, signal)) return error;
  if (error instanceof ExternalStoreError) return error;
  if (error instanceof S3ServiceException) {
    const status = error.$metadata?.httpStatusCode;
    const why = REJECTED[error.name];
    if (why) return new ExternalStoreError('EXTERNAL_CREDENTIALS_REJECTED', `S3 refused the secret's credentials for ${what}: ${why} (${error.name})`);
    if (NOT_FOUND.has(error.name) || status === 404) {
      const missing = error.name === 'NoSuchBucket' ? 'the bucket does not exist' : 'no such object';
      return new ExternalStoreError('EXTERNAL_OBJECT_NOT_FOUND', `${what}: ${missing}`);
    }
    if (status === 401 || status === 403) {
      return new ExternalStoreError('EXTERNAL_CREDENTIALS_REJECTED', `S3 refused the secret's credentials for ${what} (HTTP ${status}${error.name ? `, ${error.name}` : ''})`);
    }
    return new ExternalStoreError('EXTERNAL_STORAGE_ERROR', `S3 failed to serve ${what}: ${error.name}${status ? ` (HTTP ${status})` : ''}`);
  }
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return new ExternalStoreError('EXTERNAL_STORAGE_ERROR', `Could not reach S3 for ${what}${code ? ` (${code})` : ''}`);
}

/**
 * Amazon S3 (or an S3-compatible server) with a secret's access key. The client never falls back to
 * the server's own AWS credentials: it is always given the secret's.
 */
export class S3ExternalStore implements ExternalStore {
  readonly scheme = 's3' as const;
  private readonly client: S3Client;

  constructor(credentials: S3Credentials, options: S3ExternalOptions = {}) {
    this.client = new S3Client({
      region: credentials.region ?? 'us-east-1',
      credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey, sessionToken: credentials.sessionToken },
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle ?? Boolean(options.endpoint),
      followRegionRedirects: true,
      maxAttempts: options.maxAttempts ?? 3,
    });
  }

  async *list(bucket: string, prefix: string, signal?: AbortSignal): AsyncIterable<ExternalObject> {
    const what = objectUrl('s3', bucket, prefix);
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }), { abortSignal: signal });
      } catch (error) {
        throw mapError(error, what, signal);
      }
      for (const item of page.Contents ?? []) {
        if (item.Key !== undefined) yield { key: item.Key, size: Number(item.Size ?? 0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async get(bucket: string, key: string, signal?: AbortSignal): Promise<{ body: Readable; size?: number }> {
    const what = objectUrl('s3', bucket, key);
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
      if (!answer.Body) throw new ExternalStoreError('EXTERNAL_STORAGE_ERROR', `S3 sent no body for ${what}`);
      const body = answer.Body instanceof Readable ? answer.Body : Readable.fromWeb(answer.Body.transformToWebStream() as never);
      return { body, size: answer.ContentLength };
    } catch (error) {
      throw mapError(error, what, signal);
    }
  }

  close(): void {
    this.client.destroy();
  }
}
