import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createPostgresDatabaseUrl, TEST_DATABASE_URL, tempDir } from './harness.ts';

const run = promisify(execFile);
const BIN = path.resolve(import.meta.dirname, '../bin/lakeport.cjs');

describe('lakeport CLI', () => {
  const data = tempDir('lakeport-cli-');
  let env: NodeJS.ProcessEnv;
  let dropDb: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    env = { ...process.env, LAKEPORT_DATA_DIR: data.dir };
    delete env.DATABASE_URL;
    if (TEST_DATABASE_URL) {
      const db = await createPostgresDatabaseUrl();
      env.DATABASE_URL = db.url;
      dropDb = db.drop;
    }
  });
  afterAll(async () => {
    await dropDb?.();
    data.remove();
  });

  const lakeport = (...args: string[]) => run('node', [BIN, ...args], { env, timeout: 110_000 });

  it('migrate applies the schema, then finds nothing to do', { timeout: 120_000 }, async () => {
    // A data directory (and database) of its own: the other tests' commands migrate the shared one first.
    const own = tempDir('lakeport-cli-migrate-');
    onTestFinished(() => own.remove());
    const ownEnv: NodeJS.ProcessEnv = { ...env, LAKEPORT_DATA_DIR: own.dir };
    if (TEST_DATABASE_URL) {
      const db = await createPostgresDatabaseUrl();
      onTestFinished(() => db.drop());
      ownEnv.DATABASE_URL = db.url;
    }
    const migrate = () => run('node', [BIN, 'migrate'], { env: ownEnv, timeout: 110_000 });
    const first = await migrate();
    expect(first.stdout).toMatch(/applied migrations 1/);
    const second = await migrate();
    expect(second.stdout).toMatch(/up to date/);
  });

  it('migrate creates a data directory that does not exist yet', { timeout: 120_000 }, async () => {
    const own = tempDir('lakeport-cli-new-');
    onTestFinished(() => own.remove());
    const dataDir = path.join(own.dir, 'not', 'yet');
    const ownEnv: NodeJS.ProcessEnv = { ...env, LAKEPORT_DATA_DIR: dataDir };
    if (TEST_DATABASE_URL) {
      const db = await createPostgresDatabaseUrl();
      onTestFinished(() => db.drop());
      ownEnv.DATABASE_URL = db.url;
    }
    const { stdout } = await run('node', [BIN, 'migrate'], { env: ownEnv, timeout: 110_000 });
    expect(stdout).toMatch(/applied migrations 1/);
    if (!TEST_DATABASE_URL) expect(fs.existsSync(path.join(dataDir, 'pgdata', 'PG_VERSION'))).toBe(true);
  });

  it('admin create-credential prints a one-time secret', { timeout: 120_000 }, async () => {
    const { stdout, stderr } = await lakeport('admin', 'create-credential', '--client-id', 'svc-loader', '--type', 'loader', '--permission', 'sales.*=writer');
    const created = JSON.parse(stdout);
    expect(created).toMatchObject({ client_id: 'svc-loader', credential_id: expect.stringMatching(/^cred_/) });
    expect(created.secret).toMatch(/^lpsk_/);
    expect(stderr).toMatch(/shown only once/);
  });

  it("admin set-plan changes an account's plan (its service-account quota)", { timeout: 120_000 }, async () => {
    await lakeport('migrate');
    const { openDatabase } = await import('../src/core/db/index.ts');
    const db = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir: data.dir });
    try {
      await db.kysely.insertInto('accounts').values({ account_id: 'acct_cliplan', name: 'CLI', tax_id: null, address: null, member_min_age_ms: null, status: 'active', created_by: 'cli' }).execute();
    } finally {
      await db.close();
    }
    const { stdout } = await lakeport('admin', 'set-plan', '--account', 'acct_cliplan', '--plan', 'team');
    expect(JSON.parse(stdout)).toEqual({ account_id: 'acct_cliplan', plan: 'team', limit: 25, used: 0 });
    expect(JSON.parse((await lakeport('admin', 'set-plan', '--account', 'acct_cliplan', '--plan', 'default')).stdout)).toMatchObject({ plan: 'free', limit: 2 });
    const unknownPlan = await lakeport('admin', 'set-plan', '--account', 'acct_cliplan', '--plan', 'platinum').then(() => undefined, (e: { code: number; stderr: string }) => e);
    expect(unknownPlan?.code).toBe(2);
    expect(unknownPlan?.stderr).toMatch(/platinum/);
    const unknownAccount = await lakeport('admin', 'set-plan', '--account', 'acct_nope', '--plan', 'team').then(() => undefined, (e: { code: number; stderr: string }) => e);
    expect(unknownAccount?.code).toBe(1);
    expect(unknownAccount?.stderr).toMatch(/acct_nope/);
  });

  it('fails with one line and a non-zero exit on bad input', async () => {
    for (const args of [['admin', 'create-credential'], ['admin', 'create-credential', '--client-id', 'x', '--permission', 'nope=owner'], ['frobnicate']]) {
      const error = await lakeport(...args).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(error?.code).toBe(2);
      expect(error?.stderr.split('\n')[0]).toMatch(/^lakeport: /);
    }
  });

  it('refuses a bad configuration with a readable message', async () => {
    const error = await run('node', [BIN, 'migrate'], { env: { ...env, PORT: 'eighty' } }).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(error?.code).toBe(2);
    expect(error?.stderr).toMatch(/PORT/);
  });

  it.runIf(!TEST_DATABASE_URL)('refuses the embedded database while another process has it open', async () => {
    const holder = spawn('sleep', ['30']);
    const lock = path.join(data.dir, 'pgdata.lock');
    try {
      fs.writeFileSync(lock, String(holder.pid));
      const error = await lakeport('migrate').then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(error?.code).toBe(1);
      expect(error?.stderr).toContain(`is open in process ${holder.pid}`);
      expect(error?.stderr).toContain('DATABASE_URL');
    } finally {
      holder.kill();
      fs.rmSync(lock, { force: true });
    }
  });
});
