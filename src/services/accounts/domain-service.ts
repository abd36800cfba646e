import crypto from 'node:crypto';
import { domainToUnicode } from 'node:url';
import { base62 } from '../../core/crypto/index.ts';
import type { Db, DomainCheckOutcome } from '../../core/db/index.ts';
import { RequestValidationError } from '../../core/errors/index.ts';
import type { Logger } from '../../core/logger.ts';
import { isUniqueViolation } from './account-repo.ts';
import type { AccountService } from './account-service.ts';
import type { TxtResolver } from './dns-txt.ts';
import { challengeName, challengeValue, parseDomainName, type DomainName } from './domain-names.ts';
import { DomainRepo, ONE_VERIFIED_INDEX, type DomainRow } from './domain-repo.ts';
import { accountsError } from './errors.ts';

export interface TxtRecord {
  name: string;
  type: 'TXT';
  value: string;
}

export interface DomainView {
  account_id: string;
  domain: string;
  domain_unicode: string;
  state: 'unverified' | 'verified';
  token: string;
  record: TxtRecord;
  claimed_at: string;
  claimed_by: string;
  verified_at: string | null;
  verified_by: string | null;
  last_checked_at: string | null;
  last_outcome: DomainCheckOutcome | null;
  last_error: string | null;
  last_found: string[] | null;
}

/** The result of one DNS check, as POST .../verify reports it beside the stored state. */
export interface DomainCheck {
  outcome: DomainCheckOutcome;
  /** null when verified; DOMAIN_RECORD_MISSING (publish the record) or DOMAIN_DNS_UNAVAILABLE (wait and retry). */
  code: 'DOMAIN_RECORD_MISSING' | 'DOMAIN_DNS_UNAVAILABLE' | null;
  detail: string;
  /** The resolver's code: ENOTFOUND (NXDOMAIN), ENODATA (no TXT), ETIMEOUT, ESERVFAIL, EREFUSED…; null when TXT records were found. */
  dns_code: string | null;
  /** The TXT values at the challenge name (each record's strings joined). */
  found: string[];
  /** Whether asking again later may give another answer without anyone changing DNS. */
  retry: boolean;
}

export interface DomainVerifiedEvent {
  account_id: string;
  domain: string;
  domain_unicode: string;
  verified_by: string;
  verified_at: string;
}

export interface DomainServiceDeps {
  db: Db;
  accounts: AccountService;
  resolveTxt: TxtResolver;
  /** Called once when a claim first becomes verified (notifications); its failure is logged, not reported. */
  onVerified?: (event: DomainVerifiedEvent) => void | Promise<void>;
  log: Logger;
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export function domainView(row: DomainRow): DomainView {
  return {
    account_id: row.account_id,
    domain: row.domain,
    domain_unicode: domainToUnicode(row.domain),
    state: row.verified_at === null ? 'unverified' : 'verified',
    token: row.token,
    record: { name: challengeName(row.domain), type: 'TXT', value: challengeValue(row.token) },
    claimed_at: row.claimed_at.toISOString(),
    claimed_by: row.claimed_by,
    verified_at: iso(row.verified_at),
    verified_by: row.verified_by,
    last_checked_at: iso(row.last_checked_at),
    last_outcome: row.last_outcome,
    last_error: row.last_error,
    last_found: row.last_found,
  };
}

/** The domain as given in the body or path, normalised, or a 422 at `loc`. */
function domainAt(loc: string[], input: string): DomainName {
  const parsed = parseDomainName(input);
  if (!parsed.ok) throw RequestValidationError.at(loc, parsed.reason);
  return parsed.name;
}

const notFound = (accountId: string, domain: string) =>
  accountsError('DOMAIN_NOT_FOUND', `Account ${accountId} has no claim on ${domain}; claim it first with POST /v1/accounts/${accountId}/domains`);
const verifiedElsewhere = (domain: string) =>
  accountsError('DOMAIN_VERIFIED_ELSEWHERE', `${domain} is verified by another account; it must release the domain before this account can claim or verify it`);

/**
 * Domains a billing account claims and proves it controls with a TXT record (docs/domains.md).
 * Listing and verifying need an active member; claiming and releasing a billing_admin. Callers who
 * are not members get the account service's NOT_A_MEMBER / ACCOUNT_NOT_FOUND.
 */
export class DomainService {
  private readonly repo: DomainRepo;

  constructor(private readonly deps: DomainServiceDeps) {
    this.repo = new DomainRepo(deps.db.kysely);
  }

  // ---- for other services ----

  /** Whether `accountId` (an active account) holds `domain` verified; an invalid name is false. */
  async isDomainVerifiedBy(accountId: string, domain: string): Promise<boolean> {
    const parsed = parseDomainName(domain);
    return parsed.ok && this.repo.isVerified(accountId, parsed.name.ascii);
  }

  // ---- routes ----

  async list(caller: string, accountId: string): Promise<DomainView[]> {
    await this.deps.accounts.requireActiveMember(caller, accountId);
    return (await this.repo.list(accountId)).map(domainView);
  }

