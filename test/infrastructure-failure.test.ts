import { Writable } from 'node:stream';
import Fastify from 'fastify';
import type { KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerErrorHandling } from '../src/core/errors/index.ts';
import { createWorkspace, signIn, type TestUser } from './clients.ts';
import { createTestApp, createTestDb, type TestApp, type TestDb } from './harness.ts';
import { seedSnapshot } from './seed.ts';

/**
 * The metadata database failing under a request is a 500 INTERNAL_ERROR with the request's id in
 * the answer and in the log, never a 404 or an empty list; a job it fails under fails as an
 * internal error (logged under its execution id), not as "no such dataset".
 */

const OUTAGE = 'connection to the metadata database lost';
/** Statements on the catalog's tables fail while `on`: the catalog's database is down; the rest works. */
const catalogOutage = { on: false };
const failCatalogStatements: KyselyPlugin = {
  transformQuery(args) {
    if (catalogOutage.on && JSON.stringify(args.node).includes('"catalog_')) throw new Error(OUTAGE);
    return args.node;
  },
  transformResult: async (args) => args.result,
};

let testDb: TestDb;
let t: TestApp;
let alice: TestUser;
const logged: Record<string, any>[] = [];

beforeAll(async () => {
  testDb = await createTestDb();
  const db = { ...testDb.db, kysely: testDb.db.kysely.withPlugin(failCatalogStatements) };
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) logged.push(JSON.parse(line));
      done();
    },
  });
  t = await createTestApp({ db }, { logger: { level: 'warn', stream } });
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
  await seedSnapshot(t, { workspace: 'sales', collection: 'orders', dataset: 'daily' }, [{ name: 'id', type: 'BIGINT', nullable: false }], 'SELECT 1 AS id');
  catalogOutage.on = true;
});
afterAll(async () => {
  catalogOutage.on = false;
  await t?.close();
  await testDb?.dispose();
});

/** The answer is the one error handler's 500, and the log has the failure under the answer's request id. */
function expectInternalError(res: { statusCode: number; json(): any; headers: Record<string, unknown> }) {
  expect(res.statusCode).toBe(500);
  // (OData's answers add OData's own error member with the same code and text.)
  const { error, ...body } = res.json();
  expect(body).toEqual({ detail: 'Internal server error', code: 'INTERNAL_ERROR' });
  if (error !== undefined) expect(error).toEqual({ code: 'INTERNAL_ERROR', message: 'Internal server error' });
  const requestId = res.headers['x-request-id'];
  expect(requestId).toEqual(expect.any(String));
  const entry = logged.find((e) => e.reqId === requestId && e.level >= 50);
  expect(entry?.err?.message).toContain(OUTAGE);
}

describe('the metadata database failing', () => {
  it('fails a statement check that names a dataset with 500, not DATASET_NOT_FOUND', async () => {
    expectInternalError(await alice.request('POST', '/jobs/api/v1/check', { sql_text: 'SELECT id FROM sales.orders.daily' }));
  });

  it('fails a job that reads a dataset as an internal error, logged under its execution id', async () => {
    const submitted = await alice.request('POST', '/jobs/api/v1/jobs', { sql_text: 'SELECT id FROM sales.orders.daily' });
    expect(submitted.statusCode, submitted.body).toBe(201);
    const { execution_id } = submitted.json();
    const job = (await alice.request('GET', `/jobs/api/v1/jobs/${execution_id}/status?wait=30`)).json();
    expect(job).toMatchObject({ status: 'failed', error: { code: 'INTERNAL_ERROR' } });
    expect(job.error.message).not.toContain(OUTAGE);
    const entry = logged.find((e) => e.execution_id === execution_id && e.level >= 50);
    expect(entry).toMatchObject({ module: 'jobs', msg: 'job failed inside the server' });
    expect(entry?.err?.message).toContain(OUTAGE);
  });

  it('fails an OData read with 500, not 404', async () => {
    expectInternalError(await alice.request('GET', '/odata/api/v4/sales/orders/daily?$top=1'));
  });

  it('fails a list of datasets with 500, not an empty list', async () => {
    expectInternalError(await alice.request('GET', '/odata/api/v4/'));
  });
});

describe('the local disk full', () => {
  it('is 507 DISK_FULL, however it is worded (a system call, DuckDB), and logged', async () => {
    const lines: Record<string, any>[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    const app = Fastify({ logger: { level: 'error', stream } });
    registerErrorHandling(app);
    app.get('/write', async () => {
      throw Object.assign(new Error("ENOSPC: no space left on device, write '/data/tmp/x'"), { code: 'ENOSPC' });
    });
    app.get('/duckdb', async () => {
      throw new Error('IO Error: Could not write file "/data/tmp/duckdb/x.tmp": No space left on device');
    });
    app.get('/wrapped', async () => {
      throw new Error('could not convert the file', { cause: Object.assign(new Error('write failed'), { code: 'ENOSPC' }) });
    });
    try {
      for (const url of ['/write', '/duckdb', '/wrapped']) {
        const res = await app.inject({ method: 'GET', url });
        expect(res.statusCode, url).toBe(507);
        expect(res.json()).toEqual({ detail: expect.stringContaining('disk is full'), code: 'DISK_FULL' });
        // No path of the server's in the answer.
        expect(res.body).not.toContain('/data/');
      }
      expect(lines.filter((l) => l.msg === 'the disk is full')).toHaveLength(3);
    } finally {
      await app.close();
    }
  });
});
