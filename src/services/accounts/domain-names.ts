import { domainToASCII, domainToUnicode } from 'node:url';

export interface DomainName {
  /** Lowercase ASCII (punycode) form without a trailing dot: what is stored and looked up. */
  ascii: string;
  /** The same name for display (IDNA labels decoded). */
  unicode: string;
}

const MAX_NAME = 253;
const MAX_LABEL = 63;
const CHALLENGE_PREFIX = '_lakeport-challenge.';
/** Letters, digits and hyphens, neither first nor last (RFC 1123 §2.1 host names). */
const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

/**
 * A domain name as a user types it (any case, Unicode or punycode, one optional trailing dot) in its
 * stored form, or the reason it is not a registrable host name.
 */
export function parseDomainName(input: string): { ok: true; name: DomainName } | { ok: false; reason: string } {
  const fail = (reason: string) => ({ ok: false as const, reason });
  let text = input.trim();
  if (text.endsWith('.')) text = text.slice(0, -1);
  if (text === '') return fail('the domain name is empty');
  // ASCII outside letters, digits, '-' and '.' is refused before IDNA mapping, which would otherwise
  // percent-decode or pass characters such as '_' through.
  const bad = [...text].find((c) => c < '\u0080' && !/[A-Za-z0-9.-]/.test(c));
  if (bad !== undefined) return fail(`'${bad}' is not allowed in a domain name: labels hold letters, digits and hyphens`);
  if (text.startsWith('.') || text.includes('..')) return fail('the domain name has an empty label (a leading dot or two dots in a row)');
  const ascii = domainToASCII(text);
  if (ascii === '') return fail('the domain name is not a valid internationalised domain name (IDNA)');
  if (ascii.length > MAX_NAME) return fail(`the domain name is ${ascii.length} characters in ASCII form; at most ${MAX_NAME} are allowed`);
  if (ascii.length + CHALLENGE_PREFIX.length > MAX_NAME) {
    return fail(`the domain name is too long to verify: ${CHALLENGE_PREFIX}${ascii.length > 30 ? '…' : ascii} would exceed ${MAX_NAME} characters (at most ${MAX_NAME - CHALLENGE_PREFIX.length} for the domain)`);
  }
  const labels = ascii.split('.');
  if (labels.length < 2) return fail('a domain name needs at least two labels, such as example.com');
  for (const label of labels) {
    if (label.length === 0) return fail('the domain name has an empty label');
    if (label.length > MAX_LABEL) return fail(`the label '${label.slice(0, 20)}…' is ${label.length} characters; at most ${MAX_LABEL} are allowed`);
    if (!LDH_LABEL.test(label)) return fail(`the label '${label}' must start and end with a letter or digit`);
  }
  if (/^[0-9]+$/.test(labels[labels.length - 1])) return fail('an IP address or numeric top-level label is not a domain name');
  return { ok: true, name: { ascii, unicode: domainToUnicode(ascii) } };
}

/** The name the TXT record is published at. */
export const challengeName = (ascii: string) => `${CHALLENGE_PREFIX}${ascii}`;
/** The TXT value that proves control of the domain. */
export const challengeValue = (token: string) => `lakeport-domain-verification=${token}`;
