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

  it('derives one key per purpose: the same for the same master key (every server), never the master key itself', () => {
    const master = crypto.randomBytes(32);
    const key = new Sealer(master).deriveKey('lakeport/test/v1');
    expect(key).toHaveLength(32);
    expect(new Sealer(Buffer.from(master)).deriveKey('lakeport/test/v1')).toEqual(key);
    expect(new Sealer(master).deriveKey('lakeport/test/v2')).not.toEqual(key);
    expect(new Sealer(crypto.randomBytes(32)).deriveKey('lakeport/test/v1')).not.toEqual(key);
    expect(key).not.toEqual(master);
  });
});
