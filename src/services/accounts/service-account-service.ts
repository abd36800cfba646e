import { requireManage, type Principal } from '../../core/authz/index.ts';
import type { Db } from '../../core/db/index.ts';
import type { CreateCredentialInput, CredentialMetadata } from '../auth/index.ts';
import { isUniqueViolation } from './account-repo.ts';
import type { AccountService } from './account-service.ts';
import { accountsError } from './errors.ts';
import { ServiceAccountRepo, type ServiceAccountRow } from './service-account-repo.ts';

/** Service-account quota per plan, and the plan of accounts that were not given one (LAKEPORT_PLANS, LAKEPORT_DEFAULT_PLAN). */
export interface PlanSettings {
  quotas: Readonly<Record<string, number>>;
  defaultPlan: string;
}

/** The authentication service's credentials, for identities the account service has authorized a caller to manage. */
export interface ServiceAccountCredentials {
  create(principal: Principal, identity: string, input: CreateCredentialInput): Promise<CredentialMetadata & { secret: string }>;
  list(principal: Principal, identity: string): Promise<CredentialMetadata[]>;
  revoke(principal: Principal, identity: string, credentialId: string): Promise<{ message: string; credential_id: string; client_id: string; revoked_at: string }>;
  /** Revokes every credential of the identity and their refresh tokens; its access tokens are then refused. */
  revokeAll(identity: string): Promise<string[]>;
}

export interface ServiceAccountView {
  account_id: string;
  identity: string;
  added_by: string;
  added_at: string;
}

export interface Quota {
  plan: string;
  limit: number;
  used: number;
}

const accountNotFound = (accountId: string) => accountsError('ACCOUNT_NOT_FOUND', `Account ${accountId} not found`);
const notFound = (accountId: string, identity: string) =>
  accountsError('SERVICE_ACCOUNT_NOT_FOUND', `'${identity}' is not a service account of account ${accountId}`);

/** The plan's name and quota (null: the default plan); a plan no longer configured allows none. */
function quotaOf(plans: PlanSettings, plan: string | null, used: number): Quota {
  const name = plan ?? plans.defaultPlan;
  return { plan: name, limit: Object.hasOwn(plans.quotas, name) ? plans.quotas[name] : 0, used };
}

/**
 * Sets an account's plan (null: back to the default plan), for operators (`lakeport admin set-plan`);
 * a deactivated account too, so it keeps its plan if restored by hand. Throws on an unknown plan or account.
 */
export async function setAccountPlan(db: Db, plans: PlanSettings, accountId: string, plan: string | null): Promise<Quota> {
  if (plan !== null && !Object.hasOwn(plans.quotas, plan)) {
    throw new Error(`unknown plan '${plan}'; the configured plans are ${Object.keys(plans.quotas).join(', ')} (LAKEPORT_PLANS)`);
  }
  const repo = new ServiceAccountRepo(db.kysely);
  if (!(await repo.setPlan(accountId, plan))) throw accountNotFound(accountId);
  return quotaOf(plans, plan, await repo.count(accountId));
}

const view = (row: ServiceAccountRow): ServiceAccountView => ({
  account_id: row.account_id,
  identity: row.identity,
  added_by: row.added_by,
  added_at: row.added_at.toISOString(),
});


/**
 * An account's service accounts: machine identities that belong to it (exclusively, like membership),
 * counted against its plan's quota. Listing, adding and removing need an active member; minting and
 * revoking their credentials a billing_admin. Authorization answers as the account routes do:
 * 404 ACCOUNT_NOT_FOUND, 403 NOT_A_MEMBER, 403 BILLING_ADMIN_REQUIRED.
 */
export class ServiceAccountService {
  private readonly repo: ServiceAccountRepo;

  constructor(
    db: Db,
    private readonly accounts: AccountService,
    private readonly credentials: ServiceAccountCredentials,
    private readonly plans: PlanSettings,
  ) {
    this.repo = new ServiceAccountRepo(db.kysely);
  }

  private quotaOf(plan: string | null, used: number): Quota {
    return quotaOf(this.plans, plan, used);
  }

  async list(caller: Principal, accountId: string): Promise<{ account_id: string; service_accounts: ServiceAccountView[] } & Quota> {
    await this.accounts.requireActiveMember(caller.identity, accountId);
    const account = await this.repo.findAccount(accountId);
    if (!account) throw accountNotFound(accountId);
    const rows = await this.repo.list(accountId);
    return { account_id: accountId, service_accounts: rows.map(view), ...this.quotaOf(account.plan, rows.length) };
  }

