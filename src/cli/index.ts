import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { migrate, openDatabase } from '../core/db/index.ts';
import { openRuntime, serve, work } from '../main.ts';
import { createAuthService } from '../services/auth/index.ts';

const USAGE = `Usage: lakeport <command>

Commands:
  serve                                   run every service (what npm start runs)
  query "SQL" [--param k=v]... [--format table|csv|json]   run a query job and print its rows
  worker                                  run queued query jobs without serving HTTP
  migrate                                 apply database migrations and exit
  admin create-credential --client-id ID  create a credential and print its one-time secret
        [--type NAME] [--expires-in-days N|never] [--scope S]... [--permission PATTERN=ROLE]...
  admin rotate-keys                       rotate the token signing key
  upload FILE... --to WS.COLL.DS          upload files into a dataset (lakeport upload --help; docs/cli.md)

Configuration comes from the environment (see README.md).`;

class UsageError extends Error {}

/** A command's log goes to stderr: its stdout is its answer. */
const commandLog = (config: Config) => pino({ level: config.logLevel }, pino.destination(2));

async function adminCommand(args: string[]) {
  const [sub, ...rest] = args;
  const config = loadConfig();
  if (sub === 'create-credential') {
    const { values } = parseArgs({
      args: rest,
      options: {
        'client-id': { type: 'string' },
        type: { type: 'string', default: 'interactive' },
        'expires-in-days': { type: 'string', default: '90' },
        scope: { type: 'string', multiple: true, default: [] },
        permission: { type: 'string', multiple: true, default: [] },
      },
    });
    if (!values['client-id']) throw new UsageError('--client-id is required');
    const { CreateCredentialRequest } = await import('../services/auth/schemas.ts');
    const { Identity } = await import('../core/http/index.ts');
    const clientId = Identity.safeParse(values['client-id']);
    if (!clientId.success) throw new UsageError(`--client-id ${clientId.error.issues[0].message}`);
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
      throw new UsageError(`${issue.path.join('.')}: ${issue.message}`);
    }
    const runtime = await openRuntime(config, commandLog(config));
    try {
      const auth = await createAuthService({ ...runtime.deps });
      const created = await auth.credentials.create({ kind: 'admin' }, clientId.data, input.data);
      process.stdout.write(
        `${JSON.stringify({ credential_id: created.credential_id, client_id: created.client_id, secret: created.secret, expires_at: created.expires_at }, null, 2)}\n`,
      );
      process.stderr.write('The secret is shown only once; store it now.\n');
    } finally {
      await runtime.db.close();
    }
    return;
  }
  if (sub === 'rotate-keys') {
    const runtime = await openRuntime(config, commandLog(config));
    try {
      const auth = await createAuthService({ ...runtime.deps });
      process.stdout.write(`${JSON.stringify(await auth.keys.rotate())}\n`);
    } finally {
      await runtime.db.close();
    }
    return;
  }
  throw new UsageError(`unknown admin command '${sub ?? ''}'`);
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        await serve(loadConfig());
        return -1; // keep running
      case 'worker':
        await work(loadConfig());
        return -1;
      case 'migrate': {
        const config = loadConfig();
        const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
        try {
          const applied = await migrate(db);
          process.stdout.write(applied.length ? `applied migrations ${applied.join(', ')}\n` : 'database is up to date\n');
        } finally {
          await db.close();
        }
        return 0;
      }
      case 'admin':
        await adminCommand(rest);
        return 0;
      case 'upload':
        return (await import('./upload.ts')).uploadCommand(rest);
      case 'query':
        return (await import('./query.ts')).queryCommand(rest);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`lakeport: ${error.message}\n${USAGE}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`lakeport: ${error.message}\n`);
      return 2;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`lakeport: ${message.split('\n')[0]}\n`);
    return 1;
  }
}
