// Fresh PostgreSQL databases for tests and benchmarks, made beside the one a URL names (which is
// only used to create and drop them).
import crypto from 'node:crypto';
import pg from 'pg';

async function run(adminUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** A new, empty database on the server `adminUrl` names, `<prefix>_<random>`; `drop` removes it (closing its connections). */
export async function createDatabaseBeside(adminUrl: string, prefix: string): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `${prefix}_${crypto.randomBytes(6).toString('hex')}`;
  await run(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), name, drop: () => run(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