  /** Claims a domain, or returns the account's existing claim (same token, verification kept). */
  async claim(caller: string, accountId: string, domainInput: string): Promise<DomainView> {
    await this.deps.accounts.requireBillingAdmin(caller, accountId);
    const { ascii } = domainAt(['body', 'domain'], domainInput);
    return this.repo.transaction(async (repo) => {
      if (await repo.verifiedElsewhere(ascii, accountId)) throw verifiedElsewhere(ascii);
      const row = await repo.claim({
        account_id: accountId,
        domain: ascii,
        token: base62(crypto.randomBytes(16)).padStart(22, '0'),
        claimed_by: caller,
        claimed_at: new Date(),
      });
      return domainView(row);
    });
  }

  async release(caller: string, accountId: string, domainInput: string) {
    await this.deps.accounts.requireBillingAdmin(caller, accountId);
    const { ascii, unicode } = domainAt(['path', 'domain'], domainInput);
    const row = await this.repo.release(accountId, ascii);
    if (!row) throw notFound(accountId, ascii);
    return {
      message: `Released ${ascii} from account ${accountId}`,
      account_id: accountId,
      domain: ascii,
      domain_unicode: unicode,
      was_verified: row.verified_at !== null,
    };
  }

  /**
   * Looks the TXT record up and records the outcome. A failing check never unverifies a verified
   * claim: it records last_checked_at, last_outcome and last_error and keeps the state.
   */
  async verify(caller: string, accountId: string, domainInput: string): Promise<DomainView & { check: DomainCheck }> {
    await this.deps.accounts.requireActiveMember(caller, accountId);
    const { ascii } = domainAt(['path', 'domain'], domainInput);
    const claim = await this.repo.find(accountId, ascii);
    if (!claim) throw notFound(accountId, ascii);
    if (await this.repo.verifiedElsewhere(ascii, accountId)) throw verifiedElsewhere(ascii);

    const check = await this.check(claim);
    const record = { now: new Date(), outcome: check.outcome, error: check.code === null ? null : `${check.code}: ${check.detail}`, found: check.found };
    let written: { before: DomainRow; after: DomainRow } | undefined;
    try {
      written = await this.repo.transaction(async (repo) => {
        const before = await repo.find(accountId, ascii, true);
        if (!before) return undefined; // released meanwhile
        if (check.outcome === 'verified') await repo.dropVerifiedOfInactive(ascii);
        const after = await repo.recordCheck(accountId, ascii, record, check.outcome === 'verified' ? caller : undefined);
        return { before, after: after! };
      });
    } catch (error) {
      // Another account verified the domain between our check and this write.
      if (isUniqueViolation(error, ONE_VERIFIED_INDEX)) throw verifiedElsewhere(ascii);
      throw error;
    }
    if (!written) throw notFound(accountId, ascii);
    const view = domainView(written.after);
    // Under the row lock, so two verifies racing notify once.
    if (written.before.verified_at === null && written.after.verified_at !== null) await this.notifyVerified(view);
    return { ...view, check };
  }

  private async check(claim: DomainRow): Promise<DomainCheck> {
    const name = challengeName(claim.domain);
    const expected = challengeValue(claim.token);
    const lookup = await this.deps.resolveTxt(name);
    if (lookup.kind === 'failed') {
      return {
        outcome: 'dns_unavailable',
        code: 'DOMAIN_DNS_UNAVAILABLE',
        detail: `The TXT lookup of ${name} got no answer (${lookup.code}); nothing is known about the record yet: wait and try again`,
        dns_code: lookup.code,
        found: [],
        retry: true,
      };
    }
    const found = lookup.kind === 'found' ? lookup.records : [];
    if (found.includes(expected)) {
      return { outcome: 'verified', code: null, detail: `Found ${expected} at ${name}`, dns_code: null, found, retry: false };
    }
    const seen =
      lookup.kind === 'absent'
        ? lookup.code === 'ENOTFOUND'
          ? `${name} does not exist (NXDOMAIN)`
          : `${name} has no TXT records`
        : `${name} has TXT records, but not the expected one`;
    return {
      outcome: 'record_missing',
      code: 'DOMAIN_RECORD_MISSING',
      detail: `${seen}: publish a TXT record ${name} with the value ${expected} (DNS changes may take a while to propagate)`,
      dns_code: lookup.kind === 'absent' ? lookup.code : null,
      found,
      retry: false,
    };
  }

  private async notifyVerified(view: DomainView): Promise<void> {
    if (!this.deps.onVerified) return;
    try {
      await this.deps.onVerified({
        account_id: view.account_id,
        domain: view.domain,
        domain_unicode: view.domain_unicode,
        verified_by: view.verified_by!,
        verified_at: view.verified_at!,
      });
    } catch (error) {
      this.deps.log.error({ err: error, account_id: view.account_id, domain: view.domain }, 'domain verified hook failed');
    }
  }
}
