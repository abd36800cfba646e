/**
 * Contract negotiation and the contract's life: every endpoint of /upload/v2/contracts and every
 * state transition of the spec's contract table, through the real app (app.inject), real DuckDB and
 * the real metadata database (PGlite, or PostgreSQL when DATABASE_URL is set).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, tempDir, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';
import { UploadRepo } from './repo.ts';

let t: TestApp;
let alice: TestUser; // owner of sales
let will: TestUser; // writer on sales
let rita: TestUser; // reader on sales
let eve: TestUser; // owner of another workspace (ops)
let aliceJobsOnly: TestUser; // alice, with a token that lacks the upload scope
let duck: DuckDBInstance;
let db: DuckDBConnection;
const fixtures = tempDir('lakeport-contracts-');

beforeAll(async () => {
  t = await createTestApp();
  [alice, will, rita, eve] = await Promise.all(['alice', 'will', 'rita', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  aliceJobsOnly = await signIn(t.app, t.adminToken, 'alice', { scopes: ['jobs'] });
  await createWorkspace(alice, 'sales', { will: 'writer', rita: 'reader' });
  await createWorkspace(eve, 'ops');
  duck = await DuckDBInstance.create(':memory:');
  db = await duck.connect();
  await db.run("SET TimeZone='UTC'");
});
afterAll(async () => {
  db?.closeSync();
  duck?.closeSync();
  await t?.close();
  fixtures.remove();
});

// ── helpers ───────────────────────────────────────────────────────────────────

type Sample = { name: string; content: string | Buffer };

async function negotiate(user: TestUser | null, contract: unknown, samples: Sample[]) {
  const body = await multipartBody({ contract, samples });
  return t.app.inject({
    method: 'POST',
    url: '/upload/v2/contracts',
    headers: { ...body.headers, ...(user ? { authorization: `Bearer ${user.token}` } : {}) },
    payload: body.payload,
  });
}

/** Negotiates and insists on a 201. */
async function contractOf(user: TestUser, contract: unknown, samples: Sample[]) {
  const res = await negotiate(user, contract, samples);
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

async function write(user: TestUser, id: string, name: string | undefined, content: string | Buffer, type = 'text/csv') {
  return t.app.inject({
    method: 'POST',
    url: `/upload/v2/contracts/${id}/data`,
    headers: { authorization: `Bearer ${user.token}`, 'content-type': type, ...(name === undefined ? {} : { 'x-file-name': name }) },
    payload: content,
  });
}

async function commit(user: TestUser, id: string, key?: string) {
  return t.app.inject({
    method: 'POST',
    url: `/upload/v2/contracts/${id}/commit`,
    headers: { authorization: `Bearer ${user.token}`, ...(key ? { 'idempotency-key': key } : {}) },
  });
}

const get = (user: TestUser, id: string) => user.request('GET', `/upload/v2/contracts/${id}`);
const patch = (user: TestUser, id: string, columns: unknown) => user.request('PATCH', `/upload/v2/contracts/${id}`, { columns });
const accept = (user: TestUser, id: string, fingerprint: string) => user.request('PUT', `/upload/v2/contracts/${id}/accept`, { schema_fingerprint: fingerprint });
const remove = (user: TestUser, id: string) => user.request('DELETE', `/upload/v2/contracts/${id}`);

async function staged(contractId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const blob of t.deps.blobs.list(`lake/_staging/${contractId}/`)) keys.push(blob.key);
  return keys;
}

async function createDataset(name: string, columns: { name: string; type: string; nullable?: boolean; logical_type?: string }[]) {
  return t.app.lakeport.catalog.createDataset(
    { workspace: 'sales', collection: 'c', dataset: name },
    { columns: columns.map((c) => ({ nullable: true, ...c })) },
    'alice',
  );
}

/** A real Parquet file written by DuckDB. */
async function parquetFile(select: string): Promise<Buffer> {
  const file = path.join(fixtures.dir, `${crypto.randomUUID()}.parquet`);
  await db.run(`COPY (${select}) TO '${file}' (FORMAT parquet)`);
  return fs.readFileSync(file);
}

/** The footer exactly as a client sends it: the last 8 + footer_length bytes of the file. */
function footerOf(file: Buffer): Buffer {
  const length = file.readUInt32LE(file.length - 8);
  return file.subarray(file.length - 8 - length);
}

const planOf = (contract: { plan: { column: string; action: string; source_type: string | null; target_type: string | null }[] }) =>
  contract.plan.map((p) => [p.column, p.action, p.source_type, p.target_type]);
const codes = (contract: { issues: { code: string }[] }) => contract.issues.map((i) => i.code);
const blocking = (contract: { issues: { severity: string; code: string }[] }) => contract.issues.filter((i) => i.severity === 'blocking').map((i) => i.code);

const PEOPLE = 'id,name,amount\n1,Ada,10.50\n2,Bob,7.25\n';
const DECLARED = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'name', type: 'VARCHAR' },
  { name: 'amount', type: 'DECIMAL(18,2)' },
];

// ── negotiation ───────────────────────────────────────────────────────────────

