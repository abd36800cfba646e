import type { ArgValue, FunctionArg, FunctionRef } from '../../../core/engine/index.ts';
import { quoteString } from '../../../core/engine/index.ts';
import type { SecretType } from '../../../core/db/index.ts';
import { JOBS_ERRORS, type ExternalRefusalCode } from '../errors.ts';

/**
 * READ_PARQUET / READ_CSV / READ_JSONL('<scheme>://bucket/prefix/…', credentials => '<workspace>.<secret>')
 * as the job service accepts them (docs/sql.md, "Reading private storage"): what a call may say,
 * whether its URLs lie under its secret's SCOPE, and the call the sandbox runs instead, over the
 * job's private copies of the objects. Everything here is pure; fetching is fetch.ts's.
 */

export type ExternalFormat = 'parquet' | 'csv' | 'jsonl';

/** The table functions that read private storage, by the name the user calls. */
export const EXTERNAL_READERS: ReadonlyMap<string, ExternalFormat> = new Map([
  ['read_parquet', 'parquet'],
  ['read_csv', 'csv'],
  ['read_jsonl', 'jsonl'],
]);

export interface ExternalUrl {
  /** The URL as written. */
  text: string;
  scheme: 's3' | 'gs';
  bucket: string;
  /** The key, or key pattern, after `bucket/`. */
  key: string;
  /** The fixed part of `key` before any wildcard: what is listed. */
  prefix: string;
  /** Unset: exactly the object `key`. Set: the keys of the listing of `prefix` that it matches. */
  matcher?: RegExp;
  /** Where the URL is written in the user's text. */
  position?: number;
}

export interface SecretRef {
  workspace: string;
  name: string;
  /** `workspace.name`. */
  label: string;
  position?: number;
}

export interface ExternalRead {
  /** The function as called, lowercased (`read_csv`). */
  fn: string;
  format: ExternalFormat;
  /** Where the call starts in the user's text. */
  position?: number;
  urls: ExternalUrl[];
  secret: SecretRef;
  /** The accepted format options, rendered by Lakeport as `name = <literal>`. */
  options: string[];
}

/** A READ_* call the job service refuses before anything is fetched (submit, check or plan time). */
export class ExternalReadRefusal extends Error {
  /** The HTTP status of its code, when refused at submit. */
  readonly status: number;

  constructor(
    readonly code: ExternalRefusalCode,
    message: string,
    readonly position?: number,
  ) {
    super(message);
    this.name = 'ExternalReadRefusal';
    this.status = JOBS_ERRORS[code];
  }
}

// ── options ──

interface OptionSpec {
  describe: string;
  /** The value as SQL, or undefined when it is not of the right kind. */
  render(value: ArgValue): string | undefined;
}

