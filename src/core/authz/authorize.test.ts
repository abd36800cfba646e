import { describe, expect, it } from 'vitest';
import type { PermissionPair } from '../db/index.ts';
import { Authorizer, effectiveRole, type Grant } from './authorize.ts';
import type { Resource } from './patterns.ts';
import type { Principal } from './principal.ts';
import { ROLES, type Role } from './roles.ts';

const dataset: Resource = { workspace: 'a', collection: 'c', dataset: 'd' };
const otherDataset: Resource = { workspace: 'a', collection: 'c', dataset: 'e' };
const otherCollection: Resource = { workspace: 'a', collection: 'x', dataset: 'd' };
const collection: Resource = { workspace: 'a', collection: 'c' };
const workspace: Resource = { workspace: 'a' };
const otherWorkspace: Resource = { workspace: 'b', collection: 'c', dataset: 'd' };
const lookalike: Resource = { workspace: 'a_evil', collection: 'c', dataset: 'd' };

const PATTERNS = ['a.*', 'a.c.*', 'a.c.d'] as const;
// Which resources each pattern reaches.
const REACHES: Record<(typeof PATTERNS)[number], Resource[]> = {
  'a.*': [dataset, otherDataset, otherCollection, collection, workspace],
  'a.c.*': [dataset, otherDataset, collection],
  'a.c.d': [dataset],
};
const ALL_RESOURCES = [dataset, otherDataset, otherCollection, collection, workspace, otherWorkspace, lookalike];

describe('effectiveRole: roles × patterns × resources', () => {
  for (const role of ROLES) {
    for (const pattern of PATTERNS) {
      it(`${role} on ${pattern}`, () => {
        for (const resource of ALL_RESOURCES) {
          const expected = REACHES[pattern].includes(resource) ? role : null;
          expect(effectiveRole([{ pattern, role }], [], resource)).toBe(expected);
        }
      });
    }
  }

  it('takes the highest of several matching grants', () => {
    const grants: Grant[] = [
      { pattern: 'a.*', role: 'reader' },
      { pattern: 'a.c.*', role: 'admin' },
      { pattern: 'a.c.d', role: 'writer' },
    ];
    expect(effectiveRole(grants, [], dataset)).toBe('admin');
    expect(effectiveRole(grants, [], otherCollection)).toBe('reader');
    expect(effectiveRole(grants, [], workspace)).toBe('reader');
  });

  it('never reaches workspace B through a grant in A, nor a look-alike name', () => {
    for (const role of ROLES) {
      expect(effectiveRole([{ pattern: 'a.*', role }], [], otherWorkspace)).toBeNull();
      expect(effectiveRole([{ pattern: 'a.*', role }], [], lookalike)).toBeNull();
    }
  });
});

describe('effectiveRole: credential narrowing', () => {
  const owner: Grant[] = [{ pattern: 'a.*', role: 'owner' }];

  it('caps the role at the permission', () => {
    for (const cap of ROLES) expect(effectiveRole(owner, [['a.*', cap]], dataset)).toBe(cap);
  });

  it('removes access the permissions do not mention', () => {
    expect(effectiveRole(owner, [['a.c.d', 'owner']], otherDataset)).toBeNull();
    expect(effectiveRole(owner, [['a.c.*', 'reader']], otherCollection)).toBeNull();
    expect(effectiveRole(owner, [['b.*', 'owner']], dataset)).toBeNull();
  });

  it('never widens', () => {
    const reader: Grant[] = [{ pattern: 'a.c.d', role: 'reader' }];
    const wide: PermissionPair[] = [['a.*', 'owner'], ['b.*', 'owner']];
    expect(effectiveRole(reader, wide, dataset)).toBe('reader');
    expect(effectiveRole(reader, wide, otherDataset)).toBeNull();
    expect(effectiveRole(reader, wide, otherWorkspace)).toBeNull();
    expect(effectiveRole([], wide, dataset)).toBeNull();
  });

  it('matrix: every grant role × every cap role gives the lower', () => {
    for (const granted of ROLES) {
      for (const cap of ROLES) {
        const expected: Role = ROLES.indexOf(granted) < ROLES.indexOf(cap) ? granted : cap;
        expect(effectiveRole([{ pattern: 'a.*', role: granted }], [['a.c.*', cap]], dataset)).toBe(expected);
        expect(effectiveRole([{ pattern: 'a.*', role: granted }], [['a.c.*', cap]], otherCollection)).toBeNull();
      }
    }
  });
});