describe('negotiation in each mode', () => {
  it('declared with columns: accepted at once, with plan, issues, values and a fingerprint', async () => {
    const res = await negotiate(alice, { destination: 'sales.c.declared1', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(res.statusCode, res.body).toBe(201);
    const c = res.json();
    expect(c).toMatchObject({ state: 'accepted', mode: 'declared', requested_mode: 'declared', destination: 'sales.c.declared1', dataset_exists: false });
    expect(c.contract_id).toEqual(expect.any(String));
    expect(planOf(c)).toEqual([
      ['id', 'keep', 'BIGINT', 'BIGINT'],
      ['name', 'keep', 'VARCHAR', 'VARCHAR'],
      ['amount', 'keep', 'DECIMAL(18,2)', 'DECIMAL(18,2)'], // fixed-point text is a DECIMAL already
    ]);
    expect(c.plan.find((p: { column: string }) => p.column === 'id').nullable).toBe(false);
    expect(blocking(c)).toEqual([]);
    expect(c.values).toMatchObject({ id: expect.anything(), name: expect.any(String), amount: expect.anything() });
    expect(['Ada', 'Bob']).toContain(c.values.name);
    expect(c.schema_fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    const expires = Date.parse(c.expires_at);
    expect(expires).toBeGreaterThan(Date.now());
    // Nothing exists in the catalog because of a negotiation.
    expect(await t.app.lakeport.catalog.findDataset({ workspace: 'sales', collection: 'c', dataset: 'declared1' })).toBeUndefined();
    expect(await staged(c.contract_id)).toEqual([]);
  });

  it('infer: proposed, with the inferred types', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.infer1', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(c).toMatchObject({ state: 'proposed', mode: 'infer', requested_mode: 'infer', dataset_exists: false });
    expect(planOf(c)).toEqual([
      ['id', 'keep', 'BIGINT', 'BIGINT'],
      ['name', 'keep', 'VARCHAR', 'VARCHAR'],
      ['amount', 'keep', 'DECIMAL(18,2)', 'DECIMAL(18,2)'],
    ]);
    expect(c.issues.map((i: { code: string }) => i.code)).toEqual(['INFERRED_DECIMAL']);
  });

  it('dataset against an existing dataset: accepted, with keep / widen / cast / retag / undeclared', async () => {
    await createDataset('existing1', [
      { name: 'id', type: 'BIGINT', nullable: false },
      { name: 'name', type: 'VARCHAR' },
      { name: 'amount', type: 'DECIMAL(18,2)' },
      { name: 'ip', type: 'VARCHAR', logical_type: 'ipv4' },
    ]);
    const file = await parquetFile("SELECT i::INTEGER AS id, 'n' || i AS name, (i * 1.5)::DOUBLE AS amount, '10.0.0.' || i AS ip, 'x' AS extra FROM range(1, 20) t(i)");
    const c = await contractOf(alice, { destination: 'sales.c.existing1', schema: { mode: 'dataset' } }, [{ name: 'e.parquet', content: footerOf(file) }]);
    expect(c).toMatchObject({ state: 'accepted', mode: 'dataset', requested_mode: 'dataset', dataset_exists: true });
    expect(planOf(c)).toEqual([
      ['id', 'widen', 'INTEGER', 'BIGINT'],
      ['name', 'keep', 'VARCHAR', 'VARCHAR'],
      ['amount', 'cast', 'DOUBLE', 'DECIMAL(18,2)'],
      ['ip', 'retag', 'VARCHAR', 'IPV4'],
      ['extra', 'undeclared', 'VARCHAR', null],
    ]);
    expect(blocking(c)).toEqual([]);
    expect(c.issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ severity: 'warning', code: 'LOSSY_CAST', column: 'amount' }),
        expect.objectContaining({ severity: 'warning', code: 'UNDECLARED_COLUMN', column: 'extra' }),
      ]),
    );
    // A Parquet footer has no rows; the values come from its statistics, and are real values.
    expect(String(c.values.id)).toBe('1');
  });

  it('auto resolves to dataset when the destination declares columns, and says so', async () => {
    await createDataset('existing2', [
      { name: 'id', type: 'BIGINT' },
      { name: 'name', type: 'VARCHAR' },
      { name: 'amount', type: 'DOUBLE' },
    ]);
    const c = await contractOf(alice, { destination: 'sales.c.existing2', schema: { mode: 'auto' } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(c).toMatchObject({ state: 'accepted', mode: 'dataset', requested_mode: 'auto', dataset_exists: true });
    expect(planOf(c).map((p) => p[1])).toEqual(['keep', 'keep', 'keep']);
  });

  it('auto resolves to infer when the destination does not exist, and says so', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.fresh_auto', schema: { mode: 'auto' } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(c).toMatchObject({ state: 'proposed', mode: 'infer', requested_mode: 'auto', dataset_exists: false });
  });

  it('auto is the default mode', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.fresh_default' }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(c).toMatchObject({ mode: 'infer', requested_mode: 'auto' });
  });

  it('infer against a dataset that declares columns is 409 MODE_NOT_APPLICABLE', async () => {
    await createDataset('existing3', [{ name: 'id', type: 'BIGINT' }]);
    const res = await negotiate(alice, { destination: 'sales.c.existing3', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ code: 'MODE_NOT_APPLICABLE', detail: expect.any(String) });
  });

  it('dataset against a missing dataset is 409 MODE_NOT_APPLICABLE', async () => {
    const res = await negotiate(alice, { destination: 'sales.c.missing', schema: { mode: 'dataset' } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().code).toBe('MODE_NOT_APPLICABLE');
  });

  it('declared against an existing dataset: same columns accepted, different columns blocked', async () => {
    await createDataset('existing4', DECLARED);
    const same = await contractOf(alice, { destination: 'sales.c.existing4', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(same).toMatchObject({ state: 'accepted', mode: 'declared', dataset_exists: true });
    expect(blocking(same)).toEqual([]);
    const other = await contractOf(alice, { destination: 'sales.c.existing4', schema: { mode: 'declared', columns: [{ name: 'id', type: 'VARCHAR' }] } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(blocking(other)).toEqual(['DECLARED_DIFFERS']);
  });

  it('samples every file: two files that disagree (BIGINT vs VARCHAR) raise FILES_DISAGREE', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.disagree', schema: { mode: 'infer' } }, [
      { name: 'a.csv', content: 'id,code\n1,10\n2,20\n' },
      { name: 'b.csv', content: 'id,code\n3,X-1\n4,Y-2\n' },
    ]);
    const entry = c.plan.find((p: { column: string }) => p.column === 'code');
    expect(entry).toMatchObject({ target_type: 'VARCHAR', sources: { 'a.csv': 'BIGINT', 'b.csv': 'VARCHAR' } });
    expect(c.issues).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'FILES_DISAGREE', column: 'code', severity: 'warning' })]));
    expect(c.issues.find((i: { code: string }) => i.code === 'FILES_DISAGREE').message).toMatch(/a\.csv.*b\.csv|b\.csv.*a\.csv/);
    // Each CSV file carries the dialect its writes are read with.
    const csv = { delimiter: ',', quote: '"', escape: '"', header: true, newline: '\n', date_format: null, timestamp_format: null, encoding: 'utf-8' };
    expect(c.files).toEqual([
      { name: 'a.csv', format: 'csv', encoding: 'utf-8', csv },
      { name: 'b.csv', format: 'csv', encoding: 'utf-8', csv },
    ]);
  });

  it('a column missing in one file raises COLUMN_MISSING_IN_FILE naming that file; its rows get NULL', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.missingcol', schema: { mode: 'infer' } }, [
      { name: 'a.csv', content: 'id,v,extra\n1,2,x\n' },
      { name: 'b.csv', content: 'id,v\n3,4\n' },
    ]);
    expect(c.issues).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'COLUMN_MISSING_IN_FILE', column: 'extra', file: 'b.csv', severity: 'warning' })]));
    expect(c.plan.find((p: { column: string }) => p.column === 'extra').sources).toEqual({ 'a.csv': 'VARCHAR', 'b.csv': null });
    expect((await accept(alice, c.contract_id, c.schema_fingerprint)).statusCode).toBe(200);
    expect((await write(alice, c.contract_id, 'a.csv', 'id,v,extra\n1,2,x\n')).statusCode).toBe(200);
    const b = await write(alice, c.contract_id, 'b.csv', 'id,v\n3,4\n5,6\n');
    expect(b.statusCode, b.body).toBe(200);
    expect(b.json().totals).toMatchObject({ files: 2, rows: 3 });
    const keys = await staged(c.contract_id);
    const paths = await Promise.all(keys.map((k) => t.deps.blobs.localPath(k)));
    const rows = (await db.runAndReadAll(`SELECT id, extra FROM read_parquet([${paths.map((p) => `'${p}'`).join(', ')}]) ORDER BY id`)).getRowObjectsJson();
    expect(rows).toEqual([
      { id: '1', extra: 'x' },
      { id: '3', extra: null },
      { id: '5', extra: null },
    ]);
  });
});