const bool: OptionSpec = { describe: 'true or false', render: (v) => (v.kind === 'boolean' ? String(v.value) : undefined) };
const text = (max: number): OptionSpec => ({
  describe: `a string of at most ${max} characters`,
  render: (v) => (v.kind === 'string' && v.value.length <= max ? quoteString(v.value) : undefined),
});
const integer = (min: number, max: number): OptionSpec => ({
  describe: `a whole number from ${min} to ${max}`,
  render: (v) => (v.kind === 'number' && Number.isSafeInteger(v.value) && v.value >= min && v.value <= max ? String(v.value) : undefined),
});
const oneOf = (...values: string[]): OptionSpec => ({
  describe: `one of ${values.map((s) => `'${s}'`).join(', ')}`,
  render: (v) => (v.kind === 'string' && values.includes(v.value.toLowerCase()) ? quoteString(v.value.toLowerCase()) : undefined),
});
const MAX_LIST = 10_000;
const MAX_TEXT = 1_000;
const stringList: OptionSpec = {
  describe: "a list of strings (['a', 'b'])",
  render: (v) =>
    v.kind === 'list' && v.items.length <= MAX_LIST && v.items.every((i) => i.kind === 'string' && i.value.length <= MAX_TEXT)
      ? `[${v.items.map((i) => quoteString((i as { value: string }).value)).join(', ')}]`
      : undefined,
};
const stringOrList: OptionSpec = { describe: 'a string or a list of strings', render: (v) => (v.kind === 'string' ? text(MAX_TEXT).render(v) : stringList.render(v)) };
/** `{'name': 'TYPE', …}`: column names to DuckDB type names, both strings. */
const typeStruct: OptionSpec = {
  describe: "a struct of column names to type names ({'id': 'BIGINT', 'name': 'VARCHAR'})",
  render: (v) =>
    v.kind === 'struct' && v.fields.length > 0 && v.fields.length <= MAX_LIST && v.fields.every((f) => f.value.kind === 'string' && f.value.value.length <= MAX_TEXT && f.name.length <= MAX_TEXT)
      ? `{${v.fields.map((f) => `${quoteString(f.name)}: ${quoteString((f.value as { value: string }).value)}`).join(', ')}}`
      : undefined,
};
const typeStructOrList: OptionSpec = { describe: 'a struct of column names to type names, or a list of type names', render: (v) => typeStruct.render(v) ?? stringList.render(v) };
const COMPRESSION = oneOf('auto', 'none', 'gzip', 'zstd');
const FORMAT_TEXT = text(100);

/** What each reader passes on to DuckDB; anything else is refused. */
const OPTIONS: Record<ExternalFormat, Record<string, OptionSpec>> = {
  parquet: {
    union_by_name: bool,
    binary_as_string: bool,
  },
  csv: {
    header: bool,
    auto_detect: bool,
    all_varchar: bool,
    normalize_names: bool,
    ignore_errors: bool,
    null_padding: bool,
    union_by_name: bool,
    strict_mode: bool,
    delim: text(16),
    sep: text(16),
    quote: text(4),
    escape: text(4),
    new_line: text(4),
    comment: text(4),
    decimal_separator: text(1),
    dateformat: FORMAT_TEXT,
    date_format: FORMAT_TEXT,
    timestampformat: FORMAT_TEXT,
    timestamp_format: FORMAT_TEXT,
    nullstr: stringOrList,
    columns: typeStruct,
    types: typeStructOrList,
    dtypes: typeStructOrList,
    column_types: typeStructOrList,
    names: stringList,
    column_names: stringList,
    skip: integer(0, 1_000_000_000),
    sample_size: integer(-1, 1_000_000_000),
    max_line_size: integer(1, 1_000_000_000),
    compression: COMPRESSION,
    encoding: oneOf('utf-8', 'utf-16', 'latin-1'),
  },
  jsonl: {
    columns: typeStruct,
    ignore_errors: bool,
    union_by_name: bool,
    convert_strings_to_integers: bool,
    dateformat: FORMAT_TEXT,
    date_format: FORMAT_TEXT,
    timestampformat: FORMAT_TEXT,
    timestamp_format: FORMAT_TEXT,
    sample_size: integer(-1, 1_000_000_000),
    maximum_object_size: integer(1, 1_000_000_000),
    maximum_depth: integer(-1, 1_000),
    compression: COMPRESSION,
  },
};

/** Options refused with a reason of their own. */
const REFUSED_OPTIONS: Record<string, string> = {
  filename: "it would show the server's copies of the files, not the objects",
  file_row_number: 'it is not supported for reads of private storage',
  hive_partitioning: "partition values would be read from the server's copies' paths, not the objects' keys",
  hive_types: "partition values would be read from the server's copies' paths, not the objects' keys",
  hive_types_autocast: "partition values would be read from the server's copies' paths, not the objects' keys",
  store_rejects: 'it writes tables, and a job only reads',
  rejects_table: 'it writes tables, and a job only reads',
  rejects_scan: 'it writes tables, and a job only reads',
  rejects_limit: 'it writes tables, and a job only reads',
  format: 'the function sets the format (read_jsonl reads newline-delimited JSON)',
};

