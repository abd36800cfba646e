import type { Principal } from '../../core/authz/index.ts';
import { signInFactsOf, type SignInFacts, type SignInPolicy, type SignInVerdict } from '../../core/authz/sign-in-policy.ts';
import { newId } from '../../core/crypto/index.ts';
import type { Db } from '../../core/db/index.ts';
import { RequestValidationError } from '../../core/errors/index.ts';
import { AccountRepo } from './account-repo.ts';
import type { AccountService } from './account-service.ts';
import { parseDomainName } from './domain-names.ts';
import { accountsError } from './errors.ts';
import { DEFAULT_IDP_POLICY, evaluatePolicy, type IdpPolicyDocument } from './idp-policy.ts';
import { IdpPolicyRepo, type IdpPolicyRow, type LastSignInRow } from './idp-policy-repo.ts';

/** DELETE needs an interactive session whose provider authentication is at most this old. */
export const FRESH_SIGN_IN_MINUTES = 10;
export const DENIALS_DEFAULT_LIMIT = 50;
export const DENIALS_MAX_LIMIT = 500;

export interface IdpPolicyView extends IdpPolicyDocument {
  account_id: string;
  /** 0 until the first write; every PUT and DELETE adds one. */
  version: number;
  /** Whether a document is stored (false: the defaults apply). */
  configured: boolean;
  updated_by: string | null;
  updated_at: string | null;
}

function documentOf(row: IdpPolicyRow | undefined): IdpPolicyDocument {
  return row?.document ? { ...DEFAULT_IDP_POLICY, ...(row.document as Partial<IdpPolicyDocument>) } : DEFAULT_IDP_POLICY;
}

function view(accountId: string, row: IdpPolicyRow | undefined): IdpPolicyView {
  return {
    account_id: accountId,
    ...documentOf(row),
    version: row?.version ?? 0,
    configured: Boolean(row?.document),
    updated_by: row?.updated_by ?? null,
    updated_at: row?.updated_at.toISOString() ?? null,
  };
}

export interface IdpPolicyServiceDeps {
  db: Db;
  accounts: AccountService;
  /** DomainService.isDomainVerifiedBy. */
  isDomainVerifiedBy(accountId: string, domain: string): Promise<boolean>;
  /** Ends an identity's interactive sessions (the auth module's); their access tokens stop at the verifier's recheck. */
  endInteractiveSessions?(identity: string): Promise<unknown>;
  now?: () => Date;
}

/** The account IdP policy on /control (docs/idp-policy.md): read, replace, delete, preview, denials. */
export class IdpPolicyService {
  private readonly repo: IdpPolicyRepo;
  private readonly now: () => Date;

  constructor(private readonly deps: IdpPolicyServiceDeps) {
    this.repo = new IdpPolicyRepo(deps.db.kysely);
    this.now = deps.now ?? (() => new Date());
  }

  async get(caller: string, accountId: string): Promise<IdpPolicyView> {
    await this.deps.accounts.requireActiveMember(caller, accountId);
    return view(accountId, await this.repo.find(accountId));
  }

  /** Whole-document replace; 409 IDP_POLICY_WOULD_DENY_YOU when it would refuse the caller's own sign-in, unless `force`. */
  async put(principal: Principal, accountId: string, input: IdpPolicyDocument, force: boolean): Promise<IdpPolicyView> {
    await this.deps.accounts.requireBillingAdmin(principal.identity, accountId);
    const document = await this.validated(accountId, input);
    if (!force) {
      const refusal = await this.selfRefusal(principal, document);
      if (refusal) {
        throw accountsError(
          'IDP_POLICY_WOULD_DENY_YOU',
          `This policy would deny your own sign-in (${refusal.code}: ${refusal.reason}); fix it, or PUT again with ?force=true to write it anyway`,
        );
      }
    }
    return this.written(principal, accountId, document);
  }

  /**
   * Writes the policy (a new version), then ends the members' interactive sessions: sessions begun
   * under the old version would be refused at their next refresh anyway, and their access tokens
   * stop at the verifier's recheck instead of living on until they expire.
   */
  private async written(principal: Principal, accountId: string, document: IdpPolicyDocument | null): Promise<IdpPolicyView> {
    const row = await this.repo.write(accountId, document, principal.identity);
    if (this.deps.endInteractiveSessions) {
      const members = await this.deps.accounts.listMembers(principal.identity, accountId);
      for (const member of members.filter((m) => m.state === 'active')) await this.deps.endInteractiveSessions(member.identity);
    }
    return view(accountId, row);
  }

