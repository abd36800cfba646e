// `npm run bench -- ingest`: a CSV of 5 million rows uploaded through the service (negotiate, stream,
// commit), against DuckDB's own `COPY (FROM read_csv(...)) TO 'x.parquet'` on the same file, same run.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { startServer } from './lib/server.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 5_000_000);
const SAMPLE_BYTES = 1 << 20;

async function json<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status} ${text}`);
  return JSON.parse(text) as T;
}

async function makeCsv(file: string) {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run(`COPY (
      SELECT i AS id,
             TIMESTAMP '2024-01-01' + to_seconds(i) AS placed_at,
             round(random() * 1000, 2) AS amount,
             'cat_' || (i % 97) AS category,
             i % 3 = 0 AS flagged,
             '10.' || (i % 250) || '.' || (i % 200) || '.' || (i % 199) AS ip
      FROM range(${ROWS}) t(i)) TO '${file}' (FORMAT csv, HEADER)`);
  c.closeSync();
  db.closeSync();
}

async function rawDuckDb(file: string, out: string): Promise<number> {
  const db = await DuckDBInstance.create(':memory:', { threads: '2' });
  const c = await db.connect();
  const start = performance.now();
  await c.run(`COPY (FROM read_csv('${file}')) TO '${out}' (FORMAT parquet)`);
  const seconds = (performance.now() - start) / 1000;
  c.closeSync();
  db.closeSync();
  return seconds;
}

/** A CSV prefix trimmed to its last complete line (this generator writes no quoted newlines). */
async function sampleOf(file: string): Promise<Buffer> {
  const handle = await fsp.open(file);
  const { buffer, bytesRead } = await handle.read(Buffer.alloc(SAMPLE_BYTES), 0, SAMPLE_BYTES, 0);
  await handle.close();
  return buffer.subarray(0, buffer.subarray(0, bytesRead).lastIndexOf(0x0a) + 1);
}

async function throughService(file: string, size: number) {
  const server = await startServer();
  try {
    const { url, adminToken } = server;
    const cred = await json<{ secret: string }>(await fetch(`${url}/auth/clients/bench/credentials`, { method: 'POST', headers: { 'x-admin-token': adminToken, 'content-type': 'application/json' }, body: '{}' }));
    const { access_token } = await json<{ access_token: string }>(
      await fetch(`${url}/auth/token`, { method: 'POST', body: new URLSearchParams({ client_id: 'bench', client_secret: cred.secret }) }),
    );
    const auth = { authorization: `Bearer ${access_token}` };
    const jsonHeaders = { ...auth, 'content-type': 'application/json' };
    const account = await json<{ account_id: string }>(await fetch(`${url}/billing/v1/accounts`, { method: 'POST', headers: jsonHeaders, body: JSON.stringify({ name: 'Bench' }) }));
    await json(await fetch(`${url}/control/v1/workspaces/bench`, { method: 'PUT', headers: jsonHeaders, body: JSON.stringify({ billing_account: account.account_id, members: [{ identity: 'bench', role: 'owner' }] }) }));

    const start = performance.now();
    const form = new FormData();
    form.append('contract', JSON.stringify({ destination: 'bench.orders.daily', schema: { mode: 'infer' } }));
    form.append('sample', new Blob([new Uint8Array(await sampleOf(file))]), path.basename(file));
    const contract = await json<{ contract_id: string; schema_fingerprint: string }>(await fetch(`${url}/upload/v2/contracts`, { method: 'POST', headers: auth, body: form }));
    await json(await fetch(`${url}/upload/v2/contracts/${contract.contract_id}/accept`, { method: 'PUT', headers: jsonHeaders, body: JSON.stringify({ schema_fingerprint: contract.schema_fingerprint }) }));
    const writeStart = performance.now();
    const written = await json<{ written: { rows: number; bytes: number }[] }>(
      await fetch(`${url}/upload/v2/contracts/${contract.contract_id}/data`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'text/csv', 'content-length': String(size), 'x-file-name': path.basename(file) },
        body: fs.createReadStream(file) as unknown as BodyInit,
        duplex: 'half',
      } as RequestInit),
    );
    const writeSeconds = (performance.now() - writeStart) / 1000;
    const commit = await json<{ rows_written: number; snapshot: { snapshot_id: number } }>(
      await fetch(`${url}/upload/v2/contracts/${contract.contract_id}/commit`, { method: 'POST', headers: { ...auth, 'idempotency-key': 'bench-1' } }),
    );
    const totalSeconds = (performance.now() - start) / 1000;
    if (commit.rows_written !== ROWS) throw new Error(`committed ${commit.rows_written} rows, expected ${ROWS}`);
    return { writeSeconds, totalSeconds, parquetBytes: written.written[0].bytes, peak: await server.peakRssBytes() };
  } finally {
    await server.stop();
  }
}

export async function run(): Promise<void> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'lakeport-ingest-bench-'));
  try {
    const file = path.join(dir, 'orders.csv');
    process.stderr.write(`generating ${ROWS.toLocaleString()} rows of CSV...\n`);
    await makeCsv(file);
    const size = (await fsp.stat(file)).size;
    const mb = size / 1e6;
    process.stderr.write(`${mb.toFixed(0)} MB; raw DuckDB COPY...\n`);
    const raw = await rawDuckDb(file, path.join(dir, 'raw.parquet'));
    process.stderr.write('through the service (negotiate, stream, commit)...\n');
    const service = await throughService(file, size);
    const rawMBs = mb / raw;
    const writeMBs = mb / service.writeSeconds;
    const totalMBs = mb / service.totalSeconds;
    process.stdout.write(
      `\nLakeport ingest benchmark: ${ROWS.toLocaleString()} rows, ${mb.toFixed(1)} MB of CSV (node ${process.version}, ${os.cpus().length} cores)\n` +
        `raw DuckDB COPY read_csv -> parquet: ${raw.toFixed(2)} s, ${rawMBs.toFixed(1)} MB/s\n` +
        `service POST /data (stream + convert + stage): ${service.writeSeconds.toFixed(2)} s, ${writeMBs.toFixed(1)} MB/s, ${(writeMBs / rawMBs).toFixed(2)}x raw DuckDB\n` +
        `service end to end (negotiate + accept + data + commit): ${service.totalSeconds.toFixed(2)} s, ${totalMBs.toFixed(1)} MB/s, ${(totalMBs / rawMBs).toFixed(2)}x raw DuckDB\n` +
        `parquet written: ${(service.parquetBytes / 1e6).toFixed(1)} MB; peak server memory (VmHWM): ${service.peak ? `${(service.peak / 1e6).toFixed(0)} MB` : 'n/a'}\n`,
    );
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}
