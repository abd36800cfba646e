import zlib from 'node:zlib';
import { base62, base62Fixed, randomBytes } from '../../core/crypto/index.ts';

/**
 * Secrets look like GitHub's tokens: a recognisable prefix, 32 random bytes in base62, then a
 * CRC32 checksum of the rest, so a secret scanner can spot a leaked one without asking us.
 */
export const CREDENTIAL_SECRET_PREFIX = 'lpsk_';
export const REFRESH_TOKEN_PREFIX = 'lprt_';

const BODY_LENGTH = 43; // 32 bytes in base62 is at most 43 characters
const CHECKSUM_LENGTH = 6; // 2^32 < 62^6

function checksum(text: string): string {
  return base62Fixed(zlib.crc32(text), CHECKSUM_LENGTH);
}

export function generateSecret(prefix: string): string {
  const body = base62(randomBytes(32)).padStart(BODY_LENGTH, '0');
  return `${prefix}${body}${checksum(prefix + body)}`;
}

/** Whether a string has the shape and a valid checksum of a secret with this prefix. */
export function isWellFormedSecret(value: string, prefix: string): boolean {
  if (value.length !== prefix.length + BODY_LENGTH + CHECKSUM_LENGTH || !value.startsWith(prefix)) return false;
  const body = value.slice(prefix.length, prefix.length + BODY_LENGTH);
  if (!/^[0-9A-Za-z]+$/.test(body)) return false;
  return checksum(prefix + body) === value.slice(-CHECKSUM_LENGTH);
}

/** What a listing may show of a secret: its prefix and last four characters. */
export function secretHint(secret: string): string {
  return `${secret.slice(0, CREDENTIAL_SECRET_PREFIX.length)}…${secret.slice(-4)}`;
}
