import { parseArgs } from 'node:util';
import type { Config } from '../config.ts';
import type { AuthService } from '../services/auth/index.ts';
import { argumentError, commandAt, usage, UsageError, wantsHelp } from './usage.ts';

// Everything else (the configuration and its zod schema, pino, the server, the client) is imported
// only by the command that needs it: `--help` loads this file and usage.ts, and opens nothing
// (test/cli-imports.test.ts checks it; docs/cli.md, "Start-up").

/** How main() was started. */
export interface Entry {
  /** Makes `.ts` modules importable: a no-op under tsx; registers tsx when the precompiled bundle runs. */
  typescript(): Promise<void>;
}
let entry: Entry = { typescript: async () => {} };

/** Imports a server module: the bundle (scripts/build-cli.mjs) leaves each of them a TypeScript import for tsx. */
async function server<T>(load: () => Promise<T>): Promise<T> {
  await entry.typescript();
  return load();
}

/** A bad configuration: its one line, exit 2 (without a usage text). */
class ConfigurationMistake extends Error {}

/** The server's configuration from the environment. */
async function serverConfig(): Promise<Config> {
  const { ConfigError, loadConfig } = await server(() => import('../config.ts'));
  try {
    return loadConfig();
  } catch (error) {
    throw error instanceof ConfigError ? new ConfigurationMistake(error.message) : error;
  }
}

/** A command's log goes to stderr: its stdout is its answer. */
async function commandLog(config: Config) {
  const { pino } = await import('pino');
  return pino({ level: config.logLevel }, pino.destination(2));
}

/** For commands that take no arguments: anything given is a usage mistake. */
function noArguments(path: string[], args: string[]) {
  try {
    parseArgs({ args, options: {} });
  } catch (error) {
    throw argumentError(error, path);
  }
}

async function createCredential(args: string[]): Promise<number> {
  const path = ['admin', 'create-credential'];
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        'client-id': { type: 'string' },
        type: { type: 'string', default: 'interactive' },
        'expires-in-days': { type: 'string', default: '90' },
        scope: { type: 'string', multiple: true, default: [] },
        permission: { type: 'string', multiple: true, default: [] },
      },
    }));
  } catch (error) {
    throw argumentError(error, path);
  }
  if (!values['client-id']) throw new UsageError('--client-id is required', path);
  const { CreateCredentialRequest } = await server(() => import('../services/auth/schemas.ts'));
  const { Identity } = await server(() => import('../core/http/index.ts'));
  const clientId = Identity.safeParse(values['client-id']);
  if (!clientId.success) throw new UsageError(`--client-id ${clientId.error.issues[0].message}`, path);
  const expires = values['expires-in-days'] === 'never' ? null : Number(values['expires-in-days']);
  const input = CreateCredentialRequest.safeParse({
    type: values.type,
    expires_in_days: expires,
    scopes: values.scope,
    permissions: values.permission.map((p) => {
      const at = p.lastIndexOf('=');
      return at < 0 ? [p, ''] : [p.slice(0, at), p.slice(at + 1)];
    }),
  });
  if (!input.success) {
    const issue = input.error.issues[0];
    throw new UsageError(`${issue.path.join('.')}: ${issue.message}`, path);
  }
  await withAuthService(async (auth) => {
    const created = await auth.credentials.create({ kind: 'admin' }, clientId.data, input.data);
    process.stdout.write(
      `${JSON.stringify({ credential_id: created.credential_id, client_id: created.client_id, secret: created.secret, expires_at: created.expires_at }, null, 2)}\n`,
    );
    process.stderr.write('The secret is shown only once; store it now.\n');
  });
  return 0;
}

async function rotateKeys(args: string[]): Promise<number> {
  noArguments(['admin', 'rotate-keys'], args);
  await withAuthService(async (auth) => process.stdout.write(`${JSON.stringify(await auth.keys.rotate())}\n`));
  return 0;
}

