/**
 * Account and workspace management with a credential narrowed by permissions (core/authz
 * `requireManage`): account-level actions need an unnarrowed credential; soft-deleting a workspace
 * needs permissions covering `<ws>.*` with owner. Each refusal is 403 CREDENTIAL_NARROWED, and the
 * same action works with the identity's unnarrowed credential.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';

let t: TestApp;
let alice: TestUser; // billing_admin of acct, owner of every workspace below; unnarrowed
let reader: TestUser; // alice narrowed to [sales.*, reader]
let salesOwner: TestUser; // alice narrowed to [sales.*, owner]
let account: string;

const B = '/billing/v1';

function refused(res: { statusCode: number; json(): any; body: string }) {
  expect(res.statusCode, res.body).toBe(403);
  expect(res.json().code).toBe('CREDENTIAL_NARROWED');
}

const createWs = (user: TestUser, name: string) =>
  user.request('PUT', `/control/v1/workspaces/${name}`, { billing_account: account, members: [{ identity: 'alice', role: 'owner' }] });

beforeAll(async () => {
  t = await createTestApp();
  alice = await signIn(t.app, t.adminToken, 'alice');
  reader = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.*', 'reader']] });
  salesOwner = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.*', 'owner']] });
  const created = await alice.request('POST', `${B}/accounts`, { name: 'Acme' });
  expect(created.statusCode).toBe(201);
  account = created.json().account_id;
  expect((await createWs(alice, 'sales')).statusCode).toBe(200);
});
afterAll(async () => t.close());

describe('a narrowed credential and its account', () => {
  it('may read the account, its members and its workspaces', async () => {
    expect((await reader.request('GET', `${B}/accounts`)).json()).toHaveLength(1);
    expect((await reader.request('GET', `${B}/accounts/${account}`)).statusCode).toBe(200);
    expect((await reader.request('GET', `${B}/accounts/${account}/members`)).statusCode).toBe(200);
    expect((await reader.request('GET', `${B}/accounts/${account}/workspaces`)).statusCode).toBe(200);
  });

  it('cannot patch the account; the unnarrowed credential can', async () => {
    for (const narrowed of [reader, salesOwner]) refused(await narrowed.request('PATCH', `${B}/accounts/${account}`, { name: 'Pwned' }));
    expect((await alice.request('GET', `${B}/accounts/${account}`)).json().name).toBe('Acme');
    const ok = await alice.request('PATCH', `${B}/accounts/${account}`, { tax_id: 'DE123' });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().tax_id).toBe('DE123');
  });

  it('cannot invite a billing_admin, change a role or remove a member; the unnarrowed credential can', async () => {
    const invite = { identity: 'mallory', email: 'mallory@example.com', role: 'billing_admin' };
    refused(await reader.request('POST', `${B}/accounts/${account}/members`, invite));
    expect((await alice.request('GET', `${B}/accounts/${account}/members`)).json().map((m: { identity: string }) => m.identity)).toEqual(['alice']);
    expect((await alice.request('POST', `${B}/accounts/${account}/members`, invite)).statusCode).toBe(201);
    refused(await reader.request('PATCH', `${B}/accounts/${account}/members/mallory`, { role: 'member' }));
    expect((await alice.request('PATCH', `${B}/accounts/${account}/members/mallory`, { role: 'member' })).statusCode).toBe(200);
    refused(await reader.request('DELETE', `${B}/accounts/${account}/members/mallory`));
    expect((await alice.request('DELETE', `${B}/accounts/${account}/members/mallory`)).statusCode).toBe(200);
  });

  it('cannot accept an invite, leave an account, or create or delete one; the unnarrowed credential can', async () => {
    const bob = await signIn(t.app, t.adminToken, 'bob');
    const bobNarrowed = await signIn(t.app, t.adminToken, 'bob', { permissions: [['bobs.*', 'owner']] });
    refused(await bobNarrowed.request('POST', `${B}/accounts`, { name: 'Bob & co' }));
    const own = await bob.request('POST', `${B}/accounts`, { name: 'Bob & co' });
    expect(own.statusCode).toBe(201);
    refused(await bobNarrowed.request('DELETE', `${B}/accounts/${own.json().account_id}`));
    expect((await bob.request('DELETE', `${B}/accounts/${own.json().account_id}`)).statusCode).toBe(200);

    expect((await alice.request('POST', `${B}/accounts/${account}/members`, { identity: 'bob', email: 'bob@example.com', role: 'member' })).statusCode).toBe(201);
    refused(await bobNarrowed.request('POST', `${B}/accounts/${account}/members/bob/accept`));
    expect((await bob.request('POST', `${B}/accounts/${account}/members/bob/accept`)).statusCode).toBe(200);
    refused(await bobNarrowed.request('DELETE', `${B}/accounts/${account}/members/bob`));
    expect((await bob.request('DELETE', `${B}/accounts/${account}/members/bob`)).statusCode).toBe(200);
  });
});

describe('a narrowed credential and workspaces', () => {
  it('cannot create a workspace, nor bootstrap one with genesis; the unnarrowed credential can', async () => {
    refused(await reader.request('PUT', `/control/v1/workspaces/scratch`, { billing_account: account, members: [{ identity: 'alice', role: 'owner' }] }));
    refused(await salesOwner.request('PUT', `/billing/v1/workspaces/scratch`, { billing_account: account, members: [{ identity: 'alice', role: 'owner' }] }));
    expect(await t.app.lakeport.catalog.findNamespace('scratch')).toBeUndefined();
    expect((await createWs(alice, 'scratch')).statusCode).toBe(200);
    // Genesis (also a step of creating a workspace): refused before anything is looked at.
    refused(await salesOwner.request('POST', `/control/v1/access/workspace/scratch/genesis`, { grants: [{ identity: 'alice', role: 'owner' }] }));
    const again = await alice.request('POST', `/control/v1/access/workspace/scratch/genesis`, { grants: [{ identity: 'alice', role: 'owner' }] });
    expect(again.json().code).toBe('GENESIS_ALREADY_DONE');
  });

  it('soft-deletes a workspace only with permissions covering it with owner', async () => {
    expect((await createWs(alice, 'temp')).statusCode).toBe(200);
    expect((await createWs(alice, 'temp2')).statusCode).toBe(200);
    const tempOwner = await signIn(t.app, t.adminToken, 'alice', { permissions: [['temp.*', 'owner']] });
    const tempAdmin = await signIn(t.app, t.adminToken, 'alice', { permissions: [['temp.*', 'admin']] });
    const tempCollectionOwner = await signIn(t.app, t.adminToken, 'alice', { permissions: [['temp.c.*', 'owner']] });
    for (const narrowed of [reader, salesOwner, tempAdmin, tempCollectionOwner]) refused(await narrowed.request('DELETE', `${B}/workspaces/temp`));
    expect((await alice.request('GET', `${B}/accounts/${account}/workspaces`)).json().find((w: { name: string }) => w.name === 'temp').state).toBe('active');
    const deleted = await tempOwner.request('DELETE', `${B}/workspaces/temp`);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.json().state).toBe('deleted');
    // Restoring needs owner on temp.* as well (through the identity's policies, capped by the permissions).
    expect((await reader.request('POST', `${B}/workspaces/temp/restore`)).statusCode).toBe(403);
    expect((await tempOwner.request('POST', `${B}/workspaces/temp/restore`)).statusCode).toBe(200);
    // And the unnarrowed credential may delete any workspace of the account.
    expect((await alice.request('DELETE', `${B}/workspaces/temp2`)).statusCode).toBe(200);
  });
});
