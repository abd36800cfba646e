/**
 * A typed client for Lakeport's upload protocol (`/upload/v2`), with its own token handling.
 *
 * Tokens: a static `token` is used as given; with `clientId` + `clientSecret` the client exchanges them at
 * `POST /auth/token` (client_credentials), refreshes shortly before expiry with the refresh token, and on
 * a 401 refreshes once (refresh_token grant, falling back to client_credentials) and repeats the request.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DEFAULT_SAMPLE_BYTES,
  contentTypeFor,
  detectFormat,
  readSample,
  type FileFormat,
} from './samples.ts';
import type * as JobsApi from './generated/jobs.ts';
import type * as UploadApi from './generated/upload.ts';

// ---------------------------------------------------------------------------------------------------
// Wire types: generated from the services' OpenAPI documents (npm run openapi:types)
// ---------------------------------------------------------------------------------------------------

type UploadSchemas = UploadApi.components['schemas'];
type JobSchemas = JobsApi.components['schemas'];

/** The negotiation's contract request (the multipart body's JSON `contract` part). */
export type ContractRequest = UploadApi.paths['/upload/v2/contracts']['post']['requestBody']['content']['multipart/form-data']['contract'];
export type SchemaMode = NonNullable<NonNullable<ContractRequest['schema']>['mode']>;
export type DeclaredColumn = NonNullable<NonNullable<ContractRequest['schema']>['columns']>[number];
export type FormatOptions = NonNullable<ContractRequest['format']>;
export type CommitMode = NonNullable<ContractRequest['commit_mode']>;
/** What a write does with a value the contract cannot store: `fail` (the server's default), `null` or `skip`. */
export type OnErrorPolicy = NonNullable<ContractRequest['on_error']>;
export type PatchContractBody = UploadApi.paths['/upload/v2/contracts/{contract_id}']['patch']['requestBody']['content']['application/json'];

export type Contract = UploadSchemas['Contract'];
export type ContractState = Contract['state'];
export type PlanEntry = UploadSchemas['PlanEntry'];
/** The CSV dialect a contract reads a file with (`contract.files[].csv`): sniffed, the format options winning. */
export type ContractCsvDialect = UploadSchemas['CsvDialect'];
export type PlanAction = PlanEntry['action'];
export type ContractIssue = UploadSchemas['ContractIssue'];
export type WrittenFile = Contract['written'][number];
export type Totals = Contract['totals'];
export type WriteResult = UploadSchemas['WriteResult'];
export type CommitResult = UploadSchemas['CommitResult'];

export type JobRequest = JobsApi.paths['/jobs/api/v1/jobs']['post']['requestBody']['content']['application/json'];
export type JobSubmitted = JobSchemas['JobSubmitted'];
export type JobStatus = JobSchemas['Job'];
export type JobResults = JobSchemas['ResultsPage'];

export type DownloadFormat = 'csv' | 'json' | 'parquet';

/** One range of a job's results as a file (`GET …/download`), with what its headers say of the whole. */
export interface DownloadRange {
  /** The file's bytes (read it, or cancel it). */
  body: ReadableStream<Uint8Array>;
  /** `Lakeport-Total-Rows`: rows of the whole result. */
  totalRows: number;
  /** `Lakeport-Range`: the 0-based first and last row this file holds, or null when it holds none. */
  range: { first: number; last: number } | null;
  /** `Lakeport-Truncated`: rows of the result follow this range. */
  truncated: boolean;
  /** The query (`file_format`, `limit`, `offset`) of the next range, from `Link: <…>; rel="next"`; null when none follows. */
  next: URLSearchParams | null;
}

/** A file to negotiate: a path (sampled here) or a name with a ready sample. */
export type NegotiateFile = string | { name: string; sample: Uint8Array };

export interface NegotiateInput {
  /** `workspace.collection.dataset` */
  destination: string;
  schema: { mode: SchemaMode; columns?: DeclaredColumn[] };
  /** Format options; `type` (and for `.tsv` the tab delimiter) default to what the file names imply. */
  format?: FormatOptions;
  files: NegotiateFile[];
  /** Text sample budget in bytes (default 1 MiB): head, spread middle ranges and tail (see `samples.ts`). */
  sampleBytes?: number;
  /** `append` (the server's default) or `replace`: the commit's snapshot holds only this upload. */
  commitMode?: CommitMode;
  /** `fail` (the server's default), `null` (store NULL) or `skip` (leave the record out) for a value the contract cannot store. */
  onError?: OnErrorPolicy;
}

