import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLIENT_ID, CLIENT_SECRET, FakeUploadServer } from '../../test/fake-upload-server.ts';
import { LakeportApiError, LakeportClient, LakeportNetworkError } from './index.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-client-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
function file(name: string, content: string | Buffer): string {
  const p = path.join(dir, name);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content);
  return p;
}

let fake: FakeUploadServer;
beforeEach(async () => {
  fake = new FakeUploadServer({ patchFingerprint: 'fp-2', rowsPerWrite: 3 });
  await fake.start();
});
afterEach(() => fake.stop());

const client = () => new LakeportClient({ url: fake.url, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });

describe('LakeportClient.fromEnv', () => {
  it('reads the runtime contract variables', () => {
    expect(LakeportClient.fromEnv({ LAKEPORT_TOKEN: 't' }).url).toBe('http://127.0.0.1:8080');
    expect(LakeportClient.fromEnv({ LAKEPORT_URL: 'http://h:1/', LAKEPORT_CLIENT_ID: 'a', LAKEPORT_CLIENT_SECRET: 'b' }).url).toBe('http://h:1');
  });
  it('says what is missing', () => {
    expect(() => LakeportClient.fromEnv({})).toThrow(/LAKEPORT_CLIENT_ID and LAKEPORT_CLIENT_SECRET, or LAKEPORT_TOKEN/);
    expect(() => LakeportClient.fromEnv({ LAKEPORT_CLIENT_ID: 'a' })).toThrow(/LAKEPORT_CLIENT_SECRET is not/);
    expect(() => LakeportClient.fromEnv({ LAKEPORT_TOKEN: 't', LAKEPORT_URL: 'ftp://x' })).toThrow(/http or https/);
  });
});

describe('negotiate', () => {
  it('sends the contract part and one sample part per file, named by base name', async () => {
    const a = file('n1/a.csv', 'id,name\n1,"x\ny"\n2,b\n3,c\n');
    const b = file('n1/b.csv', 'id,name\n4,d\n');
    const contract = await client().negotiate({
      destination: 'sales.raw.orders',
      schema: { mode: 'infer' },
      format: { header: true },
      files: [a, b],
      sampleBytes: 18,
    });
    expect(contract).toMatchObject({ contract_id: 'ct_1', state: 'proposed', mode: 'infer', schema_fingerprint: 'fp-1' });
    const [sent] = fake.apiRequests();
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/upload/v2/contracts');
    expect(sent.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(sent.headers.authorization).toBe('Bearer at-1');
    expect(sent.form!.fields).toEqual(['contract', 'sample', 'sample']);
    expect(sent.form!.contract).toEqual({ destination: 'sales.raw.orders', schema: { mode: 'infer' }, format: { header: true, type: 'csv' } });
    expect(sent.form!.samples.map((s) => [s.name, s.type, s.bytes.toString()])).toEqual([
      ['a.csv', 'text/csv', 'id,name\n1,"x\ny"\n'], // cut to the last complete record within 18 bytes
      ['b.csv', 'text/csv', 'id,name\n4,d\n'], // smaller than the limit: whole
    ]);
  });

  it('detects TSV (tab delimiter), JSONL and Parquet samples', async () => {
    const tsv = file('n2/t.tsv', 'a\tb\n1\t2\n');
    await client().negotiate({ destination: 'w.c.d', schema: { mode: 'declared', columns: [{ name: 'a', type: 'BIGINT' }] }, files: [tsv] });
    const jl = file('n2/j.ndjson', '{"a":1}\n');
    await client().negotiate({ destination: 'w.c.d', schema: { mode: 'infer' }, files: [jl] });
    const footer = Buffer.from('footer-bytes');
    const len = Buffer.alloc(4);
    len.writeUInt32LE(footer.length);
    const pq = file('n2/p.parquet', Buffer.concat([Buffer.from('PAR1'), Buffer.alloc(1000), footer, len, Buffer.from('PAR1')]));
    await client().negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [pq] });
    const [t, j, p] = fake.apiRequests().map((r) => r.form!);
    expect(t.contract).toEqual({ destination: 'w.c.d', schema: { mode: 'declared', columns: [{ name: 'a', type: 'BIGINT' }] }, format: { type: 'csv', delimiter: '\t' } });
    expect(j.contract.format).toEqual({ type: 'jsonl' });
    expect(j.samples[0]).toMatchObject({ name: 'j.ndjson', type: 'application/x-ndjson' });
    expect(p.contract.format).toEqual({ type: 'parquet' });
    expect(p.samples[0].type).toBe('application/vnd.apache.parquet');
    expect(p.samples[0].bytes).toEqual(Buffer.concat([footer, len, Buffer.from('PAR1')]));
  });

  it('refuses mixed formats, clashing names and unknown extensions before sending anything', async () => {
    const c = file('n3/a.csv', 'a\n1\n');
    const j = file('n3/a.jsonl', '{}\n');
    const again = file('n3/other/a.csv', 'a\n1\n');
    const txt = file('n3/a.txt', 'a\n1\n');
    const input = { destination: 'w.c.d', schema: { mode: 'infer' as const } };
    await expect(client().negotiate({ ...input, files: [c, j] })).rejects.toThrow(/mix formats/);
    await expect(client().negotiate({ ...input, files: [c, again] })).rejects.toThrow(/two files are named a\.csv/);
    await expect(client().negotiate({ ...input, files: [txt] })).rejects.toThrow(/cannot tell its format/);
    await expect(client().negotiate({ ...input, files: [] })).rejects.toThrow(/no files/);
    // An explicit format makes any extension fine.
    await client().negotiate({ ...input, format: { type: 'csv' }, files: [txt] });
    expect(fake.apiRequests()).toHaveLength(1);
  });

  it('turns a 422 into a LakeportApiError with the validation detail', async () => {
    const c = file('n4/a.csv', 'a\n1\n');
    const error = await client()
      .negotiate({ destination: '', schema: { mode: 'infer' }, files: [c] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LakeportApiError);
    expect(error).toMatchObject({ status: 422, code: 'VALIDATION_ERROR', message: 'body.contract.destination: Field required' });
    expect((error as LakeportApiError).detail).toEqual([{ loc: ['body', 'contract', 'destination'], msg: 'Field required', type: 'missing' }]);
  });
});

