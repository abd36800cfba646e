/** evaluatePolicy, field by field (docs/idp-policy.md). */
import { describe, expect, it } from 'vitest';
import type { SignInFacts } from '../../core/authz/sign-in-policy.ts';
import { DEFAULT_IDP_POLICY, evaluatePolicy, type IdpPolicyDocument } from './idp-policy.ts';

const now = new Date('2026-11-24T12:00:00Z');
const hoursAgo = (h: number) => new Date(now.getTime() - h * 3_600_000);
const facts = (over: Partial<SignInFacts> = {}): SignInFacts => ({
  identity: 'alice',
  provider: 'idp_a',
  issuer: 'https://idp-a.test',
  subject: 'sub-1',
  email: 'alice@acme.test',
  emailVerified: true,
  amr: ['pwd', 'mfa'],
  authTime: hoursAgo(1),
  groups: ['staff'],
  ...over,
});
const policy = (over: Partial<IdpPolicyDocument>): IdpPolicyDocument => ({ ...DEFAULT_IDP_POLICY, enforced: true, ...over });
const code = (p: IdpPolicyDocument, f: SignInFacts, session?: { startedAt: Date }) => {
  const out = evaluatePolicy(p, f, now, session);
  return out.allowed ? 'allowed' : out.code;
};

describe('evaluatePolicy', () => {
  it('enforced=false admits everything, however strict the rest', () => {
    const strict = policy({ enforced: false, providers: ['idp_b'], require_mfa: true, allow_password_auth: false, email_domains: ['other.test'], max_auth_age_hours: 1 });
    expect(code(strict, facts({ amr: ['pwd'], authTime: hoursAgo(100), email: null }))).toBe('allowed');
  });

  it('defaults (enforced, nothing else) admit a plain password sign-in', () => {
    expect(code(policy({}), facts({ amr: ['pwd'], email: null, emailVerified: false, groups: [] }))).toBe('allowed');
  });

  it('providers: only the listed ones', () => {
    expect(code(policy({ providers: ['idp_b'] }), facts())).toBe('PROVIDER_NOT_ALLOWED');
    expect(code(policy({ providers: ['idp_b'] }), facts({ provider: 'idp_b' }))).toBe('allowed');
    expect(code(policy({ providers: ['idp_a', 'idp_b'] }), facts())).toBe('allowed');
  });

  it("allow_password_auth=false: amr only of knowledge factors (or empty) is refused", () => {
    const p = policy({ allow_password_auth: false });
    expect(code(p, facts({ amr: ['pwd'] }))).toBe('PASSWORD_AUTH_NOT_ALLOWED');
    expect(code(p, facts({ amr: [] }))).toBe('PASSWORD_AUTH_NOT_ALLOWED');
    expect(code(p, facts({ amr: ['pwd', 'pin'] }))).toBe('PASSWORD_AUTH_NOT_ALLOWED');
    expect(code(p, facts({ amr: ['pwd', 'otp'] }))).toBe('allowed');
    expect(code(p, facts({ amr: ['hwk'] }))).toBe('allowed');
    expect(code(policy({ allow_password_auth: true }), facts({ amr: ['pwd'] }))).toBe('allowed');
  });

  it('require_mfa: mfa or a second-factor amr value', () => {
    const p = policy({ require_mfa: true });
    expect(code(p, facts({ amr: ['pwd'] }))).toBe('MFA_REQUIRED');
    expect(code(p, facts({ amr: [] }))).toBe('MFA_REQUIRED');
    for (const m of ['mfa', 'otp', 'hwk', 'swk', 'sms', 'fpt', 'face']) expect(code(p, facts({ amr: ['pwd', m] }))).toBe('allowed');
  });

  it('max_auth_age_hours: auth_time older than the limit is refused, at sign-in and at refresh', () => {
    const p = policy({ max_auth_age_hours: 8 });
    expect(code(p, facts({ authTime: hoursAgo(7.9) }))).toBe('allowed');
    expect(code(p, facts({ authTime: hoursAgo(8.1) }))).toBe('AUTH_TOO_OLD');
    expect(code(p, facts({ authTime: hoursAgo(8.1) }), { startedAt: hoursAgo(1) })).toBe('AUTH_TOO_OLD');
  });

  it('max_session_hours: applies at refresh to the session start only', () => {
    const p = policy({ max_session_hours: 12 });
    expect(code(p, facts(), { startedAt: hoursAgo(11) })).toBe('allowed');
    expect(code(p, facts(), { startedAt: hoursAgo(13) })).toBe('SESSION_TOO_LONG');
    expect(code(p, facts({ authTime: hoursAgo(100) }))).toBe('allowed');
  });

  it('email_domains: a verified email in a listed domain or a subdomain of one', () => {
    const p = policy({ email_domains: ['acme.test'] });
    expect(code(p, facts())).toBe('allowed');
    expect(code(p, facts({ email: 'bo@EU.Acme.test' }))).toBe('allowed');
    expect(code(p, facts({ email: 'bo@notacme.test' }))).toBe('EMAIL_DOMAIN_NOT_ALLOWED');
    expect(code(p, facts({ email: 'bo@acme.test.evil' }))).toBe('EMAIL_DOMAIN_NOT_ALLOWED');
    expect(code(p, facts({ emailVerified: false }))).toBe('EMAIL_NOT_VERIFIED');
    expect(code(p, facts({ email: null }))).toBe('EMAIL_NOT_VERIFIED');
  });

  it('idp_a / idp_b blocks: apply to their own provider only', () => {
    const p = policy({ idp_a: { allowed_email_domains: ['acme.test'], required_groups: ['admins', 'staff'] }, idp_b: { allowed_email_domains: null, required_groups: ['contractors'] } });
    expect(code(p, facts())).toBe('allowed');
    expect(code(p, facts({ groups: ['other'] }))).toBe('GROUP_REQUIRED');
    expect(code(p, facts({ email: 'a@b.test' }))).toBe('EMAIL_DOMAIN_NOT_ALLOWED');
    expect(code(p, facts({ provider: 'idp_b', email: 'a@b.test' }))).toBe('GROUP_REQUIRED');
    expect(code(p, facts({ provider: 'idp_b', email: 'a@b.test', groups: ['contractors'] }))).toBe('allowed');
  });

  it('reasons name what to do', () => {
    const out = evaluatePolicy(policy({ require_mfa: true }), facts({ amr: ['pwd'] }), now);
    expect(out).toMatchObject({ allowed: false, code: 'MFA_REQUIRED' });
    expect(!out.allowed && out.reason).toMatch(/multi-factor/);
  });
});
