/** READ_* calls with credentials: what a call may say, URL patterns, SCOPE boundaries, and the rewritten call. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlAnalyzer, type FunctionRef } from '../../../core/engine/index.ts';
import { checkSecretFits, ExternalReadRefusal, globToRegExp, parseExternalRead, renderRead, withinScope, type ExternalRead } from './reads.ts';

let analyzer: SqlAnalyzer;
beforeAll(async () => {
  analyzer = await SqlAnalyzer.create();
});
afterAll(async () => analyzer.close());

async function call(sql: string): Promise<FunctionRef> {
  const a = await analyzer.analyze(sql);
  if (a.kind !== 'select') throw new Error(`not a select: ${JSON.stringify(a)}`);
  return a.tableFunctions[0];
}
const read = async (sql: string) => parseExternalRead(await call(sql));
async function refusal(sql: string): Promise<ExternalReadRefusal> {
  const error = await read(sql).then(() => undefined, (e: unknown) => e);
  if (!(error instanceof ExternalReadRefusal)) throw new Error(`expected a refusal of ${sql}, got ${String(error)}`);
  return error;
}

describe('parseExternalRead', () => {
  it('takes one URL, the secret as workspace.name, and the format options it passes on', async () => {
    const sql = "SELECT * FROM READ_CSV('s3://acme-lake/team/in/*.csv', header = true, delim => ';', columns = {'id': 'BIGINT', 'it''s': 'VARCHAR'}, credentials => 'Sales.Raw_Reader') t";
    const r = await read(sql);
    expect(r).toMatchObject({
      fn: 'read_csv',
      format: 'csv',
      position: sql.indexOf('READ_CSV'),
      secret: { workspace: 'sales', name: 'raw_reader', label: 'sales.raw_reader', position: sql.indexOf("'Sales") },
      options: ['header = true', "delim = ';'", "columns = {'id': 'BIGINT', 'it''s': 'VARCHAR'}"],
    });
    expect(r.urls).toEqual([
      { text: 's3://acme-lake/team/in/*.csv', scheme: 's3', bucket: 'acme-lake', key: 'team/in/*.csv', prefix: 'team/in/', matcher: expect.any(RegExp), position: sql.indexOf("'s3:") },
    ]);
  });

  it('reads exact keys, lists of URLs, a prefix ending in / (everything under it) and gcs:// as gs://', async () => {
    const exact = await read("FROM read_parquet('s3://acme-lake/team/a.parquet', credentials => 'ws.s')");
    expect(exact.urls[0]).toEqual({ text: 's3://acme-lake/team/a.parquet', scheme: 's3', bucket: 'acme-lake', key: 'team/a.parquet', prefix: 'team/a.parquet', position: 18 });
    const sql = "FROM read_jsonl(['gs://gcs-lake/x/a.jsonl', 'gcs://gcs-lake/x/'], credentials => 'ws.s')";
    const list = await read(sql);
    expect(list.urls.map((u) => [u.scheme, u.key, u.prefix, u.matcher?.source, u.position])).toEqual([
      ['gs', 'x/a.jsonl', 'x/a.jsonl', undefined, sql.indexOf("'gs:")],
      ['gs', 'x/', 'x/', '^x\\/.*$', sql.indexOf("'gcs:")],
    ]);
    const bucket = await read("FROM read_parquet('s3://acme-lake', credentials => 'ws.s')");
    expect(bucket.urls[0]).toMatchObject({ key: '', prefix: '' });
  });

  it('refuses local paths and other schemes', async () => {
    for (const path of ['/etc/passwd', 'data.csv', 'file:///etc/passwd', '../x.csv']) {
      const sql = `FROM read_csv('${path}', credentials => 'ws.s')`;
      expect(await refusal(sql)).toMatchObject({ code: 'FILE_ACCESS_NOT_ALLOWED', status: 400, position: sql.indexOf(`'${path}`) });
    }
    for (const url of ['https://example.com/x.csv', 'az://c/x.csv', 'hf://datasets/x']) {
      expect(await refusal(`FROM read_csv('${url}', credentials => 'ws.s')`)).toMatchObject({ code: 'INVALID_EXTERNAL_READ', message: expect.stringContaining('is not supported') });
    }
    expect((await refusal("FROM read_csv('s3://acme-lake/a/../b.csv', credentials => 'ws.s')")).message).toContain("'..'");
    expect((await refusal("FROM read_csv('s3://acme-lake/a//b.csv', credentials => 'ws.s')")).message).toContain('empty');
    expect((await refusal("FROM read_csv('s3://x/a.csv', credentials => 'ws.s')")).message).toContain('valid bucket');
    expect((await refusal("FROM read_csv('s3://acme-lake/a[.csv', credentials => 'ws.s')")).message).toContain("'['");
  });

  it('refuses URLs that are not literals, a second URL, and misplaced arguments', async () => {
    expect(await refusal("FROM read_csv(:url, credentials => 'ws.s')")).toMatchObject({ code: 'INVALID_EXTERNAL_READ', message: expect.stringContaining('placeholder (:url)') });
    expect(await refusal("FROM read_csv('s3://acme-lake/' || 'a.csv', credentials => 'ws.s')")).toMatchObject({ message: expect.stringContaining('an expression') });
    expect(await refusal("FROM read_csv(['s3://acme-lake/a.csv', 1], credentials => 'ws.s')")).toMatchObject({ code: 'INVALID_EXTERNAL_READ' });
    expect(await refusal("FROM read_csv('s3://acme-lake/a.csv', 's3://acme-lake/b.csv', credentials => 'ws.s')")).toMatchObject({ message: expect.stringContaining('one URL') });
    expect(await refusal("FROM read_csv(credentials => 'ws.s')")).toMatchObject({ message: expect.stringContaining('needs the URL') });
  });

  it('names the secret as <workspace>.<secret>, a string literal', async () => {
    expect(await refusal("FROM read_csv('s3://acme-lake/a.csv', credentials => 'raw')")).toMatchObject({
      code: 'INVALID_SECRET_REFERENCE',
      message: "Name the secret with its workspace: credentials => '<workspace>.raw'",
    });
    expect(await refusal("FROM read_csv('s3://acme-lake/a.csv', credentials => 'a.b.c')")).toMatchObject({ code: 'INVALID_SECRET_REFERENCE' });
    expect(await refusal("FROM read_csv('s3://acme-lake/a.csv', credentials => :s)")).toMatchObject({ code: 'INVALID_SECRET_REFERENCE', message: expect.stringContaining('placeholder') });
    expect(await refusal("FROM read_csv('s3://acme-lake/a.csv', credentials => 'ws.a', credentials => 'ws.b')")).toMatchObject({ message: 'credentials is given twice' });
  });

  it('passes on only safe format options, each a literal of its kind', async () => {
    const cases: [string, string][] = [
      ["filename = true", "it would show the server's copies"],
      ['hive_partitioning = true', 'partition values'],
      ["store_rejects = true", 'writes tables'],
      ["rejects_table = 'x'", 'writes tables'],
      ["sample_size = 'all'", 'must be a whole number'],
      ["header = 'yes'", 'must be true or false'],
      ['header = (SELECT true)', 'an expression'],
      ["delim = :d", 'placeholder'],
      ["columns = {'a': 1}", 'must be a struct'],
      ["compression = 'lz4'", "one of 'auto', 'none', 'gzip', 'zstd'"],
      ["allow_quoted_nulls = true", 'is not an option read_csv() takes for private storage'],
    ];
    for (const [option, message] of cases) {
      const sql = `FROM read_csv('s3://acme-lake/a.csv', ${option}, credentials => 'ws.s')`;
      expect(await refusal(sql), option).toMatchObject({ code: 'INVALID_EXTERNAL_READ', message: expect.stringContaining(message), position: expect.any(Number) });
    }
    expect(await refusal("FROM read_jsonl('s3://acme-lake/a.jsonl', format = 'array', credentials => 'ws.s')")).toMatchObject({ message: expect.stringContaining('sets the format') });
    expect(await refusal("FROM read_parquet('s3://acme-lake/a.parquet', header = true, credentials => 'ws.s')")).toMatchObject({
      message: 'header is not an option read_parquet() takes for private storage; it takes credentials, union_by_name, binary_as_string',
    });
  });
});

describe('globToRegExp', () => {
  it("follows DuckDB's glob dialect", () => {
    const g = (p: string) => globToRegExp(p)!;
    expect(g('a/*.csv').test('a/x.csv')).toBe(true);
    expect(g('a/*.csv').test('a/b/x.csv')).toBe(false);
    expect(g('a/**/*.csv').test('a/b/c/x.csv')).toBe(true);
    expect(g('a/**').test('a/b/c/x.csv')).toBe(true);
    expect(g('a/?.csv').test('a/1.csv')).toBe(true);
    expect(g('a/?.csv').test('a//.csv')).toBe(false);
    expect(g('a/[0-9].csv').test('a/7.csv')).toBe(true);
    expect(g('a/[!0-9].csv').test('a/7.csv')).toBe(false);
    expect(g('a/[!0-9].csv').test('a/x.csv')).toBe(true);
    expect(g('a/(x)+.csv').test('a/(x)+.csv')).toBe(true);
    expect(g('a/x.csv').test('a/xxcsv')).toBe(false);
    expect(globToRegExp('a/[x')).toBeUndefined();
  });
});

