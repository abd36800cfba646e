// Shared by benchmarks: a signed-in owner of a fresh workspace, and a Parquet upload through the API.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

export interface Api {
  url: string;
  auth: Record<string, string>;
}

export async function json<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status} ${text}`);
  return JSON.parse(text) as T;
}

export const median = (values: number[]) => percentile(values, 0.5);
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (p === 0.5 && sorted.length % 2 === 0) return (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

/** Median ms of `runs` calls of `fn` after `warm` unmeasured ones. */
export async function timed(fn: () => Promise<unknown>, runs: number, warm = 1): Promise<number> {
  for (let i = 0; i < warm; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return median(times);
}

/** A credential for `identity`, its access token, an account and `workspace` owned by it. */
export async function setUp(url: string, adminToken: string, identity = 'bench', workspace = 'bench'): Promise<Api & { secret: string }> {
  const cred = await json<{ secret: string }>(
    await fetch(`${url}/auth/clients/${identity}/credentials`, { method: 'POST', headers: { 'x-admin-token': adminToken, 'content-type': 'application/json' }, body: '{}' }),
  );
  const { access_token } = await json<{ access_token: string }>(
    await fetch(`${url}/auth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: identity, client_secret: cred.secret }) }),
  );
  const auth = { authorization: `Bearer ${access_token}` };
  const jsonHeaders = { ...auth, 'content-type': 'application/json' };
  const account = await json<{ account_id: string }>(await fetch(`${url}/billing/v1/accounts`, { method: 'POST', headers: jsonHeaders, body: JSON.stringify({ name: 'Bench' }) }));
  await json(
    await fetch(`${url}/control/v1/workspaces/${workspace}`, {
      method: 'PUT',
      headers: jsonHeaders,
      body: JSON.stringify({ billing_account: account.account_id, members: [{ identity, role: 'owner' }] }),
    }),
  );
  return { url, auth, secret: cred.secret };
}

/** A Parquet file's footer: the last 8 + footer_length bytes (footer_length is the little-endian uint32 before `PAR1`). */
export async function footerOf(file: string, size: number): Promise<Buffer> {
  const handle = await fsp.open(file);
  try {
    const tail = Buffer.alloc(8);
    await handle.read(tail, 0, 8, size - 8);
    if (tail.subarray(4).toString('latin1') !== 'PAR1') throw new Error(`${file} does not end with PAR1`);
    const length = 8 + tail.readUInt32LE(0);
    const footer = Buffer.alloc(length);
    await handle.read(footer, 0, length, size - length);
    return footer;
  } finally {
    await handle.close();
  }
}

/** Negotiate (footer sample, infer), accept, stream the Parquet file to /data, commit. Returns the rows written and seconds taken. */
export async function uploadParquet(api: Api, file: string, destination: string): Promise<{ contractId: string; rows: number; seconds: number }> {
  const size = (await fsp.stat(file)).size;
  const sample = await footerOf(file, size);
  return upload(api, destination, { name: path.basename(file), sample, contentType: 'application/vnd.apache.parquet', size, body: () => fs.createReadStream(file) as unknown as BodyInit });
}

/** A small CSV (its text is its own sample) as one commit to `destination` (mode auto: inferred for a new dataset, the dataset's columns after). */
export async function uploadCsv(api: Api, text: string, destination: string): Promise<{ contractId: string; rows: number; seconds: number }> {
  const bytes = Buffer.from(text, 'utf8');
  return upload(api, destination, { name: 'rows.csv', sample: bytes, contentType: 'text/csv', size: bytes.length, body: () => bytes }, 'auto');
}

/** The upload API's round: negotiate (sample, infer), accept when proposed, stream the file to /data, commit. */
async function upload(
  api: Api,
  destination: string,
  file: { name: string; sample: Buffer; contentType: string; size: number; body: () => BodyInit },
  mode: 'infer' | 'auto' = 'infer',
): Promise<{ contractId: string; rows: number; seconds: number }> {
  const start = performance.now();
  const form = new FormData();
  form.append('contract', JSON.stringify({ destination, schema: { mode } }));
  form.append('sample', new Blob([new Uint8Array(file.sample)]), file.name);
  const contract = await json<{ contract_id: string; schema_fingerprint: string; state: string }>(await fetch(`${api.url}/upload/v2/contracts`, { method: 'POST', headers: api.auth, body: form }));
  if (contract.state === 'proposed') {
    await json(
      await fetch(`${api.url}/upload/v2/contracts/${contract.contract_id}/accept`, {
        method: 'PUT',
        headers: { ...api.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ schema_fingerprint: contract.schema_fingerprint }),
      }),
    );
  }
  await json(
    await fetch(`${api.url}/upload/v2/contracts/${contract.contract_id}/data`, {
      method: 'POST',
      headers: { ...api.auth, 'content-type': file.contentType, 'content-length': String(file.size), 'x-file-name': file.name },
      body: file.body(),
      duplex: 'half',
    } as RequestInit),
  );
  const commit = await json<{ rows_written: number }>(
    await fetch(`${api.url}/upload/v2/contracts/${contract.contract_id}/commit`, { method: 'POST', headers: { ...api.auth, 'idempotency-key': `bench-${contract.contract_id}` } }),
  );
  return { contractId: contract.contract_id, rows: commit.rows_written, seconds: (performance.now() - start) / 1000 };
}

/** `rows` rows of orders (id, category of 100, amount, ts) written as one Parquet file, for the jobs and views benches. */
export async function makeOrdersParquet(file: string, rows: number): Promise<void> {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run(`COPY (
      SELECT i AS id,
             'cat_' || lpad(CAST(i % 100 AS VARCHAR), 2, '0') AS category,
             round(random() * 1000, 2) AS amount,
             TIMESTAMP '2024-01-01' + to_seconds(i) AS ts
      FROM range(${rows}) t(i)) TO '${file}' (FORMAT parquet)`);
  c.closeSync();
  db.closeSync();
}
