import net from 'node:net';
import type { SecretType } from '../../../core/db/index.ts';
import { isPublicAddress, type HostResolver } from '../../../core/net/index.ts';
import type { JobsErrorCode } from '../errors.ts';
import { statementError, type Span } from './errors.ts';
import type { CreateSecret } from './parser.ts';

/**
 * The secret types and their keys (docs/secrets.md). The spec's neutral names are accepted as
 * aliases: storage_a_service_account is Google Cloud Storage, storage_b_access_key is Amazon S3.
 *
 * Every check here names keys and rules only, never a value: a value may be a credential, and error
 * messages travel to logs and screens.
 */

export interface KeySpec {
  required: boolean;
  describe: string;
}

export interface TypeSpec {
  type: SecretType;
  keys: Record<string, KeySpec>;
}

export const SECRET_TYPES: Record<SecretType, TypeSpec> = {
  gcs_service_account: {
    type: 'gcs_service_account',
    keys: {
      KEY: { required: true, describe: "the service-account JSON key file, as one string (type service_account, Google's token_uri)" },
      SCOPE: { required: true, describe: 'gs://<bucket>/<prefix>/ the secret may read under' },
    },
  },
  s3_access_key: {
    type: 's3_access_key',
    keys: {
      ACCESS_KEY_ID: { required: true, describe: 'the access key id' },
      SECRET_ACCESS_KEY: { required: true, describe: 'the secret access key' },
      SESSION_TOKEN: { required: false, describe: 'the session token (required for a temporary key id, ASIA…)' },
      REGION: { required: false, describe: 'a region name such as eu-west-1' },
      SCOPE: { required: true, describe: 's3://<bucket>/<prefix>/ the secret may read under' },
    },
  },
  http_endpoint: {
    type: 'http_endpoint',
    keys: {
      URL: { required: true, describe: 'an https:// URL whose host resolves to a public address, with no credentials in it' },
      HEADER_AUTHORIZATION: { required: false, describe: 'sent as the Authorization header' },
      HEADER_X_API_KEY: { required: false, describe: 'sent as the X-Api-Key header' },
      HEADER_X_AUTH_TOKEN: { required: false, describe: 'sent as the X-Auth-Token header' },
    },
  },
};

/** TYPE as written (lowercased) → the type. */
export const TYPE_ALIASES: Record<string, SecretType> = {
  gcs_service_account: 'gcs_service_account',
  s3_access_key: 's3_access_key',
  http_endpoint: 'http_endpoint',
  storage_a_service_account: 'gcs_service_account',
  storage_b_access_key: 's3_access_key',
};

/** The token endpoints of Google's service-account keys (the current one and the older one). */
export const GOOGLE_TOKEN_URIS: readonly string[] = ['https://oauth2.googleapis.com/token', 'https://accounts.google.com/o/oauth2/token'];

/** The longest value accepted for any key (a service-account JSON key is about 2.5 KB). */
export const MAX_VALUE_LENGTH = 65_536;

/**
 * The structure of a CREATE SECRET: a known TYPE, only that type's keys, every required one. (Repeated
 * keys were refused by the parser.) Needs no values, so the check endpoint runs it with parameters missing.
 */
export function checkSecretShape(statement: CreateSecret): TypeSpec {
  const type = TYPE_ALIASES[statement.type.value];
  if (!type) {
    throw statementError(
      'INVALID_SECRET_TYPE',
      `Unknown secret TYPE: use 'gcs_service_account' (alias 'storage_a_service_account'), 's3_access_key' (alias 'storage_b_access_key') or 'http_endpoint'`,
      statement.type,
    );
  }
  const spec = SECRET_TYPES[type];
  for (const option of statement.options) {
    if (!spec.keys[option.key.value]) {
      throw statementError('UNKNOWN_SECRET_KEY', `${option.key.value} is not a key of a ${type} secret; its keys are ${Object.keys(spec.keys).join(', ')}`, option.key);
    }
  }
  const given = new Set(statement.options.map((o) => o.key.value));
  for (const [key, keySpec] of Object.entries(spec.keys)) {
    if (keySpec.required && !given.has(key)) {
      throw statementError('MISSING_SECRET_KEY', `A ${type} secret requires ${key}: ${keySpec.describe}`, statement.span);
    }
  }
  return spec;
}

