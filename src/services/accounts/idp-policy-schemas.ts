import { z } from 'zod';
import { DENIALS_DEFAULT_LIMIT, DENIALS_MAX_LIMIT } from './idp-policy-service.ts';

const Provider = z.enum(['idp_a', 'idp_b']);
const Domains = z.array(z.string().min(1).max(253)).max(100);
const Hours = z.number().int().min(1).max(87_600);

const ProviderPolicy = z
  .object({
    allowed_email_domains: Domains.nullable().default(null).describe("Verified domains of this account; the email (verified) must be in one or a subdomain of one; null: any"),
    required_groups: z.array(z.string().min(1).max(256)).min(1).max(100).nullable().default(null).describe("The provider's groups claim must hold at least one; null: none needed"),
  })
  .strict();

const MachineCredentialsPolicy = z
  .object({
    members_may_mint: z.boolean().default(true).describe('Whether members may mint machine credentials for themselves'),
    max_lifetime_days: z.number().int().min(1).max(3650).nullable().default(null).describe('Longest lifetime of a credential a member mints; null: no limit'),
  })
  .strict();

export const IdpPolicyRequest = z
  .object({
    enforced: z.boolean().default(false).describe('false: nothing below is enforced (everyone is admitted)'),
    providers: z.array(Provider).min(1).nullable().default(null).describe('Which configured providers may be used; null: any'),
    idp_a: ProviderPolicy.nullable().default(null),
    idp_b: ProviderPolicy.nullable().default(null),
    allow_password_auth: z.boolean().default(true).describe("false: refuse a sign-in whose amr is only 'pwd' (or 'pin', 'kba', or empty)"),
    require_mfa: z.boolean().default(false).describe("true: the amr must include mfa, otp, hwk, swk, sms, fpt, face, iris, retina or vbm"),
    max_auth_age_hours: Hours.nullable().default(null).describe('Refuse sign-in and refresh when auth_time is older'),
    max_session_hours: Hours.nullable().default(null).describe('Refuse refresh of a session begun longer ago'),
    email_domains: Domains.nullable().default(null).describe('Verified domains of this account; the verified email must be in one or a subdomain of one; null: any'),
    machine_credentials: MachineCredentialsPolicy.nullable().default(null),
  })
  .strict();

export const IdpPolicy = IdpPolicyRequest.required().extend({
  account_id: z.string(),
  version: z.number().int().describe('0 until the first write; every PUT and DELETE adds one'),
  configured: z.boolean().describe('false: no policy is stored and the defaults apply'),
  updated_by: z.string().nullable(),
  updated_at: z.string().nullable(),
});

export const PutQuery = z.object({
  force: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe("Proceed even if the change would deny your own sign-in"),
});

export const DenialsQuery = z.object({ limit: z.coerce.number().int().min(1).max(DENIALS_MAX_LIMIT).default(DENIALS_DEFAULT_LIMIT) });

export const DenialList = z.object({
  account_id: z.string(),
  denials: z.array(
    z.object({ denial_id: z.string(), identity: z.string(), provider: z.string(), email: z.string().nullable(), code: z.string(), reason: z.string(), at: z.string() }),
  ),
});

export const PreviewResponse = z.object({
  account_id: z.string(),
  policy: IdpPolicyRequest.required(),
  evaluated_at: z.string(),
  admitted: z.number().int(),
  denied: z.number().int(),
  unknown: z.number().int().describe('Members with no interactive sign-in recorded'),
  members: z.array(
    z.object({
      identity: z.string(),
      role: z.enum(['billing_admin', 'member']),
      outcome: z.enum(['admitted', 'denied', 'unknown']),
      code: z.string().nullable(),
      reason: z.string().nullable(),
      last_sign_in_at: z.string().nullable(),
    }),
  ),
});
