import { z } from 'zod';

/** Syntax only; the name rules (IDNA, lengths, LDH) are checked by the service with clear 422s. */
const DomainInput = z.string().min(1).max(1024);

export const DomainParams = z.object({ account_id: z.string().min(1).max(128), domain: DomainInput });

export const DomainClaimRequest = z.object({
  domain: DomainInput.describe('The domain to claim, such as example.com or bücher.example (stored in ASCII/punycode form, lowercase)'),
});

const CheckOutcome = z.enum(['verified', 'record_missing', 'dns_unavailable']);

export const TxtRecord = z.object({
  name: z.string().describe('Where to publish the record: _lakeport-challenge.<domain>'),
  type: z.literal('TXT'),
  value: z.string().describe('lakeport-domain-verification=<token>'),
});

export const Domain = z.object({
  account_id: z.string(),
  domain: z.string().describe('Lowercase ASCII (punycode) form'),
  domain_unicode: z.string().describe('The same name for display'),
  state: z.enum(['unverified', 'verified']),
  token: z.string(),
  record: TxtRecord.describe('The TXT record to publish'),
  claimed_at: z.string(),
  claimed_by: z.string(),
  verified_at: z.string().nullable().describe('When the record was first found; kept by later failing checks'),
  verified_by: z.string().nullable(),
  last_checked_at: z.string().nullable(),
  last_outcome: CheckOutcome.nullable(),
  last_error: z.string().nullable().describe('The last check’s failure (code and detail); null after a successful check'),
  last_found: z.array(z.string()).nullable().describe('TXT values seen at the challenge name on the last check'),
});

export const DomainList = z.object({ account_id: z.string(), domains: z.array(Domain) });

export const DomainCheck = z.object({
  outcome: CheckOutcome,
  code: z.enum(['DOMAIN_RECORD_MISSING', 'DOMAIN_DNS_UNAVAILABLE']).nullable().describe('null when verified'),
  detail: z.string(),
  dns_code: z.string().nullable().describe('ENOTFOUND (NXDOMAIN), ENODATA (no TXT), ETIMEOUT, ESERVFAIL, EREFUSED…'),
  found: z.array(z.string()),
  retry: z.boolean().describe('true: no answer came, try again later; false: the answer is in (publish the record if it is missing)'),
});

export const VerifyDomainResponse = Domain.extend({ check: DomainCheck });

export const ReleaseDomainResponse = z.object({
  message: z.string(),
  account_id: z.string(),
  domain: z.string(),
  domain_unicode: z.string(),
  was_verified: z.boolean(),
});
