import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  paginateListObjectsV2,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import {
  BlobNotFoundError,
  validateBlobKey,
  validateBlobPrefix,
  validateDeletePrefix,
  validateRange,
  validateTempSuffix,
  type BlobInfo,
  type BlobStore,
} from './blob-store.ts';
import { errno, isNotFoundError, statIfExists } from '../files.ts';
import { appError, type AppError } from '../errors/index.ts';
import { silentLogger, type Logger } from '../logger.ts';

export const DEFAULT_S3_CACHE_MAX_BYTES = 2 * 1024 ** 3;
/** A cached file used this recently is never evicted, so a path localPath just returned stays readable. */
export const DEFAULT_S3_CACHE_GRACE_MS = 60_000;
export const DEFAULT_S3_TIMEOUT_MS = 30_000;
/** Multipart part size for streamed and large uploads (S3's minimum is 5 MiB). */
const PART_SIZE = 8 * 1024 * 1024;
/** Temp files older than this found in `<cacheDir>/.tmp` at start are leftovers of a crash. */
const STALE_TEMP_MS = 24 * 3600_000;

export interface S3BlobStoreOptions {
  bucket: string;
  /** Key prefix inside the bucket (no leading or trailing '/'); '' or undefined for the bucket root. */
  prefix?: string;
  /** An S3-compatible endpoint such as `http://127.0.0.1:9000`; unset → AWS. */
  endpoint?: string;
  region?: string;
  /** Explicit credentials; unset → the AWS SDK's default provider chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Path-style URLs (`endpoint/bucket/key`), which most S3-compatible servers need. */
  forcePathStyle?: boolean;
  /** The read-through cache directory (local copies of blobs for DuckDB). */
  cacheDir: string;
  /** Evict least-recently-used cached copies above this many bytes (default 2 GiB). */
  cacheMaxBytes?: number;
  /** Never evict a cached copy used within this many milliseconds (default 60 s). */
  cacheGraceMs?: number;
  /** Keys per ListObjectsV2 page (default and S3's maximum: 1000); smaller in tests to exercise paging. */
  listPageSize?: number;
  /** Keys per DeleteObjects request (default and S3's maximum: 1000). */
  deleteBatchSize?: number;
  /** A request that sends or receives nothing this long, or cannot connect in it, is abandoned (and retried); default 30 s. */
  timeoutMs?: number;
  /** Where cache upkeep that fails is reported. */
  log?: Logger;
}

interface CacheEntry {
  size: number;
  usedAt: number;
}

/** Network failures that mean the server could not be reached or stopped answering. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ECONNABORTED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * `503 STORAGE_UNAVAILABLE` for a failure of the storage server rather than of the request — a 5xx
 * (SlowDown, InternalError, ServiceUnavailable), throttling, a timeout or no connection — after the
 * SDK's retries; undefined for anything else (a missing key, a refused signature…).
 */
function storageUnavailable(err: unknown): AppError | undefined {
  const e = err as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  if (!e || typeof e !== 'object') return undefined;
  const status = e.$metadata?.httpStatusCode;
  const why =
    err instanceof S3ServiceException && ((status !== undefined && status >= 500) || /^(SlowDown|Throttling|ThrottlingException|RequestTimeout)$/.test(err.name))
      ? `it answered ${err.name}${status ? ` (${status})` : ''}`
      : e.name === 'TimeoutError'
        ? 'it did not answer in time'
        : e.code !== undefined && UNREACHABLE.has(e.code)
          ? `it could not be reached (${e.code})`
          : undefined;
  if (why === undefined) return undefined;
  const error = appError('STORAGE_UNAVAILABLE', `The object storage is unavailable (${why}, after retries): retry shortly`, { headers: { 'retry-after': '5' } });
  return Object.assign(error, { cause: err });
}

function isNotFound(err: unknown): boolean {
  if (!(err instanceof S3ServiceException)) return false;
  return err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata?.httpStatusCode === 404;
}

function isInvalidRange(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'InvalidRange' || err.$metadata?.httpStatusCode === 416);
}

/**
 * Trims a ranged response to exactly the bytes asked for: HTTP lets a server ignore Range (a 200
 * with the whole body) and some S3-compatible servers return more than asked (s3rver for `bytes=0-0`).
 */
