/**
 * `lakeport upload` against a listening server when values do not fit: the refused value with its
 * record, line and the flags that store the file; `--on-error null|skip` with the counts printed and
 * `--rejects FILE` saving the rejected values.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn } from '../../test/clients.ts';
import { createTestApp, tempDir, type TestApp } from '../../test/harness.ts';
import { uploadCommand } from './upload.ts';

let t: TestApp;
let env: Record<string, string>;
const dir = tempDir('lakeport-upload-on-error-');

beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = t.app.server.address() as AddressInfo;
  const user = await signIn(t.app, t.adminToken, 'loader');
  await createWorkspace(user, 'sales');
  env = { LAKEPORT_URL: `http://127.0.0.1:${port}`, LAKEPORT_TOKEN: user.token };
});
afterAll(async () => {
  dir.remove();
  await t?.close();
});

async function upload(...args: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (c: Buffer) => out.push(c));
  stderr.on('data', (c: Buffer) => err.push(c));
  const code = await uploadCommand(args, { stdout, stderr, stdin: new PassThrough(), isTTY: false, env });
  return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
}

function csvFile(name: string, text: string): string {
  const file = path.join(dir.dir, name);
  fs.writeFileSync(file, text);
  return file;
}

// The sample (the first MiB) sees only whole numbers; the refused value comes after a quoted line break.
const ORDERS = `id,note,qty\n1,"two\nlines",3\n2,b,5\n3,c,5x\n4,d,7\n`;

describe('lakeport upload when values do not fit', { timeout: 60_000 }, () => {
  it('prints the refused value with its record and line, and the flags that would store the file', async () => {
    const file = csvFile('orders.csv', ORDERS);
    const run = await upload(file, '--to', 'sales.raw.refused', '--mode', 'declared', '--column', 'id=BIGINT', '--column', 'note=VARCHAR', '--column', 'qty=BIGINT');
    expect(run.code).toBe(1);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines.find((l) => l.startsWith('lakeport:'))).toBe(
      'lakeport: orders.csv: value "5x" in column qty, record 3 (line 5) cannot be stored as BIGINT: "5x" is not a valid BIGINT',
    );
    expect(lines.slice(-4)).toEqual([
      '  to store the file, rerun with one of:',
      '    --column qty=VARCHAR  (store the column as VARCHAR)',
      '    --on-error null       (store NULL for such values)',
      '    --on-error skip       (leave such records out)',
    ]);
  });

  it('--on-error skip --rejects FILE: commits the other records, prints the count and saves the rejected values', async () => {
    const file = csvFile('orders.csv', ORDERS);
    const saved = path.join(dir.dir, 'rejects.csv');
    const run = await upload(file, '--to', 'sales.raw.skipped', '--mode', 'declared', '--column', 'id=BIGINT', '--column', 'note=VARCHAR', '--column', 'qty=BIGINT', '--on-error', 'skip', '--rejects', saved);
    expect(run.stderr).not.toMatch(/lakeport:/);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('(mode declared, on_error skip)');
    expect(run.stderr).toMatch(/^orders\.csv: .*, 3 rows, 1 record skipped$/m);
    const out = run.stdout.trimEnd().split('\n');
    expect(out.at(-2)).toMatch(/^snapshot \d+: 3 rows written to sales\.raw\.skipped$/);
    expect(out.at(-1)).toBe(`on_error skip: 1 record skipped; the rejected values are in ${saved}`);
    expect(fs.readFileSync(saved, 'utf8')).toBe('file,record,line,column,value,reason,action\norders.csv,3,5,qty,5x,"""5x"" is not a valid BIGINT",skipped\n');
  });

  it('--on-error null: stores NULL and says where the rejected values are', async () => {
    const file = csvFile('orders.csv', ORDERS);
    const run = await upload(file, '--to', 'sales.raw.nulled', '--mode', 'declared', '--column', 'id=BIGINT', '--column', 'note=VARCHAR', '--column', 'qty=BIGINT', '--on-error', 'null');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toMatch(
      new RegExp(`^on_error null: 1 value stored as NULL; the rejected values: GET ${env.LAKEPORT_URL}/upload/v2/contracts/[^/]+/rejects \\(or rerun with --rejects FILE\\)$`),
    );
  });

  it('refuses an unknown policy as a usage error', async () => {
    const run = await upload(csvFile('o.csv', ORDERS), '--to', 'sales.raw.x', '--on-error', 'ignore');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--on-error must be one of fail, null, skip');
  });
});
