/**
 * A column that is whole numbers for 190 022 records and text later: negotiated through the real
 * client against the real server, the proposal must be VARCHAR — the sample has to reach past the
 * head of the file (issue: only the first 1 MiB was sampled, so the upload failed on the write).
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn } from '../../test/clients.ts';
import { createTestApp, tempDir, type TestApp } from '../../test/harness.ts';
import { LakeportClient } from './index.ts';
import { DEFAULT_SAMPLE_BYTES, readSample, spreadLayout } from './samples.ts';

let t: TestApp;
let client: LakeportClient;
const dir = tempDir('lakeport-sample-spread-');

beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = t.app.server.address() as AddressInfo;
  const user = await signIn(t.app, t.adminToken, 'spread');
  await createWorkspace(user, 'sales');
  client = new LakeportClient({ url: `http://127.0.0.1:${port}`, token: user.token });
}, 60_000);
afterAll(async () => {
  dir.remove();
  await t?.close();
});

const RECORDS = 200_000;

/**
 * `id,qty,note` with `qty` a whole number except at data record `odd` (1-based), which holds text.
 * Every 7th note is quoted and holds a line break and a comma, so the middle ranges need aligning. The
 * last ~10 000 records carry long notes, which puts record 190 023 at 64% of the file's 5.9 MB, inside
 * one of the middle ranges (checked below: a record in a gap between ranges is not seen — sampling is
 * not a scan).
 */
function ordersCsv(name: string, odd: number, newline = '\n'): string {
  const lines = ['id,qty,note'];
  for (let i = 1; i <= RECORDS; i++) {
    const qty = i === odd ? 'twelve' : String(i % 1000);
    const note = i % 7 === 0 ? `"packed, ${i}${newline}line 2"` : i > 190_100 ? `order ${i} ${'x'.repeat(220)}` : `n${i}`;
    lines.push(`${i},${qty},${note}`);
  }
  const file = path.join(dir.dir, name);
  fs.writeFileSync(file, lines.join(newline) + newline);
  return file;
}

async function proposedTypes(file: string): Promise<Record<string, string>> {
  const contract = await client.negotiate({ destination: `sales.raw.${path.basename(file, '.csv')}`, schema: { mode: 'infer' }, files: [file] });
  await client.deleteContract(contract.contract_id);
  return Object.fromEntries(contract.plan.map((p) => [p.column, p.target_type ?? '']));
}

describe('negotiating a large CSV samples across the file', { timeout: 120_000 }, () => {
  it('finds text in qty at record 190 023 (past the head): VARCHAR, not BIGINT', async () => {
    const file = ordersCsv('middle.csv', 190_023);
    const text = fs.readFileSync(file, 'latin1');
    expect(text.length).toBeGreaterThan(DEFAULT_SAMPLE_BYTES);
    // The record is far past the head and before the tail, inside a middle range.
    const at = text.indexOf('\n190023,twelve,');
    const layout = spreadLayout(text.length, DEFAULT_SAMPLE_BYTES);
    expect(at).toBeLessThan(layout.tail!.start);
    expect(layout.middle.some((r) => r.start < at - 1000 && at + 1000 < r.end)).toBe(true);
    const sample = (await readSample(file, 'csv')).toString();
    expect(sample.startsWith('id,qty,note\n1,1,n1\n')).toBe(true);
    expect(sample).toContain('\n190023,twelve,n190023\n');
    expect(await proposedTypes(file)).toMatchObject({ id: 'BIGINT', qty: 'VARCHAR', note: 'VARCHAR' });
  });

  it('finds text in the last records (the tail), CRLF line ends', async () => {
    const file = ordersCsv('tail.csv', RECORDS - 1, '\r\n');
    expect(await proposedTypes(file)).toMatchObject({ id: 'BIGINT', qty: 'VARCHAR', note: 'VARCHAR' });
  });

  it('still proposes BIGINT when every record holds a whole number', async () => {
    const file = ordersCsv('clean.csv', 0);
    expect(await proposedTypes(file)).toMatchObject({ id: 'BIGINT', qty: 'BIGINT', note: 'VARCHAR' });
  });
});
