import type { FastifyInstance, FastifyRequest } from 'fastify';
import { appError, RequestValidationError } from '../errors/index.ts';

/**
 * What the HTTP edge refuses before any service sees it (docs/security.md):
 *
 * - JSON nested more than MAX_JSON_DEPTH levels: 422 `json_too_deep`, decided by a scan of the text
 *   before it is parsed, so no recursive code (validation, ours) ever walks a pathological body;
 * - a NUL character (U+0000) anywhere: a path parameter, a query name or value, a header, a body
 *   string or key. PostgreSQL's text cannot hold one, and no name, id or value needs one: 422
 *   `string_nul` at its place (`loc`); in credentials (Authorization, cookies, the admin token),
 *   401. Bodies that services read themselves (multipart parts) use `refuseNul`, `jsonTooDeep` and
 *   `jsonTooDeepError` directly.
 */
export const MAX_JSON_DEPTH = 64;

const NUL_MESSAGE = 'NUL characters (\\u0000) are not allowed';
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'x-admin-token']);

/** Whether JSON text nests arrays and objects more than `max` deep (strings are skipped; the text need not be valid). */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c /* \ */) i++;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}

/** A NUL shown as `\u0000`, for keys that hold one (a loc must not carry the character itself). */
const visible = (key: string) => key.replace(/\u0000/g, '\\u0000');

/** A plain object, or one without Object.prototype (query strings and path parameters are); not a stream or a buffer. */
function isRecord(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return proto === null || proto === Object.prototype || Object.getPrototypeOf(proto) === null;
}

/**
 * Where the first NUL character in a value is: the path of keys and indexes to the string (or the
 * key) that holds one, or undefined. Walks plain objects and arrays without recursion.
 */
function nulPath(value: unknown): (string | number)[] | undefined {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return path;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: [...path, i] });
    } else if (isRecord(v)) {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i];
        if (key.includes('\u0000')) return [...path, key];
        stack.push({ value: item, path: [...path, key] });
      }
    }
  }
  return undefined;
}

const nulError = (loc: (string | number)[]) => RequestValidationError.at(loc, NUL_MESSAGE, 'string_nul');

/**
 * Whether a value holds a NUL anywhere (a string, a key or a string inside), without building the
 * paths nulPath does: the usual answer, no, costs no allocation per value. Without recursion too.
 */
function holdsNul(value: unknown): boolean {
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return true;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (isRecord(v)) {
      for (const key of Object.keys(v)) {
        if (key.includes('\u0000')) return true;
        stack.push(v[key]);
      }
    }
  }
  return false;
}

/** Throws the 422 for the first NUL in `value` (a string, or a parsed JSON value), reported under `loc`. */
export function refuseNul(value: unknown, loc: (string | number)[]): void {
  if (!holdsNul(value)) return;
  const at = nulPath(value);
  if (at) throw nulError([...loc, ...at].map((k) => (typeof k === 'string' ? visible(k) : k)));
}

/** The 422 for JSON nested too deep, at `loc`. */
export const jsonTooDeepError = (loc: (string | number)[]) => RequestValidationError.at(loc, `JSON nested more than ${MAX_JSON_DEPTH} levels deep`, 'json_too_deep');

/** Path parameters, query and headers: checked as the request arrives, before authentication looks at any of them. */
async function refuseNulInRequest(request: FastifyRequest) {
  for (const name of Object.keys(request.headers)) {
    const value = request.headers[name];
    if (!(typeof value === 'string' ? value.includes('\u0000') : Array.isArray(value) && value.some((v) => v.includes('\u0000')))) continue;
    if (CREDENTIAL_HEADERS.has(name)) {
      throw appError('UNAUTHORIZED', `Credentials may not contain NUL characters (${name})`, { headers: { 'www-authenticate': 'Bearer realm="lakeport"' } });
    }
    throw nulError(['header', name]);
  }
  refuseNul(request.params, ['path']);
  refuseNul(request.query, ['query']);
}

/** The body, once parsed (JSON, form); a stream or a multipart body is its route's to check. */
async function refuseNulInBody(request: FastifyRequest) {
  refuseNul(request.body, ['body']);
}

/** Installs the JSON parser with its depth limit and the NUL hooks, for every route registered after it. */
export function registerInputGuards(app: FastifyInstance) {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = String(body);
    if (jsonTooDeep(text)) {
      done(jsonTooDeepError(['body']), undefined);
      return;
    }
    parseJson(request, text, done);
  });
  app.addHook('onRequest', refuseNulInRequest);
  app.addHook('preValidation', refuseNulInBody);
}
