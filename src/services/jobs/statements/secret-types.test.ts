import { describe, expect, it } from 'vitest';
import { StatementError } from './errors.ts';
import { parseStatement, type CreateSecret } from './parser.ts';
import { isPublicAddress, type HostResolver } from '../../../core/net/index.ts';
import { checkSecretShape, checkSecretValues } from './secret-types.ts';
import { resolveValues } from './executor.ts';
import { serviceAccountKey } from '../../../../test/secret-fixtures.ts';

const resolver =
  (table: Record<string, string[]>): HostResolver =>
  async (host) => {
    const found = table[host];
    if (!found) throw new Error('ENOTFOUND');
    return found;
  };
const dns = resolver({ 'hooks.example.com': ['93.184.216.34'], 'internal.example.com': ['10.1.2.3'], 'mixed.example.com': ['93.184.216.34', '127.0.0.1'], 'v6.example.com': ['2606:2800:220:1::1'] });

/** Parses a CREATE SECRET and runs every check of its values; the error code, or 'ok'. */
async function check(sql: string, parameters: Record<string, string | number | boolean | null> = {}): Promise<string> {
  try {
    const s = parseStatement(sql) as CreateSecret;
    const spec = checkSecretShape(s);
    const values = resolveValues(s, parameters);
    await checkSecretValues(spec.type, values, Object.fromEntries(s.options.map((o) => [o.key.value, o.value])), dns);
    return 'ok';
  } catch (error) {
    if (error instanceof StatementError) {
      // Whatever the rule, the message never carries the value.
      for (const v of Object.values(parameters)) if (typeof v === 'string' && v.length > 6) expect(error.message).not.toContain(v);
      return `${error.code}: ${error.message}`;
    }
    throw error;
  }
}

const gcs = (key: string, scope = "'gs://bucket/prefix/'") => `CREATE SECRET s IN w (TYPE 'gcs_service_account', KEY ${key}, SCOPE ${scope})`;
const s3 = (options: string) => `CREATE SECRET s IN w (TYPE 's3_access_key', ${options})`;
const http = (options: string) => `CREATE SECRET s IN w (TYPE 'http_endpoint', ${options})`;

describe('types and aliases', () => {
  it.each([
    ['gcs_service_account', 'gcs_service_account'],
    ['storage_a_service_account', 'gcs_service_account'],
    ['S3_ACCESS_KEY', 's3_access_key'],
    ['storage_b_access_key', 's3_access_key'],
    ['http_endpoint', 'http_endpoint'],
  ])("TYPE '%s' is %s", (written, type) => {
    const s = parseStatement(`CREATE SECRET s IN w (TYPE '${written}')`) as CreateSecret;
    // No keys were given: the type was understood when the complaint is about its keys
    // (every type has a required key, so a statement without keys must be refused).
    expect(() => checkSecretShape(s)).toThrow(StatementError);
    expect(() => checkSecretShape(s)).toThrow(expect.objectContaining({ code: 'MISSING_SECRET_KEY', message: expect.stringContaining(`A ${type} secret requires`) }));
  });

  it('refuses an unknown TYPE, naming the known ones', async () => {
    expect(await check("CREATE SECRET s IN w (TYPE 'azure_sas', KEY 'x')")).toMatch(/^INVALID_SECRET_TYPE: .*gcs_service_account.*s3_access_key.*http_endpoint/);
  });

  it('refuses a key the type does not have (and the spec neutral types get the same table)', async () => {
    expect(await check(gcs(':k', "'gs://b/'") .replace(')', ", REGION 'eu')"), { k: serviceAccountKey() })).toMatch(/^UNKNOWN_SECRET_KEY: REGION is not a key of a gcs_service_account secret; its keys are KEY, SCOPE/);
    expect(await check("CREATE SECRET s IN w (TYPE 'storage_b_access_key', KEY 'x')")).toMatch(/^UNKNOWN_SECRET_KEY: KEY is not a key of a s3_access_key secret/);
    expect(await check(http("URL 'https://93.184.216.34/', HEADER_COOKIE 'x'"))).toMatch(/^UNKNOWN_SECRET_KEY: HEADER_COOKIE/);
  });
});

