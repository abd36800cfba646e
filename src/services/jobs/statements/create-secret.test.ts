/**
 * CREATE SECRET through the job service, rule by rule and error row by error row of the spec
 * (identity-upload-jobs.md, "Secret (CREATE SECRET)" and "CREATE SECRET errors").
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../../test/harness.ts';
import { SecretStore } from './secret-store.ts';
import { serviceAccountKey } from '../../../../test/secret-fixtures.ts';

let t: TestApp;
let store: SecretStore;
let alice: TestUser; // owner of sales
let adam: TestUser; // admin on sales.*
let olga: TestUser; // owner of sales.orders.* only
let eve: TestUser; // nothing in sales
let narrow: TestUser; // alice, through a credential narrowed to reader on sales.*
let account: string; // alice's billing account

const J = '/jobs/api/v1';
const S3 = "TYPE 's3_access_key', ACCESS_KEY_ID 'AKIAIOSFODNN7EXAMPLE', SECRET_ACCESS_KEY :sk, SCOPE 's3://lake-bucket/raw/'";
const SK = { sk: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  store = new SecretStore(t.db, t.deps.sealer);
  [alice, adam, olga, eve] = await Promise.all(['alice', 'adam', 'olga', 'eve'].map((id) => signIn(t.app, t.adminToken, id)));
  narrow = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.*', 'reader']] });
  account = await createWorkspace(alice, 'sales', { adam: 'admin' });
  const granted = await alice.request('POST', '/policy/v1/access/workspace/sales/policies', { principal: { identity: 'olga' }, role: 'owner', pattern: 'sales.orders.*' });
  expect(granted.statusCode, granted.body).toBe(201);
  await createWorkspace(eve, 'ops');
});
afterAll(async () => t.close());

const submit = (user: TestUser, sql_text: string, parameters?: Record<string, unknown>) => user.request('POST', `${J}/jobs`, { sql_text, parameters });
const check = async (user: TestUser, sql_text: string, parameters?: Record<string, unknown>) => {
  const res = await user.request('POST', `${J}/check`, { sql_text, parameters });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};

/** Submits and expects the refusal; also checks that /check reports the same code (ok false). */
async function refused(user: TestUser, sql: string, status: number, code: string, parameters?: Record<string, unknown>) {
  const res = await submit(user, sql, parameters);
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json();
  expect(body.code).toBe(code);
  const checked = await check(user, sql, parameters);
  expect(checked).toMatchObject({ ok: false, error: { code } });
  return body as { detail: string; code: string; position?: number; line?: number; column?: number; start?: number; end?: number };
}

async function created(user: TestUser, sql: string, parameters?: Record<string, unknown>) {
  const checked = await check(user, sql, parameters);
  expect(checked, JSON.stringify(checked)).toMatchObject({ ok: true, columns: [{ name: 'status', type: 'VARCHAR' }] });
  const res = await submit(user, sql, parameters);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { execution_id: string; status: string; status_url: string };
}

