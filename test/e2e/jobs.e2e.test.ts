/**
 * End to end: `npm start` as a user runs it; alice uploads a CSV with the real `lakeport upload`
 * command, then queries it through the job service with plain HTTP — submit, long-poll the status, page
 * through the results with `next_page`, download CSV, newline-delimited JSON and Parquet and read each
 * back (the Parquet with DuckDB) — and finally with the real `lakeport query` command, once succeeding
 * and once failing. With DATABASE_URL set the server runs on a fresh PostgreSQL database, else on PGlite.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { once } from '../async.ts';
import { describeRun, lakeport, linesOf } from './cli.ts';
import { httpApi } from './http.ts';
import { serverForSuite } from './server.ts';

const DATASET = 'sales.orders.daily';
const ROWS = 12_000;
const PAGE = 5_000;
const QUERY = `SELECT id, category, amount, placed_on, note FROM ${DATASET} ORDER BY id`;

// ---------------------------------------------------------------------------------------------------
// Fixture: deterministic orders, so every value can be checked after the round trip.
// ---------------------------------------------------------------------------------------------------

interface Order {
  id: number;
  category: string;
  amount: number;
  placed_on: string;
  note: string;
}

const DAY_MS = 86_400_000;
const EPOCH_MS = Date.UTC(2024, 0, 1);

function orderOf(id: number): Order {
  return {
    id,
    category: `cat_${id % 7}`,
    // Quarters are exact in binary floating point, so DOUBLE values compare exactly.
    amount: ((id * 37) % 2_000) / 4,
    placed_on: new Date(EPOCH_MS + (id % 366) * DAY_MS).toISOString().slice(0, 10),
    note: id % 5 === 0 ? `Smith, "J" ${id}` : `note ${id}`,
  };
}

const ORDERS: Order[] = Array.from({ length: ROWS }, (_, i) => orderOf(i + 1));
const asRow = (o: Order) => [o.id, o.category, o.amount, o.placed_on, o.note];

async function writeCsv(file: string): Promise<void> {
  const quote = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  const lines = ['id,category,amount,placed_on,note', ...ORDERS.map((o) => [o.id, o.category, o.amount, o.placed_on, quote(o.note)].join(','))];
  await fs.writeFile(file, `${lines.join('\n')}\n`);
}

// ---------------------------------------------------------------------------------------------------
// The CLI as a user runs it
// ---------------------------------------------------------------------------------------------------


// ---------------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------------

describe('query jobs end to end', { timeout: 120_000 }, () => {
  const suite = serverForSuite('jobs');
  let aliceSecret: string;
  let aliceToken: string;

  const { call, expectStatus, ownWorkspace } = httpApi(() => suite.server);

  /** A download as raw bytes, with its content type and file name. */
  async function download(format: 'csv' | 'json' | 'parquet', query = `&limit=${ROWS * 10}`) {
    const { executionId } = await finishedJob();
    const response = await fetch(`${suite.server.url}/jobs/api/v1/jobs/${executionId}/download?file_format=${format}${query}`, { headers: { authorization: `Bearer ${aliceToken}` } });
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(response.status, bytes.toString('utf8').slice(0, 500)).toBe(200);
    return { bytes, contentType: response.headers.get('content-type') ?? '', disposition: response.headers.get('content-disposition') ?? '' };
  }

  function cliEnv(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, LAKEPORT_URL: suite.server.url, LAKEPORT_CLIENT_ID: 'alice', LAKEPORT_CLIENT_SECRET: aliceSecret };
    delete env.LAKEPORT_TOKEN;
    return env;
  }

  // The steps the tests build on (alice signed in, the orders uploaded, the job finished), each run once.
  const signedIn = once(async () => {
    const credential = expectStatus(await call('POST', '/auth/clients/alice/credentials', { admin: true, json: {} }), 200);
    aliceSecret = credential.secret;
    const response = await fetch(`${suite.server.url}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'alice', client_secret: aliceSecret }),
    });
    const tokens = await response.json();
    expect(response.status, JSON.stringify(tokens)).toBe(200);
    expect(tokens.scope.split(' ')).toEqual(expect.arrayContaining(['upload', 'jobs']));
    aliceToken = tokens.access_token;

    return ownWorkspace(aliceToken, 'alice', 'sales');
  });

  const uploaded = once(async () => {
    await signedIn();
    const file = path.join(suite.work, 'orders.csv');
    await writeCsv(file);
    const run = await lakeport(['upload', file, '--to', DATASET, '--accept'], cliEnv());
    expect(run.code, describeRun(run)).toBe(0);
    return run;
  });

  /** The query job, submitted once and long-polled until it is no longer in progress. */
  const finishedJob = once(async () => {
    await uploaded();
    const submitted = expectStatus(
      await call('POST', '/jobs/api/v1/jobs', { token: aliceToken, json: { sql_text: QUERY, client_info: { application: 'e2e' } } }),
      201,
    );
    let status: any;
    for (let attempt = 0; attempt < 4; attempt++) {
      status = expectStatus(await call('GET', `${submitted.status_url}?wait=30`, { token: aliceToken }), 200);
      if (!status.in_progress) break;
    }
    return { submitted, status, executionId: submitted.execution_id as string };
  });

  it('sets up alice: credential, token, account and workspace sales', async () => {
    const workspace = await signedIn();
    expect(workspace).toMatchObject({ name: 'sales', state: 'active' });
  });

  it(`uploads ${ROWS} rows with lakeport upload`, async () => {
    const run = await uploaded();
    expect(run.code, describeRun(run)).toBe(0);
    expect(linesOf(run.stdout).at(-1)).toMatch(new RegExp(`^snapshot \\d+: ${ROWS} rows written to ${DATASET.replaceAll('.', '\\.')}$`));
  });

  it('submits a job, long-polls it to success and pages through every row with next_page', async () => {
    const { submitted, status, executionId } = await finishedJob();
    expect(submitted).toMatchObject({ execution_id: expect.stringMatching(/^job_/), status: expect.stringMatching(/^(queued|running)$/) });
    expect(submitted.status_url).toBe(`${suite.server.publicUrl}/jobs/api/v1/jobs/${executionId}/status`);
    expect(status, JSON.stringify(status)).toMatchObject({ execution_id: executionId, status: 'succeeded', in_progress: false, row_count: ROWS, error: null });
    expect(status.client_info).toEqual({ application: 'e2e' });
    expect(status.timings.total_ms).toEqual(expect.any(Number));
    expect(status.results_url).toBe(`${suite.server.publicUrl}/jobs/api/v1/jobs/${executionId}/results`);

    const pages: any[] = [];
    let next: string | null = `${status.results_url}?num_rows=${PAGE}&verbose=true`;
    while (next !== null) {
      expect(pages.length, 'too many pages').toBeLessThan(10);
      const page = expectStatus(await call('GET', next, { token: aliceToken }), 200);
      pages.push(page);
      next = page.next_page;
    }
    expect(pages.map((p) => [p.offset, p.num_rows, p.total_rows])).toEqual([
      [0, PAGE, ROWS],
      [PAGE, PAGE, ROWS],
      [2 * PAGE, ROWS - 2 * PAGE, ROWS],
    ]);
    for (const page of pages) {
      expect(page.columns).toEqual([
        { name: 'id', type: 'BIGINT' },
        { name: 'category', type: 'VARCHAR' },
        { name: 'amount', type: 'DOUBLE' },
        { name: 'placed_on', type: 'DATE' },
        { name: 'note', type: 'VARCHAR' },
      ]);
    }
    const rows = pages.flatMap((p) => p.data);
    expect(rows).toHaveLength(ROWS);
    expect(rows).toEqual(ORDERS.map(asRow));

    // Without verbose the columns are bare names.
    const plain = expectStatus(await call('GET', `/jobs/api/v1/jobs/${executionId}/results?num_rows=2&offset=${ROWS - 1}`, { token: aliceToken }), 200);
    expect(plain).toMatchObject({ total_rows: ROWS, offset: ROWS - 1, num_rows: 1, columns: ['id', 'category', 'amount', 'placed_on', 'note'], next_page: null });
    expect(plain.data).toEqual([asRow(ORDERS[ROWS - 1])]);
  });

  it('downloads the results as CSV and reads them back', async () => {
    const { executionId } = await finishedJob();
    const { bytes, contentType, disposition } = await download('csv');
    expect(contentType).toMatch(/^text\/csv/);
    expect(disposition).toBe(`attachment; filename="${executionId}.csv"`);
    const records: Record<string, string>[] = parse(bytes.toString('utf8'), { columns: true, skip_empty_lines: true });
    expect(records).toHaveLength(ROWS);
    expect(Object.keys(records[0])).toEqual(['id', 'category', 'amount', 'placed_on', 'note']);
    const read = records.map((r) => ({ id: Number(r.id), category: r.category, amount: Number(r.amount), placed_on: r.placed_on, note: r.note }));
    expect(read).toEqual(ORDERS);

    // The default limit is 10 000 rows; offset skips.
    const limited = await download('csv', '&offset=100');
    const limitedRecords: Record<string, string>[] = parse(limited.bytes.toString('utf8'), { columns: true, skip_empty_lines: true });
    expect(limitedRecords).toHaveLength(10_000);
    expect(Number(limitedRecords[0].id)).toBe(101);
  });

  it('downloads the results as newline-delimited JSON and reads them back line by line', async () => {
    const { executionId } = await finishedJob();
    const { bytes, contentType, disposition } = await download('json');
    expect(contentType).toMatch(/^application\/x-ndjson/);
    expect(disposition).toBe(`attachment; filename="${executionId}.jsonl"`);
    const lines = bytes.toString('utf8').split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(ROWS);
    expect(lines.map((line) => JSON.parse(line))).toEqual(ORDERS);
  });

  it('downloads the results as Parquet and reads them back with DuckDB', async () => {
    const { executionId } = await finishedJob();
    const { bytes, contentType, disposition } = await download('parquet');
    expect(contentType).toMatch(/^application\/vnd\.apache\.parquet/);
    expect(disposition).toBe(`attachment; filename="${executionId}.parquet"`);
    expect(bytes.subarray(0, 4).toString('latin1')).toBe('PAR1');
    expect(bytes.subarray(-4).toString('latin1')).toBe('PAR1');
    const file = path.join(suite.work, 'result.parquet');
    await fs.writeFile(file, bytes);

    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      const described = (await connection.runAndReadAll('DESCRIBE SELECT * FROM read_parquet($file)', { file })).getRowObjectsJson() as { column_name: string; column_type: string }[];
      expect(described.map((d) => [d.column_name, d.column_type])).toEqual([
        ['id', 'BIGINT'],
        ['category', 'VARCHAR'],
        ['amount', 'DOUBLE'],
        ['placed_on', 'DATE'],
        ['note', 'VARCHAR'],
      ]);
      const reader = await connection.runAndReadAll('SELECT id, category, amount, strftime(placed_on, \'%Y-%m-%d\') AS placed_on, note FROM read_parquet($file) ORDER BY id', { file });
      const rows = (reader.getRowObjectsJson() as Record<string, unknown>[]).map((r) => ({ ...r, id: Number(r.id) }));
      expect(rows).toEqual(ORDERS);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });

  it('lakeport query prints the count with a bound parameter', async () => {
    await uploaded();
    const run = await lakeport(['query', `SELECT count(*) AS n FROM ${DATASET} WHERE amount > :min`, '--param', 'min=10', '--format', 'json'], cliEnv());
    expect(run.code, describeRun(run)).toBe(0);
    expect(linesOf(run.stdout)).toEqual([JSON.stringify({ n: ORDERS.filter((o) => o.amount > 10).length })]);
    expect(run.stderr).toBe('');
  });

  it('lakeport query fails with one line and exit 1 for a dataset that does not exist', async () => {
    await signedIn();
    const run = await lakeport(['query', 'SELECT * FROM sales.nope.nope'], cliEnv());
    expect(run.code, describeRun(run)).toBe(1);
    expect(run.stdout).toBe('');
    const lines = linesOf(run.stderr);
    expect(lines, run.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^lakeport: query failed: DATASET_NOT_FOUND /);
    expect(lines[0]).toContain('sales.nope.nope');
  });
});