// ── URLs ──

/** The schemes a URL may have, to the scheme of SCOPE they are matched against. */
const SCHEMES: Record<string, 's3' | 'gs'> = { s3: 's3', gs: 'gs', gcs: 'gs' };
/** A bucket name of either provider (their own rules are checked when SCOPE is; a URL must lie under SCOPE anyway). */
const BUCKET = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/;
const GLOB_CHARS = /[*?[]/;
/** URLs in one call. */
const MAX_URLS = 1_000;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * A key pattern as a regular expression over whole keys, in DuckDB's glob dialect: `*` and `?` stay
 * within one `/` segment, `**` crosses them, `[abc]`, `[a-z]` and `[!abc]` are character classes.
 * Undefined for an unclosed `[`.
 */
export function globToRegExp(pattern: string): RegExp | undefined {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        out += '.*';
        i++;
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const close = pattern.indexOf(']', i + 2);
      if (close < 0) return undefined;
      let body = pattern.slice(i + 1, close);
      const negated = body.startsWith('!') || body.startsWith('^');
      if (negated) body = body.slice(1);
      out += `[${negated ? '^/' : ''}${body.replace(/[\\\]^[]/g, '\\$&')}]`;
      i = close;
    } else out += escapeRegExp(c);
  }
  return new RegExp(`^${out}$`, 's');
}

function parseUrl(fn: string, text: string, position: number | undefined): ExternalUrl {
  const fail = (code: ExternalRefusalCode, message: string): never => {
    throw new ExternalReadRefusal(code, message, position);
  };
  const short = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/]*)(?:\/(.*))?$/s.exec(text);
  if (!match) {
    fail('FILE_ACCESS_NOT_ALLOWED', `${fn}() reads objects of private storage only, by URL (s3://bucket/key or gs://bucket/key); '${short}' is not one, and the server's own files are never read`);
  }
  if (match![1].toLowerCase() === 'file') fail('FILE_ACCESS_NOT_ALLOWED', `${fn}() reads objects of private storage only; the server's own files are never read`);
  const scheme = SCHEMES[match![1].toLowerCase()];
  if (!scheme) {
    fail('INVALID_EXTERNAL_READ', `${fn}() reads s3:// URLs (with an s3_access_key secret) and gs:// URLs (with a gcs_service_account secret); ${match![1]}:// is not supported`);
  }
  const bucket = match![2];
  if (!BUCKET.test(bucket)) fail('INVALID_EXTERNAL_READ', `'${short}' does not name a valid bucket: write ${scheme}://<bucket>/<key>`);
  const key = match![3] ?? '';
  if (/[\u0000-\u001f\u007f\\]/.test(key)) fail('INVALID_EXTERNAL_READ', `'${short}' has a control character or a backslash in its key`);
  const segments = key.split('/');
  if (segments.slice(0, -1).some((s) => s === '' || s === '.' || s === '..') || segments[segments.length - 1] === '.' || segments[segments.length - 1] === '..') {
    fail('INVALID_EXTERNAL_READ', `'${short}' has an empty, '.' or '..' segment in its key`);
  }
  // A key ending in '/' (or the bucket alone) means every object under it.
  const pattern = key === '' || key.endsWith('/') ? `${key}**` : key;
  const glob = pattern.search(GLOB_CHARS);
  if (glob < 0) return { text, scheme, bucket, key, prefix: key, ...(position === undefined ? {} : { position }) };
  const matcher = globToRegExp(pattern);
  if (!matcher) fail('INVALID_EXTERNAL_READ', `'${short}' has a '[' without its ']'`);
  return { text, scheme, bucket, key, prefix: pattern.slice(0, glob), matcher, ...(position === undefined ? {} : { position }) };
}

// ── calls ──

const SECRET_REFERENCE = /^([A-Za-z0-9_]{1,63})\.([A-Za-z_][A-Za-z0-9_]{0,62})$/;

