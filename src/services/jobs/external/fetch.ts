import fs from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { SecretType } from '../../../core/db/index.ts';
import {
  ExternalStoreError,
  objectUrl,
  openExternalStore,
  type ExternalCredentials,
  type ExternalStore,
  type ExternalStoreOptions,
} from '../../../core/storage/external/index.ts';
import type { JobFailureCode } from '../errors.ts';
import { checkSecretFits, ExternalReadRefusal, type ExternalRead, type ExternalUrl } from './reads.ts';

export interface ExternalReadOptions {
  /** Endpoint overrides of the adapters: S3's from LAKEPORT_EXTERNAL_S3_ENDPOINT, GCS's in tests only. */
  stores?: ExternalStoreOptions;
  /** Bytes one job may copy in all (LAKEPORT_EXTERNAL_READ_MAX_BYTES; default 1 GiB). */
  maxBytes?: number;
  /** Objects one job may copy (default 10,000). */
  maxObjects?: number;
  /** Downloads at once per job (default 4). */
  concurrency?: number;
}

export const DEFAULT_EXTERNAL_MAX_BYTES = 1024 ** 3;
export const DEFAULT_EXTERNAL_MAX_OBJECTS = 10_000;

/** Opens a secret's values and counts the use (SecretStore.use). */
export interface SecretValues {
  use(workspace: string, name: string): Promise<{ type: SecretType; values: Record<string, string> } | undefined>;
}

export type StoreOpener = (credentials: ExternalCredentials, options?: ExternalStoreOptions) => Promise<ExternalStore>;

/** A read that failed while running: the job fails with this code, at the place of the URL. */
export class ExternalReadFailure extends Error {
  constructor(
    readonly code: JobFailureCode,
    message: string,
    readonly position?: number,
  ) {
    super(message);
    this.name = 'ExternalReadFailure';
  }
}

export interface FetchedReads {
  /** The local copies, per read (in the order of the reads), in key order. */
  files: string[][];
  /** Local path → the object's URL, to put URLs back into DuckDB's messages. */
  urls: Map<string, string>;
  /** Bytes copied. */
  bytes: number;
}

interface Planned {
  read: number;
  url: ExternalUrl;
  store: ExternalStore;
  key: string;
  local: string;
}

/** A secret's values as an adapter's credentials. */
function credentialsOf(type: SecretType, values: Record<string, string>): ExternalCredentials {
  if (type === 's3_access_key') {
    return {
      kind: 's3',
      credentials: { accessKeyId: values.ACCESS_KEY_ID, secretAccessKey: values.SECRET_ACCESS_KEY, sessionToken: values.SESSION_TOKEN, region: values.REGION },
    };
  }
  const key = JSON.parse(values.KEY) as { client_email: string; private_key: string; private_key_id?: string; token_uri: string };
  return { kind: 'gs', key: { client_email: key.client_email, private_key: key.private_key, private_key_id: key.private_key_id, token_uri: key.token_uri } };
}

/** A file name for a local copy: its index, then the key's last segment made safe (its extension kept, for DuckDB's compression detection). */
function localName(index: number, key: string): string {
  const base = (key.split('/').pop() ?? '').replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return `${index}-${base.slice(-100) || 'object'}`;
}

const human = (bytes: number) => (bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : `${Math.ceil(bytes / 1024 ** 2)} MiB`);

/**
 * Copies what a job's READ_* calls name into its private directory: opens each secret once
 * (counting one use: last_used_at, use_count), checks its type and SCOPE again (it may have been
 * replaced since the job was planned), lists prefixes and globs through the adapter, and downloads
 * under a byte and object cap, a few at a time. On any failure the downloads under way are stopped
 * before it throws; the caller removes the directory whatever happens.
 */
export class ExternalFetcher {
  private readonly maxBytes: number;
  private readonly maxObjects: number;
  private readonly concurrency: number;

  constructor(
    private readonly secrets: SecretValues,
    private readonly options: ExternalReadOptions = {},
    private readonly open: StoreOpener = openExternalStore,
  ) {
    this.maxBytes = options.maxBytes ?? DEFAULT_EXTERNAL_MAX_BYTES;
    this.maxObjects = options.maxObjects ?? DEFAULT_EXTERNAL_MAX_OBJECTS;
    this.concurrency = Math.max(1, options.concurrency ?? 4);
  }

