import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Object storage for the lake: the one interface every reader and writer of data files uses, with a
 * local file store (local-store.ts) and an S3-compatible store (s3-store.ts). See docs/storage.md.
 *
 * Keys are relative POSIX paths such as `lake/sales/orders/daily/<uuid>.parquet`,
 * `lake/_staging/<contract>/<uuid>.parquet` or `results/<execution_id>.parquet`. Blobs are immutable:
 * a key, once written, is never written again with different bytes (every writer names files by a
 * fresh uuid), which is what lets the S3 store keep a read-through cache that never goes stale.
 */

export interface BlobInfo {
  key: string;
  size: number;
  lastModified: Date;
}

export interface BlobStore {
  readonly kind: 'file' | 's3';
  /** Where blobs live, for messages: `file:///…/lake` or `s3://bucket/prefix`. */
  readonly location: string;
  /** Streams a body into the blob (atomically visible: readers never see a partial blob). */
  put(key: string, body: NodeJS.ReadableStream | Buffer | string, options?: { contentType?: string }): Promise<BlobInfo>;
  /**
   * Stores a local file as the blob, atomically like `put`.
   *
   * A path handed out by this store's `tempPath()` is consumed: the file store renames it into place
   * (no copy — what makes local ingestion fast) and the S3 store uploads it and then keeps it as the
   * blob's read-through cache copy. Any other local file is left in place (the file store copies it,
   * the S3 store uploads it, multipart when large).
   */
  putFile(key: string, localPath: string, options?: { contentType?: string }): Promise<BlobInfo>;
  /**
   * A readable stream of the blob, or of a byte range [start, end] inclusive (an `end` past the blob
   * is clamped; a `start` at or past the end gives an empty stream); BlobNotFoundError when missing.
   */
  get(key: string, range?: { start: number; end?: number }): Promise<NodeJS.ReadableStream>;
  /** The blob's size and modification time, or undefined when it is missing. */
  head(key: string): Promise<BlobInfo | undefined>;
  /**
   * Every blob whose key starts with `prefix` (a plain string prefix, as in S3: `lake/ws/` or
   * `results/abc`). Never lists temporary files. The file store and AWS S3 yield byte-wise key
   * order; other S3-compatible servers may not, so callers that need an order sort.
   */
  list(prefix: string): AsyncIterable<BlobInfo>;
  /** Idempotent. */
  delete(key: string): Promise<void>;
  /** Deletes every blob under the prefix (a prefix ending in '/'); returns how many. */
  deletePrefix(prefix: string): Promise<number>;
  /** A local filesystem path DuckDB can read: the file itself for the file store; a read-through cache copy for S3 (blobs are immutable, so a cached copy never goes stale). */
  localPath(key: string): Promise<string>;
  /**
   * Throws when the store cannot be used: the file store's directory is missing or not writable; the
   * S3 bucket does not answer a one-key listing under the prefix. `signal` abandons the request (GET /readyz).
   */
  check(signal?: AbortSignal): Promise<void>;
  /** For writers that produce files locally (DuckDB COPY): a fresh local path in the same filesystem as the store's files when possible (the file store: a temp file under its root, so putFile is a cheap rename), else a temp dir. */
  tempPath(suffix: string): Promise<string>;
}

/** The blob does not exist. */
export class BlobNotFoundError extends Error {
  override readonly name = 'BlobNotFoundError';
  constructor(
    readonly key: string,
    readonly location?: string,
  ) {
    super(`blob '${key}' not found${location ? ` in ${location}` : ''}`);
  }
}

/** A key (or prefix) that is not a safe relative POSIX path. */
export class InvalidBlobKeyError extends Error {
  override readonly name = 'InvalidBlobKeyError';
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`invalid blob key ${JSON.stringify(key)}: ${reason}`);
  }
}

function checkSegments(value: string, segments: string[], what: 'key' | 'prefix'): void {
  if (value.startsWith('/')) throw new InvalidBlobKeyError(value, `a ${what} must not start with '/'`);
  if (value.includes('\\')) throw new InvalidBlobKeyError(value, `a ${what} must not contain a backslash`);
  if (value.includes('\0')) throw new InvalidBlobKeyError(value, `a ${what} must not contain NUL`);
  for (const s of segments) {
    if (s === '.' || s === '..') throw new InvalidBlobKeyError(value, `a ${what} must not contain '.' or '..' segments`);
    if (s === '') throw new InvalidBlobKeyError(value, `a ${what} must not contain empty segments ('//')`);
  }
}