function describeValue(value: ArgValue): string {
  switch (value.kind) {
    case 'parameter':
      return `a placeholder (:${value.name})`;
    case 'expression':
      return 'an expression';
    default:
      return `a ${value.kind}`;
  }
}

/**
 * One READ_* call with `credentials =>`, checked for shape: one URL (a string, or a list of strings)
 * first, the secret as `'<workspace>.<name>'`, and only the format options Lakeport passes on, each a
 * literal of its kind. Throws ExternalReadRefusal (400) with the place of the offending argument.
 */
export function parseExternalRead(call: FunctionRef): ExternalRead {
  const fn = call.name;
  const format = EXTERNAL_READERS.get(fn);
  const refuse = (code: ExternalRefusalCode, message: string, position: number | undefined = call.position): never => {
    throw new ExternalReadRefusal(code, message, position);
  };
  if (!format) refuse('TABLE_FUNCTION_NOT_ALLOWED', `${fn}() does not read private storage: use read_parquet, read_csv or read_jsonl with credentials => '<workspace>.<secret>'`);
  const positional = call.args.filter((a) => a.name === undefined);
  if (positional.length === 0) refuse('INVALID_EXTERNAL_READ', `${fn}() needs the URL to read first: ${fn}('s3://bucket/prefix/*.${format === 'jsonl' ? 'jsonl' : format}', credentials => '<workspace>.<secret>')`);
  if (positional.length > 1) refuse('INVALID_EXTERNAL_READ', `${fn}() takes one URL, or a list of URLs in [ ], then named options`, positional[1].position);
  if (call.args[0].name !== undefined) refuse('INVALID_EXTERNAL_READ', `${fn}()'s first argument is the URL to read`, call.args[0].position);

  // The URL(s).
  const first = positional[0];
  const written: { text: string; position?: number }[] = [];
  if (first.value.kind === 'string') written.push({ text: first.value.value, position: first.position });
  else if (first.value.kind === 'list' && first.value.items.length > 0 && first.value.items.every((i) => i.kind === 'string')) {
    if (first.value.items.length > MAX_URLS) refuse('INVALID_EXTERNAL_READ', `${fn}() takes at most ${MAX_URLS} URLs`, first.position);
    for (const [i, item] of first.value.items.entries()) written.push({ text: (item as { value: string }).value, position: first.itemPositions?.[i] ?? first.position });
  } else {
    refuse('INVALID_EXTERNAL_READ', `${fn}()'s URL must be written as a string literal ('s3://bucket/key'), or a list of them; it is ${describeValue(first.value)}`, first.position);
  }
  const urls = written.map((w) => parseUrl(fn, w.text, w.position));

  // The secret, and the options.
  let secret: SecretRef | undefined;
  const options: string[] = [];
  const seen = new Set<string>();
  for (const arg of call.args.slice(1) as (FunctionArg & { name: string })[]) {
    if (seen.has(arg.name)) refuse('INVALID_EXTERNAL_READ', `${arg.name} is given twice`, arg.position);
    seen.add(arg.name);
    if (arg.name === 'credentials') {
      if (arg.value.kind !== 'string') refuse('INVALID_SECRET_REFERENCE', `credentials must be the secret's name as a string literal ('<workspace>.<secret>'); it is ${describeValue(arg.value)}`, arg.position);
      const value = (arg.value as { value: string }).value;
      const m = SECRET_REFERENCE.exec(value);
      if (!m) {
        const bare = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(value);
        refuse(
          'INVALID_SECRET_REFERENCE',
          bare
            ? `Name the secret with its workspace: credentials => '<workspace>.${value.toLowerCase()}'`
            : "credentials names a secret as '<workspace>.<secret>' (e.g. 'sales.raw_reader')",
          arg.position,
        );
      }
      const [workspace, name] = [m![1].toLowerCase(), m![2].toLowerCase()];
      secret = { workspace, name, label: `${workspace}.${name}`, ...(arg.position === undefined ? {} : { position: arg.position }) };
      continue;
    }
    const refused = REFUSED_OPTIONS[arg.name];
    if (refused) refuse('INVALID_EXTERNAL_READ', `${fn}() does not take ${arg.name} here: ${refused}`, arg.position);
    const spec = OPTIONS[format!][arg.name];
    if (!spec) {
      const allowed = Object.keys(OPTIONS[format!]);
      refuse('INVALID_EXTERNAL_READ', `${arg.name} is not an option ${fn}() takes for private storage; it takes credentials${allowed.length ? `, ${allowed.join(', ')}` : ''}`, arg.position);
    }
    const sql = spec.render(arg.value);
    if (sql === undefined) refuse('INVALID_EXTERNAL_READ', `${arg.name} must be ${spec.describe}, written as a literal; it is ${describeValue(arg.value)}`, arg.position);
    options.push(`${arg.name} = ${sql}`);
  }
  if (!secret) refuse('INVALID_SECRET_REFERENCE', `${fn}() needs credentials => '<workspace>.<secret>'`);
  return { fn, format: format!, urls, secret: secret!, options, ...(call.position === undefined ? {} : { position: call.position }) };
}