async function setPlan(args: string[]): Promise<number> {
  const path = ['admin', 'set-plan'];
  let values;
  try {
    ({ values } = parseArgs({ args, options: { account: { type: 'string' }, plan: { type: 'string' } } }));
  } catch (error) {
    throw argumentError(error, path);
  }
  if (!values.account) throw new UsageError('--account is required', path);
  if (!values.plan) throw new UsageError('--plan is required (a plan of LAKEPORT_PLANS, or default)', path);
  const config = await serverConfig();
  const plan = values.plan === 'default' ? null : values.plan;
  if (plan !== null && !Object.hasOwn(config.plans.quotas, plan)) {
    throw new UsageError(`--plan '${plan}' is not one of the configured plans: ${Object.keys(config.plans.quotas).join(', ')}, default`, path);
  }
  const { openRuntime } = await server(() => import('../main.ts'));
  const { setAccountPlan } = await server(() => import('../services/accounts/index.ts'));
  const runtime = await openRuntime(config, await commandLog(config));
  try {
    const quota = await setAccountPlan(runtime.db, config.plans, values.account, plan);
    process.stdout.write(`${JSON.stringify({ account_id: values.account, ...quota })}\n`);
  } finally {
    await runtime.db.close();
  }
  return 0;
}

/** The admin commands' authentication service over the configured database, closed afterwards. */
async function withAuthService(fn: (auth: AuthService) => Promise<unknown>): Promise<void> {
  const config = await serverConfig();
  const { openRuntime } = await server(() => import('../main.ts'));
  const { createAuthService } = await server(() => import('../services/auth/index.ts'));
  const runtime = await openRuntime(config, await commandLog(config));
  try {
    await fn(await createAuthService({ ...runtime.deps }));
  } finally {
    await runtime.db.close();
  }
}

async function migrateCommand(args: string[]): Promise<number> {
  noArguments(['migrate'], args);
  const config = await serverConfig();
  const { migrate, openDatabase } = await server(() => import('../core/db/index.ts'));
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const applied = await migrate(db);
    process.stdout.write(applied.length ? `applied migrations ${applied.join(', ')}\n` : 'database is up to date\n');
  } finally {
    await db.close();
  }
  return 0;
}

/** Runs one leaf command of the table in `usage.ts` (keyed by its path) and returns its exit code; -1 keeps the process running. */
const RUN: Record<string, (args: string[]) => Promise<number>> = {
  serve: async (args) => {
    noArguments(['serve'], args);
    await (await server(() => import('../main.ts'))).serve(await serverConfig());
    return -1;
  },
  worker: async (args) => {
    noArguments(['worker'], args);
    await (await server(() => import('../main.ts'))).work(await serverConfig());
    return -1;
  },
  migrate: migrateCommand,
  query: async (args) => {
    const code = await (await import('./query.ts')).queryCommand(args);
    if (code === 2) process.stderr.write(`${usage(['query'])}\n`);
    return code;
  },
  upload: async (args) => (await import('./upload.ts')).uploadCommand(args),
  'admin create-credential': createCredential,
  'admin rotate-keys': rotateKeys,
  'admin set-plan': setPlan,
};

/**
 * Finds the command `argv` names: its path in the table and its own arguments. `-h`/`--help` is
 * looked for by the caller, so a help request only needs the path to be right.
 */
function resolve(argv: string[]): { path: string[]; args: string[] } {
  const path: string[] = [];
  let args = argv;
  for (;;) {
    const { subcommands } = commandAt(path)!;
    if (!subcommands) return { path, args };
    const [name, ...rest] = args;
    if (name === undefined || name.startsWith('-')) {
      if (wantsHelp(args)) return { path, args };
      const what = path.length ? `${path.join(' ')} subcommand` : 'command';
      throw new UsageError(name === undefined ? `missing ${what}` : `unknown option '${name}'`, path);
    }
    if (!Object.hasOwn(subcommands, name)) throw new UsageError(`unknown ${path.length ? `${path.join(' ')} ` : ''}command '${name}'`, path);
    path.push(name);
    args = rest;
  }
}

export async function main(argv: string[], from: Entry = entry): Promise<number> {
  entry = from;
  try {
    // `lakeport help admin rotate-keys` is `lakeport admin rotate-keys --help`.
    const { path, args } = resolve(argv[0] === 'help' ? [...argv.slice(1), '--help'] : argv);
    // Before anything is loaded, opened or changed.
    if (wantsHelp(args)) {
      process.stdout.write(`${usage(path)}\n`);
      return 0;
    }
    return await RUN[path.join(' ')](args);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`lakeport: ${error.message}\n${usage(error.path)}\n`);
      return 2;
    }
    // A misconfiguration found at start (core/startup's StartRefusal, not imported here: see above) is one too.
    if (error instanceof ConfigurationMistake || (error instanceof Error && error.name === 'StartRefusal')) {
      process.stderr.write(`lakeport: ${error.message}\n`);
      return 2;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`lakeport: ${message.split('\n')[0]}\n`);
    return 1;
  }
}
