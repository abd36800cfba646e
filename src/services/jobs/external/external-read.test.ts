/**
 * READ_PARQUET / READ_CSV / READ_JSONL(…, credentials => '<workspace>.<secret>') through the job
 * service, end to end: S3 (storage_b) against a real S3-compatible server on loopback (s3rver, with
 * SigV4 verified), Google Cloud Storage (storage_a) against a fake of its token endpoint and JSON API.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../../test/clients.ts';
import { startFakeGcs, type FakeGcs } from '../../../../test/gcs-server.ts';
import { createTestApp, tempDir, type TestApp } from '../../../../test/harness.ts';
import { startS3Server, type TestS3Server } from '../../../../test/s3-server.ts';
import { seedSnapshot } from '../../../../test/seed.ts';
import { InlineQueryEngine } from '../../../core/engine/index.ts';
import type { ExternalStore } from '../../../core/storage/external/index.ts';
import type { QueryPlanner } from '../planner.ts';
import type { JobRow } from '../repo.ts';
import { SandboxJobRunner } from '../runner.ts';
import { SecretStore } from '../statements/index.ts';
import { ExternalFetcher } from './fetch.ts';

let t: TestApp;
let s3: TestS3Server;
let gcs: FakeGcs;
let alice: TestUser; // owner of sales
let rita: TestUser; // reader on sales.*
let olga: TestUser; // reader on sales.orders.* only
let eve: TestUser; // nothing in sales
let narrow: TestUser; // alice through a credential narrowed to sales.orders.*
const files = tempDir('lakeport-external-src-');

const J = '/jobs/api/v1';
const BUCKET = 'acme-lake';
const SCOPE = `s3://${BUCKET}/team/`;

const runner = () => (t.app.lakeport.workers as unknown as { runner: { queries: SandboxJobRunner } }).runner.queries;
const copiesDir = () => path.join(t.deps.scratchDir, 'external');
const leftovers = () => (fs.existsSync(copiesDir()) ? fs.readdirSync(copiesDir()) : []);

async function submit(user: TestUser, sql: string, parameters?: Record<string, unknown>) {
  return user.request('POST', `${J}/jobs`, { sql_text: sql, parameters });
}

/** Submits (expecting 201) and waits for the job to finish; its status, and its rows when it succeeded. */
async function run(user: TestUser, sql: string) {
  const submitted = await submit(user, sql);
  expect(submitted.statusCode, submitted.body).toBe(201);
  const status = (await user.request('GET', `${J}/jobs/${submitted.json().execution_id}/status?wait=30`)).json();
  const data = status.status === 'succeeded' ? (await user.request('GET', `${J}/jobs/${status.execution_id}/results`)).json().data : undefined;
  return { ...status, data };
}