  /**
   * Adds a service account under the account's row lock, so concurrent adds cannot pass the quota
   * together, and the identity's lock, so it cannot become a member elsewhere meanwhile.
   */
  async add(caller: Principal, accountId: string, identity: string): Promise<ServiceAccountView> {
    requireManage(caller, 'service_account.add');
    await this.accounts.requireActiveMember(caller.identity, accountId);
    const taken = () => accountsError('IDENTITY_IS_SERVICE_ACCOUNT', `'${identity}' is already a service account of another account; service accounts belong to one account`);
    try {
      return await this.repo.transaction(async (repo) => {
        const account = await repo.findAccount(accountId, true);
        if (!account || account.status !== 'active') throw accountNotFound(accountId);
        await repo.lockIdentity(identity);
        const existing = await repo.find(identity);
        if (existing?.account_id === accountId) throw accountsError('SERVICE_ACCOUNT_EXISTS', `'${identity}' is already a service account of account ${accountId}`);
        if (existing) throw taken();
        const membership = await repo.membershipOf(identity, accountId);
        if (membership?.account_id === accountId) {
          throw accountsError('ALREADY_MEMBER', `'${identity}' is a member of (or invited to) account ${accountId}; a member cannot be a service account`);
        }
        if (membership) {
          throw accountsError('MEMBER_OF_ANOTHER_ACCOUNT', `'${identity}' is already a member of another account; membership is exclusive`);
        }
        const quota = this.quotaOf(account.plan, await repo.count(accountId));
        if (quota.used >= quota.limit) {
          throw accountsError(
            'SERVICE_ACCOUNT_QUOTA',
            `Account ${accountId} has ${quota.used} of the ${quota.limit} service accounts its plan '${quota.plan}' allows; remove one or change the plan`,
            { extra: { ...quota } },
          );
        }
        return view(await repo.insert({ identity, account_id: accountId, added_by: caller.identity, added_at: new Date() }));
      });
    } catch (error) {
      // Another account added the identity between our check and insert (the primary key).
      if (isUniqueViolation(error)) throw taken();
      throw error;
    }
  }

  /**
   * Removes a service account and revokes its credentials (and refresh tokens), so its access tokens
   * are refused too. Credentials are revoked before and after the row goes: one minted meanwhile is
   * caught by the second pass or by the mint's own re-check.
   */
  async remove(caller: Principal, accountId: string, identity: string) {
    if (caller.identity === identity) {
      throw accountsError('SERVICE_ACCOUNT_SELF_REMOVAL', `A service account cannot remove itself; ask a member of account ${accountId}`);
    }
    requireManage(caller, 'service_account.remove');
    await this.accounts.requireActiveMember(caller.identity, accountId);
    await this.requireServiceAccount(accountId, identity);
    const revoked = await this.credentials.revokeAll(identity);
    if (!(await this.repo.delete(accountId, identity))) throw notFound(accountId, identity);
    revoked.push(...(await this.credentials.revokeAll(identity)));
    return {
      message: `Service account removed: '${identity}' from account ${accountId}`,
      account_id: accountId,
      identity,
      revoked_credentials: revoked,
    };
  }

  // ---- credentials of a service account (billing_admin) ----

  async createCredential(caller: Principal, accountId: string, identity: string, input: CreateCredentialInput) {
    await this.requireCredentialAdmin(caller, accountId, identity);
    const created = await this.credentials.create(caller, identity, input);
    // Removed meanwhile: its removal may have revoked before this credential existed.
    if ((await this.repo.find(identity))?.account_id !== accountId) {
      await this.credentials.revoke(caller, identity, created.credential_id);
      throw notFound(accountId, identity);
    }
    return created;
  }

  async listCredentials(caller: Principal, accountId: string, identity: string): Promise<CredentialMetadata[]> {
    await this.requireCredentialAdmin(caller, accountId, identity);
    return this.credentials.list(caller, identity);
  }

  async revokeCredential(caller: Principal, accountId: string, identity: string, credentialId: string) {
    await this.requireCredentialAdmin(caller, accountId, identity);
    return this.credentials.revoke(caller, identity, credentialId);
  }

  private async requireCredentialAdmin(caller: Principal, accountId: string, identity: string) {
    requireManage(caller, 'service_account.credentials');
    await this.accounts.requireBillingAdmin(caller.identity, accountId);
    await this.requireServiceAccount(accountId, identity);
  }

  private async requireServiceAccount(accountId: string, identity: string) {
    if ((await this.repo.find(identity))?.account_id !== accountId) throw notFound(accountId, identity);
  }
}
