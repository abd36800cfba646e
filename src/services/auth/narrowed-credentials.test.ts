/**
 * Credential management with a token narrowed by permissions (core/authz `requireManage`): it sees
 * and revokes only itself, and creates only credentials narrower than itself; the identity's
 * unnarrowed credentials manage them all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';

let t: TestApp;
let alice: TestUser; // unnarrowed
let narrowed: TestUser; // [sales.*, reader]
let other: TestUser; // [sales.orders.*, reader]: another narrowed credential of alice

const CREDS = '/auth/clients/alice/credentials';

beforeAll(async () => {
  t = await createTestApp();
  alice = await signIn(t.app, t.adminToken, 'alice');
  narrowed = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.*', 'reader']] });
  other = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.orders.*', 'reader']] });
});
afterAll(async () => t.close());

const ids = (res: { json(): any }) => res.json().map((c: { credential_id: string }) => c.credential_id).sort();

describe('credentials managed by a narrowed token', () => {
  it('lists only itself; the unnarrowed token lists them all', async () => {
    const own = await narrowed.request('GET', CREDS);
    expect(own.statusCode).toBe(200);
    expect(ids(own)).toEqual([narrowed.credentialId]);
    expect(ids(await alice.request('GET', CREDS))).toEqual([alice.credentialId, narrowed.credentialId, other.credentialId].sort());
  });

  it('cannot revoke the identity’s other credentials, narrower or wider; the unnarrowed token can', async () => {
    for (const target of [alice.credentialId, other.credentialId]) {
      const res = await narrowed.request('DELETE', `${CREDS}/${target}`);
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('CREDENTIAL_NARROWED');
    }
    expect((await alice.request('GET', '/auth/me')).statusCode).toBe(200);
    expect((await other.request('GET', '/auth/me')).statusCode).toBe(200);
    const spare = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.hr.*', 'reader']] });
    expect((await alice.request('DELETE', `${CREDS}/${spare.credentialId}`)).statusCode).toBe(200);
    expect((await spare.request('GET', '/auth/me')).statusCode).toBe(401);
  });

  it('creates only credentials narrower than itself', async () => {
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
    const self = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.*', 'reader']] });
    const res = await self.request('DELETE', `${CREDS}/${self.credentialId}`);
    expect(res.statusCode, res.body).toBe(200);
    expect((await self.request('GET', '/auth/me')).statusCode).toBe(401);
  });
});