function exactRange(body: Readable, range: { start: number; end?: number }, contentRange: string | undefined): Readable {
  const m = contentRange ? /^bytes (\d+)-(\d+)\//.exec(contentRange) : null;
  const gotStart = m ? Number(m[1]) : 0;
  const gotEnd = m ? Number(m[2]) : Infinity;
  const skip = range.start - gotStart;
  const limit = range.end === undefined ? Infinity : range.end - range.start + 1;
  if (skip === 0 && (range.end === undefined || gotEnd <= range.end)) return body;
  if (skip < 0) {
    body.destroy();
    throw new Error(`the S3 server answered range ${contentRange} to a request for bytes=${range.start}-${range.end ?? ''}`);
  }
  async function* slice(): AsyncGenerator<Buffer> {
    let toSkip = skip;
    let left = limit;
    for await (const raw of body) {
      let chunk = raw as Buffer;
      if (toSkip > 0) {
        const n = Math.min(toSkip, chunk.length);
        chunk = chunk.subarray(n);
        toSkip -= n;
      }
      if (chunk.length === 0) continue;
      if (chunk.length >= left) {
        yield chunk.subarray(0, left);
        return; // ends the loop, which destroys the response
      }
      left -= chunk.length;
      yield chunk;
    }
  }
  return Readable.from(slice());
}

function toReadable(body: NodeJS.ReadableStream): Readable {
  return body instanceof Readable ? body : new Readable().wrap(body);
}

