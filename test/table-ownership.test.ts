/**
 * Every table has exactly one owning module: only files in the owner's directory read or write it,
 * and every other module asks the owner through the narrow interface app.ts injects. The tables come
 * from the migrations (CREATE TABLE, less DROP TABLE) plus the migrator's schema_migrations; a table
 * without an owner below fails, and so
 * does any non-test `.ts` file under src/ outside the owner's directory that names a table where a
 * query would: a Kysely `selectFrom/insertInto/updateTable/deleteFrom/…Join('<table>')`, a
 * `'<table>.<column>'` reference, or raw SQL `FROM/JOIN/INTO/UPDATE/TABLE <table>`.
 *
 * Exempt: the migrations, the table types (src/core/db/tables/*) and tests.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const SRC = path.join(ROOT, 'src');
const MIGRATIONS = path.join(SRC, 'core/db/migrations');

const AUTH = 'src/services/auth';
const ACCOUNTS = 'src/services/accounts';
const POLICY = 'src/services/policy';
const CATALOG = 'src/core/catalog';
const UPLOAD = 'src/services/upload';
const JOBS = 'src/services/jobs';
const CRYPTO = 'src/core/crypto';
const DB = 'src/core/db';
const STARTUP = 'src/core/startup';

/** table → the one directory whose files may query it. */
const OWNERS: Record<string, string> = {
  credentials: AUTH,
  refresh_tokens: AUTH,
  revoked_access_tokens: AUTH,
  signing_keys: AUTH,
  refresh_token_key: AUTH,
  auth_failures: AUTH,
  oidc_pending_logins: AUTH,
  identity_links: AUTH,
  interactive_sessions: AUTH,
  accounts: ACCOUNTS,
  members: ACCOUNTS,
  workspaces: ACCOUNTS,
  purged_workspaces: ACCOUNTS,
  account_domains: ACCOUNTS,
  payment_customers: ACCOUNTS,
  payment_methods: ACCOUNTS,
  payments: ACCOUNTS,
  service_accounts: ACCOUNTS,
  notifications: ACCOUNTS,
  idp_policies: ACCOUNTS,
  idp_denials: ACCOUNTS,
  idp_last_sign_ins: ACCOUNTS,
  workspace_catalog_bindings: ACCOUNTS,
  policies: POLICY,
  catalog_namespaces: CATALOG,
  catalog_collections: CATALOG,
  catalog_datasets: CATALOG,
  catalog_snapshots: CATALOG,
  catalog_data_files: CATALOG,
  catalog_tags: CATALOG,
  catalog_file_deletions: CATALOG,
  catalog_snapshot_leases: CATALOG,
  catalog_maintenance_leases: CATALOG,
  upload_contracts: UPLOAD,
  upload_writes: UPLOAD,
  upload_write_parts: UPLOAD,
  upload_commits: UPLOAD,
  jobs: JOBS,
  variables: JOBS,
  materialized_views: JOBS,
  secrets: JOBS,
  secret_data_keys: CRYPTO,
  cluster_identity: STARTUP,
  // The migrator's own, made by migrate.ts rather than a migration.
  schema_migrations: DB,
};

const EXEMPT = [/\.test\.ts$/, /^src\/core\/db\/tables\//, /^src\/core\/db\/migrations\//];

/** The tables the migrations leave behind, and the migrator's own. */
function migratedTables(): string[] {
  const tables = new Set<string>(['schema_migrations']);
  for (const file of fs.readdirSync(MIGRATIONS).filter((f) => f.endsWith('.sql')).sort()) {
    const text = fs.readFileSync(path.join(MIGRATIONS, file), 'utf8');
    for (const [, verb, name] of text.matchAll(/\b(CREATE|DROP)\s+TABLE\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?"?(\w+)"?/gi)) {
      if (verb.toUpperCase() === 'CREATE') tables.add(name.toLowerCase());
      else tables.delete(name.toLowerCase());
    }
  }
  return [...tables].sort();
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** The code without its comments, lines kept in place (a comment may well say "DELETE FROM policies"). */
function withoutComments(source: string): string {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ' '))
    .replace(/(^|\s)\/\/\s.*$/gm, '$1')
    .replace(/^\s*\/\/.*$/gm, '');
}