describe('contract calls', () => {
  it('gets, patches, accepts and deletes with the documented shapes', async () => {
    const c = client();
    const created = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'infer' }, files: [file('k/a.csv', 'id\n1\n')] });
    expect((await c.getContract(created.contract_id)).state).toBe('proposed');
    const patched = await c.patchContract(created.contract_id, { columns: { id: { type: 'BIGINT' }, junk: { ignore: true } } });
    expect(patched.schema_fingerprint).toBe('fp-2');
    const mismatch = await c.acceptContract(created.contract_id, 'nope').catch((e: unknown) => e);
    expect(mismatch).toMatchObject({ status: 409, code: 'FINGERPRINT_MISMATCH', detail: 'fingerprint differs' });
    expect((await c.acceptContract(created.contract_id, 'fp-1')).state).toBe('accepted');
    await c.deleteContract(created.contract_id);
    await expect(c.getContract(created.contract_id)).rejects.toMatchObject({ status: 404, code: 'CONTRACT_NOT_FOUND' });
    const calls = fake.apiRequests().map((r) => [r.method, r.path, r.headers['content-type'], r.json]);
    expect(calls.slice(1)).toEqual([
      ['GET', '/upload/v2/contracts/ct_1', undefined, undefined],
      ['PATCH', '/upload/v2/contracts/ct_1', 'application/json', { columns: { id: { type: 'BIGINT' }, junk: { ignore: true } } }],
      ['PUT', '/upload/v2/contracts/ct_1/accept', 'application/json', { schema_fingerprint: 'nope' }],
      ['PUT', '/upload/v2/contracts/ct_1/accept', 'application/json', { schema_fingerprint: 'fp-1' }],
      ['DELETE', '/upload/v2/contracts/ct_1', undefined, undefined],
      ['GET', '/upload/v2/contracts/ct_1', undefined, undefined],
    ]);
    // One token for the whole session.
    expect(fake.tokenGrants).toEqual(['client_credentials']);
  });
});

