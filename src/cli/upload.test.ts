import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLIENT_ID, CLIENT_SECRET, FakeUploadServer } from '../../test/fake-upload-server.ts';
import { dialectLines, formatTable, uploadCommand, type UploadIO } from './upload.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-upload-cli-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const ORDERS = path.join(dir, 'orders.csv');
const MORE = path.join(dir, 'more.csv');
fs.writeFileSync(ORDERS, 'id,qty,note\n1,3,"two\nlines"\n2,5,\n3,7,x\n');
fs.writeFileSync(MORE, 'id,qty,note\n4,1,y\n');

let fake: FakeUploadServer;
beforeEach(async () => {
  fake = new FakeUploadServer({ invalidClientDetail: 'wrong secret', firstSnapshot: 7 });
  await fake.start();
});
afterEach(() => fake.stop());

function sink() {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      text += String(chunk);
      callback();
    },
  });
  return { stream, text: () => text };
}

async function run(args: string[], options: { isTTY?: boolean; input?: string; env?: Record<string, string> } = {}) {
  const stdout = sink();
  const stderr = sink();
  const stdin = new PassThrough();
  if (options.input !== undefined) stdin.end(options.input);
  const io: UploadIO = {
    stdout: stdout.stream,
    stderr: stderr.stream,
    stdin,
    isTTY: options.isTTY ?? false,
    env: options.env ?? { LAKEPORT_URL: fake.url, LAKEPORT_CLIENT_ID: CLIENT_ID, LAKEPORT_CLIENT_SECRET: CLIENT_SECRET },
    retryBackoffMs: 5,
  };
  const code = await uploadCommand(args, io);
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('lakeport upload', () => {
  it('stops with exit 1 when the schema is proposed, there is no --accept and no terminal', async () => {
    const result = await run([ORDERS, '--to', 'sales.raw.orders']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'lakeport: the contract proposes an inferred schema and this is not an interactive terminal; review the plan and rerun with --accept to accept it\n',
    );
    // The plan and the issues are shown as aligned tables.
    expect(result.stdout).toContain('contract ct_1 for sales.raw.orders: proposed (mode infer, requested auto)');
    expect(result.stdout).toContain(
      ['column  action  source   target', 'id      keep    BIGINT   BIGINT', 'qty     cast    VARCHAR  INTEGER', 'note    keep    VARCHAR  VARCHAR'].join('\n'),
    );
    expect(result.stdout).toContain(['severity  code         column  message', 'warning   NULLS_FOUND  note    orders.csv: empty values become NULL'].join('\n'));
    // No data moved; the abandoned contract was deleted.
    expect(fake.calls()).toEqual(['POST /upload/v2/contracts', 'DELETE /upload/v2/contracts/ct_1']);
  });

  it('with --accept accepts, streams every file, commits with the message and prints the snapshot', async () => {
    const result = await run([ORDERS, MORE, '--to', 'sales.raw.orders', '--accept', '--message', 'first load']);
    expect(result.stderr).not.toMatch(/lakeport:/);
    expect(result.code).toBe(0);
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe('snapshot snap_7: 4 rows written to sales.raw.orders');
    expect(fake.calls()).toEqual([
      'POST /upload/v2/contracts',
      'PUT /upload/v2/contracts/ct_1/accept',
      'POST /upload/v2/contracts/ct_1/data',
      'POST /upload/v2/contracts/ct_1/data',
      'POST /upload/v2/contracts/ct_1/commit',
    ]);
    const [negotiate, accept, first, second, commit] = fake.requests.filter((r) => r.path !== '/auth/token');
    expect(negotiate.form!.contract).toEqual({ destination: 'sales.raw.orders', schema: { mode: 'auto' }, format: { type: 'csv' } });
    expect(negotiate.form!.samples.map((s) => s.name)).toEqual(['orders.csv', 'more.csv']);
    expect(negotiate.form!.samples[0].bytes.toString()).toBe(fs.readFileSync(ORDERS, 'utf8'));
    expect(accept.json).toEqual({ schema_fingerprint: 'fp-1' });
    expect([first.headers['x-file-name'], second.headers['x-file-name']]).toEqual(['orders.csv', 'more.csv']);
    expect(first.headers['content-length']).toBe(String(fs.statSync(ORDERS).size));
    expect(first.data!.sha256).toBe(createHash('sha256').update(fs.readFileSync(ORDERS)).digest('hex'));
    expect(commit.json).toEqual({ message: 'first load' });
    expect(commit.headers['idempotency-key']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // Not a terminal: one progress line per file, no redraws.
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^orders\.csv: \d+ B sent in \d+\.\d s \(\d+\.\d MB\/s\), 3 rows$/);
    expect(lines[1]).toMatch(/^more\.csv: .*, 1 rows$/);
    expect(result.stderr).not.toContain('\r');
  });

  it('prints the refused value in one line and exits 1', async () => {
    fake.refuseWrite = { detail: 'not a whole number', code: 'VALUE_NOT_STORABLE', column: 'qty', row: 2, value: '5x', file: 'orders.csv' };
    const result = await run([ORDERS, '--to', 'sales.raw.orders', '--accept']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('lakeport: orders.csv: value "5x" in column qty, row 2 cannot be stored as INTEGER: not a whole number\n');
    expect(fake.calls().at(-1)).toBe('DELETE /upload/v2/contracts/ct_1');
    expect(fake.calls()).not.toContain('POST /upload/v2/contracts/ct_1/commit');
  });

  it('reuses the idempotency key when the commit is retried after a dropped connection', async () => {
    fake.dropCommits = 2;
    const result = await run([ORDERS, '--to', 'sales.raw.orders', '--accept']);
    expect(result.code).toBe(0);
    const keys = fake.requests.filter((r) => r.path.endsWith('/commit')).map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(result.stdout).toMatch(/snapshot snap_7: 3 rows written to sales\.raw\.orders\n$/);
  });

  it('gives up after 3 commit retries and says the commit may have happened', async () => {
    fake.dropCommits = 10;
    const result = await run([ORDERS, '--to', 'sales.raw.orders', '--accept']);
    expect(result.code).toBe(1);
    const keys = fake.requests.filter((r) => r.path.endsWith('/commit')).map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(4);
    expect(result.stderr.split('\n')).toHaveLength(3); // one progress line, the error, ''
    expect(result.stderr.split('\n')[1]).toMatch(new RegExp(`^lakeport: cannot reach Lakeport at .*may or may not have happened \\(idempotency key ${keys[0]}\\)`));
    // A commit that may have happened is never followed by abandoning the contract.
    expect(fake.calls()).not.toContain('DELETE /upload/v2/contracts/ct_1');
  });

  it('asks on a terminal and accepts on y, redrawing a progress bar', async () => {
    const result = await run([ORDERS, '--to', 'sales.raw.orders'], { isTTY: true, input: 'y\n' });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('Accept this schema? [y/N] ');
    expect(result.stderr).toMatch(/\rorders\.csv \[#{30}\] 100% {2}\d+ B \/ \d+ B {2}\d+\.\d MB\/s, 3 rows\x1b\[K\n/);
    expect(fake.calls()).toContain('PUT /upload/v2/contracts/ct_1/accept');
  });

  it('stops on a terminal when the answer is not yes (or stdin ends)', async () => {
    for (const input of ['n\n', '']) {
      const result = await run([ORDERS, '--to', 'sales.raw.orders'], { isTTY: true, input });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^Accept this schema\? \[y\/N\] \n?lakeport: schema not accepted; nothing was uploaded\n$/);
      expect(fake.calls()).not.toContain('PUT /upload/v2/contracts/ct_1/accept');
    }
  });

  it('does not ask when the contract is already accepted (declared columns)', async () => {
    const result = await run([ORDERS, '--to', 'sales.raw.orders', '--mode', 'declared', '--column', 'id=BIGINT NOT NULL', '--column', 'qty=INTEGER', '--column', 'note=VARCHAR']);
    expect(result.code).toBe(0);
    const negotiate = fake.requests.find((r) => r.form)!;
    expect(negotiate.form!.contract.schema).toEqual({
      mode: 'declared',
      columns: [
        { name: 'id', type: 'BIGINT', nullable: false },
        { name: 'qty', type: 'INTEGER' },
        { name: 'note', type: 'VARCHAR' },
      ],
    });
    expect(fake.calls()).not.toContain('PUT /upload/v2/contracts/ct_1/accept');
  });

  it('--replace negotiates commit_mode replace and says what the commit replaced', async () => {
    const result = await run([ORDERS, '--to', 'sales.raw.orders', '--accept', '--replace']);
    expect(result.code, result.stderr).toBe(0);
    const negotiate = fake.requests.find((r) => r.form)!;
    expect(negotiate.form!.contract.commit_mode).toBe('replace');
    expect(result.stdout.split('\n')[0]).toMatch(/commit replaces the dataset\)$/);
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe("snapshot snap_7: 3 rows written to sales.raw.orders (replace: the previous snapshot's 5 rows are no longer current)");
    // Without --replace the contract leaves commit_mode to the server's default (append).
    const plain = await run([ORDERS, '--to', 'sales.raw.orders', '--accept']);
    expect(plain.code).toBe(0);
    expect(fake.requests.filter((r) => r.form).at(-1)!.form!.contract).not.toHaveProperty('commit_mode');
    expect(plain.stdout.trimEnd().split('\n').at(-1)).toBe('snapshot snap_8: 3 rows written to sales.raw.orders');
  });

  it('sends --column retypes and --ignore as one PATCH', async () => {
    const result = await run([ORDERS, '--to', 'sales.raw.orders', '--accept', '--column', 'qty=BIGINT', '--ignore', 'note']);
    expect(result.code).toBe(0);
    const patch = fake.requests.find((r) => r.method === 'PATCH')!;
    expect(patch.json).toEqual({ columns: { qty: { type: 'BIGINT' }, note: { ignore: true } } });
  });

  it('refuses blocking issues by name and suggests --ignore', async () => {
    fake.contract = {
      issues: [
        { severity: 'blocking', code: 'TYPE_CONFLICT', column: 'qty', file: 'more.csv', message: 'files disagree' },
        { severity: 'warning', code: 'NULLS_FOUND', column: 'note', file: null, message: 'empty values become NULL' },
      ],
    };
    const result = await run([ORDERS, MORE, '--to', 'sales.raw.orders', '--accept']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('lakeport: 1 blocking issue (TYPE_CONFLICT in column qty); fix the data, or leave the column out with --ignore qty\n');
    expect(result.stdout).toContain('blocking  TYPE_CONFLICT  qty     more.csv: files disagree');
    expect(fake.calls()).toEqual(['POST /upload/v2/contracts', 'DELETE /upload/v2/contracts/ct_1']);
  });

  it('passes the format, delimiter and TSV detection on', async () => {
    const tsv = path.join(dir, 'x.tsv');
    fs.writeFileSync(tsv, 'id\tqty\n1\t2\n');
    await run([tsv, '--to', 'a.b.c', '--accept']);
    const semi = path.join(dir, 'semi.txt');
    fs.writeFileSync(semi, 'id;qty\n1;2\n');
    await run([semi, '--to', 'a.b.c', '--accept', '--format', 'csv', '--delimiter', ';']);
    const [first, second] = fake.requests.filter((r) => r.form);
    expect(first.form!.contract.format).toEqual({ type: 'csv', delimiter: '\t' });
    expect(second.form!.contract.format).toEqual({ type: 'csv', delimiter: ';' });
    const writes = fake.requests.filter((r) => r.path.endsWith('/data'));
    expect(writes.map((w) => w.headers['content-type'])).toEqual(['text/csv', 'text/csv']);
  });

  it("prints the CSV dialect the contract reads the files with", async () => {
    const semi = path.join(dir, 'semi.csv');
    fs.writeFileSync(semi, 'id;qty\n1;2\n');
    const result = await run([semi, '--to', 'a.b.c', '--accept', '--delimiter', ';']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`contract ct_1 for a.b.c: proposed (mode infer, requested auto)\ncsv: delimiter ';', quote '"', header yes, encoding utf-8\n\n`);
  });

  it('--encoding is sent as format.encoding and the plan shows it; an unknown one is a usage error', async () => {
    const result = await run([ORDERS, '--to', 'a.b.c', '--accept', '--encoding', 'Latin-1']);
    expect(result.code, result.stderr).toBe(0);
    expect(fake.requests.find((r) => r.form)!.form!.contract.format).toEqual({ type: 'csv', encoding: 'latin-1' });
    expect(result.stdout).toContain(`csv: delimiter ',', quote '"', header yes, encoding latin-1\n`);
    const bad = await run([ORDERS, '--to', 'a.b.c', '--encoding', 'utf-16']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--encoding must be one of utf-8, latin-1, iso-8859-1, windows-1252, cp1252, got "utf-16"');
  });

  it('dialectLines: once when the files agree, per file otherwise, with formats and an escape that differs', () => {
    const d = { delimiter: '\t', quote: '"', escape: '"', header: true, newline: '\n', date_format: null, timestamp_format: null, encoding: 'utf-8' as const };
    expect(dialectLines({ files: [{ name: 'a.csv', format: 'csv', csv: d }, { name: 'b.csv', format: 'csv', csv: d }] })).toEqual([`csv: delimiter '\\t', quote '"', header yes, encoding utf-8`]);
    expect(dialectLines({ files: [{ name: 'a.csv', format: 'csv', csv: d }, { name: 'b.csv', format: 'csv', csv: { ...d, delimiter: '|', escape: '\\', header: false, date_format: '%d/%m/%Y', encoding: 'windows-1252' } }] })).toEqual([
      `csv a.csv: delimiter '\\t', quote '"', header yes, encoding utf-8`,
      `csv b.csv: delimiter '|', quote '"', escape '\\', header no, date format '%d/%m/%Y', encoding windows-1252`,
    ]);
    expect(dialectLines({ files: [{ name: 'a.jsonl', format: 'jsonl' }] })).toEqual([]);
    expect(dialectLines({ files: [{ name: 'a.jsonl', format: 'jsonl', encoding: 'latin-1' }] })).toEqual(['jsonl: encoding latin-1']);
  });

  it('reports server errors, missing files and missing credentials in one line', async () => {
    fake.contract = { state: 'stale' };
    let result = await run([ORDERS, '--to', 'sales.raw.orders', '--accept']);
    expect(result).toMatchObject({ code: 1, stderr: 'lakeport: contract ct_1 is stale: the dataset changed while negotiating; run the upload again\n' });

    result = await run([path.join(dir, 'nope.csv'), '--to', 'sales.raw.orders']);
    expect(result).toMatchObject({ code: 1, stderr: `lakeport: ${path.join(dir, 'nope.csv')}: no such file\n` });

    result = await run([ORDERS, '--to', 'sales.raw.orders'], { env: { LAKEPORT_URL: fake.url } });
    expect(result).toMatchObject({ code: 1, stderr: 'lakeport: no credentials: set LAKEPORT_CLIENT_ID and LAKEPORT_CLIENT_SECRET, or LAKEPORT_TOKEN\n' });

    result = await run([ORDERS, '--to', 'sales.raw.orders'], { env: { LAKEPORT_URL: fake.url, LAKEPORT_CLIENT_ID: CLIENT_ID, LAKEPORT_CLIENT_SECRET: 'bad' } });
    expect(result).toMatchObject({ code: 1, stderr: 'lakeport: wrong secret (INVALID_CLIENT)\n' });
  });

  it('answers usage errors with exit 2', async () => {
    for (const args of [[], [ORDERS], [ORDERS, '--to', 'nodots'], [ORDERS, '--to', 'a.b.c', '--mode', 'guess'], [ORDERS, '--to', 'a.b.c', '--mode', 'declared'], [ORDERS, '--to', 'a.b.c', '--column', 'qty'], [ORDERS, '--to', 'a.b.c', '--bogus']]) {
      const result = await run(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.split('\n')[0]).toMatch(/^lakeport: /);
      expect(result.stderr).toContain('Usage: lakeport upload');
    }
    expect(fake.requests).toHaveLength(0);
    const help = await run(['--help']);
    expect(help).toMatchObject({ code: 0, stdout: expect.stringContaining('Usage: lakeport upload') });
  });
});

describe('formatTable', () => {
  it('aligns columns and leaves no trailing spaces', () => {
    expect(formatTable(['a', 'bb', 'c'], [['xxx', 'y', 'long text'], ['', 'zzzz', '']])).toBe('a    bb    c\nxxx  y     long text\n     zzzz');
  });
});

describe('npx lakeport upload (the real binary)', () => {
  it('is wired into the CLI and reads its environment', async () => {
    const bin = path.resolve(import.meta.dirname, '../../bin/lakeport.cjs');
    const env = { ...process.env, LAKEPORT_URL: fake.url, LAKEPORT_CLIENT_ID: CLIENT_ID, LAKEPORT_CLIENT_SECRET: CLIENT_SECRET };
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile('node', [bin, 'upload', ORDERS, '--to', 'sales.raw.orders', '--accept'], { env, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (error.code as number) : 0, stdout, stderr }),
      );
      child.stdin?.end();
    });
    expect(result.stderr).not.toMatch(/lakeport:/);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/snapshot snap_7: 3 rows written to sales\.raw\.orders\n$/);
  });
});