describe('Authorizer', () => {
  const grants: Record<string, Grant[]> = { 'alice|a': [{ pattern: 'a.*', role: 'writer' }], 'alice|b': [] };
  const deleted = new Set<string>();
  const authz = new Authorizer(
    {
      grantsOf: async (identity, ws) => grants[`${identity}|${ws}`] ?? [],
      workspacesOf: async (identity) => (identity === 'alice' ? ['a', 'b'] : []),
      grantsByWorkspace: async (identity) =>
        new Map(Object.entries(grants).filter(([key, held]) => key.startsWith(`${identity}|`) && held.length > 0).map(([key, held]) => [key.split('|')[1], held])),
    },
    { deletedAmong: async (names) => new Set(names.filter((n) => deleted.has(n))) },
  );
  const alice: Principal = { identity: 'alice', scopes: [], permissions: [], credentialId: 'c', tokenId: 't', expiresAt: new Date() };

  it('answers can and require', async () => {
    expect(await authz.can(alice, 'writer', dataset)).toBe(true);
    expect(await authz.can(alice, 'admin', dataset)).toBe(false);
    expect(await authz.can(alice, 'reader', otherWorkspace)).toBe(false);
    await expect(authz.require(alice, 'reader', dataset)).resolves.toBe('writer');
    await expect(authz.require(alice, 'owner', workspace)).rejects.toMatchObject({ status: 403, code: 'PERMISSION_DENIED' });
  });

  it('applies the principal’s narrowing', async () => {
    expect(await authz.can({ ...alice, permissions: [['a.c.*', 'reader']] }, 'writer', dataset)).toBe(false);
    expect(await authz.can({ ...alice, permissions: [['a.c.*', 'reader']] }, 'reader', dataset)).toBe(true);
  });

  it('refuses a soft-deleted workspace with 409 WORKSPACE_DELETED, after the permission check, unless exempted', async () => {
    deleted.add('a');
    try {
      const gone = { status: 409, code: 'WORKSPACE_DELETED' };
      await expect(authz.require(alice, 'reader', dataset)).rejects.toMatchObject(gone);
      await expect(authz.can(alice, 'writer', dataset)).rejects.toMatchObject(gone);
      await expect(authz.accessIn(alice, 'a', [dataset])).rejects.toMatchObject(gone);
      await expect(authz.grantsIn(alice, 'a')).rejects.toMatchObject(gone);
      // No role, or not enough: the answer a live workspace would give (nothing learnt of its state).
      await expect(authz.require(alice, 'owner', workspace)).rejects.toMatchObject({ status: 403, code: 'PERMISSION_DENIED' });
      expect(await authz.can(alice, 'admin', dataset)).toBe(false);
      expect(await authz.can({ ...alice, identity: 'mallory' }, 'reader', dataset)).toBe(false);
      // Listings leave it out; the exempt actions (restore, the account's listing) still decide on roles.
      expect(await authz.workspacesOf(alice)).toEqual(['b']);
      expect(await authz.workspacesOf(alice, { evenIfDeleted: true })).toEqual(['a', 'b']);
      expect(await authz.standingsOf(alice)).toEqual([]);
      await expect(authz.require(alice, 'writer', dataset, { evenIfDeleted: true })).resolves.toBe('writer');
      expect(await authz.can(alice, 'writer', dataset, { evenIfDeleted: true })).toBe(true);
    } finally {
      deleted.delete('a');
    }
    await expect(authz.require(alice, 'reader', dataset)).resolves.toBe('writer');
    expect(await authz.standingsOf(alice)).toEqual([{ workspace: 'a', grants: [{ pattern: 'a.*', role: 'writer' }], deleted: false }]);
    // A credential narrowed to another workspace stands nowhere.
    expect(await authz.standingsOf({ ...alice, permissions: [['z.*', 'reader']] })).toEqual([]);
  });
});
