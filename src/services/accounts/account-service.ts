import { newId } from '../../core/crypto/index.ts';
import { KEPT_READ_TTL_MS, KeptReads } from '../../core/kept.ts';
import type { AccountRole, Db } from '../../core/db/index.ts';
import { accountsError } from './errors.ts';
import { events } from './notification-events.ts';
import type { Notifier } from './notification-service.ts';
import {
  ACTIVE_MEMBERSHIP_INDEX,
  AccountRepo,
  isUniqueViolation,
  type AccountPatch,
  type AccountRow,
  type MemberRow,
} from './account-repo.ts';

/** Pending invites expire this long after being written or re-written. */
export const INVITE_LIFETIME_MS = 7 * 86_400_000;

export interface AccountView {
  account_id: string;
  name: string;
  tax_id: string | null;
  address: Record<string, unknown> | null;
  member_min_age_ms: number | null;
  status: 'active' | 'deactivated';
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface MemberView {
  account_id: string;
  identity: string;
  email: string | null;
  role: AccountRole;
  state: 'pending' | 'active';
  invited_by: string | null;
  invited_at: string | null;
  invite_expires_at: string | null;
  added_at: string | null;
  min_age_ms: number | null;
  eligible_at: string | null;
}

export interface InvoiceView {
  invoice_id: string;
  status: 'draft';
  amount_due: number;
  currency: string;
  lines: unknown[];
}

export interface CreateAccountInput {
  name: string;
  tax_id?: string | null;
  address?: Record<string, unknown> | null;
}

export interface InviteInput {
  identity: string;
  email: string;
  role: AccountRole;
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export function accountView(row: AccountRow): AccountView {
  return {
    account_id: row.account_id,
    name: row.name,
    tax_id: row.tax_id,
    address: row.address,
    member_min_age_ms: row.member_min_age_ms === null ? null : Number(row.member_min_age_ms),
    status: row.status,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function memberView(row: MemberRow): MemberView {
  return {
    account_id: row.account_id,
    identity: row.identity,
    email: row.email,
    role: row.role,
    state: row.state,
    invited_by: row.invited_by,
    invited_at: iso(row.invited_at),
    invite_expires_at: iso(row.invite_expires_at),
    added_at: iso(row.added_at),
    min_age_ms: row.min_age_ms === null ? null : Number(row.min_age_ms),
    eligible_at: iso(row.eligible_at),
  };
}

/** A pending invite whose clock has run out (now > invite_expires_at). */
function isExpired(row: MemberRow, now: Date): boolean {
  return row.state === 'pending' && row.invite_expires_at !== null && row.invite_expires_at.getTime() < now.getTime();
}

/** When a member added at `addedAt` becomes eligible: after the account's minimum age, or at once. */
function eligibleAt(addedAt: Date, minAgeMs: number | null): Date {
  return new Date(addedAt.getTime() + (minAgeMs === null ? 0 : Number(minAgeMs)));
}

const accountNotFound = (accountId: string) => accountsError('ACCOUNT_NOT_FOUND', `Account ${accountId} not found`);
const memberNotFound = (accountId: string, identity: string) =>
  accountsError('MEMBER_NOT_FOUND', `'${identity}' is not a member of account ${accountId} and has no pending invite`);
const alreadyMember = (detail: string) => accountsError('ALREADY_MEMBER', detail);
const memberElsewhere = (identity: string) =>
  accountsError('MEMBER_OF_ANOTHER_ACCOUNT', `'${identity}' is already a member of another account; membership is exclusive`);
const isServiceAccount = (identity: string) =>
  accountsError('IDENTITY_IS_SERVICE_ACCOUNT', `'${identity}' is a service account; a service account cannot be an account member`);
const lastBillingAdmin = (accountId: string) =>
  accountsError('LAST_BILLING_ADMIN', `Account ${accountId} must keep at least one active billing_admin; promote another member first`);

/**
 * Billing accounts and their members. Authorization: an unknown or deactivated account is 404
 * `ACCOUNT_NOT_FOUND`; an existing one the caller is not an active member of is 403 `NOT_A_MEMBER`;
 * a member where billing_admin is needed is 403 `BILLING_ADMIN_REQUIRED`.
 */
export class AccountService {
  private readonly repo: AccountRepo;
  /**
   * What every /auth/me and account listing asks, kept per identity: dropped when this process
   * writes accounts, members or service accounts, and after KEPT_READ_TTL_MS (another server's change).
   */
  private readonly billingAccounts: KeptReads<string, string | null>;
  private readonly accountLists: KeptReads<string, AccountView[]>;

  /** `notifier`: where membership events go, in the transaction that makes them (docs/notifications.md). */
  constructor(
    db: Db,
    private readonly notifier?: Notifier,
  ) {
    this.repo = new AccountRepo(db.kysely);
    const kept = { ttlMs: KEPT_READ_TTL_MS, max: 10_000, tables: { writes: db.writes, names: ['accounts', 'members', 'service_accounts'] } };
    this.billingAccounts = new KeptReads(kept);
    this.accountLists = new KeptReads(kept);
  }

  // ---- for other services ----

  /** The account of the identity's active membership in an active account, or of its service account; else null. */
  async billingAccountOf(identity: string): Promise<string | null> {
    return this.billingAccounts.get(
      identity,
      async () => (await this.repo.activeMembershipOf(identity))?.account_id ?? (await this.repo.serviceAccountOwner(identity)) ?? null,
    );
  }

  /** The identity's role in the account, for an active member of an active account; else null. */
  async memberRole(identity: string, accountId: string): Promise<AccountRole | null> {
    const membership = await this.repo.activeMembershipOf(identity);
    return membership?.account_id === accountId ? membership.role : null;
  }

  async isActiveBillingAdmin(identity: string, accountId: string): Promise<boolean> {
    return (await this.memberRole(identity, accountId)) === 'billing_admin';
  }

  /** Throws 404 ACCOUNT_NOT_FOUND or 403 NOT_A_MEMBER; returns the caller's role. */
  async requireActiveMember(identity: string, accountId: string): Promise<AccountRole> {
    return (await this.authorize(this.repo, identity, accountId, 'member')).role;
  }

  /** Throws 404 ACCOUNT_NOT_FOUND, 403 NOT_A_MEMBER or 403 BILLING_ADMIN_REQUIRED. */
  async requireBillingAdmin(identity: string, accountId: string): Promise<void> {
    await this.authorize(this.repo, identity, accountId, 'billing_admin');
  }

  /** Whether any workspace row (soft-deleted ones too, until purged) names the account as its billing account. */
  async accountReferencedByWorkspace(accountId: string): Promise<boolean> {
    return (await this.repo.workspacesReferencing(accountId)).length > 0;
  }

  // ---- accounts ----

  async listAccounts(caller: string): Promise<AccountView[]> {
    return this.accountLists.get(caller, async () => (await this.repo.accountsOfMember(caller)).map(accountView));
  }

  /** Creates an account with the caller as its first, active billing_admin. */
  async createAccount(caller: string, input: CreateAccountInput): Promise<AccountView> {
    const now = new Date();
    const refused = () => alreadyMember(`'${caller}' already belongs to an account; membership is exclusive`);
    try {
      return await this.repo.transaction(async (repo) => {
        await repo.lockIdentity(caller);
        if (await repo.activeMembershipOf(caller)) throw refused();
        if (await repo.serviceAccountOwner(caller)) throw isServiceAccount(caller);
        const account = await repo.insertAccount({
          account_id: newId('acct'),
          name: input.name,
          tax_id: input.tax_id ?? null,
          address: input.address ?? null,
          created_by: caller,
          now,
        });
        const minAge = account.member_min_age_ms;
        await repo.insertActiveMember({
          account_id: account.account_id,
          identity: caller,
          role: 'billing_admin',
          added_at: now,
          min_age_ms: minAge,
          eligible_at: eligibleAt(now, minAge),
        });
        return accountView(account);
      });
    } catch (error) {
      // A concurrent create or accept by the same identity won the race for the unique index.
      if (isUniqueViolation(error, ACTIVE_MEMBERSHIP_INDEX)) throw refused();
      throw error;
    }
  }

  async getAccount(caller: string, accountId: string): Promise<AccountView> {
    const { account } = await this.authorize(this.repo, caller, accountId, 'member');
    return accountView(account);
  }

  async updateAccount(caller: string, accountId: string, patch: AccountPatch): Promise<AccountView> {
    const { account } = await this.authorize(this.repo, caller, accountId, 'billing_admin');
    if (Object.values(patch).every((v) => v === undefined)) return accountView(account);
    const updated = await this.repo.updateAccount(accountId, patch, new Date());
    if (!updated) throw accountNotFound(accountId);
    return accountView(updated);
  }

  /** Deactivates the account and deletes its members, unless a workspace still references it or it has service accounts (409). */
  async deleteAccount(caller: string, accountId: string): Promise<AccountView> {
    return this.repo.transaction(async (repo) => {
      await this.authorize(repo, caller, accountId, 'billing_admin', true);
      const workspaces = await repo.workspacesReferencing(accountId);
      if (workspaces.length > 0) {
        throw accountsError(
          'ACCOUNT_HAS_WORKSPACES',
          `Account ${accountId} is still the billing account of workspace(s) ${workspaces.join(', ')}; delete them first`,
          { extra: { workspaces } },
        );
      }
      const serviceAccounts = await repo.serviceAccountsOf(accountId);
      if (serviceAccounts.length > 0) {
        throw accountsError(
          'ACCOUNT_HAS_SERVICE_ACCOUNTS',
          `Account ${accountId} still has service account(s) ${serviceAccounts.join(', ')}; remove them first (that revokes their credentials)`,
          { extra: { service_accounts: serviceAccounts } },
        );
      }
      const account = await repo.deactivateAccount(accountId, new Date());
      await repo.deleteAllMembers(accountId);
      return accountView(account);
    });
  }

  // ---- members ----

  /** Active members and unexpired invites; expired invites are deleted on the way. */
  async listMembers(caller: string, accountId: string): Promise<MemberView[]> {
    await this.authorize(this.repo, caller, accountId, 'member');
    const now = new Date();
    await this.repo.deleteExpiredInvites(accountId, now);
    return (await this.repo.listMembers(accountId, now)).map(memberView);
  }

  /** Writes a pending invite, or re-writes an existing one with a fresh 7-day clock. */
  async invite(caller: string, accountId: string, input: InviteInput): Promise<MemberView> {
    return this.repo.transaction(async (repo) => {
      await this.authorize(repo, caller, accountId, 'billing_admin', true);
      const existing = await repo.findMember(accountId, input.identity);
      const active = () => alreadyMember(`'${input.identity}' is already an active member of account ${accountId}`);
      if (existing?.state === 'active') throw active();
      if (await repo.activeMembershipOf(input.identity)) throw memberElsewhere(input.identity);
      if (await repo.serviceAccountOwner(input.identity)) throw isServiceAccount(input.identity);
      const now = new Date();
      const row = await repo.upsertInvite({
        account_id: accountId,
        identity: input.identity,
        email: input.email,
        role: input.role,
        invited_by: caller,
        invited_at: now,
        invite_expires_at: new Date(now.getTime() + INVITE_LIFETIME_MS),
      });
      if (!row) throw active();
      await this.notifier?.notify(
        [input.identity],
        events.inviteReceived({ accountId, identity: input.identity, actor: caller, role: input.role, expiresAt: row.invite_expires_at! }),
        repo.executor,
      );
      return memberView(row);
    });
  }

  /**
   * The invitee accepts: the row becomes active with added_at, min_age_ms (the account's value at
   * this moment) and eligible_at stamped. Only the invited identity may accept.
   */
  async accept(caller: string, accountId: string, identity: string): Promise<MemberView> {
    if (caller !== identity) {
      throw accountsError('NOT_THE_INVITEE', `Only '${identity}' can accept this invite; the token is for '${caller}'`);
    }
    let outcome: { expired: true } | { expired: false; member: MemberView };
    try {
      outcome = await this.repo.transaction(async (repo) => {
        const account = await repo.findAccount(accountId, true);
        if (!account || account.status !== 'active') throw accountNotFound(accountId);
        const invite = await repo.findMember(accountId, identity);
        if (!invite || invite.state !== 'pending') {
          throw accountsError('NO_PENDING_INVITE', `No pending invite for '${identity}' in account ${accountId}`);
        }
        const now = new Date();
        if (isExpired(invite, now)) {
          // Committed before the 410 is thrown, outside the transaction.
          await repo.deleteMember(accountId, identity);
          return { expired: true } as const;
        }
        await repo.lockIdentity(identity);
        if (await repo.activeMembershipOf(identity)) throw memberElsewhere(identity);
        if (await repo.serviceAccountOwner(identity)) throw isServiceAccount(identity);
        const minAge = account.member_min_age_ms === null ? null : Number(account.member_min_age_ms);
        const row = await repo.activateMember(accountId, identity, {
          added_at: now,
          min_age_ms: minAge,
          eligible_at: eligibleAt(now, minAge),
        });
        await this.notifier?.notifyBillingAdmins(accountId, events.inviteAccepted({ accountId, identity, actor: caller, role: row.role, invitedBy: invite.invited_by }), {
          also: [invite.invited_by],
          within: repo.executor,
        });
        return { expired: false, member: memberView(row) } as const;
      });
    } catch (error) {
      if (isUniqueViolation(error, ACTIVE_MEMBERSHIP_INDEX)) throw memberElsewhere(identity);
      throw error;
    }
    if (outcome.expired) {
      throw accountsError('INVITE_EXPIRED', `The invite for '${identity}' to account ${accountId} has expired; ask for a new one`);
    }
    return outcome.member;
  }

  /** Changes a member's (or a pending invite's) role; the last active billing_admin cannot be demoted. */
  async updateMemberRole(caller: string, accountId: string, identity: string, role: AccountRole): Promise<MemberView> {
    return this.repo.transaction(async (repo) => {
      await this.authorize(repo, caller, accountId, 'billing_admin', true);
      const member = await repo.findMember(accountId, identity);
      if (!member || isExpired(member, new Date())) throw memberNotFound(accountId, identity);
      if (
        member.state === 'active' &&
        member.role === 'billing_admin' &&
        role !== 'billing_admin' &&
        (await repo.countActiveBillingAdmins(accountId)) <= 1
      ) {
        throw lastBillingAdmin(accountId);
      }
      const updated = await repo.updateMemberRole(accountId, identity, role);
      if (member.role !== role) {
        await this.notifier?.notify([identity], events.roleChanged({ accountId, identity, actor: caller, from: member.role, to: role, state: member.state }), repo.executor);
      }
      return memberView(updated);
    });
  }

  /**
   * Removes a member or withdraws a pending invite: a billing_admin may remove anyone, an identity
   * itself (a pending invitee included). The last active billing_admin cannot be removed.
   */
  async removeMember(caller: string, accountId: string, identity: string) {
    return this.repo.transaction(async (repo) => {
      if (caller === identity) {
        const account = await repo.findAccount(accountId, true);
        if (!account || account.status !== 'active') throw accountNotFound(accountId);
      } else {
        await this.authorize(repo, caller, accountId, 'billing_admin', true);
      }
      const member = await repo.findMember(accountId, identity);
      if (!member || isExpired(member, new Date())) throw memberNotFound(accountId, identity);
      if (member.state === 'active' && member.role === 'billing_admin' && (await repo.countActiveBillingAdmins(accountId)) <= 1) {
        throw lastBillingAdmin(accountId);
      }
      await repo.deleteMember(accountId, identity);
      await this.notifyRemoval(repo, caller, accountId, member);
      const what = member.state === 'pending' ? 'Invite withdrawn' : 'Member removed';
      return { message: `${what}: '${identity}' from account ${accountId}`, account_id: accountId, identity };
    });
  }

  /** Who hears of a removal: the removed identity when someone else removed it, else the billing_admins (and the inviter of a declined invite). */
  private async notifyRemoval(repo: AccountRepo, caller: string, accountId: string, member: MemberRow): Promise<void> {
    if (!this.notifier) return;
    const facts = { accountId, identity: member.identity, actor: caller };
    const within = repo.executor;
    if (caller !== member.identity) {
      const event = member.state === 'pending' ? events.inviteWithdrawn(facts) : events.memberRemoved(facts);
      await this.notifier.notify([member.identity], event, within);
    } else if (member.state === 'pending') {
      await this.notifier.notifyBillingAdmins(accountId, events.inviteDeclined({ ...facts, invitedBy: member.invited_by }), { also: [member.invited_by], within });
    } else {
      await this.notifier.notifyBillingAdmins(accountId, events.memberLeft({ ...facts, role: member.role }), { within });
    }
  }

  // ---- invoices (placeholders: there is no billing engine yet) ----

  listInvoices(): InvoiceView[] {
    return [];
  }

  getInvoice(invoiceId: string): InvoiceView {
    return { invoice_id: invoiceId, status: 'draft', amount_due: 0, currency: 'usd', lines: [] };
  }

  // ---- authorization ----

  /**
   * Checks the caller against the account with `repo` (a transaction's, when called inside one);
   * `lock` takes the account row lock that serialises membership changes.
   */
  private async authorize(repo: AccountRepo, caller: string, accountId: string, need: AccountRole, lock = false) {
    const account = await repo.findAccount(accountId, lock);
    if (!account || account.status !== 'active') throw accountNotFound(accountId);
    const membership = await repo.activeMembershipOf(caller);
    if (membership?.account_id !== accountId) {
      throw accountsError('NOT_A_MEMBER', `'${caller}' is not an active member of account ${accountId}`);
    }
    if (need === 'billing_admin' && membership.role !== 'billing_admin') {
      throw accountsError('BILLING_ADMIN_REQUIRED', `This action on account ${accountId} requires the billing_admin role`);
    }
    return { account, role: membership.role };
  }
}
