import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Sealer } from './sealing.ts';

describe('Sealer', () => {
  const sealer = new Sealer(crypto.randomBytes(32));

  it('round-trips and never shows the plaintext', () => {
    const sealed = sealer.seal('top secret', 'ctx');
    expect(sealed).not.toContain('top secret');
    expect(sealer.open(sealed, 'ctx').toString()).toBe('top secret');
  });

  it('binds the value to its context and key', () => {
    const sealed = sealer.seal('x', 'a');
    expect(() => sealer.open(sealed, 'b')).toThrow();
    expect(() => new Sealer(crypto.randomBytes(32)).open(sealed, 'a')).toThrow();
  });

  it('detects tampering', () => {
    const parts = sealer.seal('value', 'c').split('.');
    const ct = Buffer.from(parts[3], 'base64url');
    ct[0] ^= 1;
    parts[3] = ct.toString('base64url');
    expect(() => sealer.open(parts.join('.'), 'c')).toThrow();
  });
});
