/**
 * Text that looks like a CREATE SECRET never reaches the query path (where the job row would keep its
 * text and parameters in clear): Unicode blanks and a byte-order mark are read as spaces, and a
 * statement that resembles CREATE SECRET but does not parse is refused before anything is stored.
 */
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../../test/harness.ts';

let t: TestApp;
let alice: TestUser;
const J = '/jobs/api/v1';

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
});
afterAll(async () => t.close());

const marker = () => `LEAK${crypto.randomBytes(6).toString('hex')}`;

/** Every row of every table of the metadata database, as text. */
async function everything(): Promise<string> {
  const tables = await sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`.execute(t.db.kysely);
  const out: string[] = [];
  for (const { table_name } of tables.rows) {
    const rows = await sql<{ row: string }>`SELECT t::text AS row FROM ${sql.table(table_name)} t`.execute(t.db.kysely);
    out.push(...rows.rows.map((r) => r.row));
  }
  return out.join('\n');
}

const jobCount = async () => Number((await t.db.kysely.selectFrom('jobs').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

/** `CREATE SECRET` with `head` in place of its first two words, a literal value and a parameter value. */
function statement(head: string) {
  const literal = marker();
  const parameter = marker();
  return {
    sql: `${head} s_${crypto.randomBytes(3).toString('hex')} IN sales (TYPE 'http_endpoint', URL 'https://93.184.216.34/${literal}', HEADER_AUTHORIZATION :auth)`,
    parameters: { auth: `Bearer ${parameter}` },
    values: [literal, parameter],
  };
}

describe('secret statements in disguise', () => {
  it.each([
    ['a leading byte-order mark', '\uFEFFCREATE SECRET'],
    ['a non-breaking space', 'CREATE\u00A0SECRET'],
    ['an em space', 'CREATE\u2003SECRET'],
    ['an ideographic space and a line separator', 'CREATE\u3000\u2028SECRET'],
    ['two spaces', 'create  secret'],
  ])('%s is read as a space: the secret is created and only the redacted text is kept', async (_label, head) => {
    const s = statement(head);
    const res = await alice.request('POST', `${J}/jobs`, { sql_text: s.sql, parameters: s.parameters });
    expect(res.statusCode, res.body).toBe(201);
    const status = await alice.request('GET', `${J}/jobs/${res.json().execution_id}/status`);
    expect(status.json().sql_text).toMatch(/^CREATE SECRET s_[0-9a-f]+ IN sales \(TYPE 'http_endpoint', URL :redacted_url, HEADER_AUTHORIZATION :auth\)$/);
    const stored = (await everything()).toLowerCase();
    for (const value of s.values) expect(stored).not.toContain(value.toLowerCase());
  });

  it.each([
    ['CRATE SECRET', 'CRATE SECRET'],
    ['CREATE SECRETS', 'CREATE SECRETS'],
    ['CREAT SECERT', 'CREAT SECERT'],
    ['CREATE SEC\u200BRET', 'CREATE SEC\u200BRET'],
    ['CREATE OR REPLACE SECRT', 'CREATE OR REPLACE SECRT'],
    ['\uFEFFCRATE\u00A0SECRET', 'CRATE\u00A0SECRET'],
    ['/* x */ crate -- y\n secret', 'crate -- y\n secret'],
    ['MAKE SECRET', 'TYPE'],
    ['SELECT 1 AS x, CRATE SECRET', 'TYPE'],
  ])('%s is refused with a position, and nothing of it is stored', async (head, at) => {
    const s = statement(head);
    const before = await jobCount();
    const res = await alice.request('POST', `${J}/jobs`, { sql_text: s.sql, parameters: s.parameters });
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json();
    expect(body).toMatchObject({ code: 'SYNTAX_ERROR', detail: expect.stringContaining('looks like a secret statement') });
    expect(s.sql.slice(body.start, body.end)).toBe(at);
    expect(body.line).toBeGreaterThanOrEqual(1);
    for (const value of s.values) expect(res.body).not.toContain(value);
    const checked = await alice.request('POST', `${J}/check`, { sql_text: s.sql, parameters: s.parameters });
    expect(checked.json()).toMatchObject({ ok: false, error: { code: 'SYNTAX_ERROR' } });
    expect(await jobCount()).toBe(before);
    const stored = (await everything()).toLowerCase();
    for (const value of s.values) expect(stored).not.toContain(value.toLowerCase());
  });

  it('TYPE with a secret type anywhere in a query is refused too', async () => {
    const value = marker();
    const res = await alice.request('POST', `${J}/jobs`, { sql_text: `SELECT 1 FROM x (TYPE 's3', KEY_ID '${value}')` });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('SYNTAX_ERROR');
    expect((await everything()).toLowerCase()).not.toContain(value.toLowerCase());
  });

  it('ordinary queries that mention secrets still run as queries', async () => {
    for (const sqlText of ['SELECT 1 AS secret', "SELECT created, secret FROM (SELECT 1 AS created, 'x' AS secret)", 'SELECT secret, type FROM (SELECT 1 AS secret, 2 AS type)']) {
      const res = await alice.request('POST', `${J}/jobs`, { sql_text: sqlText });
      expect(res.statusCode, `${sqlText}: ${res.body}`).toBe(201);
    }
  });
});