export interface WriteFileOptions {
  /** Called as bytes leave for the server (at most every chunk), and once at the end. */
  onProgress?(bytesSent: number, total: number): void;
  /** Overrides the format implied by the extension (sets `content-type`). */
  format?: FileFormat;
  /** Overrides `x-file-name` (default: the path's base name). */
  fileName?: string;
}

export interface CommitOptions {
  /** Commit message, sent as JSON body `{ "message": … }`. */
  message?: string;
  /** How often to repeat the request after a network error or a 502/503/504 (default 3). */
  retries?: number;
  /** First backoff delay in ms, doubled per retry (default 250). */
  backoffMs?: number;
}

export interface LakeportClientOptions {
  /** Server base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  clientId?: string;
  clientSecret?: string;
  /** A ready access token (used as is; with client credentials as well, they take over on a 401). */
  token?: string;
  fetch?: typeof globalThis.fetch;
}

// ---------------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------------

export type ValidationIssue = UploadSchemas['HTTPValidationError']['detail'][number];

/** `fix` of a 409 VALUE_NOT_STORABLE. */
export interface ValueFix {
  /** Infer and declared modes: a type that stores the value, as a `lakeport upload` flag and a PATCH body. */
  retype?: { type: string; cli: string; patch: PatchContractBody };
  /** The on_error policies that store the file, as flags and PATCH bodies. */
  on_error?: { cli: string[]; patch: PatchContractBody[] };
  /** Dataset mode: the dataset declares the type; what to change there. */
  dataset?: string;
}

/** An error answer from the server: `{detail, code, …}` (422: `{detail: ValidationIssue[]}`). */
export class LakeportApiError extends Error {
  override name = 'LakeportApiError';
  readonly status: number;
  readonly code: string;
  readonly detail: string | ValidationIssue[];
  /** Extra fields of a refused write (`VALUE_NOT_STORABLE`): `row` is the physical line (also `line`), `record` the data record. */
  readonly column?: string;
  readonly row?: number;
  readonly record?: number;
  readonly line?: number;
  /** The exact ways to store a refused value (`VALUE_NOT_STORABLE`): retype the column, or an on_error policy. */
  readonly fix?: ValueFix;
  readonly value?: unknown;
  readonly file?: string;
  /** The whole parsed body (or the raw text when it was not JSON). */
  readonly body: unknown;

  constructor(status: number, body: unknown) {
    const record = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {};
    const rawDetail = record.detail ?? record.error_description ?? record.error;
    const detail: string | ValidationIssue[] = Array.isArray(rawDetail)
      ? (rawDetail as ValidationIssue[])
      : typeof rawDetail === 'string'
        ? rawDetail
        : typeof body === 'string' && body.trim()
          ? body.trim().slice(0, 200)
          : `HTTP ${status}`;
    const code =
      typeof record.code === 'string'
        ? record.code
        : status === 422
          ? 'VALIDATION_ERROR'
          : typeof record.error === 'string'
            ? record.error.toUpperCase()
            : `HTTP_${status}`;
    super(oneLine(typeof detail === 'string' ? detail : formatValidation(detail)));
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.body = body;
    if (typeof record.column === 'string') this.column = record.column;
    if (typeof record.row === 'number') this.row = record.row;
    if (typeof record.record === 'number') this.record = record.record;
    if (typeof record.line === 'number') this.line = record.line;
    if (record.fix !== null && typeof record.fix === 'object') this.fix = record.fix as ValueFix;
    if ('value' in record) this.value = record.value;
    if (typeof record.file === 'string') this.file = record.file;
  }
}