/**
 * Blobs in an S3-compatible bucket under `<prefix>/`. DuckDB here cannot read S3 (no httpfs), so
 * `localPath` serves reads from a local read-through cache of immutable blobs.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  readonly location: string;
  readonly bucket: string;
  readonly prefix: string;
  readonly client: S3Client;
  readonly cacheDir: string;
  private readonly cacheTmp: string;
  private readonly cacheMaxBytes: number;
  private readonly cacheGraceMs: number;
  private readonly listPageSize: number;
  private readonly deleteBatchSize: number;
  /** Cached copies by file path, least recently used first (Map keeps insertion order). */
  private readonly cache = new Map<string, CacheEntry>();
  private cacheBytes = 0;
  private cacheReady: Promise<void> | undefined;
  /** Downloads under way, by cache file: concurrent localPath calls for one key share one. */
  private readonly inflight = new Map<string, Promise<string>>();
  private readonly log: Logger;

  constructor(options: S3BlobStoreOptions) {
    if (!options.bucket) throw new Error('S3BlobStore needs a bucket');
    this.bucket = options.bucket;
    this.prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '');
    if (this.prefix !== '') validateBlobKey(this.prefix);
    this.location = `s3://${this.bucket}${this.prefix ? `/${this.prefix}` : ''}`;
    this.client = new S3Client({
      region: options.region ?? 'us-east-1',
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      credentials: options.credentials,
      // Checksums only where S3 requires them: S3-compatible servers (MinIO, Ceph, R2, s3rver…)
      // do not all understand the newer SDK's default CRC32 trailers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // Without these a server that stops answering holds a request (and the client's) forever.
      requestHandler: { connectionTimeout: options.timeoutMs ?? DEFAULT_S3_TIMEOUT_MS, socketTimeout: options.timeoutMs ?? DEFAULT_S3_TIMEOUT_MS },
    });
    // Outside the SDK's retries (3 attempts, backoff): what still fails for want of the server is a clear 503.
    this.client.middlewareStack.add(
      (next) => async (args) => {
        try {
          return await next(args);
        } catch (error) {
          throw storageUnavailable(error) ?? error;
        }
      },
      { step: 'initialize', name: 'lakeportStorageUnavailable' },
    );
    this.cacheDir = path.resolve(options.cacheDir);
    this.cacheTmp = path.join(this.cacheDir, '.tmp');
    this.cacheMaxBytes = options.cacheMaxBytes ?? DEFAULT_S3_CACHE_MAX_BYTES;
    this.cacheGraceMs = options.cacheGraceMs ?? DEFAULT_S3_CACHE_GRACE_MS;
    this.listPageSize = Math.min(Math.max(1, options.listPageSize ?? 1000), 1000);
    this.deleteBatchSize = Math.min(Math.max(1, options.deleteBatchSize ?? 1000), 1000);
    this.log = options.log ?? silentLogger;
  }

  /** The object key of a blob key. */
  objectKey(key: string): string {
    validateBlobKey(key);
    return this.prefix ? `${this.prefix}/${key}` : key;
  }

  private blobKey(objectKey: string): string {
    return this.prefix ? objectKey.slice(this.prefix.length + 1) : objectKey;
  }

  async put(key: string, body: NodeJS.ReadableStream | Buffer | string, options?: { contentType?: string }): Promise<BlobInfo> {
    const Key = this.objectKey(key);
    if (typeof body === 'string' || Buffer.isBuffer(body)) {
      const Body = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key, Body, ContentLength: Body.length, ContentType: options?.contentType }),
      );
    } else {
      await this.upload(Key, toReadable(body), options?.contentType);
    }
    return this.headOrFail(key);
  }

  /** Uploads a stream: one PutObject when it fits in a part, else a multipart upload (aborted on failure). */
  private async upload(Key: string, body: Readable, contentType: string | undefined): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key, Body: body, ContentType: contentType },
      partSize: PART_SIZE,
      queueSize: 4,
    });
    try {
      await upload.done();
    } finally {
      body.destroy();
    }
  }

  /** Uploads the file; a file from `tempPath()` then becomes the blob's cached copy. */
  async putFile(key: string, localPath: string, options?: { contentType?: string }): Promise<BlobInfo> {
    const Key = this.objectKey(key);
    const source = path.resolve(localPath);
    const st = await fsp.stat(source);
    if (!st.isFile()) throw new Error(`putFile: ${source} is not a file`);
    if (st.size <= PART_SIZE) {
      const Body = await fsp.readFile(source);
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key, Body, ContentLength: Body.length, ContentType: options?.contentType }),
      );
    } else {
      await this.upload(Key, fs.createReadStream(source), options?.contentType);
    }
    const info = await this.headOrFail(key);
    if (path.dirname(source) === this.cacheTmp) {
      await this.adoptIntoCache(key, source, info.size);
    }
    return info;
  }

  async get(key: string, range?: { start: number; end?: number }): Promise<NodeJS.ReadableStream> {
    const Key = this.objectKey(key);
    validateRange(range);
    const Range = range ? `bytes=${range.start}-${range.end ?? ''}` : undefined;
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key, Range }));
      const body = res.Body as Readable;
      return range ? exactRange(body, range, res.ContentRange) : body;
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(key, this.location);
      // 416: the range starts at or past the end of an existing blob → nothing to read.
      if (range && isInvalidRange(err)) return Readable.from([]);
      throw err;
    }
  }

  async head(key: string): Promise<BlobInfo | undefined> {
    const Key = this.objectKey(key);
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }));
      return { key, size: res.ContentLength ?? 0, lastModified: res.LastModified ?? new Date(0) };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async headOrFail(key: string): Promise<BlobInfo> {
    const info = await this.head(key);
    if (!info) throw new Error(`blob '${key}' missing in ${this.location} right after it was written`);
    return info;
  }

  async *list(prefix: string): AsyncIterable<BlobInfo> {
    validateBlobPrefix(prefix);
    const Prefix = this.prefix ? `${this.prefix}/${prefix}` : prefix;
    const pages = paginateListObjectsV2({ client: this.client, pageSize: this.listPageSize }, { Bucket: this.bucket, Prefix: Prefix || undefined });
    for await (const page of pages) {
      for (const o of page.Contents ?? []) {
        if (!o.Key || o.Key.endsWith('/')) continue; // "folder" markers made by consoles
        yield { key: this.blobKey(o.Key), size: o.Size ?? 0, lastModified: o.LastModified ?? new Date(0) };
      }
    }
  }

  async delete(key: string): Promise<void> {
    const Key = this.objectKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }));
    await this.dropCached(key);
  }

  async deletePrefix(prefix: string): Promise<number> {
    validateDeletePrefix(prefix);
    let deleted = 0;
    let batch: string[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const keys = batch;
      batch = [];
      const res = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: keys.map((k) => ({ Key: this.objectKey(k) })), Quiet: true },
        }),
      );
      const failed = res.Errors ?? [];
      deleted += keys.length - failed.length;
      for (const k of keys) await this.dropCached(k);
      if (failed.length > 0) {
        const first = failed[0];
        throw new Error(`could not delete ${failed.length} blob(s) under '${prefix}' in ${this.location}: ${first.Key}: ${first.Code} ${first.Message ?? ''}`.trim());
      }
    };
    for await (const blob of this.list(prefix)) {
      batch.push(blob.key);
      if (batch.length >= this.deleteBatchSize) await flush();
    }
    await flush();
    return deleted;
  }

  async check(signal?: AbortSignal): Promise<void> {
    await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix ? `${this.prefix}/` : undefined, MaxKeys: 1 }), { abortSignal: signal });
  }

  async tempPath(suffix: string): Promise<string> {
    validateTempSuffix(suffix);
    await fsp.mkdir(this.cacheTmp, { recursive: true });
    return path.join(this.cacheTmp, `${crypto.randomUUID()}${suffix}`);
  }

  // ---- read-through cache -------------------------------------------------------------------

  /**
   * `<cacheDir>/<sha256 of s3://bucket/prefix/key>-<basename>`: unique per blob even when stores on
   * other buckets or prefixes share the directory; the extension stays for DuckDB.
   */
  cacheFile(key: string): string {
    const hash = crypto.createHash('sha256').update(`${this.location}/${key}`).digest('hex');
    const base = key.slice(key.lastIndexOf('/') + 1).slice(-100);
    return path.join(this.cacheDir, `${hash}-${base}`);
  }

  async localPath(key: string): Promise<string> {
    validateBlobKey(key);
    const file = this.cacheFile(key);
    const pending = this.inflight.get(file);
    if (pending) return pending;
    const p = this.resolveLocal(key, file).finally(() => this.inflight.delete(file));
    this.inflight.set(file, p);
    return p;
  }

  private async resolveLocal(key: string, file: string): Promise<string> {
    await this.loadCache();
    try {
      const st = await fsp.stat(file);
      this.remember(file, st.size);
      // The time a cached copy was last used survives a restart (loadCache orders by it); evicted meanwhile is fine.
      await fsp.utimes(file, new Date(), new Date()).catch((error: unknown) => {
        if (!isNotFoundError(error)) this.log.warn({ err: error, file }, 'could not mark a cached copy used');
      });
      return file;
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err;
    }
    await fsp.mkdir(this.cacheTmp, { recursive: true });
    const temp = path.join(this.cacheTmp, `${crypto.randomUUID()}.download`);
    try {
      await pipeline(await this.get(key), fs.createWriteStream(temp, { flags: 'wx' }));
      const { size } = await fsp.stat(temp);
      await fsp.rename(temp, file);
      this.remember(file, size);
    } catch (err) {
      await fsp.rm(temp, { force: true });
      throw err;
    }
    await this.evict(file);
    return file;
  }

  /** Moves a just-uploaded temp file into the cache: it holds exactly the blob's bytes. */
  private async adoptIntoCache(key: string, source: string, size: number): Promise<void> {
    await this.loadCache();
    const file = this.cacheFile(key);
    await fsp.rename(source, file);
    this.remember(file, size);
    await this.evict(file);
  }

  private async dropCached(key: string): Promise<void> {
    const file = this.cacheFile(key);
    const entry = this.cache.get(file);
    if (entry) {
      this.cache.delete(file);
      this.cacheBytes -= entry.size;
    }
    await fsp.rm(file, { force: true });
  }

  /** Marks a cached file most recently used. */
  private remember(file: string, size: number): void {
    const old = this.cache.get(file);
    if (old) {
      this.cache.delete(file);
      this.cacheBytes -= old.size;
    }
    this.cache.set(file, { size, usedAt: Date.now() });
    this.cacheBytes += size;
  }

  /** Picks up copies left by earlier runs (oldest modification first) and clears stale temp files. */
  private loadCache(): Promise<void> {
    this.cacheReady ??= (async () => {
      await fsp.mkdir(this.cacheTmp, { recursive: true });
      const found: { file: string; size: number; usedAt: number }[] = [];
      for (const e of await fsp.readdir(this.cacheDir, { withFileTypes: true })) {
        if (!e.isFile()) continue;
        const file = path.join(this.cacheDir, e.name);
        const st = await statIfExists(file);
        if (st) found.push({ file, size: st.size, usedAt: st.mtimeMs });
      }
      found.sort((a, b) => a.usedAt - b.usedAt);
      for (const f of found) {
        if (this.cache.has(f.file)) continue;
        this.cache.set(f.file, { size: f.size, usedAt: f.usedAt });
        this.cacheBytes += f.size;
      }
      const now = Date.now();
      for (const e of await fsp.readdir(this.cacheTmp)) {
        const temp = path.join(this.cacheTmp, e);
        const st = await statIfExists(temp);
        if (st && now - st.mtimeMs > STALE_TEMP_MS) await fsp.rm(temp, { recursive: true, force: true });
      }
    })();
    return this.cacheReady;
  }

  /** Removes least-recently-used copies until the cache fits, sparing `keep` and recently used ones. */
  private async evict(keep: string): Promise<void> {
    if (this.cacheBytes <= this.cacheMaxBytes) return;
    const cutoff = Date.now() - this.cacheGraceMs;
    for (const [file, entry] of this.cache) {
      if (this.cacheBytes <= this.cacheMaxBytes) break;
      if (file === keep || entry.usedAt > cutoff || this.inflight.has(file)) continue;
      this.cache.delete(file);
      this.cacheBytes -= entry.size;
      await fsp.rm(file, { force: true });
    }
  }

  /** The cache's current size in bytes, as this process knows it. */
  get cachedBytes(): number {
    return this.cacheBytes;
  }

  /** Closes the S3 client's connections. */
  close(): void {
    this.client.destroy();
  }
}