function fail(code: JobsErrorCode, message: string, span: Span | undefined): never {
  throw statementError(code, message, span);
}

/**
 * Checks every value against its type's rules. `values` holds each key's value; `spans` where it was
 * written. Host names of an http_endpoint URL are resolved with `resolve` (all addresses must be public).
 */
export async function checkSecretValues(
  type: SecretType,
  values: Record<string, string>,
  spans: Record<string, Span | undefined>,
  resolve: HostResolver,
): Promise<void> {
  for (const [key, value] of Object.entries(values)) {
    if (value.length === 0) fail('INVALID_SECRET_VALUE', `${key} is empty`, spans[key]);
    if (value.length > MAX_VALUE_LENGTH) fail('INVALID_SECRET_VALUE', `${key} is longer than ${MAX_VALUE_LENGTH} characters`, spans[key]);
    if (value.includes('\u0000')) fail('INVALID_SECRET_VALUE', `${key} contains a NUL character`, spans[key]);
  }
  switch (type) {
    case 'gcs_service_account':
      checkServiceAccountKey(values.KEY, spans.KEY);
      checkScope('gs', 'gcs_service_account', values.SCOPE, spans.SCOPE);
      return;
    case 's3_access_key':
      checkToken('ACCESS_KEY_ID', values.ACCESS_KEY_ID, spans.ACCESS_KEY_ID, 128);
      checkToken('SECRET_ACCESS_KEY', values.SECRET_ACCESS_KEY, spans.SECRET_ACCESS_KEY, 1024);
      if (values.SESSION_TOKEN !== undefined) checkToken('SESSION_TOKEN', values.SESSION_TOKEN, spans.SESSION_TOKEN, MAX_VALUE_LENGTH);
      // AWS's temporary (STS) key ids start with ASIA; they only work with their session token.
      if (values.ACCESS_KEY_ID.startsWith('ASIA') && values.SESSION_TOKEN === undefined) {
        fail('SESSION_TOKEN_REQUIRED', 'A temporary key id (ASIA…) requires SESSION_TOKEN: add SESSION_TOKEN :session_token', spans.ACCESS_KEY_ID);
      }
      if (values.REGION !== undefined && !/^[a-z][a-z0-9-]{1,31}$/.test(values.REGION)) {
        fail('INVALID_SECRET_VALUE', 'REGION must be a region name such as eu-west-1 (lowercase letters, digits and -)', spans.REGION);
      }
      checkScope('s3', 's3_access_key', values.SCOPE, spans.SCOPE);
      return;
    case 'http_endpoint':
      await checkEndpointUrl(values.URL, spans.URL, resolve);
      for (const key of ['HEADER_AUTHORIZATION', 'HEADER_X_API_KEY', 'HEADER_X_AUTH_TOKEN']) {
        // A header value may not carry a line break (it would smuggle another header).
        if (values[key] !== undefined && /[\r\n\u0000-\u0008\u000a-\u001f\u007f]/.test(values[key])) {
          fail('INVALID_SECRET_VALUE', `${key} must be one line of printable characters`, spans[key]);
        }
      }
      return;
  }
}

/** An access key id or secret: one run of printable, non-blank characters. */
function checkToken(key: string, value: string, span: Span | undefined, max: number) {
  if (value.length > max || !/^[\x21-\x7e]+$/.test(value)) fail('INVALID_SECRET_VALUE', `${key} must be up to ${max} printable characters without blanks`, span);
}

function checkServiceAccountKey(value: string, span: Span | undefined) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    // JSON.parse's own message quotes the text: never pass it on.
    fail('INVALID_SECRET_VALUE', 'KEY must be the service-account JSON key file as one string; it is not valid JSON', span);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) fail('INVALID_SECRET_VALUE', 'KEY must be a JSON object: the service-account key file', span);
  const key = parsed as Record<string, unknown>;
  if (key.type !== 'service_account') fail('INVALID_SECRET_VALUE', 'KEY must be a key of type service_account (its "type" field)', span);
  if (typeof key.token_uri !== 'string' || !GOOGLE_TOKEN_URIS.includes(key.token_uri)) {
    fail('INVALID_SECRET_VALUE', `KEY's token_uri must be Google's (${GOOGLE_TOKEN_URIS[0]})`, span);
  }
  for (const field of ['client_email', 'private_key']) {
    if (typeof key[field] !== 'string' || (key[field] as string).length === 0) fail('INVALID_SECRET_VALUE', `KEY has no ${field}: use the whole key file as downloaded`, span);
  }
}

