/**
 * End to end: `npm start` as a user runs it, then the real `lakeport upload` command as a user (or a CI
 * job) runs it — `node bin/lakeport.cjs upload …`, not a terminal — once on the file store and once on
 * the S3 store (a real S3 API server on loopback, see test/s3-server.ts). Alice gets a credential, an
 * account and workspace `sales`, uploads CSV files into `sales.orders.daily`, and the committed Parquet
 * files are read back with a fresh DuckDB straight from where the store keeps them (there is no dataset
 * read API yet). With DATABASE_URL set the server runs on a fresh PostgreSQL database, else on PGlite.
 */
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Server, type TestS3Server } from '../s3-server.ts';
import { describeRun, lakeport, linesOf } from './cli.ts';
import { once } from '../async.ts';
import { httpApi } from './http.ts';
import { startServer, type RunningServer } from './server.ts';

const DATASET = 'sales.orders.daily';
const FIRST_ROWS = 50_000;
const SECOND_ROWS = 20_000;
const BAD_ROW = 30_000;

// ---------------------------------------------------------------------------------------------------
// Fixtures: deterministic orders, so every value can be checked again after the round trip.
// ---------------------------------------------------------------------------------------------------

const EPOCH_MS = Date.UTC(2024, 0, 1);
const OFFSETS_MIN = [120, -300, 0, 330];
const MULTILINE_NOTE = 'line one\nline two';

