/**
 * Credential management with a token narrowed by permissions (core/authz `requireManage`): it sees
 * and revokes only itself, and creates only credentials narrower than itself; the identity's
 * unnarrowed credentials manage them all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';

let t: TestApp;

/**
 * An identity of its own for each test (so no test sees credentials another one created) with three
 * credentials: unnarrowed, [sales.*, reader], and another narrowed one, [sales.orders.*, reader].
 */
async function credentials(identity: string): Promise<{ CREDS: string; alice: TestUser; narrowed: TestUser; other: TestUser }> {
  const alice = await signIn(t.app, t.adminToken, identity);
  const narrowed = await signIn(t.app, t.adminToken, identity, { permissions: [['sales.*', 'reader']] });
  const other = await signIn(t.app, t.adminToken, identity, { permissions: [['sales.orders.*', 'reader']] });
  return { CREDS: `/auth/clients/${identity}/credentials`, alice, narrowed, other };
}

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

const ids = (res: { json(): any }) => res.json().map((c: { credential_id: string }) => c.credential_id).sort();

describe('credentials managed by a narrowed token', () => {
  it('lists only itself; the unnarrowed token lists them all', async () => {
    const { CREDS, alice, narrowed, other } = await credentials('alice-list');
    const own = await narrowed.request('GET', CREDS);
    expect(own.statusCode).toBe(200);
    expect(ids(own)).toEqual([narrowed.credentialId]);
    expect(ids(await alice.request('GET', CREDS))).toEqual([alice.credentialId, narrowed.credentialId, other.credentialId].sort());
  });

  it('cannot revoke the identity’s other credentials, narrower or wider; the unnarrowed token can', async () => {
    const { CREDS, alice, narrowed, other } = await credentials('alice-revoke');
    for (const target of [alice.credentialId, other.credentialId]) {
      const res = await narrowed.request('DELETE', `${CREDS}/${target}`);
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('CREDENTIAL_NARROWED');
    }
    expect((await alice.request('GET', '/auth/me')).statusCode).toBe(200);
    expect((await other.request('GET', '/auth/me')).statusCode).toBe(200);
    const spare = await signIn(t.app, t.adminToken, alice.identity, { permissions: [['sales.hr.*', 'reader']] });
    expect((await alice.request('DELETE', `${CREDS}/${spare.credentialId}`)).statusCode).toBe(200);
    expect((await spare.request('GET', '/auth/me')).statusCode).toBe(401);
  });

  it('creates only credentials narrower than itself', async () => {
    const { CREDS, alice, narrowed } = await credentials('alice-create');
    const wider = await narrowed.request('POST', CREDS, { permissions: [['sales.*', 'writer']] });
    expect(wider.statusCode).toBe(403);
    expect(wider.json().code).toBe('PERMISSION_NOT_HELD');
    const unnarrowed = await narrowed.request('POST', CREDS, {});
    expect(unnarrowed.statusCode).toBe(403);
    expect(unnarrowed.json().code).toBe('PERMISSION_NOT_HELD');
    const narrower = await narrowed.request('POST', CREDS, { permissions: [['sales.orders.*', 'reader']] });
    expect(narrower.statusCode).toBe(200);
    expect((await alice.request('POST', CREDS, { permissions: [['sales.*', 'owner']] })).statusCode).toBe(200);
  });

  it('revokes itself', async () => {
    const CREDS = '/auth/clients/alice-self/credentials';
    const self = await signIn(t.app, t.adminToken, 'alice-self', { permissions: [['sales.*', 'reader']] });
    const res = await self.request('DELETE', `${CREDS}/${self.credentialId}`);
    expect(res.statusCode, res.body).toBe(200);
    expect((await self.request('GET', '/auth/me')).statusCode).toBe(401);
  });
});