  /** Removes the requirements (the defaults apply again) and increments the version; needs a fresh interactive session. */
  async remove(principal: Principal, accountId: string): Promise<IdpPolicyView> {
    await this.deps.accounts.requireBillingAdmin(principal.identity, accountId);
    if (!principal.authTime) {
      throw accountsError(
        'FRESH_SIGN_IN_REQUIRED',
        `Deleting the IdP policy needs an interactive session; a machine credential never may. Sign in at /auth/login and call again within ${FRESH_SIGN_IN_MINUTES} minutes`,
      );
    }
    const ageMs = this.now().getTime() - principal.authTime.getTime();
    if (ageMs > FRESH_SIGN_IN_MINUTES * 60_000) {
      throw accountsError(
        'FRESH_SIGN_IN_REQUIRED',
        `Deleting the IdP policy needs a sign-in from the last ${FRESH_SIGN_IN_MINUTES} minutes; yours was at ${principal.authTime.toISOString()}. Sign in again at /auth/login (with prompt=login) and retry`,
      );
    }
    return this.written(principal, accountId, null);
  }

  /** Judges the candidate against each active member's last admitted sign-in; writes nothing. */
  async preview(caller: string, accountId: string, input: IdpPolicyDocument) {
    await this.deps.accounts.requireBillingAdmin(caller, accountId);
    const candidate = await this.validated(accountId, input);
    const now = this.now();
    const members = (await this.repo.membersWithLastSignIn(accountId)).map((m) => {
      if (m.provider === null || m.auth_time === null) {
        const reason = 'No interactive sign-in recorded; the policy will judge the first one';
        return { identity: m.identity, role: m.role, outcome: 'unknown' as const, code: null, reason, last_sign_in_at: null };
      }
      const last = { ...m, provider: m.provider, auth_time: m.auth_time, issuer: m.issuer!, subject: m.subject!, email_verified: m.email_verified!, amr: m.amr!, groups: m.groups! };
      const outcome = evaluatePolicy(candidate, signInFactsOf(m.identity, last), now);
      return {
        identity: m.identity,
        role: m.role,
        outcome: outcome.allowed ? ('admitted' as const) : ('denied' as const),
        code: outcome.allowed ? null : outcome.code,
        reason: outcome.allowed ? null : outcome.reason,
        last_sign_in_at: m.signed_in_at!.toISOString(),
      };
    });
    const count = (o: string) => members.filter((m) => m.outcome === o).length;
    return { account_id: accountId, policy: candidate, evaluated_at: now.toISOString(), admitted: count('admitted'), denied: count('denied'), unknown: count('unknown'), members };
  }

  async denials(caller: string, accountId: string, limit: number) {
    await this.deps.accounts.requireActiveMember(caller, accountId);
    const rows = await this.repo.denials(accountId, limit);
    return {
      account_id: accountId,
      denials: rows.map((r) => ({ denial_id: r.denial_id, identity: r.identity, provider: r.provider, email: r.email, code: r.code, reason: r.reason, at: r.at.toISOString() })),
    };
  }

  /** Domains normalised; each email domain must be verified by this account (422 otherwise). */
  private async validated(accountId: string, input: IdpPolicyDocument): Promise<IdpPolicyDocument> {
    const domains = async (list: string[] | null, loc: (string | number)[]) => {
      if (list === null) return null;
      const out: string[] = [];
      for (const [i, raw] of list.entries()) {
        const parsed = parseDomainName(raw);
        if (!parsed.ok) throw RequestValidationError.at([...loc, i], parsed.reason);
        if (!(await this.deps.isDomainVerifiedBy(accountId, parsed.name.ascii))) {
          throw RequestValidationError.at(
            [...loc, i],
            `${parsed.name.ascii} is not a domain this account has verified; claim and verify it first (POST /control/v1/accounts/${accountId}/domains)`,
          );
        }
        if (!out.includes(parsed.name.ascii)) out.push(parsed.name.ascii);
      }
      return out;
    };
    const block = async (name: 'idp_a' | 'idp_b') => {
      const b = input[name];
      return b === null ? null : { allowed_email_domains: await domains(b.allowed_email_domains, ['body', name, 'allowed_email_domains']), required_groups: b.required_groups };
    };
    return {
      ...input,
      providers: input.providers === null ? null : [...new Set(input.providers)],
      email_domains: await domains(input.email_domains, ['body', 'email_domains']),
      idp_a: await block('idp_a'),
      idp_b: await block('idp_b'),
    };
  }