const BUCKET: Record<'gs' | 's3', RegExp> = {
  // Google: 3-63 characters per dot-separated part, 222 in all; lowercase letters, digits, - _ and .
  gs: /^[a-z0-9](?:[a-z0-9._-]{1,220})[a-z0-9]$/,
  // Amazon: 3-63 lowercase letters, digits, - and .
  s3: /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
};

/** SCOPE: `<scheme>://<bucket>/<prefix>/`, a prefix (not a glob) ending on a `/` boundary. */
function checkScope(scheme: 'gs' | 's3', type: SecretType, value: string, span: Span | undefined) {
  const form = `${scheme}://<bucket>/<prefix>/`;
  const match = /^([A-Za-z0-9+.-]+):\/\/([^/]*)(\/.*)?$/.exec(value);
  if (!match) fail('INVALID_SECRET_VALUE', `SCOPE must be ${form}`, span);
  if (match[1] !== scheme) fail('INVALID_SECRET_VALUE', `SCOPE of a ${type} secret must start with ${scheme}:// (the scheme must match the type)`, span);
  if (!BUCKET[scheme].test(match[2])) fail('INVALID_SECRET_VALUE', `SCOPE must name a valid bucket: ${form}`, span);
  const path = match[3] ?? '';
  if (/[*?[\]{}]/.test(path)) fail('INVALID_SECRET_VALUE', 'SCOPE is a prefix, not a glob: it may not contain * ? [ ] { }', span);
  if (!path.endsWith('/')) fail('INVALID_SECRET_VALUE', `SCOPE must end with '/' (${form}): it is matched as a prefix on a boundary`, span);
  if (/[\u0000-\u001f\u007f\\]/.test(path)) fail('INVALID_SECRET_VALUE', 'SCOPE may not contain control characters or backslashes', span);
  const segments = path.slice(1, -1);
  if (segments !== '' && segments.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    fail('INVALID_SECRET_VALUE', "SCOPE's prefix may not have empty, '.' or '..' segments", span);
  }
}

/** Query parameters that carry credentials; they belong in a HEADER_* key instead. */
const CREDENTIAL_PARAMS = /^(?:access_?token|id_?token|token|api[_-]?key|apikey|key|secret|client_secret|password|passwd|pwd|auth|authorization|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential)$/i;

/** Host names that never reach the public internet. */
const INTERNAL_NAMES = /(?:^|\.)(?:localhost|local|internal|intranet|lan|home|corp|localdomain|home\.arpa)$/i;

async function checkEndpointUrl(value: string, span: Span | undefined, resolve: HostResolver) {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail('INVALID_SECRET_VALUE', 'URL is not a valid URL: write https://host/path', span);
  }
  if (url.protocol !== 'https:') fail('INVALID_SECRET_VALUE', 'URL must use https://', span);
  if (url.username !== '' || url.password !== '') fail('INVALID_SECRET_VALUE', 'URL may not carry credentials (user:password@): put them in HEADER_AUTHORIZATION', span);
  for (const name of url.searchParams.keys()) {
    if (CREDENTIAL_PARAMS.test(name)) fail('INVALID_SECRET_VALUE', 'URL may not carry credentials in its query string: put them in a HEADER_* key', span);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host)) {
    if (!isPublicAddress(host)) fail('INVALID_SECRET_VALUE', "URL's host must be a public address", span);
    return;
  }
  if (!host.includes('.') || INTERNAL_NAMES.test(host.replace(/\.$/, ''))) fail('INVALID_SECRET_VALUE', "URL's host must be a public host name", span);
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    fail('INVALID_SECRET_VALUE', "URL's host does not resolve", span);
  }
  if (addresses.length === 0) fail('INVALID_SECRET_VALUE', "URL's host does not resolve", span);
  if (!addresses.every(isPublicAddress)) fail('INVALID_SECRET_VALUE', "URL's host must resolve to public addresses only", span);
}