/** Amount of order `id` in cents (every 7th is a refund). */
const cents = (id: number) => ((id * 7919) % 1_000_000) * (id % 7 === 0 ? -1 : 1);
const formatCents = (c: number) => `${c < 0 ? '-' : ''}${Math.floor(Math.abs(c) / 100)}.${String(Math.abs(c) % 100).padStart(2, '0')}`;
/** The instant of order `id`, written in one of several UTC offsets. */
const placedAtMs = (id: number) => EPOCH_MS + id * 61_000;
function placedAtText(id: number): string {
  const offset = OFFSETS_MIN[id % OFFSETS_MIN.length];
  const local = new Date(placedAtMs(id) + offset * 60_000).toISOString().slice(0, 19).replace('T', ' ');
  const abs = Math.abs(offset);
  return `${local}${offset < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
const ipOf = (id: number) => `10.${(id >> 16) & 255}.${(id >> 8) & 255}.${id & 255}`;
/** The note of order `id` as stored, and as written in the CSV (quoted when it holds a comma, quote or newline). */
function noteOf(id: number, multiline: boolean): { value: string; csv: string } {
  if (multiline && id % 25 === 0) return { value: MULTILINE_NOTE, csv: `"${MULTILINE_NOTE}"` };
  if (id % 10 === 0) return { value: 'Smith, John', csv: '"Smith, John"' };
  if (id % 50 === 3) return { value: 'said "hi", left', csv: '"said ""hi"", left"' };
  return { value: `note ${id}`, csv: `note ${id}` };
}
/** The same rule in SQL, for checking every stored note at once. */
const NOTE_SQL = `CASE WHEN id % 25 = 0 THEN 'line one' || chr(10) || 'line two' WHEN id % 10 = 0 THEN 'Smith, John'
  WHEN id % 50 = 3 THEN 'said "hi", left' ELSE 'note ' || id END`;

/**
 * `rows` orders with ids `firstId…`. `badRow` (1-based data row) gets `abc` as its amount. Notes with a
 * line break appear only from data row `multilineFrom` on, so a reported line number means one thing.
 */
async function writeOrders(file: string, options: { firstId: number; rows: number; badRow?: number; multilineFrom?: number }): Promise<void> {
  const lines = ['id,amount,placed_at,ip,note'];
  for (let row = 1; row <= options.rows; row++) {
    const id = options.firstId + row - 1;
    const amount = row === options.badRow ? 'abc' : formatCents(cents(id));
    lines.push([id, amount, placedAtText(id), ipOf(id), noteOf(id, row >= (options.multilineFrom ?? 1)).csv].join(','));
  }
  await fs.writeFile(file, `${lines.join('\n')}\n`);
}

// ---------------------------------------------------------------------------------------------------
// The CLI as a user runs it
// ---------------------------------------------------------------------------------------------------


/** The contract id from the CLI's `contract <id> for <dataset>: <state> (mode …)` line. */
function contractLine(stdout: string): { id: string; destination: string; state: string; mode: string } {
  const match = /^contract (\S+) for (\S+): (\S+) \((mode [^)]*)\)$/m.exec(stdout);
  expect(match, stdout).not.toBeNull();
  return { id: match![1], destination: match![2], state: match![3], mode: match![4] };
}

/** The plan table the CLI printed: column → {action, source, target}. */
function printedPlan(stdout: string): Record<string, { action: string; source: string; target: string }> {
  const lines = stdout.split('\n');
  const header = lines.findIndex((line) => /^column\s+action\s+source\s+target$/.test(line));
  expect(header, stdout).toBeGreaterThanOrEqual(0);
  const plan: Record<string, { action: string; source: string; target: string }> = {};
  for (const line of lines.slice(header + 1)) {
    if (line.trim() === '') break;
    // Cells are padded and joined with two spaces; types such as TIMESTAMP WITH TIME ZONE hold single ones.
    const [column, action, source, target] = line.split(/ {2,}/);
    plan[column] = { action, source, target };
  }
  return plan;
}

// ---------------------------------------------------------------------------------------------------
// Reading the committed Parquet files back
// ---------------------------------------------------------------------------------------------------

async function findParquet(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.parquet'))
    .map((e) => path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name))
    .sort();
}

interface LakeSummary {
  rows: number;
  types: Record<string, string>;
  distinctIds: number;
  minId: number;
  maxId: number;
  /** Rows whose value differs from what the fixtures wrote, per column. */
  wrong: { amount: number; placed_at: number; ip: number; note: number };
  multilineNotes: number;
  amountCents: string;
}

/** Reads Parquet files with a fresh DuckDB, as any Parquet reader would. */
async function readLake(files: string[]): Promise<LakeSummary> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const list = `[${files.map((f) => `'${f.replaceAll("'", "''")}'`).join(', ')}]`;
    await connection.run(`CREATE VIEW orders AS SELECT * FROM read_parquet(${list})`);
    const described = (await connection.runAndReadAll('DESCRIBE orders')).getRowObjectsJson() as { column_name: string; column_type: string }[];
    const summary = (
      await connection.runAndReadAll(`
        SELECT count(*)::INTEGER AS rows, count(DISTINCT id)::INTEGER AS distinct_ids, min(id)::INTEGER AS min_id, max(id)::INTEGER AS max_id,
          count(*) FILTER (WHERE amount IS NULL OR CAST(amount * 100 AS BIGINT) <> ((id * 7919) % 1000000) * CASE WHEN id % 7 = 0 THEN -1 ELSE 1 END)::INTEGER AS wrong_amount,
          count(*) FILTER (WHERE placed_at IS NULL OR epoch_ms(placed_at) <> ${EPOCH_MS} + id * 61000)::INTEGER AS wrong_placed_at,
          count(*) FILTER (WHERE ip IS NULL OR ip <> '10.' || ((id >> 16) & 255) || '.' || ((id >> 8) & 255) || '.' || (id & 255))::INTEGER AS wrong_ip,
          count(*) FILTER (WHERE note IS NULL OR note <> ${NOTE_SQL})::INTEGER AS wrong_note,
          count(*) FILTER (WHERE note = 'line one' || chr(10) || 'line two')::INTEGER AS multiline_notes,
          CAST(sum(amount) * 100 AS HUGEINT)::VARCHAR AS amount_cents
        FROM orders`)
    ).getRowObjectsJson()[0] as Record<string, number | string>;
    return {
      rows: Number(summary.rows),
      types: Object.fromEntries(described.map((d) => [d.column_name, d.column_type])),
      distinctIds: Number(summary.distinct_ids),
      minId: Number(summary.min_id),
      maxId: Number(summary.max_id),
      wrong: {
        amount: Number(summary.wrong_amount),
        placed_at: Number(summary.wrong_placed_at),
        ip: Number(summary.wrong_ip),
        note: Number(summary.wrong_note),
      },
      multilineNotes: Number(summary.multiline_notes),
      amountCents: String(summary.amount_cents),
    };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** The physical DuckDB type a Lakeport column type is stored as (IPv4 is a labelled VARCHAR). */
const storedAs = (type: string) => (type === 'IPV4' ? 'VARCHAR' : type);

// ---------------------------------------------------------------------------------------------------
// The stores
// ---------------------------------------------------------------------------------------------------

interface Lake {
  /** Every Parquet blob under `lake/`, by key (relative to the store's root). */
  keys(): Promise<string[]>;
  /** Local copies of the given blobs, for DuckDB. */
  fetch(keys: string[]): Promise<string[]>;
}

function fileLake(server: RunningServer): Lake {
  const root = server.dataDir;
  return {
    keys: async () => (await findParquet(path.join(root, 'lake'))).map((f) => path.relative(root, f).split(path.sep).join('/')),
    fetch: async (keys) => keys.map((key) => path.join(root, ...key.split('/'))),
  };
}

function s3Lake(s3: TestS3Server, prefix: string, downloads: string): Lake {
  const client = new S3Client({
    endpoint: s3.endpoint,
    forcePathStyle: true,
    region: s3.region,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    async keys() {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${prefix}/lake/`, ContinuationToken: token }));
        for (const object of page.Contents ?? []) if (object.Key?.endsWith('.parquet')) keys.push(object.Key.slice(prefix.length + 1));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return keys.sort();
    },
    async fetch(keys) {
      const dir = await fs.mkdtemp(path.join(downloads, 'download-'));
      return Promise.all(
        keys.map(async (key, i) => {
          const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `${prefix}/${key}` }));
          const file = path.join(dir, `${i}-${path.posix.basename(key)}`);
          await fs.writeFile(file, await object.Body!.transformToByteArray());
          return file;
        }),
      );
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------------