describe('negotiation refusals', () => {
  const ok = { destination: 'sales.c.v422', schema: { mode: 'infer' } };
  const sample = [{ name: 'people.csv', content: PEOPLE }];

  it('422 without the contract part', async () => {
    const res = await negotiate(alice, undefined, sample);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail).toEqual([expect.objectContaining({ loc: ['body', 'contract'], type: 'missing' })]);
  });

  it('422 when the contract part is not JSON', async () => {
    const res = await negotiate(alice, '{"destination": "sales.c.x",', sample);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail[0]).toMatchObject({ loc: ['body', 'contract'] });
  });

  it('422 when the body is not multipart', async () => {
    const res = await alice.request('POST', '/upload/v2/contracts', ok);
    expect(res.statusCode, res.body).toBe(422);
    expect(Array.isArray(res.json().detail)).toBe(true);
  });

  it.each([
    ['two parts', 'sales.orders'],
    ['four parts', 'sales.a.b.c'],
    ['an invalid name', 'sales.c.Bad-Name!'],
    ['no destination', undefined],
  ])('422 for a bad destination (%s)', async (_label, destination) => {
    const res = await negotiate(alice, { ...ok, destination }, sample);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail[0].loc.slice(0, 3)).toEqual(['body', 'contract', 'destination']);
  });

  it('422 for an unknown mode', async () => {
    const res = await negotiate(alice, { ...ok, schema: { mode: 'guess' } }, sample);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail[0].loc).toEqual(['body', 'contract', 'schema', 'mode']);
  });

  it('422 for declared mode without columns', async () => {
    const res = await negotiate(alice, { ...ok, schema: { mode: 'declared' } }, sample);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail[0].loc).toEqual(['body', 'contract', 'schema', 'columns']);
    const empty = await negotiate(alice, { ...ok, schema: { mode: 'declared', columns: [] } }, sample);
    expect(empty.statusCode, empty.body).toBe(422);
  });

  it('422 for an unknown column type, naming it', async () => {
    const res = await negotiate(alice, { ...ok, schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGNUMBER' }] } }, sample);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail[0]).toMatchObject({ loc: ['body', 'contract', 'schema', 'columns'] });
    expect(res.json().detail[0].msg).toContain('BIGNUMBER');
  });

  it('422 for a nested declared type', async () => {
    const res = await negotiate(alice, { ...ok, schema: { mode: 'declared', columns: [{ name: 'id', type: 'STRUCT(a INT)' }] } }, sample);
    expect(res.statusCode, res.body).toBe(422);
  });

  it('422 with no samples', async () => {
    const res = await negotiate(alice, ok, []);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail[0].loc).toEqual(['body', 'sample']);
  });

  it('422 for two samples with the same name', async () => {
    const res = await negotiate(alice, ok, [sample[0], sample[0]]);
    expect(res.statusCode, res.body).toBe(422);
  });

  it('422 for a bad format option', async () => {
    const res = await negotiate(alice, { ...ok, format: { delimiter: ';;' } }, sample);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail[0].loc).toEqual(['body', 'contract', 'format', 'delimiter']);
  });

  it('413 for a sample over the sample-size limit (16 MiB)', async () => {
    const big = Buffer.alloc(16 * 1024 * 1024 + 1024, 'a');
    big.write('id\n', 0);
    const res = await negotiate(alice, ok, [{ name: 'big.csv', content: big }]);
    expect(res.statusCode, res.body.slice(0, 300)).toBe(413);
  });

  it('a Parquet sample that is not a footer is refused with SAMPLE_UNREADABLE', async () => {
    const res = await negotiate(alice, ok, [{ name: 'x.parquet', content: 'id,name\n1,a\n' }]);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ code: 'SAMPLE_UNREADABLE', file: 'x.parquet' });
  });

  it('a workspace that does not exist is 403 or 404, never a contract', async () => {
    const res = await negotiate(alice, { ...ok, destination: 'nowhere.c.d' }, sample);
    expect([403, 404]).toContain(res.statusCode);
  });
});

