import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signIn } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { recordingLogger } from '../../../test/recording-logger.ts';
import type { Principal } from '../../core/authz/index.ts';
import { AppError } from '../../core/errors/index.ts';
import { PolicyStore } from '../policy/index.ts';
import { catalogNamespaces, WorkspaceRepo, WorkspaceService, type GenesisPort, type NamespacePort } from './index.ts';
import type { WorkspaceServiceDeps } from './workspace-service.ts';

/**
 * Failure injection for the /control create ordering: (a) namespace, (b) record, (c) genesis.
 * Each step is made to fail in turn, then the spec's outcome and the retry are checked.
 */
let t: TestApp;
let acme: string;
let evil: string;
let n = 0;
const principal = (identity: string): Principal => ({ identity, scopes: ['accounts'], permissions: [], credentialId: 'c', tokenId: 't', expiresAt: new Date(Date.now() + 60_000) });
const alice = principal('alice');
const eve = principal('eve');
const members = [
  { identity: 'alice', role: 'owner' as const },
  { identity: 'bob', role: 'reader' as const },
];

let realNamespaces: NamespacePort;
let realGenesis: GenesisPort;
let records: WorkspaceRepo;

beforeAll(async () => {
  t = await createTestApp();
  const a = await signIn(t.app, t.adminToken, 'alice');
  const e = await signIn(t.app, t.adminToken, 'eve');
  acme = (await a.request('POST', '/billing/v1/accounts', { name: 'Acme' })).json().account_id;
  evil = (await e.request('POST', '/billing/v1/accounts', { name: 'Evil' })).json().account_id;
  const { catalog, policy } = t.app.lakeport;
  realNamespaces = catalogNamespaces(catalog);
  realGenesis = async (workspace, grants, caller) => void (await policy.genesis({ kind: 'identity', identity: caller.identity }, workspace, grants));
  records = new WorkspaceRepo(t.db);
});
afterAll(async () => t.close());

let name: string;
beforeEach(() => {
  name = `ws_fail_${++n}`;
});

function service(overrides: Partial<WorkspaceServiceDeps> = {}) {
  const { accounts, authz } = t.app.lakeport;
  return new WorkspaceService({
    accounts,
    records,
    namespaces: realNamespaces,
    genesis: realGenesis,
    purgePolicies: (workspace) => new PolicyStore(t.db).removeWorkspace(workspace),
    authz,
    files: { removeWorkspace: async () => undefined },
    ...overrides,
  });
}

const policiesOf = (workspace: string) => t.db.kysely.selectFrom('policies').selectAll().where('workspace', '=', workspace).execute();

async function expectError(promise: Promise<unknown>, status: number, code: string) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect(error).toMatchObject({ status, code });
}

