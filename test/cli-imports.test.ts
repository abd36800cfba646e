// What `lakeport --help` and the client commands load (their structure, not their timing; the
// figures are `npm run bench -- cli`): none of the server's packages, and from the precompiled bundle
// (scripts/build-cli.mjs) not even tsx. A loader hook in the child process lists every module it
// resolves, and at exit every CommonJS module it required. See docs/cli.md, "Start-up".
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, BUNDLE_DIR, INPUTS_FILE } from '../scripts/build-cli.mjs';
import { tempDir } from './harness.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const BIN = path.join(ROOT, 'bin', 'lakeport.cjs');
const SERVER_PACKAGES = ['@duckdb/node-api', 'fastify', 'pg', 'kysely', '@electric-sql/pglite', '@aws-sdk/client-s3', 'zod', 'pino'];

const temp = tempDir('lakeport-cli-imports-');
const HOOKS = path.join(temp.dir, 'hooks.mjs');
const REGISTER = path.join(temp.dir, 'register.mjs');
fs.writeFileSync(
  HOOKS,
  `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(process.env.MODULE_LOG, resolved.url + '\\n');
  return resolved;
}
`,
);
fs.writeFileSync(
  REGISTER,
  `import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
register(${JSON.stringify(new URL(`file://${HOOKS}`).href)});
const required = createRequire(import.meta.url).cache;
process.on('exit', () => appendFileSync(process.env.MODULE_LOG, Object.keys(required).join('\\n') + '\\n'));
`,
);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Every module URL or file the process loaded. */
  modules: string[];
}

let runs = 0;
function lakeport(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const log = path.join(temp.dir, `modules-${++runs}.log`);
  const childEnv: NodeJS.ProcessEnv = { ...process.env, LAKEPORT_DATA_DIR: path.join(temp.dir, 'never-created'), MODULE_LOG: log, ...env };
  if (!('LAKEPORT_CLI' in env)) delete childEnv.LAKEPORT_CLI;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', REGISTER, BIN, ...args], { env: childEnv, timeout: 30_000 }, (error, stdout, stderr) => {
      const modules = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr, modules });
    });
  });
}

const packagesIn = (modules: string[]) => SERVER_PACKAGES.filter((name) => modules.some((m) => m.includes(`/node_modules/${name}/`)));
const loadedTsx = (modules: string[]) => modules.some((m) => m.includes('/node_modules/tsx/'));
const loaded = (modules: string[], file: string) => modules.some((m) => m.endsWith(file));

/** A local port nothing listens on: the query command's request is refused at once. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const CLIENT_RUNS: [string, string[]][] = [
  ['--help', ['--help']],
  ['query --help', ['query', '--help']],
  ['upload --help', ['upload', '--help']],
  ['admin create-credential --help', ['admin', 'create-credential', '--help']],
  ['query "SELECT 1" (a refused round trip)', ['query', 'SELECT 1']],
];

let queryEnv: Record<string, string>;
beforeAll(async () => {
  queryEnv = { LAKEPORT_URL: `http://127.0.0.1:${await closedPort()}`, LAKEPORT_TOKEN: 'not-checked' };
});
afterAll(() => temp.remove());

async function expectClientRun(args: string[], env: Record<string, string>): Promise<Run> {
  const run = await lakeport(args, { ...queryEnv, ...env });
  if (args[0] === 'query' && args[1] !== '--help') {
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/^lakeport: cannot reach Lakeport at .*ECONNREFUSED/);
  } else {
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Usage: lakeport/);
  }
  expect(run.modules.length, 'the loader hook saw no module').toBeGreaterThan(0);
  expect(packagesIn(run.modules)).toEqual([]);
  expect(run.modules.filter((m) => m.includes('/src/') && !m.includes('/src/cli/') && !m.includes('/src/client/'))).toEqual([]);
  return run;
}

describe('lakeport through tsx (LAKEPORT_CLI=tsx, or no bundle)', { timeout: 60_000 }, () => {
  it.each(CLIENT_RUNS)('lakeport %s loads no server package and no server module', async (_name, args) => {
    const run = await expectClientRun(args, { LAKEPORT_CLI: 'tsx' });
    expect(loaded(run.modules, '/src/cli/index.ts')).toBe(true);
  });
});

describe('lakeport from the precompiled bundle (dist/cli)', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    await buildCli();
  });
  afterAll(async () => {
    await buildCli(); // fresh again after the stale case below
  });

  it.each(CLIENT_RUNS)('lakeport %s loads neither a server package nor tsx', async (_name, args) => {
    const run = await expectClientRun(args, {});
    expect(loaded(run.modules, '/dist/cli/index.mjs')).toBe(true);
    expect(loadedTsx(run.modules)).toBe(false);
  });

  it('a server command registers tsx and imports its TypeScript module (a bad configuration: exit 2)', async () => {
    const run = await lakeport(['migrate'], { PORT: 'eighty' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/^lakeport: invalid configuration: PORT/);
    expect(loaded(run.modules, '/dist/cli/index.mjs')).toBe(true);
    expect(loadedTsx(run.modules)).toBe(true);
    expect(loaded(run.modules, '/src/config.ts')).toBe(true);
  });

  it('a bundle whose sources changed is not used: the CLI runs through tsx', async () => {
    const file = path.join(BUNDLE_DIR, INPUTS_FILE);
    const manifest = JSON.parse(fs.readFileSync(file, 'utf8')) as { inputs: Record<string, [number, number]> };
    manifest.inputs['src/cli/usage.ts'][0] += 1; // as if usage.ts had been edited since
    fs.writeFileSync(file, JSON.stringify(manifest));
    const run = await lakeport(['--help']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Usage: lakeport/);
    expect(loaded(run.modules, '/dist/cli/index.mjs')).toBe(false);
    expect(loaded(run.modules, '/src/cli/index.ts')).toBe(true);
  });
});