/** The server could not be reached, or the connection broke before an answer arrived. */
export class LakeportNetworkError extends Error {
  override name = 'LakeportNetworkError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

function formatValidation(issues: ValidationIssue[]): string {
  return issues.map((i) => `${(i.loc ?? []).join('.')}: ${i.msg}`).join('; ') || 'validation failed';
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

function describeCause(error: unknown): string {
  let current: unknown = error;
  let text = error instanceof Error ? error.message : String(error);
  // fetch says "fetch failed"; the useful part (ECONNREFUSED, other side closed, …) is in the cause.
  for (let depth = 0; depth < 4 && current instanceof Error && current.cause !== undefined; depth++) {
    current = current.cause;
    if (current instanceof Error && current.message) text = current.message;
    else if (typeof current === 'string') text = current;
  }
  return text;
}

// ---------------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------------

interface TokenState {
  accessToken: string;
  /** ms since epoch; Infinity for a static token. */
  expiresAt: number;
  refreshToken?: string;
}

/** Refresh this long before the access token's stated expiry. */
const EXPIRY_SKEW_MS = 30_000;

type BodyFactory = () => { body?: BodyInit; headers?: Record<string, string> } | Promise<{ body?: BodyInit; headers?: Record<string, string> }>;

export class LakeportClient {
  readonly url: string;
  readonly #clientId?: string;
  readonly #clientSecret?: string;
  readonly #fetch: typeof globalThis.fetch;
  #token?: TokenState;
  #pending?: Promise<TokenState>;

  constructor(options: LakeportClientOptions) {
    let parsed: URL;
    try {
      parsed = new URL(options.url);
    } catch {
      throw new Error(`invalid Lakeport URL ${JSON.stringify(options.url)}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`invalid Lakeport URL ${JSON.stringify(options.url)}: use http or https`);
    this.url = options.url.replace(/\/+$/, '');
    if (options.clientId !== undefined && options.clientSecret === undefined) throw new Error('a client id needs a client secret');
    if (options.clientSecret !== undefined && options.clientId === undefined) throw new Error('a client secret needs a client id');
    if (options.clientId === undefined && options.token === undefined) throw new Error('no credentials: give a client id and secret, or a token');
    this.#clientId = options.clientId;
    this.#clientSecret = options.clientSecret;
    this.#fetch = options.fetch ?? globalThis.fetch;
    if (options.token !== undefined) this.#token = { accessToken: options.token, expiresAt: Infinity };
  }

  /**
   * A client from the runtime contract's variables: `LAKEPORT_URL` (default `http://127.0.0.1:8080`),
   * `LAKEPORT_CLIENT_ID` + `LAKEPORT_CLIENT_SECRET`, or `LAKEPORT_TOKEN`.
   */
  static fromEnv(env: Record<string, string | undefined> = process.env, options: { fetch?: typeof globalThis.fetch } = {}): LakeportClient {
    const value = (name: string) => {
      const v = env[name]?.trim();
      return v ? v : undefined;
    };
    const clientId = value('LAKEPORT_CLIENT_ID');
    const clientSecret = value('LAKEPORT_CLIENT_SECRET');
    const token = value('LAKEPORT_TOKEN');
    if (clientId && !clientSecret) throw new Error('LAKEPORT_CLIENT_ID is set but LAKEPORT_CLIENT_SECRET is not');
    if (clientSecret && !clientId) throw new Error('LAKEPORT_CLIENT_SECRET is set but LAKEPORT_CLIENT_ID is not');
    if (!clientId && !token) throw new Error('no credentials: set LAKEPORT_CLIENT_ID and LAKEPORT_CLIENT_SECRET, or LAKEPORT_TOKEN');
    return new LakeportClient({ url: value('LAKEPORT_URL') ?? 'http://127.0.0.1:8080', clientId, clientSecret, token, fetch: options.fetch });
  }

  // -------------------------------------------------------------------------------------------------
  // Upload API
  // -------------------------------------------------------------------------------------------------

  /**
   * `POST /upload/v2/contracts`: samples every file (see `samples.ts`) and proposes the contract.
   * Files of one contract share one format; the format's `type` defaults to what the extensions imply.
   */
  async negotiate(input: NegotiateInput): Promise<Contract> {
    if (input.files.length === 0) throw new Error('no files to upload');
    const format: FormatOptions = { ...input.format };
    const names = new Set<string>();
    const detected: { name: string; type: FileFormat | undefined; delimiter?: string }[] = [];
    for (const file of input.files) {
      const name = typeof file === 'string' ? path.basename(file) : file.name;
      if (names.has(name)) throw new Error(`two files are named ${name}; the server tells files apart by their base names`);
      names.add(name);
      const found = detectFormat(name);
      detected.push({ name, type: found?.type, delimiter: found?.delimiter });
    }
    if (format.type === undefined) {
      const unknown = detected.find((d) => d.type === undefined);
      if (unknown) throw new Error(`${unknown.name}: cannot tell its format from the extension; give the format (csv, jsonl or parquet)`);
      const types = new Set(detected.map((d) => d.type));
      if (types.size > 1) throw new Error(`the files mix formats (${[...types].join(', ')}); upload each format separately`);
      format.type = detected[0].type;
    }
    const type: FileFormat = format.type!;
    if (format.type === 'csv' && format.delimiter === undefined) {
      const delimiters = new Set(detected.filter((d) => d.type === 'csv').map((d) => d.delimiter ?? ','));
      if (delimiters.size > 1) throw new Error('the files mix .csv and .tsv; upload them separately or give the delimiter');
      const [only] = delimiters;
      if (only === '\t') format.delimiter = only;
    }
    const samples: { name: string; sample: Uint8Array }[] = [];
    for (const file of input.files) {
      if (typeof file !== 'string') {
        samples.push(file);
        continue;
      }
      samples.push({
        name: path.basename(file),
        sample: await readSample(file, type, {
          maxBytes: input.sampleBytes ?? DEFAULT_SAMPLE_BYTES,
          delimiter: format.delimiter,
          quote: format.quote,
          escape: format.escape,
        }),
      });
    }
    const contract = {
      destination: input.destination,
      schema: input.schema,
      format,
      ...(input.commitMode ? { commit_mode: input.commitMode } : {}),
      ...(input.onError ? { on_error: input.onError } : {}),
    };
    const sampleType = contentTypeFor(type);
    return this.#json<Contract>('POST', '/upload/v2/contracts', () => {
      const form = new FormData();
      form.append('contract', JSON.stringify(contract));
      for (const { name, sample } of samples) form.append('sample', new Blob([new Uint8Array(sample)], { type: sampleType }), name);
      return { body: form };
    });
  }

  /** `GET /upload/v2/contracts/{id}` */
  getContract(id: string): Promise<Contract> {
    return this.#json<Contract>('GET', `/upload/v2/contracts/${encodeURIComponent(id)}`);
  }

  /** `PATCH /upload/v2/contracts/{id}`: retype or ignore columns; answers the re-planned contract. */
  patchContract(id: string, body: PatchContractBody): Promise<Contract> {
    return this.#json<Contract>('PATCH', `/upload/v2/contracts/${encodeURIComponent(id)}`, jsonBody(body));
  }

  /** `PUT /upload/v2/contracts/{id}/accept` with the fingerprint that was shown. */
  acceptContract(id: string, fingerprint: string): Promise<Contract> {
    return this.#json<Contract>('PUT', `/upload/v2/contracts/${encodeURIComponent(id)}/accept`, jsonBody({ schema_fingerprint: fingerprint }));
  }

  /** `DELETE /upload/v2/contracts/{id}` (abandon; written files become unreachable). */
  async deleteContract(id: string): Promise<void> {
    await this.#json<unknown>('DELETE', `/upload/v2/contracts/${encodeURIComponent(id)}`);
  }

  /**
   * `POST /upload/v2/contracts/{id}/data`: streams the file from disk as the request body (never whole in
   * memory), with `x-file-name`, `content-type` and `content-length`.
   */
  async writeFile(id: string, filePath: string, options: WriteFileOptions = {}): Promise<WriteResult> {
    const fileName = options.fileName ?? path.basename(filePath);
    const format = options.format ?? detectFormat(fileName)?.type;
    if (!format) throw new Error(`${fileName}: cannot tell its format from the extension; give the format (csv, jsonl or parquet)`);
    const { size } = await stat(filePath);
    return this.#json<WriteResult>('POST', `/upload/v2/contracts/${encodeURIComponent(id)}/data`, () => {
      let sent = 0;
      options.onProgress?.(0, size);
      // Pull-based: the next chunk is read from disk only when the connection wants more bytes.
      const chunks = createReadStream(filePath, { highWaterMark: 256 * 1024 })[Symbol.asyncIterator]();
      const body = new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            const next = await chunks.next();
            if (next.done) {
              controller.close();
              return;
            }
            const chunk = next.value as Buffer;
            sent += chunk.length;
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
            options.onProgress?.(sent, size);
          },
          async cancel() {
            await chunks.return?.();
          },
        },
        { highWaterMark: 0 },
      );
      return {
        body: body as BodyInit,
        headers: {
          'x-file-name': fileName,
          'content-type': contentTypeFor(format),
          'content-length': String(size),
        },
      };
    });
  }

  /**
   * `POST /upload/v2/contracts/{id}/commit` with `idempotency-key`. The same key makes a repeat safe, so a
   * network error (or 502/503/504) is retried with the same key, up to `retries` times with backoff.
   */
  async commit(id: string, idempotencyKey: string, options: CommitOptions = {}): Promise<CommitResult> {
    const retries = options.retries ?? 3;
    const backoff = options.backoffMs ?? 250;
    const body = options.message === undefined ? undefined : JSON.stringify({ message: options.message });
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#json<CommitResult>('POST', `/upload/v2/contracts/${encodeURIComponent(id)}/commit`, () => ({
          body,
          headers: { 'idempotency-key': idempotencyKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        }));
      } catch (error) {
        const retryable = error instanceof LakeportNetworkError || (error instanceof LakeportApiError && [502, 503, 504].includes(error.status));
        if (!retryable || attempt >= retries) throw error;
        await new Promise((resolve) => setTimeout(resolve, backoff * 2 ** attempt));
      }
    }
  }

  /**
   * `GET /upload/v2/contracts/{id}/rejects`: the values the on_error policy did not store, as CSV
   * (`file,record,line,column,value,reason,action`), every file's or `file`'s, written to `destination`.
   */
  async downloadRejects(id: string, destination: string, options: { file?: string } = {}): Promise<void> {
    const q = options.file === undefined ? '' : `?${new URLSearchParams({ file: options.file })}`;
    const response = await this.#authorized('GET', `/upload/v2/contracts/${encodeURIComponent(id)}/rejects${q}`);
    if (!response.ok || !response.body) {
      const text = await response.text().catch(() => '');
      throw new LakeportApiError(response.status, parseBody(text));
    }
    const out = createWriteStream(destination);
    try {
      await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>), out);
    } catch (error) {
      out.destroy();
      await rm(destination, { force: true });
      throw error;
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Query jobs
  // -------------------------------------------------------------------------------------------------

  /** `POST /jobs/api/v1/jobs` */
  submitJob(input: JobRequest): Promise<JobSubmitted> {
    return this.#json<JobSubmitted>('POST', '/jobs/api/v1/jobs', jsonBody(input));
  }

  /** `GET /jobs/api/v1/jobs/{id}/status`, long-polling up to `waitSeconds` (at most 30). */
  jobStatus(id: string, waitSeconds = 0): Promise<JobStatus> {
    return this.#json<JobStatus>('GET', `/jobs/api/v1/jobs/${encodeURIComponent(id)}/status?wait=${waitSeconds}`);
  }

  /** Long-polls until the job leaves queued/running. */
  async waitForJob(id: string): Promise<JobStatus> {
    for (;;) {
      const status = await this.jobStatus(id, 30);
      if (status.status !== 'queued' && status.status !== 'running') return status;
    }
  }

  /** `GET /jobs/api/v1/jobs/{id}/results` */
  jobResults(id: string, page: { num_rows?: number; offset?: number; verbose?: boolean } = {}): Promise<JobResults> {
    const q = new URLSearchParams({ num_rows: String(page.num_rows ?? 5000), offset: String(page.offset ?? 0), verbose: String(page.verbose ?? false) });
    return this.#json<JobResults>('GET', `/jobs/api/v1/jobs/${encodeURIComponent(id)}/results?${q}`);
  }

  /**
   * `GET /jobs/api/v1/jobs/{id}/download`: one range of the results as a file (the server's default
   * limit is 10 000 rows; see `DownloadRange.next` for the rest, or `downloadJobResult` for all of it).
   */
  async downloadJobRange(id: string, query: { file_format?: DownloadFormat; limit?: number; offset?: number } | URLSearchParams = {}): Promise<DownloadRange> {
    const q = query instanceof URLSearchParams ? query : new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
    const pathname = `/jobs/api/v1/jobs/${encodeURIComponent(id)}/download?${q}`;
    const response = await this.#authorized('GET', pathname);
    if (!response.ok || !response.body) {
      const text = await response.text().catch(() => '');
      throw new LakeportApiError(response.status, parseBody(text));
    }
    const range = /^rows (\d+)-(\d+)\//.exec(response.headers.get('lakeport-range') ?? '');
    // The link names the server's public URL; only its query is taken, and asked of this client's URL.
    const link = /<([^>]*)>\s*;\s*rel="?next"?/.exec(response.headers.get('link') ?? '');
    return {
      body: response.body,
      totalRows: Number(response.headers.get('lakeport-total-rows') ?? NaN),
      range: range ? { first: Number(range[1]), last: Number(range[2]) } : null,
      truncated: response.headers.get('lakeport-truncated') === 'true',
      next: link ? new URL(link[1], this.url).searchParams : null,
    };
  }

  /**
   * Writes a job's whole result to `destination` as one file. CSV and newline-delimited JSON: every
   * range, following `rel="next"` (`limit` rows a request; the server's default when not given), CSV
   * with its header line once. Parquet files cannot be joined: when the first range is not the whole
   * result, the whole result is asked for in one range (`limit` = its total rows). On an error the
   * partial file is removed. Returns the rows written and the requests made.
   */
  async downloadJobResult(id: string, destination: string, options: { file_format?: DownloadFormat; limit?: number } = {}): Promise<{ rows: number; requests: number }> {
    const format = options.file_format ?? 'csv';
    const out = createWriteStream(destination);
    let rows = 0;
    let requests = 0;
    try {
      let query: URLSearchParams | null = new URLSearchParams({ file_format: format, offset: '0', ...(options.limit === undefined ? {} : { limit: String(options.limit) }) });
      while (query) {
        let part = await this.downloadJobRange(id, query);
        requests++;
        if (format === 'parquet' && part.truncated) {
          await part.body.cancel().catch(() => undefined);
          part = await this.downloadJobRange(id, { file_format: 'parquet', offset: 0, limit: part.totalRows });
          requests++;
        }
        const source = Readable.fromWeb(part.body as import('node:stream/web').ReadableStream<Uint8Array>);
        const steps: NodeJS.ReadWriteStream[] = requests > 1 && format === 'csv' ? [withoutCsvHeader()] : [];
        await pipeline([source, ...steps, out], { end: false });
        rows += part.range ? part.range.last - part.range.first + 1 : 0;
        query = format === 'parquet' ? null : part.next;
      }
      await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
      return { rows, requests };
    } catch (error) {
      out.destroy();
      await rm(destination, { force: true });
      throw error;
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Transport
  // -------------------------------------------------------------------------------------------------

  async #json<T>(method: string, pathname: string, makeBody?: BodyFactory): Promise<T> {
    const response = await this.#authorized(method, pathname, makeBody);
    const text = await response.text().catch((error: unknown) => {
      throw new LakeportNetworkError(`${method} ${pathname}: the connection broke while reading the answer: ${describeCause(error)}`, { cause: error });
    });
    const parsed = parseBody(text);
    if (!response.ok) throw new LakeportApiError(response.status, parsed);
    return parsed as T;
  }

  async #authorized(method: string, pathname: string, makeBody?: BodyFactory): Promise<Response> {
    let token = await this.#currentToken();
    let response = await this.#send(method, pathname, token.accessToken, makeBody);
    if (response.status === 401 && this.#canRenew(token)) {
      // The refused answer is not read; a body that cannot be cancelled is simply dropped.
      await response.body?.cancel().catch(() => undefined);
      token = await this.#renew(token);
      response = await this.#send(method, pathname, token.accessToken, makeBody);
    }
    return response;
  }

  async #send(method: string, pathname: string, accessToken: string, makeBody?: BodyFactory): Promise<Response> {
    const made = makeBody ? await makeBody() : {};
    const init: RequestInit & { duplex?: 'half' } = {
      method,
      headers: { accept: 'application/json', ...made.headers, authorization: `Bearer ${accessToken}` },
      body: made.body,
    };
    if (made.body instanceof ReadableStream) init.duplex = 'half';
    try {
      return await this.#fetch(`${this.url}${pathname}`, init);
    } catch (error) {
      // The upload stops here; a body fetch still holds (locked) refuses the cancel, and the request's own error is the one to report.
      if (made.body instanceof ReadableStream) await made.body.cancel().catch(() => undefined);
      throw this.#networkError(method, pathname, error);
    }
  }

  #networkError(method: string, pathname: string, error: unknown): Error {
    // A file that vanished or could not be read mid-stream is not a network problem.
    const cause = error instanceof Error ? error.cause : undefined;
    if (cause instanceof Error && typeof (cause as NodeJS.ErrnoException).path === 'string') return cause;
    return new LakeportNetworkError(`cannot reach Lakeport at ${this.url} (${method} ${pathname}): ${describeCause(error)}`, { cause: error });
  }

  // -------------------------------------------------------------------------------------------------
  // Tokens
  // -------------------------------------------------------------------------------------------------

  #canRenew(token: TokenState): boolean {
    return this.#clientId !== undefined || token.refreshToken !== undefined;
  }

  async #currentToken(): Promise<TokenState> {
    if (this.#pending) return this.#pending;
    const token = this.#token;
    if (token && Date.now() < token.expiresAt - EXPIRY_SKEW_MS) return token;
    return this.#renew(token);
  }

  /** One renewal at a time: a refresh grant when we hold a refresh token, else client credentials. */
  #renew(stale: TokenState | undefined): Promise<TokenState> {
    if (this.#pending) return this.#pending;
    if (this.#token && this.#token !== stale) return Promise.resolve(this.#token); // someone renewed already
    this.#pending = (async () => {
      try {
        if (stale?.refreshToken) {
          try {
            return await this.#grant({ grant_type: 'refresh_token', refresh_token: stale.refreshToken }, stale.refreshToken);
          } catch (error) {
            if (!(error instanceof LakeportApiError) || this.#clientId === undefined) throw error;
            // refresh token expired or revoked: fall back to the client credentials
          }
        }
        if (this.#clientId === undefined || this.#clientSecret === undefined) {
          throw new LakeportApiError(401, { detail: 'the access token was refused and there are no client credentials to get a new one', code: 'INVALID_TOKEN' });
        }
        return await this.#grant({ grant_type: 'client_credentials', client_id: this.#clientId, client_secret: this.#clientSecret });
      } finally {
        this.#pending = undefined;
      }
    })().then((token) => {
      this.#token = token;
      return token;
    });
    return this.#pending;
  }

  async #grant(form: Record<string, string>, keepRefreshToken?: string): Promise<TokenState> {
    let response: Response;
    try {
      response = await this.#fetch(`${this.url}/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams(form).toString(),
      });
    } catch (error) {
      throw this.#networkError('POST', '/auth/token', error);
    }
    const parsed = parseBody(await response.text());
    if (!response.ok) throw new LakeportApiError(response.status, parsed);
    const body = parsed as { access_token?: unknown; expires_in?: unknown; refresh_token?: unknown };
    if (typeof body.access_token !== 'string') throw new LakeportApiError(response.status, { detail: 'the token endpoint answered without an access_token', code: 'INVALID_TOKEN_RESPONSE' });
    const expiresIn = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 300;
    return {
      accessToken: body.access_token,
      expiresAt: Date.now() + expiresIn * 1000,
      // Refresh answers carry no new refresh token (they are not rotated): keep the one we have.
      refreshToken: typeof body.refresh_token === 'string' ? body.refresh_token : keepRefreshToken,
    };
  }
}

/** Drops a CSV file's first record (its header line; a quoted name may hold a line break). */
function withoutCsvHeader(): Transform {
  let inHeader = true;
  let quoted = false;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (!inHeader) return done(null, chunk);
      for (let i = 0; i < chunk.length; i++) {
        if (chunk[i] === 0x22) quoted = !quoted;
        else if (chunk[i] === 0x0a && !quoted) {
          inHeader = false;
          return done(null, chunk.subarray(i + 1));
        }
      }
      done();
    },
  });
}

function jsonBody(value: unknown): BodyFactory {
  const body = JSON.stringify(value);
  return () => ({ body, headers: { 'content-type': 'application/json' } });
}

function parseBody(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
