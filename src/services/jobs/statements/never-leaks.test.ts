/**
 * A secret's values are never written anywhere in clear. After creating secrets with literals and with
 * parameters (and having some refused, and checked), no value appears in any table of the metadata
 * database, in the job history API (status, recent, results, downloads), in any stored file, or in
 * the server's log.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../../test/harness.ts';
import { serviceAccountKey } from '../../../../test/secret-fixtures.ts';
import { SecretStore } from './secret-store.ts';

let t: TestApp;
let alice: TestUser;
let eve: TestUser;
const log: string[] = [];
const J = '/jobs/api/v1';

/** A distinctive value that can only come from this test. */
const marker = (label: string) => `LEAK${label}${crypto.randomBytes(6).toString('hex')}`;
const values: string[] = [];
const v = (label: string) => {
  const value = marker(label);
  values.push(value);
  return value;
};

beforeAll(async () => {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      log.push(String(chunk));
      done();
    },
  });
  t = await createTestApp({}, { workers: true, logger: { level: 'trace', stream } });
  [alice, eve] = await Promise.all(['alice', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  await createWorkspace(alice, 'sales');
});
afterAll(async () => t.close());

const lit = (value: string) => `'${value.replace(/'/g, "''")}'`;

/** The secrets the setup created, with the values each should hold. */
const created: { name: string; expected: Record<string, string> }[] = [];
/** Every statement the setup sent: the status its check and its submission got, and the one expected. */
const submissions: { sqlText: string; check: number; status: number; expected: number; body: string; executionId?: string; final?: string }[] = [];

/**
 * The scenario every test below inspects: secrets created with literals and parameters, replaced, and
 * some refused. It runs once before the tests (so each test can run alone and in any order), and
 * waits until every accepted job has finished, so their results and files are all written.
 */