// ── PATCH, accept, GET, DELETE ────────────────────────────────────────────────

describe('re-planning (PATCH)', () => {
  it('a retype in infer mode sends the contract back to proposed with a new fingerprint and discards earlier writes', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.retype', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect((await accept(alice, c.contract_id, c.schema_fingerprint)).statusCode).toBe(200);
    expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(200);
    expect(await staged(c.contract_id)).toHaveLength(1);

    const res = await patch(alice, c.contract_id, { amount: { type: 'DOUBLE' } });
    expect(res.statusCode, res.body).toBe(200);
    const replanned = res.json();
    expect(replanned.state).toBe('proposed');
    expect(replanned.schema_fingerprint).toMatch(/^sha256:/);
    expect(replanned.schema_fingerprint).not.toBe(c.schema_fingerprint);
    expect(replanned.plan.find((p: { column: string }) => p.column === 'amount')).toMatchObject({ action: 'keep', source_type: 'DOUBLE', target_type: 'DOUBLE' });
    expect(replanned.written).toEqual([]);

    const after = (await get(alice, c.contract_id)).json();
    expect(after).toMatchObject({ state: 'proposed', written: [], totals: { files: 0, rows: 0 }, schema_fingerprint: replanned.schema_fingerprint });
    expect(await staged(c.contract_id)).toEqual([]);

    // Proposed again: writes refused until the new fingerprint is accepted; the old one no longer works.
    expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).json().code).toBe('CONTRACT_NOT_ACCEPTED');
    const old = await accept(alice, c.contract_id, c.schema_fingerprint);
    expect(old.statusCode).toBe(409);
    expect(old.json()).toMatchObject({ code: 'FINGERPRINT_MISMATCH', schema_fingerprint: replanned.schema_fingerprint });
    expect((await accept(alice, c.contract_id, replanned.schema_fingerprint)).json().state).toBe('accepted');
    const again = await write(alice, c.contract_id, 'people.csv', PEOPLE);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().written[0].columns).toEqual(expect.arrayContaining([{ name: 'amount', type: 'DOUBLE' }]));
  });

  it('a PATCH that changes nothing keeps the state, the fingerprint and the writes', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.retype_same', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    await accept(alice, c.contract_id, c.schema_fingerprint);
    expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(200);
    const res = await patch(alice, c.contract_id, { amount: { type: 'DECIMAL(18,2)' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ state: 'accepted', schema_fingerprint: c.schema_fingerprint });
    expect(res.json().written).toHaveLength(1);
  });

  it('a retype in declared mode re-plans with the new type', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.retype_declared', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    const res = await patch(alice, c.contract_id, { amount: { type: 'DOUBLE' } });
    expect(res.statusCode, res.body).toBe(200);
    // "PATCH re-plans the whole contract (retype or decline columns)": the retype must show in the plan.
    expect(res.json().plan.find((p: { column: string }) => p.column === 'amount')).toMatchObject({ target_type: 'DOUBLE' });
    expect(res.json().schema_fingerprint).not.toBe(c.schema_fingerprint);
  });

  it('ignoring a column in declared mode: it is loaded as NULL (or refused when NOT NULL)', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.ignore_declared', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    const nullable = (await patch(alice, c.contract_id, { name: { ignore: true } })).json();
    expect(nullable.plan.find((p: { column: string }) => p.column === 'name')).toMatchObject({ action: 'ignored' });
    expect(nullable.issues).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'COLUMN_NOT_IN_FILES', column: 'name', severity: 'warning' })]));
    expect(nullable.state).toBe('accepted');
    const required = (await patch(alice, c.contract_id, { id: { ignore: true } })).json();
    expect(blocking(required)).toEqual(['REQUIRED_COLUMN_MISSING']);
    expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).json().code).toBe('CONTRACT_BLOCKED');
    // And un-ignoring it again unblocks.
    const back = (await patch(alice, c.contract_id, { id: { ignore: false } })).json();
    expect(blocking(back)).toEqual([]);
    expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(200);
  });

  it('ignoring an unsupported (nested) column unblocks writes', async () => {
    const jsonl = '{"id":1,"meta":{"q":1},"name":"a"}\n{"id":2,"meta":{"q":2},"name":"b"}\n';
    const c = await contractOf(alice, { destination: 'sales.c.nested_jsonl', schema: { mode: 'infer' } }, [{ name: 'n.jsonl', content: jsonl }]);
    expect(c.plan.find((p: { column: string }) => p.column === 'meta')).toMatchObject({ action: 'unsupported', target_type: null });
    expect(c.plan.find((p: { column: string }) => p.column === 'meta').source_type).toMatch(/^STRUCT/);
    expect(blocking(c)).toEqual(['UNSUPPORTED_TYPE']);
    expect((await accept(alice, c.contract_id, c.schema_fingerprint)).statusCode).toBe(200);
    const refused = await write(alice, c.contract_id, 'n.jsonl', jsonl, 'application/x-ndjson');
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'CONTRACT_BLOCKED' });
    expect(refused.json().issues).toEqual([expect.objectContaining({ code: 'UNSUPPORTED_TYPE', column: 'meta' })]);
    expect(await staged(c.contract_id)).toEqual([]);

    const ignored = (await patch(alice, c.contract_id, { meta: { ignore: true } })).json();
    expect(ignored.plan.find((p: { column: string }) => p.column === 'meta')).toMatchObject({ action: 'ignored' });
    expect(blocking(ignored)).toEqual([]);
    expect(ignored.state).toBe('proposed');
    expect((await accept(alice, c.contract_id, ignored.schema_fingerprint)).statusCode).toBe(200);
    const ok = await write(alice, c.contract_id, 'n.jsonl', jsonl, 'application/x-ndjson');
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().written[0]).toMatchObject({ file: 'n.jsonl', format: 'jsonl', rows: 2 });
    expect(ok.json().written[0].columns.map((x: { name: string }) => x.name)).toEqual(['id', 'name']);
  });

  it('in dataset mode only declining is possible: a retype is 409 CANNOT_RETYPE', async () => {
    await createDataset('existing5', [
      { name: 'id', type: 'BIGINT' },
      { name: 'name', type: 'VARCHAR' },
      { name: 'amount', type: 'DOUBLE' },
    ]);
    const c = await contractOf(alice, { destination: 'sales.c.existing5', schema: { mode: 'dataset' } }, [{ name: 'people.csv', content: PEOPLE }]);
    const res = await patch(alice, c.contract_id, { amount: { type: 'VARCHAR' } });
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().code).toBe('CANNOT_RETYPE');
    const ignore = await patch(alice, c.contract_id, { amount: { ignore: true } });
    expect(ignore.statusCode, ignore.body).toBe(200);
    expect(ignore.json()).toMatchObject({ state: 'accepted' });
    expect(ignore.json().plan.find((p: { column: string }) => p.column === 'amount')).toMatchObject({ action: 'ignored' });
  });

  it('422 for an unknown type and for a malformed body', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.patch422', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    const bad = await patch(alice, c.contract_id, { amount: { type: 'MONEY' } });
    expect(bad.statusCode, bad.body).toBe(422);
    expect(bad.json().detail[0].loc).toEqual(['body', 'columns', 'amount', 'type']);
    expect((await alice.request('PATCH', `/upload/v2/contracts/${c.contract_id}`, { amount: { type: 'DOUBLE' } })).statusCode).toBe(422);
    expect((await patch(alice, c.contract_id, { amount: { ignore: 'yes' } })).statusCode).toBe(422);
    // Nothing changed.
    expect((await get(alice, c.contract_id)).json().schema_fingerprint).toBe(c.schema_fingerprint);
  });

  it('refuses a column the contract does not have instead of silently keeping it', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.patch_typo', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    const res = await patch(alice, c.contract_id, { amout: { type: 'DECIMAL(18,2)' } });
    expect([409, 422]).toContain(res.statusCode);
  });
});

