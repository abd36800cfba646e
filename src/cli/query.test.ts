/**
 * `lakeport query --output FILE` against a listening server: the whole result lands in the file, every
 * range of it (the download's default range is 10 000 rows), in each format the command writes.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../test/clients.ts';
import { seedSnapshot } from '../../test/seed.ts';
import { LakeportClient } from '../client/index.ts';
import { createTestApp, tempDir, type TestApp } from '../../test/harness.ts';
import { queryCommand } from './query.ts';

let t: TestApp;
let user: TestUser;
const dir = tempDir('lakeport-query-output-');
const saved = { url: process.env.LAKEPORT_URL, token: process.env.LAKEPORT_TOKEN, id: process.env.LAKEPORT_CLIENT_ID, secret: process.env.LAKEPORT_CLIENT_SECRET };

beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = t.app.server.address() as AddressInfo;
  user = await signIn(t.app, t.adminToken, 'query-output');
  process.env.LAKEPORT_URL = `http://127.0.0.1:${port}`;
  process.env.LAKEPORT_TOKEN = user.token;
  delete process.env.LAKEPORT_CLIENT_ID;
  delete process.env.LAKEPORT_CLIENT_SECRET;
});
afterAll(async () => {
  for (const [name, value] of [['LAKEPORT_URL', saved.url], ['LAKEPORT_TOKEN', saved.token], ['LAKEPORT_CLIENT_ID', saved.id], ['LAKEPORT_CLIENT_SECRET', saved.secret]] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  dir.remove();
  await t?.close();
});

async function query(...args: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (c: Buffer) => out.push(c));
  stderr.on('data', (c: Buffer) => err.push(c));
  const code = await queryCommand(args, { stdout, stderr });
  return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
}

const SQL = "SELECT i, 'row \"' || i || '\"' AS label FROM range(25000) t(i)";

describe('lakeport query --output', { timeout: 60_000 }, () => {
  it('writes every row of a result larger than one download range into one CSV file, with one header line', async () => {
    const file = path.join(dir.dir, 'all.csv');
    const run = await query(SQL, '--output', file);
    expect(run, run.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toBe(`25000 rows written to ${file}\n`);
    const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(25_001);
    expect(lines[0]).toBe('i,label');
    expect(lines.filter((l) => l === 'i,label')).toHaveLength(1);
    expect(lines[1]).toBe('0,"row ""0"""');
    expect(lines[25_000]).toBe('24999,"row ""24999"""');
  });

  it('writes newline-delimited JSON (by the extension) and Parquet (by --format) whole', async () => {
    const json = path.join(dir.dir, 'all.jsonl');
    expect((await query(SQL, '-o', json)).code).toBe(0);
    const rows = fs.readFileSync(json, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(rows).toHaveLength(25_000);
    expect(rows.map((r) => r.i)).toEqual(Array.from({ length: 25_000 }, (_, i) => i));

    const parquet = path.join(dir.dir, 'all.data');
    const run = await query(SQL, '--output', parquet, '--format', 'parquet');
    expect(run.stdout).toBe(`25000 rows written to ${parquet}\n`);
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    try {
      const counted = (await c.runAndReadAll(`SELECT count(*)::INT AS n, count(DISTINCT i)::INT AS d, max(i)::INT AS top FROM read_parquet('${parquet}')`)).getRowObjectsJson();
      expect(counted[0]).toEqual({ n: 25_000, d: 25_000, top: 24_999 });
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });

  it('LakeportClient.downloadJobResult follows rel="next" range by range, and fetches a truncated Parquet result again whole', async () => {
    const client = LakeportClient.fromEnv();
    const { execution_id } = await client.submitJob({ sql_text: SQL });
    expect((await client.waitForJob(execution_id)).status).toBe('succeeded');
    const first = await client.downloadJobRange(execution_id);
    await first.body.cancel();
    expect(first).toMatchObject({ totalRows: 25_000, range: { first: 0, last: 9_999 }, truncated: true });
    expect(Object.fromEntries(first.next!)).toEqual({ file_format: 'csv', limit: '10000', offset: '10000' });
    const csv = path.join(dir.dir, 'client.csv');
    expect(await client.downloadJobResult(execution_id, csv, { limit: 7_000 })).toEqual({ rows: 25_000, requests: 4 });
    expect(fs.readFileSync(csv, 'utf8').trimEnd().split('\n')).toHaveLength(25_001);
    const parquet = path.join(dir.dir, 'client.parquet');
    expect(await client.downloadJobResult(execution_id, parquet, { file_format: 'parquet' })).toEqual({ rows: 25_000, requests: 2 });
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    try {
      expect((await c.runAndReadAll(`SELECT count(*)::INT AS n FROM read_parquet('${parquet}')`)).getRowObjectsJson()).toEqual([{ n: 25_000 }]);
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });

  it('writes an empty result as a header only, and refuses a format it cannot write', async () => {
    const file = path.join(dir.dir, 'none.csv');
    expect((await query('SELECT 1 AS one WHERE false', '--output', file)).stdout).toBe(`0 rows written to ${file}\n`);
    expect(fs.readFileSync(file, 'utf8').trim()).toBe('one');
    const none = path.join(dir.dir, 'none.parquet');
    expect((await query('SELECT 1 AS one WHERE false', '--output', none)).stdout).toBe(`0 rows written to ${none}\n`);
    expect(fs.readFileSync(none).subarray(0, 4).toString()).toBe('PAR1');
    const refused = await query('SELECT 1', '--output', path.join(dir.dir, 'x.txt'), '--format', 'table');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^lakeport: usage: /);
  });
});

describe('lakeport query over a logical view', { timeout: 60_000 }, () => {
  it('creates a view with a statement and reads it through jobs (docs/views.md)', async () => {
    await createWorkspace(user, 'cliviews');
    await seedSnapshot(t, { workspace: 'cliviews', collection: 'c', dataset: 'nums' }, [{ name: 'n', type: 'BIGINT', nullable: false }], 'SELECT i AS n FROM range(1, 101) t(i)');
    const made = await query('CREATE VIEW cliviews.c.evens AS SELECT n FROM cliviews.c.nums WHERE n % 2 = 0', '--output', path.join(dir.dir, 'made.csv'));
    expect(made, made.stderr).toMatchObject({ code: 0 });
    expect(fs.readFileSync(path.join(dir.dir, 'made.csv'), 'utf8')).toContain('View cliviews.c.evens created');
    const file = path.join(dir.dir, 'evens.csv');
    const run = await query('SELECT count(*) AS c, sum(n)::BIGINT AS s FROM cliviews.c.evens', '--output', file);
    expect(run, run.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(fs.readFileSync(file, 'utf8').trimEnd().split('\n')).toEqual(['c,s', '50,2550']);
  });
});