/** The URL scheme a secret type reads, or undefined for a type that reads no storage. */
export function schemeOf(type: SecretType): 's3' | 'gs' | undefined {
  return type === 's3_access_key' ? 's3' : type === 'gcs_service_account' ? 'gs' : undefined;
}

/**
 * Whether a URL lies under a SCOPE: its fixed part (everything before the first wildcard) must start
 * with the scope, which ends in '/', so the match is on a bucket and segment boundary
 * (`s3://b/teamX/…` is never under `s3://b/team/`, `s3://b-other/` never under `s3://b/`).
 */
export function withinScope(url: ExternalUrl, scope: string): boolean {
  if (!scope.endsWith('/')) return false;
  return `${url.scheme}://${url.bucket}/${url.prefix}`.startsWith(scope);
}

/**
 * Refuses a read its secret cannot serve: a secret type that reads no storage, a URL of the other
 * provider, or a URL outside the secret's SCOPE (403, with the place of the URL).
 */
export function checkSecretFits(read: ExternalRead, secret: { type: SecretType; scope: string | undefined }): void {
  const scheme = schemeOf(secret.type);
  if (!scheme) {
    throw new ExternalReadRefusal(
      'SECRET_TYPE_NOT_READABLE',
      `Secret ${read.secret.label} is an ${secret.type} secret; reading storage takes an s3_access_key or gcs_service_account secret`,
      read.secret.position,
    );
  }
  for (const url of read.urls) {
    if (url.scheme !== scheme) {
      throw new ExternalReadRefusal(
        'SECRET_TYPE_NOT_READABLE',
        `Secret ${read.secret.label} is a ${secret.type} secret and reads ${scheme}:// URLs only; '${url.text}' is ${url.scheme}://`,
        url.position,
      );
    }
    if (!secret.scope || !withinScope(url, secret.scope)) {
      throw new ExternalReadRefusal(
        'EXTERNAL_SCOPE_VIOLATION',
        `'${url.text.length > 200 ? `${url.text.slice(0, 200)}…` : url.text}' is outside the SCOPE of secret ${read.secret.label} (${secret.scope ?? 'none'}): a URL must lie under it, up to its first wildcard`,
        url.position,
      );
    }
  }
}

/** The call the sandbox runs instead: the same reader over the job's local copies, with the accepted options. */
export function renderRead(read: ExternalRead, files: string[]): string {
  const list = `[${files.map(quoteString).join(', ')}]`;
  switch (read.format) {
    case 'parquet':
      return `read_parquet(${[list, ...read.options].join(', ')})`;
    case 'csv':
      return `read_csv(${[list, ...read.options].join(', ')})`;
    case 'jsonl':
      return `read_json(${[list, "format = 'newline_delimited'", ...read.options].join(', ')})`;
  }
}