describe('accepting (PUT accept)', () => {
  it('the right fingerprint accepts; a wrong one is 409 and the contract stays proposed', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.accept1', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    const wrong = await accept(alice, c.contract_id, 'sha256:0000');
    expect(wrong.statusCode, wrong.body).toBe(409);
    expect(wrong.json()).toMatchObject({ code: 'FINGERPRINT_MISMATCH', schema_fingerprint: c.schema_fingerprint });
    expect((await get(alice, c.contract_id)).json().state).toBe('proposed');
    expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).json().code).toBe('CONTRACT_NOT_ACCEPTED');

    const right = await accept(alice, c.contract_id, c.schema_fingerprint);
    expect(right.statusCode, right.body).toBe(200);
    expect(right.json()).toMatchObject({ contract_id: c.contract_id, state: 'accepted', schema_fingerprint: c.schema_fingerprint });
    expect((await get(alice, c.contract_id)).json().state).toBe('accepted');
    // Accepting again is harmless.
    expect((await accept(alice, c.contract_id, c.schema_fingerprint)).json().state).toBe('accepted');
  });

  it('422 without a fingerprint', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.accept2', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    const res = await alice.request('PUT', `/upload/v2/contracts/${c.contract_id}/accept`, {});
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail[0]).toMatchObject({ loc: ['body', 'schema_fingerprint'], type: 'missing' });
  });
});