describe('SCOPE', () => {
  const url = async (u: string) => (await read(`FROM read_parquet('${u}', credentials => 'ws.s')`)).urls[0];

  it('is a prefix on a bucket and segment boundary, up to the first wildcard', async () => {
    const scope = 's3://acme-lake/team/';
    expect(withinScope(await url('s3://acme-lake/team/a.parquet'), scope)).toBe(true);
    expect(withinScope(await url('s3://acme-lake/team/'), scope)).toBe(true);
    expect(withinScope(await url('s3://acme-lake/team/**/x.parquet'), scope)).toBe(true);
    expect(withinScope(await url('s3://acme-lake/teamX/a.parquet'), scope)).toBe(false);
    expect(withinScope(await url('s3://acme-lake/team'), scope)).toBe(false);
    expect(withinScope(await url('s3://acme-lake/team*/a.parquet'), scope)).toBe(false);
    expect(withinScope(await url('s3://acme-lake/te?m/a.parquet'), scope)).toBe(false);
    expect(withinScope(await url('s3://acme-lake-other/team/a.parquet'), scope)).toBe(false);
    expect(withinScope(await url('s3://acme-lake/a.parquet'), 's3://acme-lake/')).toBe(true);
    expect(withinScope(await url('s3://acme-lakes/a.parquet'), 's3://acme-lake/')).toBe(false);
    expect(withinScope(await url('gcs://gcs-lake/x/a.parquet'), 'gs://gcs-lake/x/')).toBe(true);
  });

  it('refuses a URL outside SCOPE (403, at the URL), of the other provider, or with an http_endpoint secret', async () => {
    const sql = "FROM read_parquet(['s3://acme-lake/team/a.parquet', 's3://acme-lake/teamX/b.parquet'], credentials => 'ws.s')";
    const r = await read(sql);
    const refused = (fn: () => void) => {
      try {
        fn();
      } catch (e) {
        return e as ExternalReadRefusal;
      }
      throw new Error('not refused');
    };
    expect(refused(() => checkSecretFits(r, { type: 's3_access_key', scope: 's3://acme-lake/team/' }))).toMatchObject({
      code: 'EXTERNAL_SCOPE_VIOLATION',
      status: 403,
      position: sql.indexOf("'s3://acme-lake/teamX"),
      message: "'s3://acme-lake/teamX/b.parquet' is outside the SCOPE of secret ws.s (s3://acme-lake/team/): a URL must lie under it, up to its first wildcard",
    });
    expect(() => checkSecretFits(r, { type: 's3_access_key', scope: 's3://acme-lake/' })).not.toThrow();
    expect(refused(() => checkSecretFits(r, { type: 'gcs_service_account', scope: 'gs://acme-lake/' }))).toMatchObject({ code: 'SECRET_TYPE_NOT_READABLE', position: sql.indexOf("'s3:") });
    expect(refused(() => checkSecretFits(r, { type: 'http_endpoint', scope: undefined }))).toMatchObject({ code: 'SECRET_TYPE_NOT_READABLE', position: sql.indexOf("'ws.s'") });
  });
});

describe('renderRead', () => {
  it('reads the local copies with the accepted options; JSONL through read_json', () => {
    const base: Omit<ExternalRead, 'format' | 'fn'> = { urls: [], secret: { workspace: 'ws', name: 's', label: 'ws.s' }, options: ['header = true'] };
    expect(renderRead({ ...base, fn: 'read_csv', format: 'csv' }, ["/tmp/j/0-a.csv", "/tmp/j/1-it's.csv"])).toBe("read_csv(['/tmp/j/0-a.csv', '/tmp/j/1-it''s.csv'], header = true)");
    expect(renderRead({ ...base, fn: 'read_jsonl', format: 'jsonl', options: [] }, ['/tmp/j/0-a.jsonl'])).toBe("read_json(['/tmp/j/0-a.jsonl'], format = 'newline_delimited')");
    expect(renderRead({ ...base, fn: 'read_parquet', format: 'parquet', options: [] }, ['/tmp/j/0-a'])).toBe("read_parquet(['/tmp/j/0-a'])");
  });
});
