import type { SignInFacts } from '../../core/authz/sign-in-policy.ts';

/** Which provider may be used and who may use it (docs/idp-policy.md). */
export interface ProviderPolicy {
  /** The email's domain (or a subdomain of it) must be one of these; null: any. */
  allowed_email_domains: string[] | null;
  /** The provider's groups claim must hold at least one of these; null: no group needed. */
  required_groups: string[] | null;
}

export interface MachineCredentialsPolicy {
  /** Whether members may mint machine credentials for themselves. */
  members_may_mint: boolean;
  /** The longest lifetime of a credential a member mints, in days; null: no limit (never-expiring allowed). */
  max_lifetime_days: number | null;
}

/** The spec's IdpPolicyRequest, as stored (every field present; null for "none"). */
export interface IdpPolicyDocument {
  enforced: boolean;
  providers: ('idp_a' | 'idp_b')[] | null;
  idp_a: ProviderPolicy | null;
  idp_b: ProviderPolicy | null;
  allow_password_auth: boolean;
  require_mfa: boolean;
  max_auth_age_hours: number | null;
  max_session_hours: number | null;
  email_domains: string[] | null;
  machine_credentials: MachineCredentialsPolicy | null;
}

/** The spec's defaults: the policy of an account that has none (nothing enforced). */
export const DEFAULT_IDP_POLICY: IdpPolicyDocument = {
  enforced: false,
  providers: null,
  idp_a: null,
  idp_b: null,
  allow_password_auth: true,
  require_mfa: false,
  max_auth_age_hours: null,
  max_session_hours: null,
  email_domains: null,
  machine_credentials: null,
};

/** RFC 8176 amr values that count as a second factor (or say multi-factor outright). */
export const MFA_AMR = ['mfa', 'otp', 'hwk', 'swk', 'sms', 'fpt', 'face', 'iris', 'retina', 'vbm'] as const;
/** amr values that are knowledge factors: an amr made of only these (or empty) is password-only. */
export const PASSWORD_AMR = ['pwd', 'pin', 'kba'] as const;

export type PolicyDenialCode =
  | 'PROVIDER_NOT_ALLOWED'
  | 'PASSWORD_AUTH_NOT_ALLOWED'
  | 'MFA_REQUIRED'
  | 'AUTH_TOO_OLD'
  | 'SESSION_TOO_LONG'
  | 'EMAIL_NOT_VERIFIED'
  | 'EMAIL_DOMAIN_NOT_ALLOWED'
  | 'GROUP_REQUIRED';

export type PolicyOutcome = { allowed: true } | { allowed: false; code: PolicyDenialCode; reason: string };

const HOUR_MS = 3_600_000;

/** The lowercased domain of an email address, or null. */
export function emailDomain(email: string | null): string | null {
  const at = email?.lastIndexOf('@') ?? -1;
  if (!email || at < 0) return null;
  return email.slice(at + 1).toLowerCase().replace(/\.$/, '') || null;
}

/** Whether `domain` is one of `allowed` or a subdomain of one. */
export function domainAllowed(domain: string, allowed: string[]): boolean {
  return allowed.some((d) => domain === d.toLowerCase() || domain.endsWith(`.${d.toLowerCase()}`));
}

const deny = (code: PolicyDenialCode, reason: string): PolicyOutcome => ({ allowed: false, code, reason });

function checkEmail(facts: SignInFacts, allowed: string[], where: string): PolicyOutcome | undefined {
  if (!facts.email || !facts.emailVerified) {
    return deny('EMAIL_NOT_VERIFIED', `${where} limits sign-in to email domains ${allowed.join(', ')}, and the provider sent no verified email`);
  }
  const domain = emailDomain(facts.email);
  if (domain === null || !domainAllowed(domain, allowed)) {
    return deny('EMAIL_DOMAIN_NOT_ALLOWED', `${facts.email} is not in the allowed email domains of ${where} (${allowed.join(', ')})`);
  }
  return undefined;
}

/**
 * Whether the policy admits a sign-in (or, given `session`, a refresh of a session begun at
 * `session.startedAt`) at `now`. Pure: every field of the policy, in the order docs/idp-policy.md lists.
 */
export function evaluatePolicy(policy: IdpPolicyDocument, facts: SignInFacts, now: Date, session?: { startedAt: Date }): PolicyOutcome {
  if (!policy.enforced) return { allowed: true };
  if (policy.providers !== null && !policy.providers.includes(facts.provider)) {
    return deny('PROVIDER_NOT_ALLOWED', `The account allows sign-in only with ${policy.providers.join(', ')}, not ${facts.provider}`);
  }
  const amr = facts.amr;
  if (!policy.allow_password_auth && amr.every((m) => (PASSWORD_AMR as readonly string[]).includes(m))) {
    return deny('PASSWORD_AUTH_NOT_ALLOWED', `The account does not allow password-only sign-in (amr: ${JSON.stringify(amr)}); sign in with a stronger method`);
  }
  if (policy.require_mfa && !amr.some((m) => (MFA_AMR as readonly string[]).includes(m))) {
    return deny('MFA_REQUIRED', `The account requires multi-factor authentication (amr ${MFA_AMR.join(', ')}); the provider reported ${JSON.stringify(amr)}`);
  }
  if (policy.max_auth_age_hours !== null && now.getTime() - facts.authTime.getTime() > policy.max_auth_age_hours * HOUR_MS) {
    return deny('AUTH_TOO_OLD', `You authenticated at the provider at ${facts.authTime.toISOString()}, more than ${policy.max_auth_age_hours} h ago; sign in again`);
  }
  if (session && policy.max_session_hours !== null && now.getTime() - session.startedAt.getTime() > policy.max_session_hours * HOUR_MS) {
    return deny('SESSION_TOO_LONG', `The session began at ${session.startedAt.toISOString()}, more than ${policy.max_session_hours} h ago; sign in again`);
  }
  if (policy.email_domains !== null) {
    const refused = checkEmail(facts, policy.email_domains, 'the account');
    if (refused) return refused;
  }
  const block = policy[facts.provider];
  if (block) {
    if (block.allowed_email_domains !== null) {
      const refused = checkEmail(facts, block.allowed_email_domains, `the ${facts.provider} policy`);
      if (refused) return refused;
    }
    if (block.required_groups !== null && !block.required_groups.some((g) => facts.groups.includes(g))) {
      return deny('GROUP_REQUIRED', `The ${facts.provider} policy requires membership of one of the groups ${block.required_groups.join(', ')}`);
    }
  }
  return { allowed: true };
}
