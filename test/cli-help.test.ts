// `--help` never acts, and a usage mistake exits 2, for every command in the CLI's own table
// (src/cli/usage.ts): a command added there is walked here without touching this file.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandAt, commandPaths, usage } from '../src/cli/usage.ts';
import { createPostgresDatabaseUrl, TEST_DATABASE_URL, tempDir } from './harness.ts';

const BIN = path.resolve(import.meta.dirname, '../bin/lakeport.cjs');

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const PATHS = [[], ...commandPaths()];
const LEAVES = commandPaths().filter((p) => !commandAt(p)!.subcommands);
const GROUPS = PATHS.filter((p) => commandAt(p)!.subcommands);

describe('lakeport --help and usage mistakes', () => {
  const temp = tempDir('lakeport-cli-help-');
  // Never created: a command that opened its database (PGlite) or its runtime would create it.
  const dataDir = path.join(temp.dir, 'data');
  const env: NodeJS.ProcessEnv = { ...process.env, LAKEPORT_DATA_DIR: dataDir, PORT: '0' };
  delete env.DATABASE_URL;
  let database: { url: string; drop(): Promise<void> } | undefined;

  beforeAll(async () => {
    if (TEST_DATABASE_URL) {
      database = await createPostgresDatabaseUrl();
      env.DATABASE_URL = database.url;
    }
  });
  afterAll(async () => {
    await database?.drop();
    temp.remove();
  });

  /** A command that acts (serves, works, waits for a server) is killed after 15 s and fails the test. */
  const lakeport = (args: string[]) =>
    new Promise<Run>((resolve) => {
      execFile('node', [BIN, ...args], { env, timeout: 15_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, signal: error?.signal ?? null, stdout, stderr }),
      );
    });

  /** Nothing was created or changed: no data directory (so no pgdata, no key, no admin token), no migrated database. */
  const expectUnchanged = async () => {
    expect(fs.existsSync(dataDir)).toBe(false);
    if (!database) return;
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'");
      expect(rows).toEqual([]);
    } finally {
      await client.end();
    }
  };

  const show = (args: string[], run: Run) => `lakeport ${args.join(' ')}: exit ${run.code ?? run.signal}\n--- stdout ---\n${run.stdout}\n--- stderr ---\n${run.stderr}`;

  it('the table has every command the issue names', () => {
    expect(PATHS.map((p) => p.join(' '))).toEqual(expect.arrayContaining(['', 'serve', 'worker', 'migrate', 'query', 'upload', 'admin', 'admin create-credential', 'admin rotate-keys']));
  });

  describe.each(PATHS.map((p) => [['lakeport', ...p].join(' '), p] as const))('%s', (_name, commandPath) => {
    it.each(['--help', '-h'])('%s prints its usage and exits 0', { timeout: 30_000 }, async (flag) => {
      const args = [...commandPath, flag];
      const run = await lakeport(args);
      expect(run.code, show(args, run)).toBe(0);
      expect(run.stdout).toBe(`${usage(commandPath)}\n`);
      expect(run.stdout).toMatch(new RegExp(`^Usage: ${['lakeport', ...commandPath].join(' ')}`));
      expect(run.stderr).toBe('');
      await expectUnchanged();
    });
  });

  it.each([
    ['admin', 'rotate-keys', 'now', '--help'],
    ['admin', 'create-credential', '--client-id', 'svc-loader', '-h'],
    ['query', 'SELECT 1', '--format', 'csv', '--help'],
    ['serve', '--bogus', '-h'],
    ['help', 'admin', 'rotate-keys'],
  ].map((args) => [args.join(' '), args] as const))('help anywhere in the arguments wins: lakeport %s', { timeout: 30_000 }, async (_name, args) => {
    const run = await lakeport(args);
    expect(run.code, show(args, run)).toBe(0);
    expect(run.stdout).toMatch(/^Usage: lakeport /);
    await expectUnchanged();
  });

  it.each(LEAVES.map((p) => [p.join(' '), p] as const))('lakeport %s --no-such-option is a usage mistake (exit 2)', { timeout: 30_000 }, async (_name, commandPath) => {
    const args = [...commandPath, '--no-such-option'];
    const run = await lakeport(args);
    expect(run.code, show(args, run)).toBe(2);
    expect(run.stderr.split('\n')[0]).toMatch(/^lakeport: .*no-such-option/);
    expect(run.stderr).toContain(`Usage: ${['lakeport', ...commandPath].join(' ')}`);
    expect(run.stdout).toBe('');
    await expectUnchanged();
  });

  it.each([...GROUPS.map((p) => [...p, 'no-such-command']), ...GROUPS.filter((p) => p.length > 0)].map((args) => [args.join(' '), args] as const))('lakeport %s is a usage mistake (exit 2)', { timeout: 30_000 }, async (_name, args) => {
    const run = await lakeport(args);
    expect(run.code, show(args, run)).toBe(2);
    expect(run.stderr.split('\n')[0]).toMatch(/^lakeport: (unknown|missing) /);
    expect(run.stderr).toContain('Usage: lakeport');
    await expectUnchanged();
  });

  it('lakeport with no command is a usage mistake (exit 2)', { timeout: 30_000 }, async () => {
    const run = await lakeport([]);
    expect(run.code, show([], run)).toBe(2);
    expect(run.stderr).toBe(`lakeport: missing command\n${usage([])}\n`);
  });
});
