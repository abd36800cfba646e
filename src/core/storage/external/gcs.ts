import { Readable } from 'node:stream';
import { importPKCS8, SignJWT } from 'jose';
import { ExternalStoreError, isAbort, objectUrl, type ExternalObject, type ExternalStore } from './types.ts';

/** The fields of a service-account JSON key file that the adapter uses. */
export interface GcsServiceAccountKey {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  /** Google's token endpoint (checked when the secret was created). */
  token_uri: string;
}

export interface GcsExternalOptions {
  /**
   * Tests only: where to exchange the signed assertion instead of the key's `token_uri` (which
   * CREATE SECRET requires to be Google's). The assertion's audience stays the key's token_uri.
   */
  tokenUrl?: string;
  /** Tests only: the JSON API's base instead of `https://storage.googleapis.com`. */
  apiBase?: string;
  /** Objects per listing page (the API's maximum, 1000, unless told; smaller in tests to exercise paging). */
  pageSize?: number;
}

const API_BASE = 'https://storage.googleapis.com';
const READ_SCOPE = 'https://www.googleapis.com/auth/devstorage.read_only';
const ASSERTION_SECONDS = 3600;
/** A token is renewed this long before it expires. */
const RENEW_MARGIN_MS = 60_000;
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** A short, single-line excerpt of an error text from the provider (which never holds our key). */
function excerpt(text: unknown): string {
  return String(text ?? '').replace(/\s+/g, ' ').trim().slice(0, 200);
}

/**
 * Google Cloud Storage with a service-account key, through the JSON API: the key signs a JWT
 * (RS256, with jose) that is exchanged at the key's token endpoint for an access token
 * (RFC 7523), which then lists (`GET /storage/v1/b/<bucket>/o?prefix=`) and downloads
 * (`GET /storage/v1/b/<bucket>/o/<object>?alt=media`) objects.
 */
export class GcsExternalStore implements ExternalStore {
  readonly scheme = 'gs' as const;
  private token: { value: Promise<string>; expires: number } | undefined;
  private readonly apiBase: string;

  constructor(
    private readonly key: GcsServiceAccountKey,
    private readonly options: GcsExternalOptions = {},
  ) {
    this.apiBase = (options.apiBase ?? API_BASE).replace(/\/+$/, '');
  }

  private rejected(why: string): ExternalStoreError {
    return new ExternalStoreError('EXTERNAL_CREDENTIALS_REJECTED', `Google Cloud Storage refused the secret's service-account key: ${why}`);
  }

  /** An access token, exchanged once and reused until shortly before it expires. */
  private accessToken(signal?: AbortSignal): Promise<string> {
    if (this.token && Date.now() < this.token.expires) return this.token.value;
    const entry: { value: Promise<string>; expires: number } = { value: Promise.resolve(''), expires: Number.POSITIVE_INFINITY };
    entry.value = this.exchange(signal).then(
      ({ token, expiresIn }) => {
        entry.expires = Date.now() + Math.max(0, expiresIn * 1000 - RENEW_MARGIN_MS);
        return token;
      },
      (error: unknown) => {
        if (this.token === entry) this.token = undefined;
        throw error;
      },
    );
    this.token = entry;
    return entry.value;
  }

