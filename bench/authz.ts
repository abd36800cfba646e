// `npm run bench -- authz`: the cost of one authorization (Authorizer.require), which every upload,
// job plan and OData page pays, against the grants lookup alone (what it cost before core/authz also
// read the workspace's state, kept for a second), measured in the same run on the same database: PGlite by default,
// a fresh PostgreSQL database beside DATABASE_URL's when it is set.
import { performance } from 'node:perf_hooks';
import { Authorizer, type Principal } from '../src/core/authz/index.ts';
import { migrate, openDatabase, type Db } from '../src/core/db/index.ts';
import { WorkspaceRepo } from '../src/services/accounts/index.ts';
import { WORKSPACE_STATE_TTL_MS } from '../src/services/accounts/workspace-repo.ts';
import { PolicyStore } from '../src/services/policy/index.ts';
import { createDatabaseBeside } from '../test/pg-database.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 5_000);
const ROUNDS = 5;
const WORKSPACES = 200;

const principal: Principal = { identity: 'bench-user', scopes: [], permissions: [], credentialId: 'c', tokenId: 't', expiresAt: new Date(Date.now() + 3_600_000) };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Microseconds per call of `fn`, median of ROUNDS rounds of CALLS sequential calls. */
async function perCall(fn: (i: number) => Promise<unknown>): Promise<number> {
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    for (let i = 0; i < CALLS; i++) await fn(i);
    rounds.push(((performance.now() - start) * 1000) / CALLS);
  }
  return median(rounds);
}

async function seed(db: Db) {
  await db.kysely
    .insertInto('accounts')
    .values({ account_id: 'acct_bench', name: 'bench', tax_id: null, address: null, member_min_age_ms: null, status: 'active', created_by: 'bench-user', deactivated_at: null, plan: null })
    .execute();
  for (let w = 0; w < WORKSPACES; w++) {
    const name = `ws${w}`;
    await db.kysely
      .insertInto('workspaces')
      .values({ name, billing_account: 'acct_bench', members: JSON.stringify([]), created_by: 'bench-user' })
      .execute();
    await new PolicyStore(db).genesis(name, [{ identity: 'bench-user', role: 'owner' }], 'bench');
  }
}

export async function run(): Promise<void> {
  const adminUrl = process.env.DATABASE_URL;
  const database = adminUrl ? await createDatabaseBeside(adminUrl, 'lakeport_bench') : undefined;
  const db = await openDatabase(database ? { databaseUrl: database.url } : { dataDir: 'memory' });
  try {
    await migrate(db);
    await seed(db);
    const grants = new PolicyStore(db);
    const states = new WorkspaceRepo(db);
    const authz = new Authorizer(grants, states);
    const resource = (i: number) => ({ workspace: `ws${i % WORKSPACES}`, collection: 'sales', dataset: 'orders' });
    // Warm up both paths (JIT, prepared plans, PGlite's WebAssembly).
    for (let i = 0; i < 1_000; i++) {
      await grants.grantsOf(principal.identity, resource(i).workspace);
      await authz.require(principal, 'reader', resource(i));
    }
    // The same Authorizer with the workspace state read from the database on every call (no kept answer).
    const stateQuery = async (names: readonly string[]) =>
      new Set((await db.kysely.selectFrom('workspaces').select('name').where('name', 'in', names).where('deleted_at', 'is not', null).execute()).map((r) => r.name));
    const uncached = new Authorizer(grants, { deletedAmong: stateQuery });
    for (let i = 0; i < 1_000; i++) await uncached.require(principal, 'reader', resource(i));
    const grantsOnly = await perCall((i) => grants.grantsOf(principal.identity, resource(i).workspace));
    const stateOnly = await perCall((i) => stateQuery([resource(i).workspace]));
    const everyTime = await perCall((i) => uncached.require(principal, 'reader', resource(i)));
    const require = await perCall((i) => authz.require(principal, 'reader', resource(i)));
    console.log(`Authorizer.require on ${database ? 'PostgreSQL' : 'PGlite'} (${WORKSPACES} workspaces, median of ${ROUNDS} × ${CALLS} sequential calls)`);
    console.log(`  grants lookup alone (the check before workspace states):   ${grantsOnly.toFixed(1)} µs/call`);
    console.log(`  workspace state query alone:                               ${stateOnly.toFixed(1)} µs/call`);
    console.log(`  require, state queried every call (parallel with grants):  ${everyTime.toFixed(1)} µs/call (${(everyTime / grantsOnly).toFixed(2)}x)`);
    console.log(`  require as served (state kept ${WORKSPACE_STATE_TTL_MS} ms):                 ${require.toFixed(1)} µs/call (${(require / grantsOnly).toFixed(2)}x)`);
  } finally {
    await db.close();
    await database?.drop();
  }
}
