import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../core/errors/index.ts';
import { createTestDb, type TestDb } from '../../../test/harness.ts';
import { ACTIVE_MEMBERSHIP_INDEX, AccountRepo, isUniqueViolation } from './account-repo.ts';
import { AccountService } from './account-service.ts';

let t: TestDb;
let accounts: AccountService;
beforeAll(async () => {
  t = await createTestDb();
  accounts = new AccountService(t.db);
});
afterAll(async () => t.dispose());

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('AccountService methods for other services', () => {
  it('billingAccountOf, memberRole, isActiveBillingAdmin, requireActiveMember, requireBillingAdmin', async () => {
    const { account_id: id } = await accounts.createAccount('svc-admin', { name: 'Svc' });
    await accounts.invite('svc-admin', id, { identity: 'svc-member', email: 'm@example.com', role: 'member' });
    await accounts.invite('svc-admin', id, { identity: 'svc-pending', email: 'p@example.com', role: 'billing_admin' });
    await accounts.accept('svc-member', id, 'svc-member');

    expect(await accounts.billingAccountOf('svc-admin')).toBe(id);
    expect(await accounts.billingAccountOf('svc-member')).toBe(id);
    expect(await accounts.billingAccountOf('svc-pending')).toBeNull();
    expect(await accounts.billingAccountOf('nobody')).toBeNull();

    expect(await accounts.memberRole('svc-admin', id)).toBe('billing_admin');
    expect(await accounts.memberRole('svc-member', id)).toBe('member');
    expect(await accounts.memberRole('svc-pending', id)).toBeNull();
    expect(await accounts.memberRole('svc-admin', 'acct_other')).toBeNull();

    expect(await accounts.isActiveBillingAdmin('svc-admin', id)).toBe(true);
    expect(await accounts.isActiveBillingAdmin('svc-member', id)).toBe(false);
    expect(await accounts.isActiveBillingAdmin('svc-pending', id)).toBe(false);

    expect(await accounts.requireActiveMember('svc-member', id)).toBe('member');
    expect(await accounts.requireActiveMember('svc-admin', id)).toBe('billing_admin');
    await accounts.requireBillingAdmin('svc-admin', id);

    expect(await rejection(accounts.requireActiveMember('svc-pending', id))).toMatchObject({ status: 403, code: 'NOT_A_MEMBER' });
    expect(await rejection(accounts.requireBillingAdmin('svc-member', id))).toMatchObject({ status: 403, code: 'BILLING_ADMIN_REQUIRED' });
    expect(await rejection(accounts.requireBillingAdmin('nobody', id))).toMatchObject({ status: 403, code: 'NOT_A_MEMBER' });
    expect(await rejection(accounts.requireActiveMember('svc-admin', 'acct_missing'))).toMatchObject({ status: 404, code: 'ACCOUNT_NOT_FOUND' });

    expect(await accounts.accountReferencedByWorkspace(id)).toBe(false);
    await t.db.kysely
      .insertInto('workspaces')
      .values({ name: 'svc_ws', billing_account: id, members: JSON.stringify([]), created_by: 'svc-admin', deleted_at: new Date() })
      .execute();
    expect(await accounts.accountReferencedByWorkspace(id)).toBe(true);
    await t.db.kysely.deleteFrom('workspaces').where('name', '=', 'svc_ws').execute();

    await accounts.deleteAccount('svc-admin', id);
    expect(await accounts.billingAccountOf('svc-admin')).toBeNull();
    expect(await accounts.memberRole('svc-admin', id)).toBeNull();
    expect(await rejection(accounts.requireActiveMember('svc-admin', id))).toMatchObject({ status: 404, code: 'ACCOUNT_NOT_FOUND' });
  });
});

describe('exclusivity at the database', () => {
  it(`both drivers report a second active membership as a violation of ${ACTIVE_MEMBERSHIP_INDEX}`, async () => {
    const a = await accounts.createAccount('uniq-a', { name: 'A' });
    const b = await accounts.createAccount('uniq-b', { name: 'B' });
    const repo = new AccountRepo(t.db.kysely);
    const now = new Date();
    const error = await repo
      .insertActiveMember({ account_id: b.account_id, identity: 'uniq-a', role: 'member', added_at: now, min_age_ms: null, eligible_at: now })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isUniqueViolation(error, ACTIVE_MEMBERSHIP_INDEX)).toBe(true);
    expect(isUniqueViolation(error, 'members_pkey')).toBe(false);
    expect(isUniqueViolation(new Error('boom'))).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
    expect(await accounts.billingAccountOf('uniq-a')).toBe(a.account_id);
  });
});