describe('writeFile', () => {
  it('streams a multi-MB file intact with x-file-name, content-type and content-length', async () => {
    const bytes = randomBytes(6 * 1024 * 1024 + 123);
    const p = file('w/big.csv', bytes);
    const c = client();
    const { contract_id } = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [file('w/s.csv', 'a\n1\n')] });
    const progress: [number, number][] = [];
    const result = await c.writeFile(contract_id, p, { onProgress: (sent, total) => progress.push([sent, total]) });
    expect(result.written.at(-1)).toMatchObject({ file: 'big.csv', bytes: bytes.length });
    const sent = fake.apiRequests().at(-1)!;
    expect(sent.path).toBe(`/upload/v2/contracts/${contract_id}/data`);
    expect(sent.headers['x-file-name']).toBe('big.csv');
    expect(sent.headers['content-type']).toBe('text/csv');
    expect(sent.headers['content-length']).toBe(String(bytes.length));
    expect(sent.headers['transfer-encoding']).toBeUndefined();
    expect(sent.data).toMatchObject({ length: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
    expect(sent.data!.chunks).toBeGreaterThan(1);
    // Progress climbs chunk by chunk to the total.
    expect(progress.length).toBeGreaterThan(10);
    expect(progress.at(-1)).toEqual([bytes.length, bytes.length]);
    expect(progress.every(([s, t], i) => t === bytes.length && (i === 0 || s >= progress[i - 1][0]))).toBe(true);
  });

  it('sets the content type from the format', async () => {
    const c = client();
    const { contract_id } = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [file('w2/s.csv', 'a\n1\n')] });
    await c.writeFile(contract_id, file('w2/x.ndjson', '{"a":1}\n'));
    await c.writeFile(contract_id, file('w2/x.parquet', 'PAR1'));
    await c.writeFile(contract_id, file('w2/x.dat', 'a\n1\n'), { format: 'csv', fileName: 'renamed.csv' });
    expect(fake.apiRequests().slice(-3).map((r) => [r.headers['content-type'], r.headers['x-file-name']])).toEqual([
      ['application/x-ndjson', 'x.ndjson'],
      ['application/vnd.apache.parquet', 'x.parquet'],
      ['text/csv', 'renamed.csv'],
    ]);
  });

  it('surfaces a refused value with its column, row, value and file', async () => {
    const c = client();
    const { contract_id } = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [file('w3/s.csv', 'a\n1\n')] });
    fake.refuseWrite = { detail: 'not a whole number', code: 'VALUE_NOT_STORABLE', column: 'qty', row: 42, value: '12x', file: 's.csv' };
    const error = await c.writeFile(contract_id, file('w3/s.csv', 'a\n1\n')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LakeportApiError);
    expect(error).toMatchObject({ status: 409, code: 'VALUE_NOT_STORABLE', detail: 'not a whole number', column: 'qty', row: 42, value: '12x', file: 's.csv' });
  });

  it('reports a missing file without calling the server', async () => {
    await expect(client().writeFile('ct_1', path.join(dir, 'missing.csv'))).rejects.toThrow(/ENOENT/);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('commit', () => {
  it('retries after a dropped connection with the same idempotency key and sends the message', async () => {
    const c = client();
    const { contract_id } = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [file('c/s.csv', 'a\n1\n')] });
    fake.dropCommits = 1;
    const result = await c.commit(contract_id, 'key-123', { message: 'nightly load', backoffMs: 5 });
    expect(result).toMatchObject({ state: 'committed', snapshot: { snapshot_id: 'snap_1' }, dataset: 'w.c.d' });
    const commits = fake.apiRequests().filter((r) => r.path.endsWith('/commit'));
    expect(commits).toHaveLength(2);
    expect(commits.map((r) => r.headers['idempotency-key'])).toEqual(['key-123', 'key-123']);
    expect(commits.map((r) => r.json)).toEqual([{ message: 'nightly load' }, { message: 'nightly load' }]);
    expect(commits[1].headers['content-type']).toBe('application/json');
    // The same key again answers the original snapshot.
    expect((await c.commit(contract_id, 'key-123')).snapshot.snapshot_id).toBe('snap_1');
  });

  it('sends no body without a message, and gives up after the retries', async () => {
    const c = client();
    const { contract_id } = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [file('c2/s.csv', 'a\n1\n')] });
    fake.dropCommits = 10;
    const error = await c.commit(contract_id, 'k', { retries: 2, backoffMs: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LakeportNetworkError);
    const commits = fake.apiRequests().filter((r) => r.path.endsWith('/commit'));
    expect(commits).toHaveLength(3);
    expect(commits[0].headers['content-type']).toBeUndefined();
    expect(commits[0].json).toBeUndefined();
  });
});