const KYSELY_CALL = /\.(?:selectFrom|insertInto|updateTable|deleteFrom|mergeInto|innerJoin|leftJoin|rightJoin|fullJoin|table)\(\s*(\[[^\]]*\]|'[^']*'|"[^"]*"|`[^`]*`)/g;
const LITERAL = /'([^'\n]*)'|"([^"\n]*)"|`([^`\n]*)`/g;

/** Tables the source names in a query position, with their lines. */
export function tableReferences(source: string, tables: readonly string[]): { table: string; line: number; how: string }[] {
  const code = withoutComments(source);
  const known = new Set(tables);
  const found: { table: string; line: number; how: string }[] = [];
  const lineOf = (index: number) => code.slice(0, index).split('\n').length;
  const note = (table: string, index: number, how: string) => known.has(table) && found.push({ table, line: lineOf(index), how });

  for (const call of code.matchAll(KYSELY_CALL)) {
    for (const literal of call[1].matchAll(LITERAL)) {
      const text = literal[1] ?? literal[2] ?? literal[3];
      note(text.trim().split(/\s+as\s+/i)[0], call.index, call[0]);
    }
  }
  for (const literal of code.matchAll(LITERAL)) {
    const text = literal[1] ?? literal[2] ?? literal[3];
    const column = /^(\w+)\.(?:\w+|\*)$/.exec(text);
    if (column) note(column[1], literal.index, literal[0]);
  }
  for (const raw of code.matchAll(/\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(?:ONLY\s+)?"?(\w+)"?/g)) note(raw[1], raw.index, raw[0]);
  return found;
}

const tables = migratedTables();

describe('table ownership', () => {
  it('gives every table in the migrations exactly one owner', () => {
    expect(Object.keys(OWNERS).sort()).toEqual(tables);
    for (const dir of new Set(Object.values(OWNERS))) expect(fs.existsSync(path.join(ROOT, dir)), dir).toBe(true);
  });

  it('sees a table named in each query position', () => {
    const seen = (source: string) => tableReferences(source, tables).map((r) => r.table);
    expect(seen(`db.selectFrom('policies').selectAll()`)).toEqual(['policies']);
    expect(seen(`trx.insertInto("jobs").values(row)`)).toEqual(['jobs']);
    expect(seen(`q.updateTable('workspaces as w').set(x)`)).toEqual(['workspaces']);
    expect(seen(`q.deleteFrom(['members', 'accounts'])`)).toEqual(['members', 'accounts']);
    expect(seen(`q.selectFrom(x).leftJoin('catalog_datasets as d', (j) => j)`)).toEqual(['catalog_datasets']);
    expect(seen(`q.where('members.state', '=', 'pending')`)).toEqual(['members']);
    expect(seen('sql`SELECT 1 FROM secret_data_keys WHERE id = ${id}`')).toEqual(['secret_data_keys']);
    expect(seen('sql`DELETE FROM "policies"`; sql`UPDATE jobs SET x = 1`; sql`INSERT INTO variables`')).toEqual(['policies', 'jobs', 'variables']);
    // Not query positions: prose, comments, scopes, other strings.
    expect(seen(`// DELETE FROM policies\n/* SELECT * FROM jobs */\nconst scopes = ['accounts', 'jobs']; log('moved from accounts');`)).toEqual([]);
  });

  it("finds no table queried outside its owner's directory", () => {
    const violations: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const relative = path.relative(ROOT, file).split(path.sep).join('/');
      if (EXEMPT.some((pattern) => pattern.test(relative))) continue;
      for (const ref of tableReferences(fs.readFileSync(file, 'utf8'), tables)) {
        const owner = OWNERS[ref.table];
        if (!relative.startsWith(`${owner}/`)) violations.push(`${relative}:${ref.line} names ${ref.table} (${ref.how}), owned by ${owner}`);
      }
    }
    expect(violations).toEqual([]);
  });
});
