/**
 * `lakeport upload --encoding` against a listening server: a Latin-1 file is refused with the fix in
 * one line, and with the option it lands in the dataset as the same text.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../test/clients.ts';
import { createTestApp, tempDir, type TestApp } from '../../test/harness.ts';
import { uploadCommand } from './upload.ts';

let t: TestApp;
let alice: TestUser;
let url: string;
const dir = tempDir('lakeport-upload-encoding-');

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales', {});
});
afterAll(async () => {
  dir.remove();
  await t?.close();
});

async function upload(...args: string[]) {
  const text = (s: PassThrough) => {
    const parts: Buffer[] = [];
    s.on('data', (c: Buffer) => parts.push(c));
    return () => Buffer.concat(parts).toString();
  };
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const [out, err] = [text(stdout), text(stderr)];
  const code = await uploadCommand(args, { stdout, stderr, stdin: new PassThrough(), isTTY: false, env: { LAKEPORT_URL: url, LAKEPORT_TOKEN: alice.token } });
  return { code, stdout: out(), stderr: err() };
}

describe('lakeport upload --encoding', () => {
  it('refuses a Latin-1 file without it, in words, and uploads it exactly with it', async () => {
    const file = path.join(dir.dir, 'cities.csv');
    fs.writeFileSync(file, Buffer.from('id,city\n1,Z\xfcrich\n2,caf\xe9\n', 'latin1'));

    const refused = await upload(file, '--to', 'sales.geo.cities', '--accept');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('cities.csv');
    expect(refused.stderr).toContain('line 2 is not valid UTF-8');
    expect(refused.stderr).toContain('lakeport upload --encoding latin-1');
    expect(refused.stderr).toContain('(SAMPLE_NOT_UTF8)');

    const done = await upload(file, '--to', 'sales.geo.cities', '--accept', '--encoding', 'latin-1');
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain(`csv: delimiter ',', quote '"', header yes, encoding latin-1\n`);
    const snapshot = Number(/snapshot (\d+)/.exec(done.stdout)![1]);
    const files = await t.app.lakeport.catalog.snapshotFiles(snapshot);
    const duck = await DuckDBInstance.create(':memory:');
    const db = await duck.connect();
    try {
      const local = await t.deps.blobs.localPath(files[0].path);
      const rows = (await db.runAndReadAll('SELECT * FROM read_parquet($p) ORDER BY id', { p: local })).getRowObjectsJson();
      expect(rows).toEqual([
        { id: '1', city: 'Zürich' },
        { id: '2', city: 'café' },
      ]);
    } finally {
      db.closeSync();
      duck.closeSync();
    }
  });
});