  private async exchange(signal?: AbortSignal): Promise<{ token: string; expiresIn: number }> {
    let assertion: string;
    try {
      const privateKey = await importPKCS8(this.key.private_key, 'RS256');
      const now = Math.floor(Date.now() / 1000);
      assertion = await new SignJWT({ scope: READ_SCOPE })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(this.key.private_key_id ? { kid: this.key.private_key_id } : {}) })
        .setIssuer(this.key.client_email)
        .setAudience(this.key.token_uri)
        .setIssuedAt(now)
        .setExpirationTime(now + ASSERTION_SECONDS)
        .sign(privateKey);
    } catch {
      // jose's message may describe the key material: never pass it on.
      throw this.rejected("its private_key is not a usable RSA private key (PKCS #8 PEM, as in the downloaded key file)");
    }
    const endpoint = this.options.tokenUrl ?? this.key.token_uri;
    let response: Response;
    try {
      response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ grant_type: JWT_BEARER, assertion }).toString(),
        signal,
      });
    } catch (error) {
      if (isAbort(error, signal)) throw error;
      throw new ExternalStoreError('EXTERNAL_STORAGE_ERROR', "Could not reach Google's token endpoint to exchange the service-account key");
    }
    const body = (await response.json().catch(() => ({}))) as { access_token?: unknown; expires_in?: unknown; error?: unknown; error_description?: unknown };
    if (!response.ok) {
      if (response.status === 400 || response.status === 401 || response.status === 403) {
        const what = [excerpt(body.error), excerpt(body.error_description)].filter(Boolean).join(': ');
        throw this.rejected(`the token endpoint answered ${response.status}${what ? ` (${what})` : ''}`);
      }
      throw new ExternalStoreError('EXTERNAL_STORAGE_ERROR', `Google's token endpoint failed (HTTP ${response.status})`);
    }
    if (typeof body.access_token !== 'string' || body.access_token === '') {
      throw new ExternalStoreError('EXTERNAL_STORAGE_ERROR', "Google's token endpoint answered without an access token");
    }
    const expiresIn = typeof body.expires_in === 'number' && Number.isFinite(body.expires_in) ? body.expires_in : 3600;
    return { token: body.access_token, expiresIn };
  }

  /** A GET of the JSON API with the access token; maps refusals, missing objects and failures. */
  private async call(path: string, what: string, signal?: AbortSignal): Promise<Response> {
    const token = await this.accessToken(signal);
    let response: Response;
    try {
      response = await fetch(`${this.apiBase}${path}`, { headers: { authorization: `Bearer ${token}` }, signal });
    } catch (error) {
      if (isAbort(error, signal)) throw error;
      throw new ExternalStoreError('EXTERNAL_STORAGE_ERROR', `Could not reach Google Cloud Storage for ${what}`);
    }
    if (response.ok) return response;
    const body = (await response.json().catch(() => ({}))) as { error?: { message?: unknown } };
    const message = excerpt(body.error?.message);
    if (response.status === 401 || response.status === 403) {
      throw new ExternalStoreError(
        'EXTERNAL_CREDENTIALS_REJECTED',
        `Google Cloud Storage refused the secret's service-account key for ${what} (HTTP ${response.status}${message ? `: ${message}` : ''})`,
      );
    }
    if (response.status === 404) throw new ExternalStoreError('EXTERNAL_OBJECT_NOT_FOUND', `${what}: no such object or bucket`);
    throw new ExternalStoreError('EXTERNAL_STORAGE_ERROR', `Google Cloud Storage failed to serve ${what} (HTTP ${response.status})`);
  }

  async *list(bucket: string, prefix: string, signal?: AbortSignal): AsyncIterable<ExternalObject> {
    const what = objectUrl('gs', bucket, prefix);
    let pageToken: string | undefined;
    do {
      const query = new URLSearchParams({ prefix, fields: 'items(name,size),nextPageToken', maxResults: String(this.options.pageSize ?? 1000) });
      if (pageToken) query.set('pageToken', pageToken);
      const response = await this.call(`/storage/v1/b/${encodeURIComponent(bucket)}/o?${query}`, what, signal);
      const page = (await response.json().catch(() => undefined)) as { items?: { name?: unknown; size?: unknown }[]; nextPageToken?: unknown } | undefined;
      if (!page || typeof page !== 'object') throw new ExternalStoreError('EXTERNAL_STORAGE_ERROR', `Google Cloud Storage sent an unreadable listing of ${what}`);
      for (const item of page.items ?? []) {
        if (typeof item.name === 'string') yield { key: item.name, size: Number(item.size ?? 0) };
      }
      pageToken = typeof page.nextPageToken === 'string' && page.nextPageToken !== '' ? page.nextPageToken : undefined;
    } while (pageToken);
  }

  async get(bucket: string, key: string, signal?: AbortSignal): Promise<{ body: Readable; size?: number }> {
    const what = objectUrl('gs', bucket, key);
    const response = await this.call(`/storage/v1/b/${encodeURIComponent(bucket)}/o/${encodeURIComponent(key)}?alt=media`, what, signal);
    if (!response.body) throw new ExternalStoreError('EXTERNAL_STORAGE_ERROR', `Google Cloud Storage sent no body for ${what}`);
    const length = response.headers.get('content-length');
    return { body: Readable.fromWeb(response.body as never), size: length !== null && /^\d+$/.test(length) ? Number(length) : undefined };
  }

  close(): void {
    this.token = undefined;
  }
}