  /** Rejects with ExternalReadFailure, or with the abort error when `signal` fires. */
  async fetch(reads: ExternalRead[], dir: string, signal: AbortSignal): Promise<FetchedReads> {
    const stores = new Map<string, ExternalStore>();
    try {
      const planned = await this.plan(reads, dir, stores, signal);
      const bytes = await this.download(planned, signal);
      const files = reads.map((_, i) => planned.filter((p) => p.read === i).map((p) => p.local));
      const urls = new Map(planned.map((p) => [p.local, objectUrl(p.url.scheme, p.url.bucket, p.key)]));
      return { files, urls, bytes };
    } catch (error) {
      if (signal.aborted) throw signal.reason ?? error;
      if (error instanceof ExternalReadRefusal) throw new ExternalReadFailure(error.code, error.message, error.position);
      throw error;
    } finally {
      for (const store of stores.values()) store.close();
    }
  }

  /** The secrets' adapters, and every object to copy with its local name. */
  private async plan(reads: ExternalRead[], dir: string, stores: Map<string, ExternalStore>, signal: AbortSignal): Promise<Planned[]> {
    const opened = new Map<string, { type: SecretType; scope: string | undefined }>();
    for (const read of reads) {
      const { workspace, name, label } = read.secret;
      let secret = opened.get(label);
      if (!secret) {
        const used = await this.secrets.use(workspace, name);
        if (!used) throw new ExternalReadFailure('SECRET_NOT_FOUND', `Secret ${label} does not exist any more`, read.secret.position);
        secret = { type: used.type, scope: used.values.SCOPE };
        checkSecretFits(read, secret);
        opened.set(label, secret);
        stores.set(label, await this.open(credentialsOf(used.type, used.values), this.options.stores));
      } else checkSecretFits(read, secret);
    }

    const planned: Planned[] = [];
    let listedBytes = 0;
    const tooMany = (position?: number) =>
      new ExternalReadFailure('EXTERNAL_READ_TOO_LARGE', `The job reads more than ${this.maxObjects} objects from private storage; narrow the URLs`, position);
    for (const [index, read] of reads.entries()) {
      const store = stores.get(read.secret.label)!;
      for (const url of read.urls) {
        if (!url.matcher) {
          planned.push({ read: index, url, store, key: url.key, local: path.join(dir, localName(planned.length, url.key)) });
          if (planned.length > this.maxObjects) throw tooMany(url.position);
          continue;
        }
        let found = 0;
        try {
          for await (const object of store.list(url.bucket, url.prefix, signal)) {
            // Folder markers are not files; a key outside the listed prefix is never taken.
            if (object.key.endsWith('/') || !object.key.startsWith(url.prefix) || !url.matcher.test(object.key)) continue;
            found++;
            listedBytes += object.size;
            planned.push({ read: index, url, store, key: object.key, local: path.join(dir, localName(planned.length, object.key)) });
            if (planned.length > this.maxObjects) throw tooMany(url.position);
            if (listedBytes > this.maxBytes) throw this.tooLarge(url.position);
          }
        } catch (error) {
          throw this.failure(error, url, signal);
        }
        if (found === 0) throw new ExternalReadFailure('EXTERNAL_OBJECT_NOT_FOUND', `No object matches '${url.text}'`, url.position);
      }
    }
    return planned;
  }

  private tooLarge(position?: number): ExternalReadFailure {
    return new ExternalReadFailure(
      'EXTERNAL_READ_TOO_LARGE',
      `The job reads more than ${human(this.maxBytes)} from private storage (the limit per job, LAKEPORT_EXTERNAL_READ_MAX_BYTES); narrow the URLs`,
      position,
    );
  }

  private failure(error: unknown, url: ExternalUrl, signal: AbortSignal): unknown {
    if (signal.aborted) return signal.reason ?? error;
    if (error instanceof ExternalReadFailure) return error;
    if (error instanceof ExternalStoreError) return new ExternalReadFailure(error.code, error.message, url.position);
    return error;
  }

  /** Downloads every planned object, `concurrency` at a time, counting bytes against the cap. */
  private async download(planned: Planned[], signal: AbortSignal): Promise<number> {
    const stop = new AbortController();
    const onAbort = () => stop.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let bytes = 0;
    let next = 0;
    let firstError: unknown;
    const worker = async () => {
      while (next < planned.length && !stop.signal.aborted) {
        const item = planned[next++];
        try {
          const { body } = await item.store.get(item.url.bucket, item.key, stop.signal);
          const counter = new Transform({
            transform: (chunk: Buffer, _encoding, callback) => {
              bytes += chunk.length;
              if (bytes > this.maxBytes) callback(this.tooLarge(item.url.position));
              else callback(null, chunk);
            },
          });
          await pipeline(body, counter, fs.createWriteStream(item.local, { flags: 'wx', mode: 0o600 }), { signal: stop.signal });
        } catch (error) {
          firstError ??= this.failure(error, item.url, signal);
          stop.abort(firstError);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(this.concurrency, planned.length) }, worker));
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    if (signal.aborted) throw signal.reason;
    if (firstError !== undefined) throw firstError;
    return bytes;
  }
}