async function createSecrets() {
  const submit = async (user: TestUser, sqlText: string, parameters?: Record<string, unknown>, status = 201) => {
    const check = await user.request('POST', `${J}/check`, { sql_text: sqlText, parameters });
    const res = await user.request('POST', `${J}/jobs`, { sql_text: sqlText, parameters, client_info: { application: 'leak-test' } });
    submissions.push({ sqlText, check: check.statusCode, status: res.statusCode, expected: status, body: res.body, executionId: res.statusCode === 201 ? res.json().execution_id : undefined });
    return res;
  };

  // s3, all literals
  const s3lit = { ACCESS_KEY_ID: `AKIA${v('ID').toUpperCase()}`, SECRET_ACCESS_KEY: v('SK'), SCOPE: `s3://lake-bucket/${v('scope').toLowerCase()}/` };
  values.push(s3lit.ACCESS_KEY_ID);
  await submit(alice, `CREATE SECRET s3_lit IN sales (TYPE 's3_access_key', ACCESS_KEY_ID ${lit(s3lit.ACCESS_KEY_ID)}, SECRET_ACCESS_KEY ${lit(s3lit.SECRET_ACCESS_KEY)}, SCOPE ${lit(s3lit.SCOPE)})`);
  created.push({ name: 's3_lit', expected: s3lit });

  // s3 temporary key, all parameters
  const s3par = { ACCESS_KEY_ID: `ASIA${v('TID').toUpperCase()}`, SECRET_ACCESS_KEY: v('TSK'), SESSION_TOKEN: v('TOKEN'), REGION: 'eu-west-1', SCOPE: 's3://lake-bucket/raw/' };
  values.push(s3par.ACCESS_KEY_ID);
  await submit(alice, "CREATE SECRET s3_par IN sales (TYPE 'storage_b_access_key', ACCESS_KEY_ID :id, SECRET_ACCESS_KEY :sk, SESSION_TOKEN :st, REGION 'eu-west-1', SCOPE 's3://lake-bucket/raw/')", {
    id: s3par.ACCESS_KEY_ID,
    sk: s3par.SECRET_ACCESS_KEY,
    st: s3par.SESSION_TOKEN,
  });
  created.push({ name: 's3_par', expected: s3par });

  // gcs: the key file as a literal, then replaced through a parameter
  const keyLiteral = serviceAccountKey({ private_key: `-----BEGIN PRIVATE KEY-----\n${v('PEM')}\n-----END PRIVATE KEY-----\n`, client_email: `${v('mail').toLowerCase()}@p.iam.gserviceaccount.com` });
  await submit(alice, `CREATE SECRET gcs IN sales (TYPE 'gcs_service_account', KEY ${lit(keyLiteral)}, SCOPE 'gs://lake-bucket/')`);
  const keyParam = serviceAccountKey({ private_key: `-----BEGIN PRIVATE KEY-----\n${v('PEM2')}\n-----END PRIVATE KEY-----\n` });
  await submit(alice, "CREATE OR REPLACE SECRET gcs IN sales (TYPE 'storage_a_service_account', KEY :key, SCOPE 'gs://lake-bucket/')", { key: keyParam });
  created.push({ name: 'gcs', expected: { KEY: keyParam, SCOPE: 'gs://lake-bucket/' } });

  // http_endpoint: literal URL path, parameter header; then IF NOT EXISTS with other values (left untouched)
  const hook = { URL: `https://93.184.216.34/${v('path')}`, HEADER_AUTHORIZATION: `Bearer ${v('bearer')}`, HEADER_X_API_KEY: v('apikey') };
  await submit(alice, `CREATE SECRET hook IN sales (TYPE 'http_endpoint', URL ${lit(hook.URL)}, HEADER_AUTHORIZATION :auth, HEADER_X_API_KEY ${lit(hook.HEADER_X_API_KEY)})`, { auth: hook.HEADER_AUTHORIZATION });
  await submit(alice, `CREATE SECRET IF NOT EXISTS hook IN sales (TYPE 'http_endpoint', URL ${lit(`https://93.184.216.34/${v('ignored')}`)})`);
  created.push({ name: 'hook', expected: hook });

  // Refused ones, carrying values: wrong type on replace, invalid values, a batch, no permission, unknown key, bad syntax
  await submit(alice, `CREATE OR REPLACE SECRET hook IN sales (TYPE 's3_access_key', ACCESS_KEY_ID ${lit(v('R1'))}, SECRET_ACCESS_KEY ${lit(v('R2'))}, SCOPE 's3://lake-bucket/')`, undefined, 409);
  await submit(alice, `CREATE SECRET bad IN sales (TYPE 'gcs_service_account', KEY ${lit(`{"type":"service_account","token_uri":"https://evil.example/${v('R3')}"}`)}, SCOPE 'gs://lake-bucket/')`, undefined, 400);
  await submit(alice, "CREATE SECRET bad IN sales (TYPE 'gcs_service_account', KEY :k, SCOPE 'gs://lake-bucket/')", { k: `not json ${v('R4')}` }, 400);
  await submit(alice, `SELECT 1; CREATE SECRET batch IN sales (TYPE 'http_endpoint', URL ${lit(`https://93.184.216.34/${v('R5')}`)})`, undefined, 400);
  await submit(eve, `CREATE SECRET stolen IN sales (TYPE 'http_endpoint', URL ${lit(`https://93.184.216.34/${v('R6')}`)})`, undefined, 403);
  await submit(alice, `CREATE SECRET bad IN sales (TYPE 'http_endpoint', URL 'https://93.184.216.34/', NOTAKEY ${lit(v('R7'))})`, undefined, 400);
  await submit(alice, `CREATE SECRET bad IN sales (TYPE 'http_endpoint', URL ${v('R8')})`, undefined, 400);
  await submit(alice, `CREATE SECRET bad IN sales (TYPE 'http_endpoint', URL 'https://93.184.216.34/' ${lit(v('R9'))})`, undefined, 400);
  await submit(alice, `CREATE SECRET bad IN sales (TYPE 'http_endpoint', URL :u)`, { u: `http://insecure.example/${v('R10')}` }, 400);
  await submit(alice, `ALTER SECRET hook SET URL ${lit(v('R11'))}`, undefined, 400);
  await submit(alice, `CREATE SECRET hook2 IN sales (TYPE 'http_endpoint', URL ${lit(`https://93.184.216.34/${v('R12')}`)}); SELECT 1`, undefined, 400);

  // Wait (long-polling the status, not sleeping) until every accepted job is done.
  for (const submission of submissions) {
    if (submission.executionId === undefined) continue;
    const deadline = Date.now() + 30_000;
    let status: string;
    do status = (await alice.request('GET', `${J}/jobs/${submission.executionId}/status?wait=5`)).json().status;
    while (!['succeeded', 'failed', 'cancelled'].includes(status) && Date.now() < deadline);
    submission.final = status;
  }
}

describe('secret values never leak', () => {
  beforeAll(createSecrets);

  it('creates secrets with literals and parameters, replaces them, and has some refused', () => {
    expect(submissions).toHaveLength(17);
    for (const { sqlText, check, status, expected, body } of submissions) {
      expect(check, sqlText).toBe(200);
      expect(status, `${sqlText}: ${body}`).toBe(expected);
    }
    // Every accepted job finished before the tests looked.
    for (const { sqlText, executionId, final } of submissions) if (executionId) expect(final, sqlText).toMatch(/^(succeeded|failed|cancelled)$/);
  });

  it('stored them, encrypted (the store opens them again)', async () => {
    expect(created.map((c) => c.name)).toEqual(['s3_lit', 's3_par', 'gcs', 'hook']);
    const store = new SecretStore(t.db, t.deps.sealer);
    for (const { name, expected } of created) expect((await store.use('sales', name))?.values, name).toEqual(expected);
  });

  it('no table of the metadata database holds any value', async () => {
    const tables = await sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`.execute(t.db.kysely);
    expect(tables.rows.map((r) => r.table_name)).toEqual(expect.arrayContaining(['jobs', 'secrets', 'secret_data_keys', 'variables', 'policies']));
    let searched = 0;
    for (const { table_name } of tables.rows) {
      const rows = await sql<{ row: string }>`SELECT t::text AS row FROM ${sql.table(table_name)} t`.execute(t.db.kysely);
      const text = rows.rows.map((r) => r.row).join('\n');
      searched += rows.rows.length;
      for (const value of values) expect(text.toLowerCase(), `${table_name} holds a secret value`).not.toContain(value.toLowerCase());
    }
    expect(searched).toBeGreaterThan(10);
    // The job rows are there, with their texts redacted.
    const jobs = await t.db.kysely.selectFrom('jobs').select(['sql_text', 'parameters']).orderBy('created_at').execute();
    expect(jobs.map((j) => j.sql_text)).toContain("CREATE SECRET s3_lit IN sales (TYPE 's3_access_key', ACCESS_KEY_ID :redacted_access_key_id, SECRET_ACCESS_KEY :redacted_secret_access_key, SCOPE :redacted_scope)");
    expect(jobs.every((j) => JSON.stringify(j.parameters) === '{}')).toBe(true);
  });

  it('the job history API shows none: recent, status, results, downloads', async () => {
    const recent = await alice.request('GET', `${J}/jobs/recent`);
    expect(recent.statusCode).toBe(200);
    const bodies = [recent.body];
    const jobs = recent.json() as { execution_id: string }[];
    expect(jobs.length).toBe(6);
    for (const job of jobs) {
      for (const url of [`status`, `results?verbose=true`, `download?file_format=csv`, `download?file_format=json`]) {
        const res = await alice.request('GET', `${J}/jobs/${job.execution_id}/${url}`);
        expect(res.statusCode, res.body).toBe(200);
        bodies.push(res.body);
      }
    }
    // Every value starts with LEAK: a text search of the history finds none (a search for a whole value would put it in the request log).
    expect((await alice.request('GET', `${J}/jobs/recent?filter=LEAK`)).json()).toEqual([]);
    const all = bodies.join('\n').toLowerCase();
    for (const value of values) expect(all).not.toContain(value.toLowerCase());
    expect(all).toContain('secret sales.hook already exists; left untouched');
  });

  it('no stored file holds any value', async () => {
    const root = t.dataDir;
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else files.push(full);
      }
    };
    walk(root);
    expect(files.some((f) => f.endsWith('.parquet'))).toBe(true);
    for (const file of files) {
      const bytes = fs.readFileSync(file);
      for (const value of values) expect(bytes.includes(Buffer.from(value)), `${file} holds a secret value`).toBe(false);
    }
  });

  it("the server's log shows none", () => {
    const text = log.join('');
    expect(text).toContain('/jobs/api/v1/jobs');
    expect(text).toContain('/jobs/api/v1/check');
    for (const value of values) {
      const lines = text.split('\n').filter((l) => l.toLowerCase().includes(value.toLowerCase()));
      expect(lines, value).toEqual([]);
    }
  });
});