describe.each([['file'], ['s3']] as const)('lakeport upload end to end on the %s store', { timeout: 120_000 }, (store) => {
  let s3: TestS3Server | undefined;
  let server: RunningServer;
  let work: string;
  let lake: Lake;
  const s3Prefix = `e2e-${crypto.randomBytes(4).toString('hex')}`;

  let aliceToken: string;
  let aliceSecret: string;

  beforeAll(async () => {
    work = await fs.mkdtemp(path.join(os.tmpdir(), `lakeport-upload-e2e-${store}-`));
    // Empty values count as unset: the file run stays on the default file store whatever the shell exports.
    const env: Record<string, string> = { LAKEPORT_STORAGE_URL: '' };
    if (store === 's3') {
      s3 = await startS3Server();
      Object.assign(env, {
        LAKEPORT_STORAGE_URL: `s3://${s3.bucket}/${s3Prefix}`,
        S3_ENDPOINT: s3.endpoint,
        S3_REGION: s3.region,
        AWS_ACCESS_KEY_ID: s3.accessKeyId,
        AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
        AWS_SESSION_TOKEN: '',
      });
    }
    server = await startServer({ startTimeoutMs: 90_000, env });
    lake = s3 ? s3Lake(s3, s3Prefix, work) : fileLake(server);
  }, 180_000);

  afterAll(async () => {
    try {
      await server?.stop();
    } finally {
      await s3?.stop();
      if (work) await fs.rm(work, { recursive: true, force: true });
    }
  }, 60_000);

  const { call, expectStatus, ownWorkspace } = httpApi(() => server);

  /** The environment a user's shell (or CI job) gives the CLI: the server and alice's credentials. */
  function cliEnv(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, LAKEPORT_URL: server.url, LAKEPORT_CLIENT_ID: 'alice', LAKEPORT_CLIENT_SECRET: aliceSecret };
    delete env.LAKEPORT_TOKEN;
    return env;
  }

  /** The datasets of workspace sales, from the catalog as the effective-permissions export sees it. */
  async function datasetsInSales(): Promise<string[]> {
    const response = await fetch(`${server.url}/policy/v1/access/workspace/sales/effective-permissions.csv`, { headers: { authorization: `Bearer ${aliceToken}` } });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    const records: Record<string, string>[] = parse(text, { columns: true, skip_empty_lines: true });
    return [...new Set(records.map((r) => r.dataset).filter(Boolean))].sort();
  }

  async function expectContractGone(id: string) {
    const gone = expectStatus(await call('GET', `/upload/v2/contracts/${id}`, { token: aliceToken }), 404);
    expect(gone.code).toBe('CONTRACT_NOT_FOUND');
  }

  // The steps of the scenario, each run once by the first test that needs it, so any test runs alone
  // and in any order. Each returns what the tests check, read right after it (later steps change it).
  const signedIn = once(async () => {
    const credential = expectStatus(await call('POST', '/auth/clients/alice/credentials', { admin: true, json: {} }), 200);
    aliceSecret = credential.secret;
    const response = await fetch(`${server.url}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'alice', client_secret: aliceSecret }),
    });
    const tokens = await response.json();
    expect(response.status, JSON.stringify(tokens)).toBe(200);
    expect(tokens.scope.split(' ')).toContain('upload');
    aliceToken = tokens.access_token;
    const workspace = await ownWorkspace(aliceToken, 'alice', 'sales');
    return { credential, workspace, datasets: await datasetsInSales(), keys: await lake.keys() };
  });

  const firstUpload = once(async () => {
    await signedIn();
    const file = path.join(work, 'orders-2024-01.csv');
    await writeOrders(file, { firstId: 1, rows: FIRST_ROWS });
    const run = await lakeport(['upload', file, '--to', DATASET, '--accept', '--column', 'amount=DECIMAL(18,2)', '--message', 'first load'], cliEnv());
    expect(run.code, describeRun(run)).toBe(0);
    const contract = contractLine(run.stdout);
    const committed = expectStatus(await call('GET', `/upload/v2/contracts/${contract.id}`, { token: aliceToken }), 200);
    const keys = await lake.keys();
    return { run, contract, committed, datasets: await datasetsInSales(), keys, summary: keys.length > 0 ? await readLake(await lake.fetch(keys)) : undefined };
  });
  const firstPlan = async () => printedPlan((await firstUpload()).run.stdout);

  const secondUpload = once(async () => {
    await firstUpload();
    const file = path.join(work, 'orders-2024-02.csv');
    await writeOrders(file, { firstId: FIRST_ROWS + 1, rows: SECOND_ROWS });
    const run = await lakeport(['upload', file, '--to', DATASET], cliEnv());
    expect(run.code, describeRun(run)).toBe(0);
    /** Parquet keys after the two good uploads. */
    const committedKeys = await lake.keys();
    return { run, committedKeys, afterTwoUploads: await readLake(await lake.fetch(committedKeys)) };
  });

  it('sets up alice: credential, token, account and workspace sales', async () => {
    const { credential, workspace, datasets, keys } = await signedIn();
    expect(credential.secret).toMatch(/^lpsk_/);
    expect(workspace).toMatchObject({ name: 'sales', state: 'active' });
    expect(datasets).toEqual([]);
    expect(keys).toEqual([]);
  });

  it('uploads 50 000 rows into a new dataset with an inferred, accepted schema', async () => {
    const { run, contract, committed, datasets, keys, summary } = await firstUpload();
    expect(linesOf(run.stdout).at(-1)).toMatch(new RegExp(`^snapshot \\d+: ${FIRST_ROWS} rows written to ${DATASET.replaceAll('.', '\\.')}$`));

    expect(contract).toMatchObject({ destination: DATASET, state: 'proposed', mode: 'mode infer, requested auto' });
    const firstPlan = printedPlan(run.stdout);
    expect(Object.keys(firstPlan)).toEqual(['id', 'amount', 'placed_at', 'ip', 'note']);
    expect(firstPlan.id).toEqual({ action: 'keep', source: 'BIGINT', target: 'BIGINT' });
    // Amounts with two decimals in every sampled value are inferred as DECIMAL(18,2); --column agrees.
    expect(firstPlan.amount).toEqual({ action: 'keep', source: 'DECIMAL(18,2)', target: 'DECIMAL(18,2)' });
    expect(run.stdout).toMatch(/^warning\s+INFERRED_DECIMAL\s+amount\s/m);
    expect(firstPlan.placed_at).toEqual({ action: 'keep', source: 'TIMESTAMP WITH TIME ZONE', target: 'TIMESTAMP WITH TIME ZONE' });
    expect(firstPlan.ip).toEqual({ action: 'keep', source: 'IPV4', target: 'IPV4' });
    expect(firstPlan.note).toEqual({ action: 'keep', source: 'VARCHAR', target: 'VARCHAR' });
    expect(run.stdout).toMatch(/^accepted schema sha256:\S+$/m);
    // Not a terminal: one line per finished file on stderr, no progress bar.
    expect(run.stderr).toMatch(new RegExp(`^orders-2024-01\\.csv: .* sent in .* s \\(.* MB/s\\), ${FIRST_ROWS} rows$`, 'm'));
    expect(run.stderr).not.toContain('\r');
    expect(committed).toMatchObject({ state: 'committed', destination: DATASET, rows_written: FIRST_ROWS, totals: { files: 1, rows: FIRST_ROWS } });

    expect(datasets).toEqual([DATASET]);
    expect(keys.length).toBeGreaterThan(0);
    expect(summary?.rows).toBe(FIRST_ROWS);
  });

  it('appends a second file in dataset mode; DuckDB reads both with the printed types', async () => {
    const { run, committedKeys, afterTwoUploads } = await secondUpload();
    const firstPlanned = await firstPlan();
    expect(linesOf(run.stdout).at(-1)).toMatch(new RegExp(`^snapshot \\d+: ${SECOND_ROWS} rows written to ${DATASET.replaceAll('.', '\\.')}$`));
    expect(contractLine(run.stdout)).toMatchObject({ destination: DATASET, state: 'accepted', mode: 'mode dataset, requested auto' });
    const plan = printedPlan(run.stdout);
    for (const column of Object.keys(firstPlanned)) expect(plan[column]?.target, column).toBe(firstPlanned[column].target);
    expect(run.stdout).not.toMatch(/^accepted schema/m);

    expect(committedKeys.length).toBeGreaterThanOrEqual(2);
    if (store === 's3') {
      // Everything went to the bucket; the data dir holds at most the read-through cache.
      expect(await findParquet(path.join(server.dataDir, 'lake'))).toEqual([]);
    }
    const total = FIRST_ROWS + SECOND_ROWS;
    expect(afterTwoUploads).toMatchObject({ rows: total, distinctIds: total, minId: 1, maxId: total });
    expect(afterTwoUploads.types).toEqual(Object.fromEntries(Object.entries(firstPlanned).map(([column, p]) => [column, storedAs(p.target)])));
    expect(afterTwoUploads.types).toMatchObject({ amount: 'DECIMAL(18,2)', ip: 'VARCHAR', placed_at: 'TIMESTAMP WITH TIME ZONE' });
    // Every value came through: exact decimals, instants across offsets, quoted commas, quotes and line breaks.
    expect(afterTwoUploads.wrong).toEqual({ amount: 0, placed_at: 0, ip: 0, note: 0 });
    expect(afterTwoUploads.multilineNotes).toBe(Math.floor(total / 25));
    let expectedCents = 0n;
    for (let id = 1; id <= total; id++) expectedCents += BigInt(cents(id));
    expect(afterTwoUploads.amountCents).toBe(expectedCents.toString());
  });

  it('refuses a file with a bad value at row 30 000 in one line, then the ways to store it, and commits nothing', async () => {
    const { committedKeys } = await secondUpload();
    const file = path.join(work, 'orders-bad.csv');
    // Line breaks inside quoted notes only after the bad row: line 30 001 of the file is data row 30 000.
    await writeOrders(file, { firstId: 100_001, rows: FIRST_ROWS, badRow: BAD_ROW, multilineFrom: BAD_ROW + 1 });

    const run = await lakeport(['upload', file, '--to', DATASET, '--message', 'bad load'], cliEnv());
    expect(run.code, describeRun(run)).toBe(1);
    const [line, ...fixes] = linesOf(run.stderr);
    expect(line).toMatch(/^lakeport: /);
    expect(line).toContain('orders-bad.csv');
    expect(line).toMatch(/\bcolumn "?amount"?/);
    // The record counts data records; the line is the file's (the header is line 1).
    expect(line).toMatch(new RegExp(`\\brecord ${BAD_ROW} \\(line ${BAD_ROW + 1}\\)`));
    expect(line).toContain('"abc"');
    expect(line).toContain('DECIMAL(18,2)');
    // Dataset mode fixes the types: the ways out are on_error, or changing the dataset.
    expect(fixes.join('\n')).toMatch(/--on-error null[\s\S]*--on-error skip[\s\S]*change the dataset's column/);
    expect(run.stdout).not.toMatch(/^snapshot /m);

    await expectContractGone(contractLine(run.stdout).id);
    expect(await lake.keys()).toEqual(committedKeys);
    expect(await datasetsInSales()).toEqual([DATASET]);
  });

  it('stops without --accept when not on a terminal, and commits nothing for the new dataset', async () => {
    const { committedKeys } = await secondUpload();
    const file = path.join(work, 'orders-weekly.csv');
    await writeOrders(file, { firstId: 1, rows: 1_000 });

    const run = await lakeport(['upload', file, '--to', 'sales.orders.weekly', '--mode', 'infer'], cliEnv());
    expect(run.code, describeRun(run)).toBe(1);
    expect(linesOf(run.stderr)).toEqual([
      'lakeport: the contract proposes an inferred schema and this is not an interactive terminal; review the plan and rerun with --accept to accept it',
    ]);
    const contract = contractLine(run.stdout);
    expect(contract).toMatchObject({ destination: 'sales.orders.weekly', state: 'proposed', mode: 'mode infer' });
    expect(run.stdout).not.toMatch(/^snapshot /m);

    await expectContractGone(contract.id);
    expect(await datasetsInSales()).toEqual([DATASET]);
    expect(await lake.keys()).toEqual(committedKeys);
    const summary = await readLake(await lake.fetch(committedKeys));
    expect(summary.rows).toBe(FIRST_ROWS + SECOND_ROWS);
  });
});