describe('reading (GET)', () => {
  it('shows plan, issues, values, every write and running totals', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.get1', schema: { mode: 'declared', columns: DECLARED } }, [
      { name: 'a.csv', content: PEOPLE },
      { name: 'b.csv', content: PEOPLE },
    ]);
    const fresh = (await get(alice, c.contract_id)).json();
    expect(fresh).toMatchObject({
      contract_id: c.contract_id,
      state: 'accepted',
      mode: 'declared',
      plan: c.plan,
      issues: c.issues,
      values: c.values,
      schema_fingerprint: c.schema_fingerprint,
      expires_at: c.expires_at,
      written: [],
      totals: { files: 0, rows: 0, bytes: 0 },
      created_by: 'alice',
      snapshot: null,
      rows_written: null,
    });

    const a = await write(alice, c.contract_id, 'a.csv', PEOPLE);
    expect(a.statusCode, a.body).toBe(200);
    const bBody = `${PEOPLE}3,Cy,1.00\n`;
    const b = await write(alice, c.contract_id, 'b.csv', bBody);
    expect(b.statusCode, b.body).toBe(200);
    expect(b.json().totals).toMatchObject({ files: 2, rows: 5 });

    const read = (await get(alice, c.contract_id)).json();
    expect(read.written).toEqual([
      expect.objectContaining({ file: 'a.csv', format: 'csv', rows: 2, source_bytes: Buffer.byteLength(PEOPLE), bytes: expect.any(Number), written_at: expect.any(String) }),
      expect.objectContaining({ file: 'b.csv', format: 'csv', rows: 3, source_bytes: Buffer.byteLength(bBody) }),
    ]);
    expect(read.totals).toEqual({
      files: 2,
      rows: 5,
      bytes: read.written[0].bytes + read.written[1].bytes,
      source_bytes: Buffer.byteLength(PEOPLE) + Buffer.byteLength(bBody),
      rows_rejected: 0,
      values_nulled: 0,
    });
    expect(read.written[0].bytes).toBeGreaterThan(0);
  });
});

describe('abandoning (DELETE)', () => {
  it('204, then the contract is gone and its staged files with it', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.del1', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(200);
    const keys = await staged(c.contract_id);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(new RegExp(`^lake/_staging/${c.contract_id}/`));

    const res = await remove(alice, c.contract_id);
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');
    const after = await get(alice, c.contract_id);
    expect(after.statusCode).toBe(404);
    expect(after.json().code).toBe('CONTRACT_NOT_FOUND');
    expect(await staged(c.contract_id)).toEqual([]);
    expect(await t.deps.blobs.head(keys[0])).toBeUndefined();
    expect((await remove(alice, c.contract_id)).statusCode).toBe(404);
    expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(404);
    expect((await commit(alice, c.contract_id)).statusCode).toBe(404);
    expect(await t.app.lakeport.catalog.findDataset({ workspace: 'sales', collection: 'c', dataset: 'del1' })).toBeUndefined();
  });

  it('a proposed contract can be abandoned too', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.del2', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect((await remove(alice, c.contract_id)).statusCode).toBe(204);
    expect((await get(alice, c.contract_id)).statusCode).toBe(404);
  });
});

// ── who may see a contract ────────────────────────────────────────────────────