async function resultOf(user: TestUser, executionId: string): Promise<string> {
  const res = await user.request('GET', `${J}/jobs/${executionId}/results`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data[0][0];
}

describe('a successful CREATE SECRET', () => {
  it('answers 201 with the job already finished, and its result says what was done', async () => {
    const job = await created(alice, `CREATE SECRET s3_raw IN sales (${S3})`, SK);
    expect(job.status).toBe('succeeded');
    expect(job.status_url).toBe(`http://lakeport.test/jobs/api/v1/jobs/${job.execution_id}/status`);
    const status = (await alice.request('GET', job.status_url.replace('http://lakeport.test', ''))).json();
    expect(status).toMatchObject({ status: 'succeeded', in_progress: false, row_count: 1, error: null });
    expect(status.results_url).toBeDefined();
    expect(await resultOf(alice, job.execution_id)).toBe('Secret sales.s3_raw created');
    const row = await t.db.kysely.selectFrom('secrets').selectAll().where('workspace', '=', 'sales').where('name', '=', 's3_raw').executeTakeFirstOrThrow();
    expect(row).toMatchObject({ type: 's3_access_key', created_by: 'alice', use_count: 0, last_used_at: null });
    expect((await store.use('sales', 's3_raw'))?.values).toEqual({ ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE', SECRET_ACCESS_KEY: SK.sk, SCOPE: 's3://lake-bucket/raw/' });
  });

  it('creates each type, under its Lakeport name or the spec alias', async () => {
    await created(alice, "CREATE SECRET gcs_raw IN sales (TYPE 'gcs_service_account', KEY :k, SCOPE 'gs://lake-bucket/raw/')", { k: serviceAccountKey() });
    await created(alice, "CREATE SECRET gcs_alias IN sales (TYPE 'storage_a_service_account', KEY :k, SCOPE 'gs://lake-bucket/raw/')", { k: serviceAccountKey() });
    await created(alice, `CREATE SECRET s3_alias IN sales (${S3.replace('s3_access_key', 'storage_b_access_key')}, REGION 'eu-west-1')`, SK);
    await created(alice, "CREATE SECRET hook IN sales (TYPE 'http_endpoint', URL 'https://93.184.216.34/hooks/lakeport', HEADER_AUTHORIZATION :auth)", { auth: 'Bearer hook-token-123' });
    const types = await t.db.kysely.selectFrom('secrets').select(['name', 'type']).where('workspace', '=', 'sales').where('name', 'in', ['gcs_raw', 'gcs_alias', 's3_alias', 'hook']).orderBy('name').execute();
    expect(types).toEqual([
      { name: 'gcs_alias', type: 'gcs_service_account' },
      { name: 'gcs_raw', type: 'gcs_service_account' },
      { name: 'hook', type: 'http_endpoint' },
      { name: 's3_alias', type: 's3_access_key' },
    ]);
  });
});

describe('rules', () => {
  it('1: names are 1-63 letters, digits, underscores, not starting with a digit', async () => {
    for (const name of ['1st', 'a'.repeat(64), '"a-b"', '""']) {
      const body = await refused(alice, `CREATE SECRET ${name} IN sales (${S3})`, 400, 'INVALID_NAME', SK);
      expect(body.detail).toMatch(/secret name/);
    }
    await created(alice, `CREATE SECRET ${'n'.repeat(63)} IN sales (${S3})`, SK);
  });

  it('1: names are lowercased and unique within their workspace (another workspace may reuse one)', async () => {
    await created(alice, `CREATE SECRET Mixed_Case IN sales (${S3})`, SK);
    expect(await store.find('sales', 'mixed_case')).toBeDefined();
    const body = await refused(alice, `CREATE SECRET MIXED_CASE IN sales (${S3})`, 409, 'SECRET_EXISTS', SK);
    expect(body.detail).toMatch(/secret sales\.mixed_case already exists/i);
    await created(eve, `CREATE SECRET mixed_case IN ops (${S3})`, SK);
  });

  it('2: IN <workspace> is required and bare', async () => {
    const missing = await refused(alice, `CREATE SECRET nowhere (${S3})`, 400, 'SYNTAX_ERROR', SK);
    expect(missing.detail).toMatch(/IN <workspace> is required/);
    const dotted = await refused(alice, `CREATE SECRET dotted IN sales.orders (${S3})`, 400, 'SYNTAX_ERROR', SK);
    expect(dotted.detail).toMatch(/bare workspace name/);
  });

  it('3: TYPE is a string literal, never a parameter, of a known type', async () => {
    expect((await refused(alice, "CREATE SECRET p IN sales (TYPE :t, URL 'https://93.184.216.34/')", 400, 'SYNTAX_ERROR', { t: 'http_endpoint' })).detail).toMatch(/not a parameter/);
    expect((await refused(alice, "CREATE SECRET p IN sales (TYPE http_endpoint, URL 'https://93.184.216.34/')", 400, 'SYNTAX_ERROR')).detail).toMatch(/string literal/);
    expect((await refused(alice, "CREATE SECRET p IN sales (TYPE 'azure_blob', URL 'https://93.184.216.34/')", 400, 'INVALID_SECRET_TYPE')).detail).toMatch(/gcs_service_account/);
  });

  it('3/5: TYPE is fixed at creation: OR REPLACE with another type is refused, and the secret is unchanged', async () => {
    await created(alice, `CREATE SECRET fixed IN sales (${S3})`, SK);
    const body = await refused(alice, "CREATE OR REPLACE SECRET fixed IN sales (TYPE 'http_endpoint', URL 'https://93.184.216.34/')", 409, 'SECRET_TYPE_MISMATCH');
    expect(body.detail).toMatch(/TYPE 's3_access_key'.*fixed/);
    expect((await store.use('sales', 'fixed'))?.type).toBe('s3_access_key');
    // The alias is the same type, so it replaces.
    await created(alice, `CREATE OR REPLACE SECRET fixed IN sales (${S3.replace('s3_access_key', 'storage_b_access_key')})`, SK);
  });

  it('4: options take a :parameter or a literal; unknown and repeated keys are errors', async () => {
    await created(alice, "CREATE SECRET lit IN sales (TYPE 's3_access_key', ACCESS_KEY_ID 'AKIA1', SECRET_ACCESS_KEY 'literal-secret', SCOPE 's3://lake-bucket/')");
    await created(alice, "CREATE SECRET par IN sales (TYPE 's3_access_key', ACCESS_KEY_ID :id, SECRET_ACCESS_KEY :sk, SCOPE :scope)", { id: 'AKIA1', sk: 'x', scope: 's3://lake-bucket/' });
    expect((await refused(alice, `CREATE SECRET unk IN sales (${S3}, KEY 'x')`, 400, 'UNKNOWN_SECRET_KEY', SK)).detail).toMatch(/KEY is not a key of a s3_access_key secret/);
    expect((await refused(alice, `CREATE SECRET unk IN sales (${S3}, ENDPOINT 'x')`, 400, 'UNKNOWN_SECRET_KEY', SK)).detail).toMatch(/ENDPOINT/);
    const repeated = await refused(alice, `CREATE SECRET rep IN sales (${S3}, scope 's3://lake-bucket/other/')`, 400, 'DUPLICATE_SECRET_KEY', SK);
    expect(repeated.detail).toMatch(/SCOPE is given more than once/);
  });

  it('5: OR REPLACE replaces atomically, keeps created_by and created_at, resets last_used_at and use_count', async () => {
    await created(alice, `CREATE SECRET rot IN sales (${S3})`, SK);
    await store.use('sales', 'rot');
    await store.use('sales', 'rot');
    const before = await store.find('sales', 'rot');
    expect(before).toMatchObject({ use_count: 2, created_by: 'alice' });
    // Another owner replaces it.
    await alice.request('POST', '/policy/v1/access/workspace/sales/policies', { principal: { identity: 'eve' }, role: 'owner', pattern: 'sales.*' });
    const job = await created(eve, `CREATE OR REPLACE SECRET rot IN sales (${S3})`, { sk: 'rotated-secret-value' });
    expect(await resultOf(eve, job.execution_id)).toBe('Secret sales.rot replaced');
    const after = await store.find('sales', 'rot');
    expect(after).toMatchObject({ created_by: 'alice', created_at: before!.created_at, use_count: 0, last_used_at: null, replaced_by: 'eve' });
    expect((await store.use('sales', 'rot'))?.values.SECRET_ACCESS_KEY).toBe('rotated-secret-value');
    const policies = (await alice.request('GET', '/policy/v1/access/workspace/sales')).json().policies;
    const eveOwner = policies.find((p: { principal: { identity: string } }) => p.principal.identity === 'eve');
    expect((await alice.request('DELETE', `/policy/v1/access/workspace/sales/policies/${eveOwner.policy_id}`)).statusCode).toBe(200);
  });

  it('5: there is no ALTER SECRET, and it says so', async () => {
    const body = await refused(alice, "ALTER SECRET rot SET SECRET_ACCESS_KEY 'new-value'", 400, 'STATEMENT_NOT_SUPPORTED');
    expect(body.detail).toMatch(/There is no ALTER SECRET.*CREATE OR REPLACE SECRET/);
    expect(body.detail).not.toContain('new-value');
  });

  it('6: IF NOT EXISTS leaves an existing secret untouched', async () => {
    await created(alice, `CREATE SECRET keep IN sales (${S3})`, SK);
    const job = await created(alice, `CREATE SECRET IF NOT EXISTS keep IN sales (${S3})`, { sk: 'other-value' });
    expect(await resultOf(alice, job.execution_id)).toBe('Secret sales.keep already exists; left untouched');
    expect((await store.use('sales', 'keep'))?.values.SECRET_ACCESS_KEY).toBe(SK.sk);
    const fresh = await created(alice, `CREATE SECRET IF NOT EXISTS keep2 IN sales (${S3})`, SK);
    expect(await resultOf(alice, fresh.execution_id)).toBe('Secret sales.keep2 created');
  });

  it('6: OR REPLACE with IF NOT EXISTS is refused as a contradiction', async () => {
    const body = await refused(alice, `CREATE OR REPLACE SECRET IF NOT EXISTS keep IN sales (${S3})`, 400, 'CONTRADICTORY_OPTIONS', SK);
    expect(body.detail).toMatch(/contradict/);
  });

  it('7: CREATE SECRET must be the only statement in its request (before or after it), and nothing is stored', async () => {
    const after = await refused(alice, `CREATE SECRET only IN sales (${S3}); SELECT 1`, 400, 'MULTIPLE_STATEMENTS', SK);
    expect(after).toMatchObject({ line: 1, start: expect.any(Number) });
    await refused(alice, "SELECT 1; CREATE SECRET only IN sales (TYPE 's3_access_key', ACCESS_KEY_ID 'AKIA1', SECRET_ACCESS_KEY 'in-a-batch-value', SCOPE 's3://b-k/')", 400, 'MULTIPLE_STATEMENTS');
    expect(await store.find('sales', 'only')).toBeUndefined();
    const rows = await t.db.kysely.selectFrom('jobs').select('sql_text').execute();
    expect(rows.some((r) => r.sql_text.includes('in-a-batch-value'))).toBe(false);
  });

  it('8: history shows KEY :redacted_key, never the literal', async () => {
    const job = await created(alice, "CREATE SECRET gcs_lit IN sales (TYPE 'gcs_service_account', KEY '" + serviceAccountKey().replace(/'/g, "''") + "', SCOPE 'gs://lake-bucket/x/')");
    const status = (await alice.request('GET', `${J}/jobs/${job.execution_id}/status`)).json();
    expect(status.sql_text).toBe("CREATE SECRET gcs_lit IN sales (TYPE 'gcs_service_account', KEY :redacted_key, SCOPE :redacted_scope)");
    const recent = (await alice.request('GET', `${J}/jobs/recent?filter=gcs_lit`)).json();
    expect(recent.map((j: { sql_text: string }) => j.sql_text)).toEqual([status.sql_text]);
    expect((await alice.request('GET', `${J}/jobs/recent?filter=BEGIN%20PRIVATE`)).json()).toEqual([]);
  });

  it('9: parameter values come from the parameters field (not saved variables), and are never stored', async () => {
    expect((await alice.request('PUT', `${J}/variables/sk`, { type: 'string', value: 'saved-variable-value' })).statusCode).toBe(200);
    const body = await refused(alice, `CREATE SECRET fromvar IN sales (${S3})`, 400, 'PARAMETER_NOT_DEFINED');
    expect(body.detail).toMatch(/:sk/);
    await alice.request('DELETE', `${J}/variables/sk`);
    const job = await created(alice, `CREATE SECRET fromparam IN sales (${S3})`, { ...SK, unused: 'also-not-stored' });
    const row = await t.db.kysely.selectFrom('jobs').selectAll().where('execution_id', '=', job.execution_id).executeTakeFirstOrThrow();
    expect(row.parameters).toEqual({});
    expect(row.sql_text).toContain('SECRET_ACCESS_KEY :sk');
  });

  it('10: nothing is fetched from the store at creation; a wrong key is accepted', async () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    try {
      await created(alice, "CREATE SECRET wrong IN sales (TYPE 's3_access_key', ACCESS_KEY_ID 'AKIANOTAREALKEY00000', SECRET_ACCESS_KEY 'not-a-real-secret', SCOPE 's3://no-such-bucket-lakeport/x/')");
      await created(alice, "CREATE SECRET wrong_gcs IN sales (TYPE 'gcs_service_account', KEY :k, SCOPE 'gs://no-such-bucket-lakeport/')", { k: serviceAccountKey({ private_key: 'garbage' }) });
      expect(fetchSpy).not.toHaveBeenCalled();
    } finally {
      fetchSpy.mockRestore();
    }
  });
});

describe('keys by type', () => {
  it('a type requires SCOPE (and its other required keys)', async () => {
    expect((await refused(alice, "CREATE SECRET g IN sales (TYPE 'gcs_service_account', KEY :k)", 400, 'MISSING_SECRET_KEY', { k: serviceAccountKey() })).detail).toMatch(/requires SCOPE/);
    expect((await refused(alice, "CREATE SECRET g IN sales (TYPE 's3_access_key', ACCESS_KEY_ID 'AKIA1', SECRET_ACCESS_KEY 'x')", 400, 'MISSING_SECRET_KEY')).detail).toMatch(/requires SCOPE/);
    expect((await refused(alice, "CREATE SECRET g IN sales (TYPE 's3_access_key', SECRET_ACCESS_KEY 'x', SCOPE 's3://b-k/')", 400, 'MISSING_SECRET_KEY')).detail).toMatch(/requires ACCESS_KEY_ID/);
    expect((await refused(alice, "CREATE SECRET g IN sales (TYPE 'http_endpoint', HEADER_X_API_KEY 'x')", 400, 'MISSING_SECRET_KEY')).detail).toMatch(/requires URL/);
  });

  it('a temporary key id requires SESSION_TOKEN', async () => {
    const temporary = "TYPE 's3_access_key', ACCESS_KEY_ID 'ASIAIOSFODNN7EXAMPLE', SECRET_ACCESS_KEY :sk, SCOPE 's3://lake-bucket/'";
    const body = await refused(alice, `CREATE SECRET temp IN sales (${temporary})`, 400, 'SESSION_TOKEN_REQUIRED', SK);
    expect(body.detail).toMatch(/Temporary key id.*requires SESSION_TOKEN/i);
    await created(alice, `CREATE SECRET temp IN sales (${temporary}, SESSION_TOKEN :st)`, { ...SK, st: 'FwoGZXIvYXdzEBYaDHsessiontoken' });
  });

  it("storage_a KEY must be a service_account key with Google's token_uri", async () => {
    const sql = "CREATE SECRET g IN sales (TYPE 'storage_a_service_account', KEY :k, SCOPE 'gs://lake-bucket/')";
    expect((await refused(alice, sql, 400, 'INVALID_SECRET_VALUE', { k: serviceAccountKey({ type: 'authorized_user' }) })).detail).toMatch(/service_account/);
    expect((await refused(alice, sql, 400, 'INVALID_SECRET_VALUE', { k: serviceAccountKey({ token_uri: 'https://attacker.example/token' }) })).detail).toMatch(/token_uri must be Google's/);
    expect((await refused(alice, sql, 400, 'INVALID_SECRET_VALUE', { k: '{not json' })).detail).toMatch(/not valid JSON/);
  });

  it('SCOPE must be <scheme>://<bucket>/<prefix>/ with the scheme of the type', async () => {
    expect((await refused(alice, "CREATE SECRET g IN sales (TYPE 'gcs_service_account', KEY :k, SCOPE 's3://lake-bucket/')", 400, 'INVALID_SECRET_VALUE', { k: serviceAccountKey() })).detail).toMatch(/gs:\/\//);
    expect((await refused(alice, `CREATE SECRET g IN sales (${S3.replace('s3://lake-bucket/raw/', 'gs://lake-bucket/raw/')})`, 400, 'INVALID_SECRET_VALUE', SK)).detail).toMatch(/s3:\/\//);
    expect((await refused(alice, `CREATE SECRET g IN sales (${S3.replace('s3://lake-bucket/raw/', 's3://lake-bucket/raw*')})`, 400, 'INVALID_SECRET_VALUE', SK)).detail).toMatch(/not a glob/);
  });

  it('http_endpoint URL must be https, public, without credentials', async () => {
    for (const url of ['http://93.184.216.34/', 'https://127.0.0.1/', 'https://localhost/x', 'https://u:p@93.184.216.34/', 'https://93.184.216.34/?token=abc', 'https://169.254.169.254/']) {
      await refused(alice, "CREATE SECRET h IN sales (TYPE 'http_endpoint', URL :u)", 400, 'INVALID_SECRET_VALUE', { u: url });
    }
  });
});

describe('authorization and the workspace', () => {
  it('requires owner on the whole workspace: a message that you lack permission to manage secrets', async () => {
    for (const user of [adam, olga, eve, narrow]) {
      const body = await refused(user, `CREATE SECRET denied IN sales (${S3})`, 403, 'PERMISSION_DENIED', SK);
      expect(body.detail).toMatch(/lack permission to manage secrets in workspace 'sales'/);
    }
    expect(await store.find('sales', 'denied')).toBeUndefined();
  });

  it('looks the same for a workspace that does not exist and one the caller has no grant in', async () => {
    const missing = await refused(eve, `CREATE SECRET x IN no_such_ws (${S3})`, 403, 'PERMISSION_DENIED', SK);
    const hidden = await refused(eve, `CREATE SECRET x IN sales (${S3})`, 403, 'PERMISSION_DENIED', SK);
    expect(missing.detail.replaceAll('no_such_ws', 'sales')).toBe(hidden.detail);
  });

  it('409 when the workspace has no billing account, so no key to encrypt under', async () => {
    // A namespace and an owner grant, but no account-service record (e.g. a create that stopped after step a).
    await t.app.lakeport.catalog.claimNamespace('orphan', 'acct_gone');
    await t.db.kysely.insertInto('policies').values({ policy_id: 'pol_orphan', workspace: 'orphan', principal: 'alice', principal_type: 'user', role: 'owner', pattern: 'orphan.*', created_by: 'test' }).execute();
    const body = await refused(alice, `CREATE SECRET x IN orphan (${S3})`, 409, 'NO_BILLING_ACCOUNT', SK);
    expect(body.detail).toMatch(/no billing account.*no key to encrypt secrets under/);
  });

  it('409 when the secret exists: secret <workspace>.<name> already exists', async () => {
    await created(alice, `CREATE SECRET twice IN sales (${S3})`, SK);
    const body = await refused(alice, `CREATE SECRET twice IN sales (${S3})`, 409, 'SECRET_EXISTS', SK);
    expect(body.detail).toMatch(/^Secret sales\.twice already exists/);
    expect(body.detail).toMatch(/OR REPLACE.*IF NOT EXISTS/);
  });

  it('refuses a soft-deleted workspace', async () => {
    const made = await alice.request('PUT', '/control/v1/workspaces/doomed', { billing_account: account, members: [{ identity: 'alice', role: 'owner' }] });
    expect(made.statusCode, made.body).toBe(200);
    expect((await alice.request('DELETE', '/billing/v1/workspaces/doomed')).statusCode).toBe(200);
    await refused(alice, `CREATE SECRET x IN doomed (${S3})`, 409, 'WORKSPACE_DELETED', SK);
  });
});

describe('errors', () => {
  it('a placeholder with no value: the message names :name, and points at it', async () => {
    const sql = "CREATE SECRET p IN sales (TYPE 'http_endpoint', URL :hook_url, HEADER_AUTHORIZATION :auth)";
    const body = await refused(alice, sql, 400, 'PARAMETER_NOT_DEFINED', { auth: 'Bearer x' });
    expect(body.detail).toMatch(/The statement references parameter\(s\) with no value: :hook_url/);
    expect(sql.slice(body.start!, body.end!)).toBe(':hook_url');
    const checked = await check(alice, sql, { auth: 'Bearer x' });
    expect(checked.error).toMatchObject({ line: 1, column: sql.indexOf(':hook_url') + 1, start: sql.indexOf(':hook_url'), end: sql.indexOf(':hook_url') + ':hook_url'.length });
  });

  it('a refused statement leaves no job behind', async () => {
    const before = (await alice.request('GET', `${J}/jobs/recent`)).json().length;
    await refused(alice, `CREATE SECRET 9bad IN sales (${S3})`, 400, 'INVALID_NAME', SK);
    expect((await alice.request('GET', `${J}/jobs/recent`)).json().length).toBe(before);
  });

  it('check changes nothing', async () => {
    expect(await check(alice, `CREATE SECRET checked_only IN sales (${S3})`, SK)).toMatchObject({ ok: true });
    expect(await store.find('sales', 'checked_only')).toBeUndefined();
    // and it reports what a submit would: the existing secret, the type mismatch
    await created(alice, `CREATE SECRET checked_twice IN sales (${S3})`, SK);
    expect(await check(alice, `CREATE SECRET checked_twice IN sales (${S3})`, SK)).toMatchObject({ ok: false, error: { code: 'SECRET_EXISTS' } });
    expect(await check(alice, `CREATE SECRET IF NOT EXISTS checked_twice IN sales (${S3})`, SK)).toMatchObject({ ok: true });
  });
});