describe('workspace creation under failure', () => {
  it('(a) fails: 504, nothing written, the name still free', async () => {
    const broken = service({ namespaces: { ...realNamespaces, claim: async () => Promise.reject(new Error('catalog down')) } });
    await expectError(broken.create(alice, name, { billing_account: acme, members }), 504, 'CATALOG_UNAVAILABLE');
    expect(await t.app.lakeport.catalog.findNamespace(name)).toBeUndefined();
    expect(await records.get(name)).toBeUndefined();
    expect(await policiesOf(name)).toEqual([]);
    // Free: even another account may now take it.
    const created = await service().create(eve, name, { billing_account: evil, members: [{ identity: 'eve', role: 'owner' }] });
    expect(created.billing_account).toBe(evil);
  });

  it('(b) fails: namespace claimed by this account, no grants; others refused; a retry adopts it', async () => {
    const broken = service({ records: Object.assign(Object.create(records), { insertIfAbsent: async () => Promise.reject(new Error('disk full')) }) });
    await expectError(broken.create(alice, name, { billing_account: acme, members }), 503, 'WORKSPACE_RECORD_FAILED');
    expect(await t.app.lakeport.catalog.findNamespace(name)).toMatchObject({ billing_account: acme });
    expect(await records.get(name)).toBeUndefined();
    expect(await policiesOf(name)).toEqual([]);
    await expectError(service().create(eve, name, { billing_account: evil, members: [{ identity: 'eve', role: 'owner' }] }), 409, 'WORKSPACE_NAME_CLAIMED');
    const retried = await service().create(alice, name, { billing_account: acme, members });
    expect(retried).toMatchObject({ name, billing_account: acme, state: 'active' });
    expect((await policiesOf(name)).map((p) => `${p.principal}:${p.role}`).sort()).toEqual(['alice:owner', 'bob:reader']);
  });

  it('(c) fails: the workspace is listed and deletable; a retry re-attempts genesis', async () => {
    const broken = service({ genesis: async () => Promise.reject(new Error('policy service down')) });
    await expectError(broken.create(alice, name, { billing_account: acme, members }), 503, 'GENESIS_FAILED');
    expect(await records.get(name)).toMatchObject({ billing_account: acme });
    expect(await policiesOf(name)).toEqual([]);
    const listed = await service().listForAccount(alice, acme, { requireNamespace: true });
    expect(listed.map((w) => w.name)).toContain(name);
    const retried = await service().create(alice, name, { billing_account: acme, members });
    expect(retried.state).toBe('active');
    expect(await policiesOf(name)).toHaveLength(2);
  });

  it('(c) fails but may be deleted instead of retried', async () => {
    const broken = service({ genesis: async () => Promise.reject(new Error('policy service down')) });
    await expectError(broken.create(alice, name, { billing_account: acme, members }), 503, 'GENESIS_FAILED');
    const deleted = await service().delete(alice, name);
    expect(deleted.state).toBe('deleted');
  });

  it('(c) landed but its answer was lost: the retry sees 409 from genesis and counts it as success', async () => {
    const lostAnswer: GenesisPort = async (...args) => {
      await realGenesis(...args);
      throw new Error('connection reset after commit');
    };
    await expectError(service({ genesis: lostAnswer }).create(alice, name, { billing_account: acme, members }), 503, 'GENESIS_FAILED');
    expect(await policiesOf(name)).toHaveLength(2);
    const retried = await service().create(alice, name, { billing_account: acme, members });
    expect(retried.state).toBe('active');
    expect(await policiesOf(name)).toHaveLength(2);
  });

  it('an existing record with other members is a 409 and genesis is not attempted', async () => {
    await service().create(alice, name, { billing_account: acme, members });
    let genesisCalls = 0;
    const counting: GenesisPort = async (...args) => {
      genesisCalls++;
      await realGenesis(...args);
    };
    await expectError(service({ genesis: counting }).create(alice, name, { billing_account: acme, members: [members[0]] }), 409, 'WORKSPACE_EXISTS');
    expect(genesisCalls).toBe(0);
  });

  it('a workspace cannot be created on an account being deleted', async () => {
    const doomed = (await (await signIn(t.app, t.adminToken, 'dora')).request('POST', '/billing/v1/accounts', { name: 'Doomed' })).json().account_id;
    const dora = principal('dora');
    await t.app.lakeport.accounts.deleteAccount('dora', doomed);
    await expectError(service().create(dora, name, { billing_account: doomed, members: [{ identity: 'dora', role: 'owner' }] }), 404, 'ACCOUNT_NOT_FOUND');
  });
});

describe('purging under failure', () => {
  it('logs a workspace that cannot be purged and still purges the others', async () => {
    const { log, entries } = recordingLogger();
    const stuck = `${name}_stuck`;
    const purging = service({
      files: { removeWorkspace: async (workspace) => (workspace === stuck ? Promise.reject(new Error('storage unavailable')) : undefined) },
      log,
    });
    for (const workspace of [stuck, name]) {
      await purging.create(alice, workspace, { billing_account: acme, members });
      await purging.delete(alice, workspace);
    }
    const purged = await purging.purgeExpired(new Date(Date.now() + 25 * 3_600_000));
    expect(purged).toContain(name);
    expect(purged).not.toContain(stuck);
    expect(entries).toEqual([{ level: 'error', message: 'could not purge a workspace', fields: { err: expect.any(Error), workspace: stuck } }]);
  });
});