describe('authentication and ownership', () => {
  let contractId: string;
  let fingerprint: string;
  beforeAll(async () => {
    const c = await contractOf(alice, { destination: 'sales.c.owned', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    contractId = c.contract_id;
    fingerprint = c.schema_fingerprint;
  });

  const calls = (user: TestUser, id: string) => [
    () => get(user, id),
    () => patch(user, id, { amount: { type: 'DECIMAL(18,2)' } }),
    () => accept(user, id, fingerprint),
    () => write(user, id, 'people.csv', PEOPLE),
    () => commit(user, id),
    () => remove(user, id),
  ];

  it('an unknown contract is 404 CONTRACT_NOT_FOUND on every endpoint', async () => {
    for (const call of calls(alice, 'ctr_doesnotexist')) {
      const res = await call();
      expect(res.statusCode, res.body).toBe(404);
      expect(res.json().code).toBe('CONTRACT_NOT_FOUND');
    }
  });

  it("another identity's contract is 404 on every endpoint, even for a writer of the same workspace", async () => {
    for (const user of [will, eve, rita]) {
      for (const call of calls(user, contractId)) {
        const res = await call();
        expect(res.statusCode, `${user.identity}: ${res.body}`).toBe(404);
        expect(res.json().code).toBe('CONTRACT_NOT_FOUND');
      }
    }
    // Untouched by all that.
    const mine = (await get(alice, contractId)).json();
    expect(mine).toMatchObject({ state: 'proposed', schema_fingerprint: fingerprint, written: [] });
  });

  it('401 without a token, on every endpoint', async () => {
    const noAuth = [
      await negotiate(null, { destination: 'sales.c.x' }, [{ name: 'people.csv', content: PEOPLE }]),
      await t.app.inject({ method: 'GET', url: `/upload/v2/contracts/${contractId}` }),
      await t.app.inject({ method: 'PATCH', url: `/upload/v2/contracts/${contractId}`, payload: { columns: {} } }),
      await t.app.inject({ method: 'PUT', url: `/upload/v2/contracts/${contractId}/accept`, payload: { schema_fingerprint: fingerprint } }),
      await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contractId}/data`, headers: { 'content-type': 'text/csv', 'x-file-name': 'people.csv' }, payload: PEOPLE }),
      await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contractId}/commit` }),
      await t.app.inject({ method: 'DELETE', url: `/upload/v2/contracts/${contractId}` }),
      await t.app.inject({ method: 'GET', url: `/upload/v2/contracts/${contractId}`, headers: { authorization: 'Bearer not-a-token' } }),
    ];
    for (const res of noAuth) expect(res.statusCode, res.body).toBe(401);
    expect((await get(alice, contractId)).json().state).toBe('proposed');
  });

  it('403 INSUFFICIENT_SCOPE for a token without the upload scope, even on its own contract', async () => {
    const res = await negotiate(aliceJobsOnly, { destination: 'sales.c.scoped' }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json().code).toBe('INSUFFICIENT_SCOPE');
    for (const call of calls(aliceJobsOnly, contractId)) {
      const r = await call();
      expect(r.statusCode, r.body).toBe(403);
      expect(r.json().code).toBe('INSUFFICIENT_SCOPE');
    }
    expect((await get(alice, contractId)).json()).toMatchObject({ state: 'proposed', written: [] });
  });

  it('403 for a reader of the workspace and for another tenant; a writer may negotiate', async () => {
    for (const user of [rita, eve]) {
      const res = await negotiate(user, { destination: 'sales.c.owned' }, [{ name: 'people.csv', content: PEOPLE }]);
      expect(res.statusCode, `${user.identity}: ${res.body}`).toBe(403);
    }
    const writer = await negotiate(will, { destination: 'sales.c.owned' }, [{ name: 'people.csv', content: PEOPLE }]);
    expect(writer.statusCode, writer.body).toBe(201);
    expect(writer.json().created_by).toBe('will');
  });
});

// ── lifetime ──────────────────────────────────────────────────────────────────