describe('tokens', () => {
  it('refreshes once on a 401 with the refresh token, then repeats the request', async () => {
    const c = client();
    const { contract_id } = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [file('t/s.csv', 'a\n1\n')] });
    fake.validTokens.clear(); // e.g. a restarted server or a revoked token
    expect((await c.getContract(contract_id)).contract_id).toBe(contract_id);
    expect(fake.tokenGrants).toEqual(['client_credentials', 'refresh_token']);
    const gets = fake.apiRequests().filter((r) => r.method === 'GET');
    expect(gets.map((r) => r.headers.authorization)).toEqual(['Bearer at-1', 'Bearer at-2']);
  });

  it('falls back to the client credentials when the refresh token is refused', async () => {
    const c = client();
    const { contract_id } = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [file('t2/s.csv', 'a\n1\n')] });
    fake.validTokens.clear();
    fake.validRefresh.clear();
    await c.getContract(contract_id);
    expect(fake.tokenGrants).toEqual(['client_credentials', 'refresh_token', 'client_credentials']);
  });

  it('repeats a streamed write from the start after a 401', async () => {
    const c = client();
    const { contract_id } = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [file('t3/s.csv', 'a\n1\n')] });
    fake.validTokens.clear();
    const bytes = randomBytes(300_000);
    await c.writeFile(contract_id, file('t3/d.csv', bytes));
    const writes = fake.apiRequests().filter((r) => r.path.endsWith('/data'));
    expect(writes.at(-1)!.data!.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(fake.tokenGrants).toEqual(['client_credentials', 'refresh_token']);
  });

  it('repeats a streamed write when the 401 comes before the body was read', async () => {
    const c = client();
    const { contract_id } = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [file('t5/s.csv', 'a\n1\n')] });
    fake.validTokens.clear();
    fake.earlyUnauthorized = true;
    const bytes = randomBytes(5 * 1024 * 1024);
    await c.writeFile(contract_id, file('t5/d.csv', bytes));
    const writes = fake.apiRequests().filter((r) => r.path.endsWith('/data'));
    expect(writes.at(-1)!.data!.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  it('renews a token that is about to expire before using it', async () => {
    fake.expiresIn = 5; // inside the client's 30 s safety margin
    const c = client();
    const { contract_id } = await c.negotiate({ destination: 'w.c.d', schema: { mode: 'dataset' }, files: [file('t4/s.csv', 'a\n1\n')] });
    await c.getContract(contract_id);
    expect(fake.tokenGrants).toEqual(['client_credentials', 'refresh_token']);
    expect(fake.apiRequests().every((r) => r.headers.authorization !== undefined)).toBe(true);
  });

  it('uses a static token as given and reports a 401 when nothing can renew it', async () => {
    const c = new LakeportClient({ url: fake.url, token: 'static' });
    const error = await c.getContract('ct_1').catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 401, code: 'INVALID_TOKEN' });
    expect(fake.requests.map((r) => r.headers.authorization)).toEqual(['Bearer static']);
  });

  it('reports wrong client credentials with the server code', async () => {
    const c = new LakeportClient({ url: fake.url, clientId: CLIENT_ID, clientSecret: 'wrong' });
    await expect(c.getContract('ct_1')).rejects.toMatchObject({ status: 401, code: 'INVALID_CLIENT', message: 'unknown client or wrong secret' });
  });

  it('shares one token request between concurrent calls', async () => {
    const c = client();
    await Promise.all([c.getContract('x').catch(() => undefined), c.getContract('y').catch(() => undefined), c.getContract('z').catch(() => undefined)]);
    expect(fake.tokenGrants).toEqual(['client_credentials']);
  });
});

describe('network errors', () => {
  let closedUrl: string;
  beforeAll(async () => {
    const s = http.createServer();
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    closedUrl = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => s.close(() => resolve()));
  });
  it('names the server that cannot be reached', async () => {
    const error = await new LakeportClient({ url: closedUrl, token: 't' }).getContract('ct_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LakeportNetworkError);
    expect((error as Error).message).toMatch(new RegExp(`cannot reach Lakeport at ${closedUrl}.*ECONNREFUSED`));
  });
});
