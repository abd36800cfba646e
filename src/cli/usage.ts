/**
 * Every `lakeport` command and subcommand with its usage: the one table that `--help`, the usage
 * errors and `test/cli-help.test.ts` read. A command added here is listed in `lakeport --help` and
 * walked by that test; `src/cli/index.ts` must also run it.
 */
export interface Command {
  /** One line in the parent's list. */
  summary: string;
  /** What follows `lakeport <command>` in the synopsis (leaf commands). */
  synopsis?: string;
  /** Options and notes printed under the synopsis. */
  details?: string;
  subcommands?: Record<string, Command>;
}

const CLIENT_ENVIRONMENT = `Environment: LAKEPORT_URL (default http://127.0.0.1:8080), LAKEPORT_CLIENT_ID and
LAKEPORT_CLIENT_SECRET, or LAKEPORT_TOKEN.`;

const SERVER_ENVIRONMENT = 'Configuration comes from the environment (see README.md).';

export const COMMANDS: Record<string, Command> = {
  serve: {
    summary: 'run every service (what npm start runs)',
    synopsis: '',
    details: SERVER_ENVIRONMENT,
  },
  worker: {
    summary: 'run queued query jobs without serving HTTP',
    synopsis: '',
    details: SERVER_ENVIRONMENT,
  },
  migrate: {
    summary: 'apply database migrations and exit (creates the data directory if needed)',
    synopsis: '',
    details: SERVER_ENVIRONMENT,
  },
  query: {
    summary: 'run a query job and print its rows',
    synopsis: '"SQL" [--param NAME=VALUE]... [--format table|csv|json] [--output FILE]',
    details: `Options:
  --param NAME=VALUE       a :NAME parameter of the query; repeatable
  --format FORMAT          table (default), csv or json (one object per line); with --output:
                           csv, json or parquet (default: from the file's extension)
  -o, --output FILE        write the whole result to FILE, every range of it

${CLIENT_ENVIRONMENT}`,
  },
  upload: {
    summary: 'upload files into a dataset (docs/cli.md)',
    synopsis: 'FILE... --to WORKSPACE.COLLECTION.DATASET [options]',
    details: `Options:
  --to WS.COLL.DS          destination dataset (required)
  --mode MODE              auto (default), infer, declared or dataset
  --accept                 accept a proposed (inferred) schema without asking
  --message TEXT           commit message
  --replace                the new snapshot holds only these files (default: append to the
                           dataset); earlier snapshots stay in its history
  --format FORMAT          csv, jsonl or parquet (default: from the file extension)
  --delimiter CHAR         CSV field delimiter (\\t for tab; .tsv files default to tab)
  --encoding NAME          text encoding of CSV/JSONL files: utf-8 (default), latin-1
                           (iso-8859-1) or windows-1252 (cp1252); converted while streaming
  --column NAME=TYPE       declare a column (--mode declared) or retype one; repeatable;
                           append " NOT NULL" to the type to declare it non-nullable
  --ignore NAME            leave a column out of the upload; repeatable
  --sample-bytes N         text sample budget per file: head, middle ranges, tail (default 1048576)
  --on-error POLICY        a value the schema cannot store: fail (default) refuses the file,
                           null stores NULL (a record whose NOT NULL column would be NULL is
                           skipped), skip leaves the record out; both are counted and printed
  --rejects FILE           save the values null/skip did not store (CSV) after the commit

${CLIENT_ENVIRONMENT}`,
  },
  admin: {
    summary: 'administer credentials, signing keys and account plans',
    subcommands: {
      'create-credential': {
        summary: 'create a credential and print its one-time secret',
        synopsis: '--client-id ID [--type NAME] [--expires-in-days N|never] [--scope S]... [--permission PATTERN=ROLE]...',
        details: `Options:
  --client-id ID           the credential's client id (required)
  --type NAME              interactive (default), loader, ...
  --expires-in-days N      days until it expires (default 90), or never
  --scope S                a scope it may ask for; repeatable
  --permission PATTERN=ROLE  a role on matching workspaces (sales.*=writer); repeatable

${SERVER_ENVIRONMENT}`,
      },
      'rotate-keys': {
        summary: 'rotate the token signing key',
        synopsis: '',
        details: SERVER_ENVIRONMENT,
      },
      'set-plan': {
        summary: "set an account's plan (its service-account quota)",
        synopsis: '--account ID --plan NAME|default',
        details: `Options:
  --account ID             the account (acct_...)
  --plan NAME              a plan of LAKEPORT_PLANS (free, team, enterprise by default),
                           or default: back to LAKEPORT_DEFAULT_PLAN

${SERVER_ENVIRONMENT}`,
      },
    },
  },
};

/** A usage mistake: one line on stderr, then the usage of `path`, exit 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly path: string[] = [],
  ) {
    super(message);
  }
}

/** Node's parseArgs messages, cut to their first sentence (the rest suggests `--` with an unclosed quote). */
export function argumentError(error: unknown, path: string[]): UsageError {
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split('. ')[0];
  return new UsageError(`${first[0].toLowerCase()}${first.slice(1)}`, path);
}

/** `-h` or `--help` anywhere before a `--`. */
export function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '-h' || a === '--help');
}

/** The command at `path` (`[]` is the top level), or undefined. */
export function commandAt(path: string[]): Command | undefined {
  let command: Command | undefined = { summary: '', subcommands: COMMANDS };
  for (const name of path) command = Object.hasOwn(command?.subcommands ?? {}, name) ? command!.subcommands![name] : undefined;
  return command;
}

/** Every command and subcommand path, parents before their children: `[['serve'], …, ['admin'], ['admin', 'rotate-keys']]`. */
export function commandPaths(commands: Record<string, Command> = COMMANDS, parent: string[] = []): string[][] {
  return Object.entries(commands).flatMap(([name, command]) => [[...parent, name], ...commandPaths(command.subcommands ?? {}, [...parent, name])]);
}

function list(commands: Record<string, Command>): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length)) + 2;
  return Object.entries(commands)
    .map(([name, command]) => `  ${name.padEnd(width)}${command.summary}`)
    .join('\n');
}

/** The text `lakeport <path> --help` prints. */
export function usage(path: string[]): string {
  const command = commandAt(path);
  if (!command) throw new Error(`no command ${path.join(' ')}`);
  const name = ['lakeport', ...path].join(' ');
  if (command.subcommands) {
    const what = path.length === 0 ? 'command' : 'subcommand';
    return [
      `Usage: ${name} <${what}> [arguments]`,
      ...(path.length ? ['', `${command.summary[0].toUpperCase()}${command.summary.slice(1)}.`] : []),
      '',
      `${what[0].toUpperCase()}${what.slice(1)}s:`,
      list(command.subcommands),
      '',
      `Run '${name} <${what}> --help' for its usage.${path.length === 0 ? ` ${SERVER_ENVIRONMENT}` : ''}`,
    ].join('\n');
  }
  return [`Usage: ${name}${command.synopsis ? ` ${command.synopsis}` : ''}`, '', `${command.summary[0].toUpperCase()}${command.summary.slice(1)}.`, ...(command.details ? ['', command.details] : [])].join('\n');
}