describe('expiry', () => {
  const expire = (id: string) => t.db.kysely.updateTable('upload_contracts').set({ expires_at: new Date(Date.now() - 60_000) }).where('contract_id', '=', id).execute();

  it('an expired contract refuses writes, commits, PATCH and accept with 410 CONTRACT_EXPIRED', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.expired1', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(200);
    await expire(c.contract_id);

    const w = await write(alice, c.contract_id, 'people.csv', PEOPLE);
    expect(w.statusCode, w.body).toBe(410);
    expect(w.json().code).toBe('CONTRACT_EXPIRED');
    const cm = await commit(alice, c.contract_id);
    expect(cm.statusCode, cm.body).toBe(410);
    expect(cm.json().code).toBe('CONTRACT_EXPIRED');
    const keyed = await commit(alice, c.contract_id, 'expired-key');
    expect(keyed.statusCode, keyed.body).toBe(410);
    expect(keyed.json().code).toBe('CONTRACT_EXPIRED');
    expect((await patch(alice, c.contract_id, { name: { ignore: true } })).json().code).toBe('CONTRACT_EXPIRED');
    expect((await accept(alice, c.contract_id, c.schema_fingerprint)).json().code).toBe('CONTRACT_EXPIRED');
    expect(await t.app.lakeport.catalog.findDataset({ workspace: 'sales', collection: 'c', dataset: 'expired1' })).toBeUndefined();
    // The refused keyed commit did not burn its key: it can be used on another contract.
    const other = await contractOf(alice, { destination: 'sales.c.expired1b', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect((await write(alice, other.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(200);
    expect((await commit(alice, other.contract_id, 'expired-key')).statusCode).toBe(200);
  });

  it('sweepExpired removes expired contracts and their staged files, and nothing else', async () => {
    const old = await contractOf(alice, { destination: 'sales.c.sweep1', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    const oldProposed = await contractOf(alice, { destination: 'sales.c.sweep2', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: PEOPLE }]);
    const live = await contractOf(alice, { destination: 'sales.c.sweep3', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    const done = await contractOf(alice, { destination: 'sales.c.sweep4', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    for (const c of [old, live, done]) expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(200);
    const committed = await commit(alice, done.contract_id);
    expect(committed.statusCode, committed.body).toBe(200);
    const committedFiles = await t.app.lakeport.catalog.snapshotFiles(committed.json().snapshot.snapshot_id);
    expect(committedFiles).toHaveLength(1);
    await expire(old.contract_id);
    await expire(oldProposed.contract_id);
    await expire(done.contract_id);
    expect(await staged(old.contract_id)).toHaveLength(1);

    const swept = await t.app.lakeport.uploads.sweepExpired();
    expect(swept).toBeGreaterThanOrEqual(2);
    expect((await get(alice, old.contract_id)).statusCode).toBe(404);
    expect((await get(alice, oldProposed.contract_id)).statusCode).toBe(404);
    expect(await staged(old.contract_id)).toEqual([]);
    // A live contract and a committed one (its files belong to the dataset now) survive.
    expect((await get(alice, live.contract_id)).json().written).toHaveLength(1);
    expect(await staged(live.contract_id)).toHaveLength(1);
    expect(await t.deps.blobs.head(committedFiles[0].path)).toBeDefined();
    expect((await t.app.lakeport.catalog.listSnapshots({ workspace: 'sales', collection: 'c', dataset: 'sweep4' })).length).toBe(1);
    expect(await t.app.lakeport.uploads.sweepExpired()).toBe(0);
  });
});

// ── repeated commits ──────────────────────────────────────────────────────────

describe('repeated commits of one contract', () => {
  // On PostgreSQL the eight requests really race, each on its own pooled connection.
  for (const existing of [false, true]) {
    const name = existing ? 'repeat_append' : 'repeat_create';
    it(`eight commits at once (${existing ? 'append to a dataset' : 'a new dataset'}) answer one snapshot; the contract reads committed; repeats answer it again`, async () => {
      if (existing) await createDataset(name, DECLARED);
      const schema = existing ? { mode: 'dataset' } : { mode: 'declared', columns: DECLARED };
      const c = await contractOf(alice, { destination: `sales.c.${name}`, schema }, [{ name: 'people.csv', content: PEOPLE }]);
      expect(c.state).toBe('accepted');
      expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(200);

      // Half of them with an Idempotency-Key each, half without.
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => commit(alice, c.contract_id, i % 2 === 0 ? `${name}-${i}` : undefined)));
      for (const res of results) expect(res.statusCode, res.body).toBe(200);
      const first = results[0].json();
      expect(first).toMatchObject({ contract_id: c.contract_id, state: 'committed', dataset: `sales.c.${name}`, rows_written: 2, snapshot: { operation: existing ? 'append' : 'create', total_records: 2 } });
      for (const res of results) expect(res.json()).toEqual(first);

      const snapshots = await t.app.lakeport.catalog.listSnapshots({ workspace: 'sales', collection: 'c', dataset: name });
      expect(snapshots.map((s) => s.snapshot_id)).toEqual([first.snapshot.snapshot_id]);
      expect((await get(alice, c.contract_id)).json()).toMatchObject({ state: 'committed', snapshot: { snapshot_id: first.snapshot.snapshot_id }, rows_written: 2 });

      // Later: without a key, with a key used above, and with a new key — the same answer each time.
      for (const key of [undefined, `${name}-0`, `${name}-later`, `${name}-later`]) {
        const again = await commit(alice, c.contract_id, key);
        expect(again.statusCode, again.body).toBe(200);
        expect(again.json()).toEqual(first);
      }
      expect(await t.app.lakeport.catalog.listSnapshots({ workspace: 'sales', collection: 'c', dataset: name })).toHaveLength(1);
      expect((await get(alice, c.contract_id)).json().state).toBe('committed');
    });
  }

  it('a committed contract stays committed, and its writes stay the dataset’s, even for requests that read it before', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.repeat_frozen', schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
    expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(200);
    expect((await commit(alice, c.contract_id)).statusCode).toBe(200);
    // What a re-plan, abandon, write or stale check that read the contract just before the commit would do next:
    const repo = new UploadRepo(t.db);
    await repo.markStale(c.contract_id);
    await expect(repo.updateContract(c.contract_id, { state: 'accepted' })).rejects.toMatchObject({ status: 409, code: 'CONTRACT_COMMITTED' });
    expect(await repo.deleteWrites(c.contract_id)).toBe(false);
    await expect(
      repo.putWrite({ write_id: 'wr_late', contract_id: c.contract_id, file_name: 'people.csv', format: 'csv', rows: 1, bytes: 1, source_bytes: 1, parts: 0 }, []),
    ).rejects.toMatchObject({ status: 409, code: 'CONTRACT_COMMITTED' });
    expect((await get(alice, c.contract_id)).json()).toMatchObject({ state: 'committed', written: [expect.objectContaining({ rows: 2 })] });
    expect(await staged(c.contract_id)).toHaveLength(1);
  });

  it('abandoning or rewriting a contract while it commits never loses the committed files', async () => {
    for (let round = 0; round < 4; round++) {
      const name = `repeat_race_${round}`;
      const c = await contractOf(alice, { destination: `sales.c.${name}`, schema: { mode: 'declared', columns: DECLARED } }, [{ name: 'people.csv', content: PEOPLE }]);
      expect((await write(alice, c.contract_id, 'people.csv', PEOPLE)).statusCode).toBe(200);
      const other = round % 2 === 0 ? () => remove(alice, c.contract_id) : () => write(alice, c.contract_id, 'people.csv', PEOPLE);
      const [committed] = await Promise.all([commit(alice, c.contract_id), other()]);
      if (committed.statusCode !== 200) continue; // abandoned first (404), or rewritten under it (409 CONTRACT_CHANGED): nothing published
      for (const f of await t.app.lakeport.catalog.snapshotFiles(committed.json().snapshot.snapshot_id)) {
        expect(await t.deps.blobs.head(f.path), `round ${round}: ${f.path}`).toBeDefined();
      }
    }
  });
});
