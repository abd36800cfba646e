import { odataError, type ODATA_ERRORS } from './errors.ts';

export const MAX_TOP = 25_000;
export const DEFAULT_TOP = 100;

/** The system query options of a rows request, checked; the expression options are still text. */
export interface RowsOptions {
  filter?: string;
  select?: string;
  orderby?: string;
  apply?: string;
  /** Page size (OData's $top; server-driven paging continues through @odata.nextLink). */
  top: number;
  skip: number;
  count: boolean;
  /**
   * Where this page starts (our $skiptoken, opaque to clients): for a plain read a row number, then
   * (after a dot) how many matching rows from it on were already delivered; for an ordered or
   * aggregated read the count of rows already delivered.
   */
  skiptoken: number;
  /** Plain reads: matching rows from row `skiptoken` on that earlier pages delivered. */
  skiptokenRows: number;
  /** IEEE754Compatible=true (in $format, Accept or Content-Type): Int64 and Decimal values as JSON strings. */
  ieee754?: boolean;
}

const EXPRESSIONS = ['$filter', '$select', '$orderby', '$apply'] as const;
const NOT_IMPLEMENTED = new Set(['$search', '$expand']);
const KNOWN = new Set<string>([...EXPRESSIONS, '$top', '$skip', '$count', '$format', '$skiptoken']);

function integer(name: string, text: string, min: number, max: number, code: keyof typeof ODATA_ERRORS): number {
  if (!/^\d{1,16}$/.test(text.trim()) || Number(text) < min || Number(text) > max) {
    throw odataError(code, `${name} must be a whole number from ${min} to ${max}, not ${JSON.stringify(text)}`);
  }
  return Number(text);
}

/** 406 unless `$format` (when given) asks for what the resource serves: JSON rows and documents, XML metadata. */
export function checkFormat(query: Record<string, unknown>, served: 'json' | 'xml'): void {
  const format = query.$format;
  if (format === undefined) return;
  const type = typeof format === 'string' ? format.split(';')[0].trim().toLowerCase() : '';
  if (type !== served && type !== `application/${served}`) {
    throw odataError('UNSUPPORTED_FORMAT', `$format=${String(format)} is not served here: use $format=${served} (the default)`);
  }
}

const IEEE754_TRUE = /(?:^|[;,\s])ieee754compatible\s*=\s*"?true"?\s*(?:$|[;,])/i;

/**
 * Whether the client asked for IEEE754Compatible=true: as a parameter of `$format`, of an Accept
 * media type (Excel and .NET clients send `application/json;IEEE754Compatible=true`) or of the
 * Content-Type.
 */
export function ieee754Compatible(query: Record<string, unknown>, headers: Record<string, string | string[] | undefined>): boolean {
  const texts = [query.$format, headers.accept, headers['content-type']].flat();
  return texts.some((text) => typeof text === 'string' && IEEE754_TRUE.test(text));
}

/** A 400 for anything the spec's rows endpoint refuses; 501 for $search and $expand. */
export function parseRowsOptions(query: Record<string, unknown>): RowsOptions {
  const text: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) {
    if (!name.startsWith('$')) continue; // custom query options are ignored, as OData allows
    if (NOT_IMPLEMENTED.has(name)) throw odataError('NOT_IMPLEMENTED', `${name} is not implemented`);
    if (!KNOWN.has(name)) throw odataError('UNSUPPORTED_QUERY_OPTION', `Unknown query option ${name} (query options are case-sensitive)`);
    if (typeof value !== 'string') throw odataError('DUPLICATE_QUERY_OPTION', `${name} may be given only once`);
    text[name] = value;
  }
  checkFormat(text, 'json');
  const count = text.$count;
  if (count !== undefined && count !== 'true' && count !== 'false') throw odataError('INVALID_COUNT', `$count must be true or false, not ${JSON.stringify(count)}`);
  if (text.$skip !== undefined && /^\s*-/.test(text.$skip)) throw odataError('INVALID_SKIP', '$skip must not be negative');
  const skip = text.$skip === undefined ? 0 : integer('$skip', text.$skip, 0, 999_999_999, 'INVALID_SKIP');
  if (text.$skip !== undefined && !text.$orderby?.trim()) {
    throw odataError('SKIP_WITHOUT_ORDERBY', '$skip needs $orderby, so the rows it skips are well defined (server-driven paging needs neither: follow @odata.nextLink)');
  }
  return {
    filter: nonEmpty(text.$filter),
    select: nonEmpty(text.$select),
    orderby: nonEmpty(text.$orderby),
    apply: nonEmpty(text.$apply),
    top: text.$top === undefined ? DEFAULT_TOP : integer('$top', text.$top, 0, MAX_TOP, 'INVALID_TOP'),
    skip,
    count: count === 'true',
    ...parseSkiptoken(text.$skiptoken),
  };
}

/**
 * The options with `$orderby` dropped when it asks for the rows' own order — the row number `rowId`
 * ascending, alone — and nothing filters or reshapes the rows: then a page, `$skip` included, is
 * found by row number (the Parquet scan skips to it) rather than by sorting every row. A page token
 * stays the count of rows delivered after `$skip` (without a filter, row `skip + token`).
 */
export function inRowOrder(options: RowsOptions, rowId: string): RowsOptions {
  const key = /^\s*(\S+?)(?:\s+asc)?\s*$/i.exec(options.orderby ?? '');
  if (!key || key[1] !== rowId || options.filter !== undefined || options.apply !== undefined) return options;
  return { ...options, orderby: undefined };
}

/** `row` or `row.rows`, both whole numbers (see RowsOptions.skiptoken). */
export function parseSkiptoken(text: string | undefined): Pick<RowsOptions, 'skiptoken' | 'skiptokenRows'> {
  if (text === undefined) return { skiptoken: 0, skiptokenRows: 0 };
  const match = /^(\d{1,16})(?:\.(\d{1,16}))?$/.exec(text.trim());
  const [row, rows] = [Number(match?.[1]), Number(match?.[2] ?? 0)];
  if (!match || row > Number.MAX_SAFE_INTEGER || rows > Number.MAX_SAFE_INTEGER) {
    throw odataError('INVALID_SKIPTOKEN', `$skiptoken must be a token taken from an @odata.nextLink, not ${JSON.stringify(text)}`);
  }
  return { skiptoken: row, skiptokenRows: rows };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
