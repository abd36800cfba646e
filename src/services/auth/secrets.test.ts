import { describe, expect, it } from 'vitest';
import { CREDENTIAL_SECRET_PREFIX, generateSecret, isWellFormedSecret, REFRESH_TOKEN_PREFIX, secretHint } from './secrets.ts';

describe('secret format', () => {
  it('has a recognisable prefix, 43 base62 characters and a 6-character checksum', () => {
    const secret = generateSecret(CREDENTIAL_SECRET_PREFIX);
    expect(secret).toMatch(/^lpsk_[0-9A-Za-z]{49}$/);
    expect(isWellFormedSecret(secret, CREDENTIAL_SECRET_PREFIX)).toBe(true);
  });

  it('is random', () => {
    const seen = new Set(Array.from({ length: 200 }, () => generateSecret(CREDENTIAL_SECRET_PREFIX)));
    expect(seen.size).toBe(200);
  });

  it('rejects a changed character, a wrong prefix and a wrong length', () => {
    const secret = generateSecret(CREDENTIAL_SECRET_PREFIX);
    const i = 10;
    const flipped = secret.slice(0, i) + (secret[i] === 'a' ? 'b' : 'a') + secret.slice(i + 1);
    expect(isWellFormedSecret(flipped, CREDENTIAL_SECRET_PREFIX)).toBe(false);
    expect(isWellFormedSecret(secret, REFRESH_TOKEN_PREFIX)).toBe(false);
    expect(isWellFormedSecret(`${secret}x`, CREDENTIAL_SECRET_PREFIX)).toBe(false);
    expect(isWellFormedSecret('', CREDENTIAL_SECRET_PREFIX)).toBe(false);
  });

  it('hints at a secret without revealing it', () => {
    const secret = generateSecret(CREDENTIAL_SECRET_PREFIX);
    const hint = secretHint(secret);
    expect(hint).toBe(`lpsk_…${secret.slice(-4)}`);
    expect(hint.length).toBeLessThan(12);
  });
});