  /**
   * Why `policy` would refuse the caller, or undefined. An interactive caller is judged as a new
   * sign-in with its session's facts (its last recorded sign-in, with the token's auth_time, amr and
   * provider); a machine credential by machine_credentials: a policy that stops members minting.
   */
  private async selfRefusal(principal: Principal, policy: IdpPolicyDocument): Promise<{ code: string; reason: string } | undefined> {
    if (!principal.authTime) {
      if (policy.enforced && policy.machine_credentials?.members_may_mint === false) {
        return { code: 'MACHINE_CREDENTIALS_NOT_ALLOWED', reason: 'you are calling with a machine credential, and the policy stops members minting machine credentials' };
      }
      return undefined;
    }
    const last = await this.repo.lastSignIn(principal.identity);
    const provider = (principal.provider ?? last?.provider) as SignInFacts['provider'] | undefined;
    if (provider === undefined) return undefined;
    const facts: SignInFacts = {
      ...(last
        ? signInFactsOf(principal.identity, last)
        : { identity: principal.identity, issuer: '', subject: '', email: null, emailVerified: false, groups: [], amr: [], authTime: principal.authTime, provider }),
      provider,
      authTime: principal.authTime,
      amr: principal.amr ?? last?.amr ?? [],
    };
    const outcome = evaluatePolicy(policy, facts, this.now());
    return outcome.allowed ? undefined : outcome;
  }
}

/**
 * The SignInPolicy the auth module calls (core/authz/sign-in-policy.ts): judges interactive sign-ins
 * and refreshes of an account's members by its policy, records denials and last sign-ins, and
 * applies machine_credentials to members minting their own credentials.
 */
export class AccountSignInPolicy implements SignInPolicy {
  private readonly repo: IdpPolicyRepo;
  private readonly members: AccountRepo;

  constructor(db: Db, private readonly now: () => Date = () => new Date()) {
    this.repo = new IdpPolicyRepo(db.kysely);
    this.members = new AccountRepo(db.kysely);
  }

  private async policyOf(identity: string) {
    const membership = await this.members.activeMembershipOf(identity);
    if (!membership) return undefined;
    const row = await this.repo.find(membership.account_id);
    return { accountId: membership.account_id, policy: documentOf(row), version: row?.version ?? 0 };
  }

  async judgeSignIn(facts: SignInFacts): Promise<SignInVerdict> {
    const now = this.now();
    const found = await this.policyOf(facts.identity);
    const outcome = found ? evaluatePolicy(found.policy, facts, now) : ({ allowed: true } as const);
    const accountId = found?.accountId ?? null;
    const policyVersion = found?.version ?? 0;
    if (!outcome.allowed) {
      await this.deny(accountId!, facts, outcome, now);
      return { allowed: false, accountId, policyVersion, code: outcome.code, reason: outcome.reason };
    }
    await this.repo.recordSignIn({
      identity: facts.identity,
      account_id: accountId,
      provider: facts.provider,
      issuer: facts.issuer,
      subject: facts.subject,
      email: facts.email,
      email_verified: facts.emailVerified,
      amr: facts.amr,
      groups: facts.groups,
      auth_time: facts.authTime,
      signed_in_at: now,
    });
    return { allowed: true, accountId, policyVersion };
  }

  async judgeRefresh(facts: SignInFacts, session: { startedAt: Date; policyVersion: number }): Promise<SignInVerdict> {
    const now = this.now();
    const found = await this.policyOf(facts.identity);
    if (!found) return { allowed: true, accountId: null, policyVersion: 0 };
    const { accountId, version: policyVersion } = found;
    if (session.policyVersion < policyVersion) {
      const reason = `The account's sign-in policy changed (version ${session.policyVersion} → ${policyVersion}) since this session began; sign in again`;
      return { allowed: false, accountId, policyVersion, code: 'POLICY_CHANGED', reason };
    }
    const outcome = evaluatePolicy(found.policy, facts, now, session);
    if (outcome.allowed) return { allowed: true, accountId, policyVersion };
    await this.deny(accountId, facts, outcome, now);
    return { allowed: false, accountId, policyVersion, code: outcome.code, reason: outcome.reason };
  }

  async checkCredentialMint(identity: string, expiresInDays: number | null): Promise<void> {
    const found = await this.policyOf(identity);
    const rules = found?.policy.enforced ? found.policy.machine_credentials : null;
    if (!rules) return;
    if (!rules.members_may_mint) {
      throw accountsError('MACHINE_CREDENTIALS_NOT_ALLOWED', `The sign-in policy of account ${found!.accountId} does not let members mint machine credentials`);
    }
    if (rules.max_lifetime_days !== null && (expiresInDays === null || expiresInDays > rules.max_lifetime_days)) {
      throw accountsError(
        'CREDENTIAL_LIFETIME_TOO_LONG',
        `The sign-in policy of account ${found!.accountId} limits machine credentials to ${rules.max_lifetime_days} days; ask for expires_in_days of at most ${rules.max_lifetime_days}`,
      );
    }
  }

  private async deny(accountId: string, facts: SignInFacts, outcome: { code: string; reason: string }, at: Date) {
    await this.repo.recordDenial({ denial_id: newId('deny'), account_id: accountId, identity: facts.identity, provider: facts.provider, email: facts.email, code: outcome.code, reason: outcome.reason, at });
  }
}
