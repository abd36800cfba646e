import { describe, expect, it } from 'vitest';
import type { PermissionPair } from '../db/index.ts';
import { manageRefusal, mayAccessOwned, mayManage, requireManage, type ManagementAction } from './manage.ts';

const caller = (permissions: PermissionPair[]) => ({ identity: 'alice', permissions, credentialId: 'cred_self' });
const unnarrowed = caller([]);
const reader = caller([['sales.*', 'reader']]);
const salesOwner = caller([['sales.*', 'owner']]);

const ACCOUNT_LEVEL: ManagementAction[] = ['account.create', 'account.update', 'account.delete', 'member.invite', 'member.change_role', 'member.remove', 'member.accept', 'workspace.create', 'service_account.add', 'service_account.remove', 'service_account.credentials'];

describe('mayManage: what a narrowed credential may manage', () => {
  it('lets an unnarrowed credential do everything', () => {
    for (const action of [...ACCOUNT_LEVEL, 'workspace.delete', 'credential.read', 'credential.revoke'] as ManagementAction[]) {
      expect(mayManage(unnarrowed, action, { workspace: 'sales', credentialId: 'cred_other' })).toBe(true);
    }
    expect(mayManage(unnarrowed, 'credential.create', { permissions: [] })).toBe(true);
  });

  it('refuses account-level actions to any narrowed credential, owner pairs included', () => {
    for (const action of ACCOUNT_LEVEL) {
      for (const narrowed of [reader, salesOwner]) {
        expect(manageRefusal(narrowed, action)).toMatchObject({ status: 403, code: 'CREDENTIAL_NARROWED' });
      }
    }
  });

  it('lets any credential read its notifications, but only an unnarrowed one mark or dismiss them', () => {
    for (const narrowed of [reader, salesOwner]) {
      expect(mayManage(narrowed, 'notification.read')).toBe(true);
      expect(manageRefusal(narrowed, 'notification.update')).toMatchObject({ status: 403, code: 'CREDENTIAL_NARROWED' });
    }
    expect(mayManage(unnarrowed, 'notification.update')).toBe(true);
  });

  it('soft-deletes a workspace only with pairs covering <ws>.* with owner', () => {
    expect(mayManage(salesOwner, 'workspace.delete', { workspace: 'sales' })).toBe(true);
    expect(mayManage(caller([['ops.*', 'reader'], ['sales.*', 'owner']]), 'workspace.delete', { workspace: 'sales' })).toBe(true);
    expect(mayManage(salesOwner, 'workspace.delete', { workspace: 'ops' })).toBe(false);
    expect(mayManage(salesOwner, 'workspace.delete', { workspace: 'sales_evil' })).toBe(false);
    expect(mayManage(caller([['sales.*', 'admin']]), 'workspace.delete', { workspace: 'sales' })).toBe(false);
    expect(mayManage(caller([['sales.c.*', 'owner']]), 'workspace.delete', { workspace: 'sales' })).toBe(false);
    expect(mayManage(reader, 'workspace.delete', { workspace: 'sales' })).toBe(false);
    expect(mayManage(salesOwner, 'workspace.delete', {})).toBe(false);
  });

  it('sees and revokes only itself', () => {
    for (const action of ['credential.read', 'credential.revoke'] as const) {
      expect(mayManage(reader, action, { credentialId: 'cred_self' })).toBe(true);
      expect(mayManage(reader, action, { credentialId: 'cred_other' })).toBe(false);
      expect(mayManage(salesOwner, action, {})).toBe(false);
    }
    expect(() => requireManage(reader, 'credential.revoke', { credentialId: 'cred_other' })).toThrow(expect.objectContaining({ code: 'CREDENTIAL_NARROWED' }));
  });

  it('creates only credentials within its own permissions', () => {
    expect(mayManage(reader, 'credential.create', { permissions: [['sales.orders.*', 'reader']] })).toBe(true);
    expect(mayManage(reader, 'credential.create', { permissions: [['sales.*', 'reader']] })).toBe(true);
    expect(manageRefusal(reader, 'credential.create', { permissions: [['sales.*', 'writer']] })).toMatchObject({ code: 'PERMISSION_NOT_HELD' });
    expect(mayManage(reader, 'credential.create', { permissions: [] })).toBe(false);
    expect(mayManage(reader, 'credential.create', { permissions: [['ops.*', 'reader']] })).toBe(false);
  });
});

describe('mayAccessOwned: jobs and contracts', () => {
  const made = (permissions: PermissionPair[], owner = 'alice') => ({ owner, permissions });

  it('lets an unnarrowed credential see all of its identity’s work, and nobody see another identity’s', () => {
    expect(mayAccessOwned(unnarrowed, made([]))).toBe(true);
    expect(mayAccessOwned(unnarrowed, made([['sales.*', 'owner']]))).toBe(true);
    expect(mayAccessOwned(unnarrowed, made([], 'bob'))).toBe(false);
    expect(mayAccessOwned(reader, made([['sales.*', 'reader']], 'bob'))).toBe(false);
  });

  it('lets a narrowed credential see only work made under permissions within its own', () => {
    expect(mayAccessOwned(reader, made([]))).toBe(false);
    expect(mayAccessOwned(reader, made([['sales.*', 'reader']]))).toBe(true);
    expect(mayAccessOwned(reader, made([['sales.orders.*', 'reader']]))).toBe(true);
    expect(mayAccessOwned(reader, made([['sales.*', 'writer']]))).toBe(false);
    expect(mayAccessOwned(reader, made([['sales.*', 'reader'], ['ops.*', 'reader']]))).toBe(false);
    expect(mayAccessOwned(caller([['sales.orders.*', 'reader']]), made([['sales.*', 'reader']]))).toBe(false);
  });
});
