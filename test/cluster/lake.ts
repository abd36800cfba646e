/**
 * What the cluster suite does to Lakeport, through the TypeScript client a user has: tokens, upload
 * batches whose content can be checked afterwards, jobs, and the check itself.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { LakeportApiError, LakeportClient, LakeportNetworkError } from '../../src/client/index.ts';
import { until } from './cluster.ts';

export const DATASET = 'sales.raw.events';

/** A client of one server, with a ready token. */
export const clientOf = (url: string, token: string) => new LakeportClient({ url, token });

/** An access token for `clientId` from the token endpoint of the server at `url`. */
export async function tokenFrom(url: string, clientId: string, secret: string): Promise<string> {
  const response = await fetch(`${url}/auth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }) });
  const body = (await response.json()) as { access_token?: string };
  if (!response.ok || !body.access_token) throw new Error(`token from ${url}: ${response.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

/** A batch of rows `(batch, i, v)`: its file, and the row count and sum of `v` that reading it back must give. */
export interface Batch {
  batch: number;
  file: string;
  rows: number;
  sum: number;
}

/** Writes batch `batch` of `rows` rows as CSV into `dir`. */
export async function makeBatch(dir: string, batch: number, rows: number): Promise<Batch> {
  const lines = ['batch,i,v'];
  let sum = 0;
  for (let i = 0; i < rows; i++) {
    const v = (batch * 7919 + i * 31) % 100_003;
    sum += v;
    lines.push(`${batch},${i},${v}`);
  }
  const file = path.join(dir, `events-${batch}.csv`);
  await fs.writeFile(file, `${lines.join('\n')}\n`);
  return { batch, file, rows, sum };
}

/** How a request failed: an error answer (its status and code), or none (status 0, code NETWORK: the connection failed). */
export interface Failure {
  status: number;
  code: string;
  message: string;
}

/** The failure a client error stands for; anything else (a bug in the test) is thrown again. */
export function failureOf(error: unknown): Failure {
  if (error instanceof LakeportApiError) return { status: error.status, code: error.code, message: error.message };
  if (error instanceof LakeportNetworkError) return { status: 0, code: 'NETWORK', message: error.message };
  throw error;
}

/** A contract for `batch`, negotiated (and accepted, if the dataset is new) through `client`; its id. */
export async function openContract(client: LakeportClient, batch: Batch): Promise<string> {
  const contract = await client.negotiate({ destination: DATASET, schema: { mode: 'auto' }, files: [batch.file] });
  if (contract.state === 'proposed') await client.acceptContract(contract.contract_id, contract.schema_fingerprint);
  return contract.contract_id;
}

/** Negotiates `batch` on `negotiateOn`, writes it there and commits it on `commitOn` (the same server unless told). */
export async function uploadBatch(batch: Batch, negotiateOn: LakeportClient, commitOn: LakeportClient = negotiateOn): Promise<{ contractId: string; snapshotId: number }> {
  const contract = { contract_id: await openContract(negotiateOn, batch) };
  await negotiateOn.writeFile(contract.contract_id, batch.file);
  const committed = await commitOn.commit(contract.contract_id, `batch-${batch.batch}`, { retries: 0 });
  return { contractId: contract.contract_id, snapshotId: committed.snapshot!.snapshot_id };
}

/** Runs `sql` as a job through `client` and answers its rows (one page; for small results). */
export async function query(client: LakeportClient, sql: string, timeoutMs = 120_000): Promise<unknown[][]> {
  const { execution_id } = await client.submitJob({ sql_text: sql });
  let last: unknown;
  const job = await until(`job ${execution_id} (${sql})`, async () => {
    const status = await client.jobStatus(execution_id, 10);
    last = status;
    return status.status === 'queued' || status.status === 'running' ? undefined : status;
  }, timeoutMs, 0).catch((error: Error) => {
    throw new Error(`${error.message}; last status: ${JSON.stringify(last)}`);
  });
  if (job.status !== 'succeeded') throw new Error(`job ${execution_id} ${job.status}: ${JSON.stringify(job.error)}`);
  return (await client.jobResults(execution_id)).data as unknown[][];
}

/** Each batch's row count and sum of `v` in the dataset now, read through `client`. */
export async function batchesInDataset(client: LakeportClient): Promise<Map<number, { rows: number; sum: number }>> {
  const rows = await query(client, `SELECT batch, count(*) AS n, sum(v) AS s FROM ${DATASET} GROUP BY batch`);
  return new Map(rows.map(([batch, n, s]) => [Number(batch), { rows: Number(n), sum: Number(s) }]));
}

/**
 * Checks uploads against the dataset: every acknowledged batch is there whole (else it is lost),
 * and a batch whose commit got no answer is there whole or not at all (else its half is lost).
 */
export function lostBatches(found: Map<number, { rows: number; sum: number }>, acknowledged: Batch[], unanswered: Batch[]): { lost: Batch[]; landedUnanswered: number } {
  const whole = (b: Batch) => found.get(b.batch)?.rows === b.rows && found.get(b.batch)?.sum === b.sum;
  const lost = acknowledged.filter((b) => !whole(b));
  let landedUnanswered = 0;
  for (const b of unanswered) {
    if (whole(b)) landedUnanswered++;
    else if (found.has(b.batch)) lost.push(b);
  }
  return { lost, landedUnanswered };
}