/**
 * Checks a blob key: non-empty, relative (no leading '/'), no '.' or '..' segments, no empty
 * segments (so no trailing '/'), no backslashes, no NUL. Returns the key.
 */
export function validateBlobKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidBlobKeyError(String(key), 'a key must not be empty');
  checkSegments(key, key.split('/'), 'key');
  return key;
}

/**
 * Checks a listing prefix: like a key, but it may be empty (everything) and may end in '/' or in a
 * partial segment (`results/abc`).
 */
export function validateBlobPrefix(prefix: string): string {
  if (typeof prefix !== 'string') throw new InvalidBlobKeyError(String(prefix), 'a prefix must be a string');
  if (prefix === '') return prefix;
  const segments = prefix.split('/');
  if (prefix.endsWith('/')) segments.pop();
  checkSegments(prefix, segments, 'prefix');
  return prefix;
}

/** Checks a prefix for deletePrefix: a non-empty prefix ending in '/', so a whole "directory" goes. */
export function validateDeletePrefix(prefix: string): string {
  validateBlobPrefix(prefix);
  if (prefix === '' || !prefix.endsWith('/')) throw new InvalidBlobKeyError(prefix, "deletePrefix needs a non-empty prefix ending in '/'");
  return prefix;
}

/** Checks a byte range: integers, 0 <= start, start <= end. */
export function validateRange(range: { start: number; end?: number } | undefined): void {
  if (!range) return;
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || start < 0) throw new RangeError(`invalid range start ${start}`);
  if (end !== undefined && (!Number.isSafeInteger(end) || end < start)) throw new RangeError(`invalid range end ${end} (start ${start})`);
}

/** Checks a tempPath suffix (such as `.parquet`): a plain file-name tail, no path separators. */
export function validateTempSuffix(suffix: string): string {
  if (typeof suffix !== 'string' || /[/\\\0]/.test(suffix) || suffix.length > 100) {
    throw new InvalidBlobKeyError(String(suffix), 'a temp suffix must be a short file-name tail such as .parquet');
  }
  return suffix;
}

/** Byte-wise (UTF-8) comparison, the order S3 lists keys in. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

export type ParsedStorageUrl = { kind: 'file'; root: string } | { kind: 's3'; bucket: string; prefix: string };

/** S3 bucket naming rules (lowercase letters, digits, dots, hyphens; 3–63 characters). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * Parses a storage URL: `file:///absolute/dir` or `s3://bucket[/prefix]`. Throws an Error with a
 * readable message for anything else (config.ts uses it to validate LAKEPORT_STORAGE_URL).
 */
export function parseStorageUrl(url: string): ParsedStorageUrl {
  if (url.startsWith('file://')) {
    let root: string;
    try {
      root = fileURLToPath(url);
    } catch (err) {
      throw new Error(`'${url}' is not a usable file URL (use file:///absolute/path): ${(err as Error).message}`);
    }
    if (!path.isAbsolute(root)) throw new Error(`'${url}' must name an absolute directory (file:///absolute/path)`);
    return { kind: 'file', root };
  }
  const m = /^s3:\/\/([^/?#]+)(?:\/([^?#]*))?$/.exec(url);
  if (m) {
    const bucket = m[1];
    if (!BUCKET.test(bucket)) throw new Error(`'${bucket}' in '${url}' is not a valid S3 bucket name (3-63 lowercase letters, digits, dots, hyphens; use s3://bucket[/prefix])`);
    const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
    if (prefix !== '' && (prefix.split('/').some((s) => s === '' || s === '.' || s === '..') || /[\\\0]/.test(prefix))) {
      throw new Error(`'${prefix}' in '${url}' is not a valid key prefix`);
    }
    return { kind: 's3', bucket, prefix };
  }
  throw new Error(`unsupported storage URL '${url}': use file:///absolute/dir or s3://bucket[/prefix]`);
}
