import { z } from 'zod';
import { Identity } from '../../core/http/index.ts';


export const ACCOUNT_ROLES = ['billing_admin', 'member'] as const;
export const AccountRole = z.enum(ACCOUNT_ROLES);

/** 100 years: keeps added_at + min_age_ms a representable timestamp. */
export const MAX_MEMBER_MIN_AGE_MS = 100 * 365 * 86_400_000;

const Name = z.string().trim().min(1).max(200).describe('Account name');
const TaxId = z.string().max(64).nullable().describe('Tax identifier');
const Address = z.looseObject({}).nullable().describe('Postal address (free-form object)');
const MemberMinAgeMs = z
  .number()
  .int()
  .min(0)
  .max(MAX_MEMBER_MIN_AGE_MS)
  .nullable()
  .describe('Milliseconds a new member waits after acceptance before being eligible; read at acceptance');

export const AccountParams = z.object({ account_id: z.string().min(1).max(128) });
export const MemberParams = z.object({ account_id: z.string().min(1).max(128), identity: Identity });
export const InvoiceParams = z.object({
  invoice_id: z.string().regex(/^inv_[A-Za-z0-9]{1,64}$/, 'must be inv_ followed by 1-64 letters or digits'),
});

export const CreateAccountRequest = z.object({
  name: Name,
  tax_id: TaxId.optional(),
  address: Address.optional(),
});

/** Every field optional; a field sent as null clears it, except name, which cannot be null. */
export const UpdateAccountRequest = z.object({
  name: Name.optional(),
  tax_id: TaxId.optional(),
  address: Address.optional(),
  member_min_age_ms: MemberMinAgeMs.optional(),
});

export const InviteMemberRequest = z.object({
  identity: Identity.describe('The identity invited (its client_id)'),
  email: z.email().max(254).describe('Where the invite is addressed'),
  role: AccountRole,
});

export const UpdateMemberRoleRequest = z.object({ role: AccountRole });

export const Account = z.object({
  account_id: z.string(),
  name: z.string(),
  tax_id: z.string().nullable(),
  address: z.looseObject({}).nullable(),
  member_min_age_ms: z.number().nullable(),
  status: z.enum(['active', 'deactivated']),
  created_by: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const Member = z.object({
  account_id: z.string(),
  identity: z.string(),
  email: z.string().nullable(),
  role: AccountRole,
  state: z.enum(['pending', 'active']),
  invited_by: z.string().nullable(),
  invited_at: z.string().nullable(),
  invite_expires_at: z.string().nullable().describe('Pending invites only: 7 days after the (re-)invite'),
  added_at: z.string().nullable().describe('Stamped at acceptance (at creation for the creator)'),
  min_age_ms: z.number().nullable().describe("The account's member_min_age_ms at acceptance"),
  eligible_at: z.string().nullable().describe('added_at + min_age_ms'),
});

export const RemoveMemberResponse = z.object({
  message: z.string(),
  account_id: z.string(),
  identity: z.string(),
});

export const Invoice = z.object({
  invoice_id: z.string(),
  status: z.literal('draft'),
  amount_due: z.number(),
  currency: z.string(),
  lines: z.array(z.unknown()),
});