describe('gcs_service_account (storage_a_service_account)', () => {
  it('takes a service-account key and a gs:// scope', async () => {
    expect(await check(gcs(':k'), { k: serviceAccountKey() })).toBe('ok');
    expect(await check(gcs(':k', "'gs://my-bucket_1.example/'"), { k: serviceAccountKey() })).toBe('ok');
    expect(await check(gcs(':k'), { k: serviceAccountKey({ token_uri: 'https://accounts.google.com/o/oauth2/token' }) })).toBe('ok');
  });

  it('requires KEY and SCOPE', async () => {
    expect(await check("CREATE SECRET s IN w (TYPE 'gcs_service_account', KEY :k)", { k: serviceAccountKey() })).toMatch(/^MISSING_SECRET_KEY: A gcs_service_account secret requires SCOPE/);
    expect(await check("CREATE SECRET s IN w (TYPE 'gcs_service_account', SCOPE 'gs://b/')")).toMatch(/^MISSING_SECRET_KEY: A gcs_service_account secret requires KEY/);
  });

  it.each([
    ['not JSON', 'not json at all', /not valid JSON/],
    ['a JSON array', '[1,2]', /JSON object/],
    ['another kind of key', serviceAccountKey({ type: 'authorized_user' }), /type service_account/],
    ['a key without type', serviceAccountKey({ type: undefined }), /type service_account/],
    ["a token_uri that is not Google's", serviceAccountKey({ token_uri: 'https://evil.example/token' }), /token_uri must be Google's/],
    ['a look-alike token_uri', serviceAccountKey({ token_uri: 'https://oauth2.googleapis.com.evil.example/token' }), /token_uri must be Google's/],
    ['no private_key', serviceAccountKey({ private_key: undefined }), /no private_key/],
    ['no client_email', serviceAccountKey({ client_email: '' }), /no client_email/],
  ])('refuses %s as KEY', async (_, key, message) => {
    const result = await check(gcs(':k'), { k: key });
    expect(result).toMatch(/^INVALID_SECRET_VALUE/);
    expect(result).toMatch(message);
  });

  it.each([
    ["'s3://bucket/prefix/'", /must start with gs:\/\/ \(the scheme must match the type\)/],
    ["'GS://bucket/'", /must start with gs:\/\//],
    ["'gs://bucket/prefix'", /must end with '\/'/],
    ["'gs://bucket'", /must end with '\/'/],
    ["'gs://b/'", /valid bucket/],
    ["'gs://Bucket/'", /valid bucket/],
    ["'gs:///prefix/'", /valid bucket/],
    ["'gs://bucket/pre*/'", /not a glob/],
    ["'gs://bucket/a//b/'", /empty, '\.' or '\.\.' segments/],
    ["'gs://bucket/../b/'", /empty, '\.' or '\.\.' segments/],
    ["'bucket/prefix/'", /SCOPE must be gs:\/\//],
  ])('refuses SCOPE %s', async (scope, message) => {
    expect(await check(gcs(':k', scope), { k: serviceAccountKey() })).toMatch(message);
  });
});

describe('s3_access_key (storage_b_access_key)', () => {
  const base = "ACCESS_KEY_ID 'AKIAIOSFODNN7EXAMPLE', SECRET_ACCESS_KEY :sk, SCOPE 's3://my-bucket/data/'";

  it('takes a key id, a secret, a scope and optionally a region', async () => {
    expect(await check(s3(base), { sk: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' })).toBe('ok');
    expect(await check(s3(`${base}, REGION 'eu-west-1'`), { sk: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' })).toBe('ok');
    expect(await check("CREATE SECRET s IN w (TYPE 'storage_b_access_key', ACCESS_KEY_ID 'minioadmin', SECRET_ACCESS_KEY 'minioadmin', SCOPE 's3://lake/')")).toBe('ok');
  });

  it.each([
    ["SECRET_ACCESS_KEY 'x', SCOPE 's3://bkt/'", 'ACCESS_KEY_ID'],
    ["ACCESS_KEY_ID 'AKIA1', SCOPE 's3://bkt/'", 'SECRET_ACCESS_KEY'],
    ["ACCESS_KEY_ID 'AKIA1', SECRET_ACCESS_KEY 'x'", 'SCOPE'],
  ])('requires every required key (%s lacks %s)', async (options, missing) => {
    expect(await check(s3(options))).toMatch(new RegExp(`^MISSING_SECRET_KEY: A s3_access_key secret requires ${missing}`));
  });

  it('requires SESSION_TOKEN for a temporary key id', async () => {
    const temporary = "ACCESS_KEY_ID 'ASIAIOSFODNN7EXAMPLE', SECRET_ACCESS_KEY 'secret', SCOPE 's3://bkt/'";
    expect(await check(s3(temporary))).toMatch(/^SESSION_TOKEN_REQUIRED: A temporary key id \(ASIA…\) requires SESSION_TOKEN/);
    expect(await check(s3(`${temporary}, SESSION_TOKEN :t`), { t: 'FwoGZXIvYXdzEBYaDH' })).toBe('ok');
  });

  it.each([
    ["ACCESS_KEY_ID 'AKIA 1', SECRET_ACCESS_KEY 'x', SCOPE 's3://bkt/'", /ACCESS_KEY_ID must be/],
    ["ACCESS_KEY_ID 'AKIA1', SECRET_ACCESS_KEY '', SCOPE 's3://bkt/'", /SECRET_ACCESS_KEY is empty/],
    ["ACCESS_KEY_ID 'AKIA1', SECRET_ACCESS_KEY 'x', SCOPE 'gs://bkt/'", /must start with s3:\/\/ \(the scheme must match the type\)/],
    ["ACCESS_KEY_ID 'AKIA1', SECRET_ACCESS_KEY 'x', SCOPE 's3://bkt/a/?'", /not a glob/],
    ["ACCESS_KEY_ID 'AKIA1', SECRET_ACCESS_KEY 'x', SCOPE 's3://b_k/'", /valid bucket/],
    ["ACCESS_KEY_ID 'AKIA1', SECRET_ACCESS_KEY 'x', SCOPE 's3://bkt/', REGION 'EU WEST'", /REGION must be a region name/],
  ])('refuses %s', async (options, message) => {
    expect(await check(s3(options))).toMatch(message);
  });
});

describe('http_endpoint', () => {
  it('takes a public https URL and optional headers', async () => {
    expect(await check(http("URL 'https://hooks.example.com/lakeport?channel=x'"))).toBe('ok');
    expect(await check(http("URL 'https://93.184.216.34:8443/hook'"))).toBe('ok');
    expect(await check(http("URL 'https://v6.example.com/'"))).toBe('ok');
    expect(await check(http("URL 'https://[2606:2800:220:1::1]/'"))).toBe('ok');
    expect(await check(http("URL :u, HEADER_AUTHORIZATION :a, HEADER_X_API_KEY 'k1', HEADER_X_AUTH_TOKEN 't1'"), { u: 'https://hooks.example.com/', a: 'Bearer abcdefgh' })).toBe('ok');
  });

  it('requires URL', async () => {
    expect(await check(http("HEADER_X_API_KEY 'k'"))).toMatch(/^MISSING_SECRET_KEY: A http_endpoint secret requires URL/);
  });

  it.each([
    ['http://hooks.example.com/', /must use https/],
    ['ftp://hooks.example.com/', /must use https/],
    ['not a url', /not a valid URL/],
    ['https://user:pass@hooks.example.com/', /may not carry credentials/],
    ['https://user@hooks.example.com/', /may not carry credentials/],
    ['https://hooks.example.com/x?token=abc', /query string/],
    ['https://hooks.example.com/x?API_KEY=abc', /query string/],
    ['https://localhost/', /public host name/],
    ['https://api.localhost/', /public host name/],
    ['https://printer.local/', /public host name/],
    ['https://metadata/', /public host name/],
    ['https://127.0.0.1/', /public address/],
    ['https://0x7f.1/', /public address/],
    ['https://10.0.0.1/', /public address/],
    ['https://169.254.169.254/latest/meta-data/', /public address/],
    ['https://192.168.1.1/', /public address/],
    ['https://[::1]/', /public address/],
    ['https://[fd00::1]/', /public address/],
    ['https://[::ffff:127.0.0.1]/', /public address/],
    ['https://internal.example.com/', /resolve to public addresses only/],
    ['https://mixed.example.com/', /resolve to public addresses only/],
    ['https://nowhere.example.com/', /does not resolve/],
  ])('refuses URL %s', async (url, message) => {
    const result = await check(http('URL :u'), { u: url });
    expect(result).toMatch(/^INVALID_SECRET_VALUE/);
    expect(result).toMatch(message);
  });

  it('refuses a header value with a line break', async () => {
    expect(await check(http("URL 'https://93.184.216.34/', HEADER_AUTHORIZATION :a"), { a: 'Bearer x\r\nX-Evil: 1' })).toMatch(/one line of printable characters/);
  });
});

describe('values from parameters', () => {
  it('names every parameter with no value, pointing at the first', async () => {
    expect(await check(http('URL :u, HEADER_AUTHORIZATION :a'))).toMatch(/^PARAMETER_NOT_DEFINED: The statement references parameter\(s\) with no value: :u, :a/);
  });

  it('matches names regardless of case', async () => {
    expect(await check(http('URL :Url'), { url: 'https://93.184.216.34/' })).toBe('ok');
  });

  it('takes strings only', async () => {
    expect(await check(http('URL :u'), { u: 42 })).toMatch(/^INVALID_PARAMETER: :u must be a string for URL \(it is a number\)/);
    expect(await check(http('URL :u'), { u: null })).toMatch(/it is null/);
  });

  it('refuses empty and oversized values', async () => {
    expect(await check(http('URL :u'), { u: '' })).toMatch(/URL is empty/);
    expect(await check(s3("ACCESS_KEY_ID 'AKIA1', SECRET_ACCESS_KEY :sk, SCOPE 's3://bkt/'"), { sk: 'x'.repeat(70_000) })).toMatch(/longer than 65536/);
  });
});

describe('isPublicAddress', () => {
  it.each(['8.8.8.8', '93.184.216.34', '2606:2800:220:1::1', '2001:4860:4860::8888'])('%s is public', (ip) => expect(isPublicAddress(ip)).toBe(true));
  it.each(['0.0.0.0', '10.1.1.1', '100.64.0.1', '127.0.0.1', '169.254.169.254', '172.16.5.5', '172.31.255.255', '192.168.0.1', '198.18.0.1', '224.0.0.1', '255.255.255.255', '::', '::1', 'fe80::1', 'fc00::1', '::ffff:10.0.0.1', '::ffff:7f00:1', '2001:db8::1', 'x'])(
    '%s is not',
    (ip) => expect(isPublicAddress(ip)).toBe(false),
  );

  // Every IPv6 spelling of a loopback, private or internal address is judged as that address.
  it.each([
    '::127.0.0.1', // IPv4-compatible
    '::7f00:1',
    '::ffff:127.0.0.1', // IPv4-mapped
    '::FFFF:7F00:0001',
    '0:0:0:0:0:ffff:127.0.0.1',
    '0000:0000:0000:0000:0000:ffff:7f00:0001',
    '::ffff:0:127.0.0.1', // IPv4-translated (SIIT)
    '::ffff:0:a00:1',
    '64:ff9b::127.0.0.1', // NAT64
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::10.0.0.1',
    '::10.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '0:0:0:0:0:0:0:1', // loopback, spelled out
    '0000:0000:0000:0000:0000:0000:0000:0001',
    '0::0:1',
    'fe80::1%eth0', // with a zone id
    'fe80::1%25eth0',
    '::1%lo',
    'FE80::1',
    'fd12:3456::1',
    '2002:7f00:1::', // 6to4 of 127.0.0.1
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    '[::1]',
    '[::127.0.0.1]',
  ])('%s is not public', (ip) => expect(isPublicAddress(ip)).toBe(false));

  it.each(['::ffff:8.8.8.8', '::ffff:808:808', '2606:2800:0220:0001:0000:0000:0000:0001'])('%s is public (it is a public address)', (ip) => expect(isPublicAddress(ip)).toBe(true));

  it.each(['https://[::127.0.0.1]:9443/', 'https://[::ffff:127.0.0.1]/', 'https://[::ffff:7f00:1]/', 'https://[64:ff9b::127.0.0.1]/', 'https://[0:0:0:0:0:0:0:1]/', 'https://[::ffff:0:10.0.0.1]/', 'https://[fe80::1]/'])(
    'an http_endpoint URL %s is refused',
    async (u) => expect(await check(http('URL :u'), { u })).toMatch(/^INVALID_SECRET_VALUE: URL's host must be a public address/),
  );

  it('a host name that resolves to an IPv6 spelling of a private address is refused', async () => {
    const sneaky = resolver({ 'sneaky.example.com': ['::ffff:0:7f00:1'], 'zoned.example.com': ['fe80::1%eth0'] });
    for (const host of ['sneaky.example.com', 'zoned.example.com']) {
      const s = parseStatement(http(`URL 'https://${host}/'`)) as CreateSecret;
      const spec = checkSecretShape(s);
      await expect(checkSecretValues(spec.type, resolveValues(s, {}), Object.fromEntries(s.options.map((o) => [o.key.value, o.value])), sneaky)).rejects.toMatchObject({ code: 'INVALID_SECRET_VALUE' });
    }
  });
});