async function check(user: TestUser, sql: string) {
  const res = await user.request('POST', `${J}/check`, { sql_text: sql });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** A refusal at submit (no job), with the same code from the check endpoint. */
async function refused(user: TestUser, sql: string, status: number, code: string) {
  const res = await submit(user, sql);
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json();
  expect(body.code).toBe(code);
  expect(await check(user, sql)).toMatchObject({ ok: false, error: { code } });
  return body as { detail: string; code: string; position: number; line: number; column: number; start: number; end: number };
}

async function secretRow(name: string) {
  return t.db.kysely.selectFrom('secrets').select(['use_count', 'last_used_at']).where('workspace', '=', 'sales').where('name', '=', name).executeTakeFirstOrThrow();
}

async function createSecret(sql: string, parameters: Record<string, string>) {
  const res = await submit(alice, sql, parameters);
  expect(res.statusCode, res.body).toBe(201);
}

beforeAll(async () => {
  [s3, gcs] = await Promise.all([startS3Server({ bucket: BUCKET, verifySignatures: true }), startFakeGcs()]);
  // The objects: written with DuckDB, uploaded with the server's own keys.
  const duck = await DuckDBInstance.create(':memory:');
  const c = await duck.connect();
  const f = (name: string) => path.join(files.dir, name);
  await c.run(`COPY (SELECT i AS id, i * 10 AS amount FROM range(1, 101) t(i)) TO '${f('2024-01.parquet')}' (FORMAT parquet)`);
  await c.run(`COPY (SELECT i AS id, i * 10 AS amount FROM range(101, 151) t(i)) TO '${f('2024-02.parquet')}' (FORMAT parquet)`);
  await c.run(`COPY (SELECT 999 AS id, 1 AS amount) TO '${f('secret.parquet')}' (FORMAT parquet)`);
  c.closeSync();
  duck.closeSync();
  const admin = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
  const objects: [string, string | Buffer][] = [
    ['team/orders/2024-01.parquet', fs.readFileSync(f('2024-01.parquet'))],
    ['team/orders/2024-02.parquet', fs.readFileSync(f('2024-02.parquet'))],
    ['team/orders/README.txt', 'not parquet'],
    ['team/csv/a.csv', 'id;name\n1;ann\n2;bob\n'],
    ['team/csv/sub/b.csv', 'id;name\n3;cid\n'],
    ['team/events/e1.jsonl', '{"customer": 1, "kind": "view"}\n{"customer": 2, "kind": "buy"}\n'],
    ['team/events/e2.jsonl', '{"customer": 1, "kind": "buy"}\n'],
    ['teamX/orders/secret.parquet', fs.readFileSync(f('secret.parquet'))],
  ];
  for (const [key, body] of objects) await admin.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
  admin.destroy();
  gcs.put('gcs-lake', 'exports/2024/a.csv', 'id,city\n1,Oslo\n2,Rome\n');
  gcs.put('gcs-lake', 'exports/2024/b.csv', 'id,city\n3,Lima\n');
  gcs.put('gcs-lake', 'exports/2024/c.txt', 'ignored');
  gcs.put('gcs-lake', 'private/x.csv', 'id,city\n9,Nope\n');

  t = await createTestApp({
    jobs: {
      timeoutMs: 30_000,
      workers: 2,
      memoryLimit: '256MB',
      threads: 1,
      external: { stores: { s3: { endpoint: s3.endpoint, maxAttempts: 1 }, gcs: { tokenUrl: gcs.tokenUrl, apiBase: gcs.url } } },
    },
  });
  [alice, rita, olga, eve] = await Promise.all(['alice', 'rita', 'olga', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  narrow = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.orders.*', 'reader']] });
  await createWorkspace(alice, 'sales', { rita: 'reader' });
  const granted = await alice.request('POST', '/policy/v1/access/workspace/sales/policies', { principal: { identity: 'olga' }, role: 'reader', pattern: 'sales.orders.*' });
  expect(granted.statusCode, granted.body).toBe(201);
  await seedSnapshot(t, { workspace: 'sales', collection: 'crm', dataset: 'customers' }, [{ name: 'id', type: 'BIGINT', nullable: false }, { name: 'name', type: 'VARCHAR', nullable: true }], "SELECT * FROM (VALUES (1, 'ann'), (2, 'bob')) v(id, name)");

  const s3Secret = (name: string, keyId: string, secret: string, scope = SCOPE) =>
    createSecret(`CREATE SECRET ${name} IN sales (TYPE 'storage_b_access_key', ACCESS_KEY_ID :id, SECRET_ACCESS_KEY :sk, REGION 'eu-west-1', SCOPE '${scope}')`, { id: keyId, sk: secret });
  await s3Secret('raw', s3.accessKeyId, s3.secretAccessKey);
  await s3Secret('wrong_key', s3.accessKeyId, 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY');
  await s3Secret('unknown_id', 'AKIAIOSFODNN7EXAMPLE', s3.secretAccessKey);
  await s3Secret('whole_bucket', s3.accessKeyId, s3.secretAccessKey, `s3://${BUCKET}/`);
  await createSecret("CREATE SECRET gcs IN sales (TYPE 'storage_a_service_account', KEY :key, SCOPE 'gs://gcs-lake/exports/')", { key: gcs.key });
  await createSecret("CREATE SECRET gcs_wrong IN sales (TYPE 'storage_a_service_account', KEY :key, SCOPE 'gs://gcs-lake/exports/')", { key: gcs.wrongKey });
  await createSecret("CREATE SECRET hook IN sales (TYPE 'http_endpoint', URL 'https://8.8.8.8/hook')", {});
});
afterAll(async () => {
  await t?.close();
  await Promise.all([s3?.stop(), gcs?.stop()]);
  files.remove();
});

describe('reading S3 (storage_b) with an s3_access_key secret', () => {
  it('reads Parquet under the scope through a glob, counts the use, and leaves no copy or pooled engine behind', async () => {
    // A secret of its own, so its first use is this test's whatever ran before.
    await createSecret(`CREATE SECRET counted IN sales (TYPE 'storage_b_access_key', ACCESS_KEY_ID :id, SECRET_ACCESS_KEY :sk, REGION 'eu-west-1', SCOPE '${SCOPE}')`, { id: s3.accessKeyId, sk: s3.secretAccessKey });
    const before = await secretRow('counted');
    expect(before).toMatchObject({ use_count: 0, last_used_at: null });
    const pooled = (runner().engines.shared as InlineQueryEngine).sandboxes.stats().acquired;
    const job = await run(alice, `SELECT count(*) AS n, sum(amount) AS total, min(id) AS lo, max(id) AS hi FROM read_parquet('s3://${BUCKET}/team/orders/*.parquet', credentials => 'sales.counted')`);
    expect(job.status, JSON.stringify(job.error)).toBe('succeeded');
    expect(job.data).toEqual([[150, 113250, 1, 150]]);
    const after = await secretRow('counted');
    expect(after.use_count).toBe(1);
    expect(after.last_used_at).toBeInstanceOf(Date);
    expect(leftovers()).toEqual([]);
    // The job ran on an engine of its own, never one of the pool's.
    expect((runner().engines.shared as InlineQueryEngine).sandboxes.stats().acquired).toBe(pooled);
    // The stored statement is the user's, as written.
    expect(job.sql_text).toContain("credentials => 'sales.counted'");
  });

  it('reads CSV (a prefix, with options) and JSONL (a list of URLs), joined with a dataset', async () => {
    const uses = (await secretRow('raw')).use_count;
    const csv = await run(alice, `SELECT id, name FROM read_csv('s3://${BUCKET}/team/csv/', header = true, delim = ';', columns = {'id': 'BIGINT', 'name': 'VARCHAR'}, credentials => 'sales.raw') ORDER BY id`);
    expect(csv.status, JSON.stringify(csv.error)).toBe('succeeded');
    expect(csv.data).toEqual([[1, 'ann'], [2, 'bob'], [3, 'cid']]);
    const jsonl = await run(
      rita,
      `SELECT c.name, e.kind, count(*) AS n
         FROM read_jsonl(['s3://${BUCKET}/team/events/e1.jsonl', 's3://${BUCKET}/team/events/e2.jsonl'], credentials => 'sales.raw') e
         JOIN sales.crm.customers c ON c.id = e.customer
        GROUP BY ALL ORDER BY ALL`,
    );
    expect(jsonl.status, JSON.stringify(jsonl.error)).toBe('succeeded');
    expect(jsonl.data).toEqual([['ann', 'buy', 1], ['ann', 'view', 1], ['bob', 'buy', 1]]);
    expect((await secretRow('raw')).use_count).toBe(uses + 2);
    expect(leftovers()).toEqual([]);
  });

  it('checks such a statement without fetching: ok, with no columns, and no use counted', async () => {
    const count = (await secretRow('raw')).use_count;
    const checked = await check(alice, `SELECT * FROM read_parquet('s3://${BUCKET}/team/orders/*.parquet', credentials => 'sales.raw')`);
    expect(checked).toMatchObject({ ok: true, columns: null });
    expect((await secretRow('raw')).use_count).toBe(count);
  });

  it('refuses a URL outside the scope at submit and check, at the URL, before anything is read', async () => {
    const count = (await secretRow('raw')).use_count;
    for (const url of [`s3://${BUCKET}/teamX/orders/secret.parquet`, `s3://${BUCKET}/team*/orders/*.parquet`, 's3://acme-lake-other/team/x.parquet', `s3://${BUCKET}/team`]) {
      const sql = `SELECT *\nFROM read_parquet('${url}', credentials => 'sales.raw')`;
      const body = await refused(alice, sql, 403, 'EXTERNAL_SCOPE_VIOLATION');
      expect(body.detail).toBe(`'${url}' is outside the SCOPE of secret sales.raw (${SCOPE}): a URL must lie under it, up to its first wildcard`);
      expect(body).toMatchObject({ position: sql.indexOf(`'${url}'`), line: 2, column: 19, start: sql.indexOf(`'${url}'`), end: sql.indexOf(`'${url}'`) + url.length + 2 });
      const checked = await check(alice, sql);
      expect(checked.error).toMatchObject({ start: body.start, line: 2, column: 19 });
    }
    // Nothing was read, and no use was counted; the whole-bucket secret does reach teamX/.
    expect((await secretRow('raw')).use_count).toBe(count);
    const wide = await run(alice, `SELECT id FROM read_parquet('s3://${BUCKET}/teamX/orders/secret.parquet', credentials => 'sales.whole_bucket')`);
    expect(wide.data).toEqual([[999]]);
  });

  it('fails at the first read when the key is wrong: a clear error, never the key', async () => {
    const wrong = await run(alice, `SELECT * FROM read_parquet('s3://${BUCKET}/team/orders/*.parquet', credentials => 'sales.wrong_key')`);
    expect(wrong).toMatchObject({ status: 'failed', error: { code: 'EXTERNAL_CREDENTIALS_REJECTED', line: 1, column: 28 } });
    expect(wrong.error.message).toBe(`S3 refused the secret's credentials for s3://${BUCKET}/team/orders/: the secret access key does not match the access key id (SignatureDoesNotMatch)`);
    const unknown = await run(alice, `SELECT * FROM read_parquet('s3://${BUCKET}/team/orders/2024-01.parquet', credentials => 'sales.unknown_id')`);
    expect(unknown.error).toMatchObject({ code: 'EXTERNAL_CREDENTIALS_REJECTED', message: expect.stringContaining('the access key id is not known to the store (InvalidAccessKeyId)') });
    expect(JSON.stringify([wrong, unknown])).not.toContain('wJalrXUtnFEMI');
    // A use is a use, even when the store refused the key.
    expect((await secretRow('wrong_key')).use_count).toBe(1);
    expect(leftovers()).toEqual([]);
  });

  it('fails clearly on missing objects and names objects, not local copies, in DuckDB errors', async () => {
    const missing = await run(alice, `SELECT * FROM read_parquet('s3://${BUCKET}/team/orders/2023-12.parquet', credentials => 'sales.raw')`);
    expect(missing.error).toMatchObject({ code: 'EXTERNAL_OBJECT_NOT_FOUND', message: `s3://${BUCKET}/team/orders/2023-12.parquet: no such object` });
    const none = await run(alice, `SELECT * FROM read_csv('s3://${BUCKET}/team/nothing/*.csv', credentials => 'sales.raw')`);
    expect(none.error).toMatchObject({ code: 'EXTERNAL_OBJECT_NOT_FOUND', message: `No object matches 's3://${BUCKET}/team/nothing/*.csv'` });
    const notParquet = await run(alice, `SELECT * FROM read_parquet('s3://${BUCKET}/team/orders/README.txt', credentials => 'sales.raw')`);
    expect(notParquet.error.code).toBe('QUERY_ERROR');
    expect(notParquet.error.message).toContain(`s3://${BUCKET}/team/orders/README.txt`);
    expect(notParquet.error.message).not.toContain(t.deps.scratchDir);
    expect(leftovers()).toEqual([]);
  });

  it('lets readers of the whole workspace use its secrets; anyone else gets the answer of a missing secret', async () => {
    const sql = (secret: string) => `SELECT count(*) FROM read_parquet('s3://${BUCKET}/team/orders/2024-02.parquet', credentials => '${secret}')`;
    expect((await run(rita, sql('sales.raw'))).data).toEqual([[50]]);
    const missing = await refused(alice, sql('sales.nope'), 404, 'SECRET_NOT_FOUND');
    expect(missing.detail).toBe('Secret sales.nope does not exist, or you may not use it (reading with a secret takes the reader role on sales.*)');
    for (const user of [olga, eve, narrow]) {
      const body = await refused(user, sql('sales.raw'), 404, 'SECRET_NOT_FOUND');
      expect(body.detail).toBe(missing.detail.replace('sales.nope', 'sales.raw'));
      expect(body.start).toBe(sql('sales.raw').indexOf("'sales.raw'"));
    }
  });

  it('keeps everything else refused', async () => {
    // Without credentials: refused as before (the job fails).
    const plain = await run(alice, `SELECT * FROM read_parquet('s3://${BUCKET}/team/orders/2024-01.parquet')`);
    expect(plain.error).toMatchObject({ code: 'TABLE_FUNCTION_NOT_ALLOWED', message: expect.stringContaining("credentials => '<workspace>.<secret>'") });
    expect((await run(alice, "SELECT * FROM read_csv('/etc/passwd')")).error.code).toBe('TABLE_FUNCTION_NOT_ALLOWED');
    expect((await run(alice, `SELECT * FROM read_json('s3://${BUCKET}/team/events/e1.jsonl', credentials => 'sales.raw')`)).error.code).toBe('TABLE_FUNCTION_NOT_ALLOWED');
    // With credentials, refused at submit:
    await refused(alice, "SELECT * FROM read_csv('/etc/passwd', credentials => 'sales.raw')", 400, 'FILE_ACCESS_NOT_ALLOWED');
    await refused(alice, `SELECT * FROM read_csv('s3://${BUCKET}/team/csv/a.csv', filename = true, credentials => 'sales.raw')`, 400, 'INVALID_EXTERNAL_READ');
    await refused(alice, `SELECT * FROM read_csv('s3://${BUCKET}/team/csv/a.csv', credentials => 'raw')`, 400, 'INVALID_SECRET_REFERENCE');
    await refused(alice, `SELECT * FROM read_csv('s3://${BUCKET}/team/csv/a.csv', credentials => 'sales.hook')`, 400, 'SECRET_TYPE_NOT_READABLE');
    await refused(alice, "SELECT * FROM read_csv('gs://gcs-lake/exports/2024/a.csv', credentials => 'sales.raw')", 400, 'SECRET_TYPE_NOT_READABLE');
  });

  it('cancels a running read and removes its copies', async () => {
    const submitted = await submit(alice, `SELECT count(*) FROM read_parquet('s3://${BUCKET}/team/orders/*.parquet', credentials => 'sales.raw') a, range(1000000000000) b`);
    expect(submitted.statusCode, submitted.body).toBe(201);
    const id = submitted.json().execution_id;
    await expect.poll(async () => (await alice.request('GET', `${J}/jobs/${id}/status`)).json().status, { timeout: 10_000 }).toBe('running');
    // Cancel once the read has copies to remove (polling, not sleeping).
    await expect.poll(() => leftovers().length, { timeout: 10_000, interval: 10 }).toBeGreaterThan(0);
    expect((await alice.request('POST', `${J}/jobs/${id}/cancel`)).statusCode).toBe(200);
    expect((await alice.request('GET', `${J}/jobs/${id}/status?wait=20`)).json().status).toBe('cancelled');
    expect(leftovers()).toEqual([]);
  });

  it('stops a read at its time limit and removes its copies', async () => {
    const row = {
      execution_id: 'job_external_timeout',
      owner: 'alice',
      sql_text: `SELECT count(*) FROM read_parquet('s3://${BUCKET}/team/orders/*.parquet', credentials => 'sales.raw') a, range(1000000000000) b`,
      parameters: {},
      permissions: [],
      timeout_ms: 1_000,
    } as unknown as JobRow;
    const handle = runner().start(row);
    // The time limit strikes once the read has copies to remove (polling, not a timer).
    await expect.poll(() => leftovers().length, { timeout: 10_000, interval: 10 }).toBeGreaterThan(0);
    handle.cancel('timeout');
    expect(await handle.done).toMatchObject({ status: 'failed', error: { code: 'JOB_TIMEOUT' } });
    expect(leftovers()).toEqual([]);
  });

  it('stops downloads under way on cancel and removes the partial copies', async () => {
    const started: string[] = [];
    const hanging: ExternalStore = {
      scheme: 's3',
      async *list() {
        yield* [{ key: 'team/orders/2024-01.parquet', size: 10 }, { key: 'team/orders/2024-02.parquet', size: 10 }];
      },
      async get(_bucket, key) {
        started.push(key);
        const body = new PassThrough();
        body.write('partial bytes');
        return { body };
      },
      close() {},
    };
    const own = runner() as unknown as { planner: QueryPlanner };
    const directory = path.join(t.deps.scratchDir, 'external-hanging');
    const secrets = new SecretStore(t.db, t.deps.sealer);
    const engine = new InlineQueryEngine({ threads: 1, memoryLimit: '128MB' });
    const limits = { perJob: 2 ** 30, perIdentity: 2 ** 30, retainedBy: async () => 0 };
    const slow = new SandboxJobRunner(own.planner, t.deps.blobs, { shared: engine, isolated: () => engine }, limits, { fetcher: new ExternalFetcher(secrets, {}, async () => hanging), directory });
    const row = {
      execution_id: 'job_external_cancel',
      owner: 'alice',
      sql_text: `SELECT count(*) FROM read_parquet('s3://${BUCKET}/team/orders/*.parquet', credentials => 'sales.raw')`,
      parameters: {},
      permissions: [],
      timeout_ms: 30_000,
    } as unknown as JobRow;
    const handle = slow.start(row);
    await expect.poll(() => started.length).toBe(2);
    expect(fs.readdirSync(directory)).toHaveLength(1);
    handle.cancel('cancelled');
    expect(await handle.done).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
    expect(fs.readdirSync(directory)).toEqual([]);
    await slow.close();
  });
});

describe('reading Google Cloud Storage (storage_a) with a gcs_service_account secret', () => {
  it('reads CSV under the scope through the JSON API with a signed service-account assertion', async () => {
    const uses = (await secretRow('gcs')).use_count;
    const job = await run(alice, "SELECT id, city FROM read_csv('gs://gcs-lake/exports/2024/*.csv', header = true, credentials => 'sales.gcs') ORDER BY id");
    expect(job.status, JSON.stringify(job.error)).toBe('succeeded');
    expect(job.data).toEqual([[1, 'Oslo'], [2, 'Rome'], [3, 'Lima']]);
    expect((await secretRow('gcs')).use_count).toBe(uses + 1);
    expect(gcs.requests).toContain('GET /storage/v1/b/gcs-lake/o/exports%2F2024%2Fa.csv?alt=media');
    expect(leftovers()).toEqual([]);
  });

  it('refuses outside the scope, and fails at the first read with a wrong key', async () => {
    await refused(alice, "SELECT * FROM read_csv('gs://gcs-lake/private/x.csv', credentials => 'sales.gcs')", 403, 'EXTERNAL_SCOPE_VIOLATION');
    const wrong = await run(alice, "SELECT * FROM read_csv('gs://gcs-lake/exports/2024/a.csv', credentials => 'sales.gcs_wrong')");
    expect(wrong.error).toMatchObject({
      code: 'EXTERNAL_CREDENTIALS_REJECTED',
      message: "Google Cloud Storage refused the secret's service-account key: the token endpoint answered 400 (invalid_grant: Invalid JWT Signature.)",
    });
  });
});
