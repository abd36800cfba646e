import { describe, expect, it } from 'vitest';
import { challengeName, challengeValue, parseDomainName } from './domain-names.ts';

const ok = (input: string) => {
  const parsed = parseDomainName(input);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.name;
};
const reason = (input: string) => {
  const parsed = parseDomainName(input);
  if (parsed.ok) throw new Error(`${input} was accepted as ${parsed.name.ascii}`);
  return parsed.reason;
};

describe('parseDomainName', () => {
  it('lowercases, drops one trailing dot and keeps the ASCII form', () => {
    expect(ok('  Example.COM. ')).toEqual({ ascii: 'example.com', unicode: 'example.com' });
    expect(ok('a-b.c0.example')).toEqual({ ascii: 'a-b.c0.example', unicode: 'a-b.c0.example' });
  });

  it('stores IDNA names in punycode and shows them in Unicode, whichever form was given', () => {
    expect(ok('Bücher.Example')).toEqual({ ascii: 'xn--bcher-kva.example', unicode: 'bücher.example' });
    expect(ok('xn--bcher-kva.example')).toEqual({ ascii: 'xn--bcher-kva.example', unicode: 'bücher.example' });
    expect(ok('münchen。de').ascii).toBe('xn--mnchen-3ya.de');
  });

  it('refuses what is not a host name, saying why', () => {
    expect(reason('')).toMatch(/empty/);
    expect(reason('.')).toMatch(/empty/);
    expect(reason('example')).toMatch(/at least two labels/);
    expect(reason('a..example.com')).toMatch(/empty label/);
    expect(reason('.example.com')).toMatch(/empty label/);
    expect(reason('example.com..')).toMatch(/empty label/);
    expect(reason('exa_mple.com')).toMatch(/'_' is not allowed/);
    expect(reason('ex ample.com')).toMatch(/' ' is not allowed/);
    expect(reason('a%2Eb.com')).toMatch(/'%' is not allowed/);
    expect(reason('https://example.com')).toMatch(/':' is not allowed/);
    expect(reason('-a.example.com')).toMatch(/start and end with a letter or digit/);
    expect(reason('a-.example.com')).toMatch(/start and end/);
    expect(reason('xn--a.com')).toMatch(/IDNA/);
    expect(reason('1.2.3.4')).toMatch(/IP address/);
  });

  it('enforces label and name lengths (the challenge name must fit in 253 too)', () => {
    expect(ok(`${'a'.repeat(63)}.com`).ascii).toHaveLength(67);
    expect(reason(`${'a'.repeat(64)}.com`)).toMatch(/64 characters; at most 63/);
    const long = Array.from({ length: 5 }, () => 'a'.repeat(50)).join('.'); // 254
    expect(reason(long)).toMatch(/at most 253/);
    const tooLongToVerify = `${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(50)}.com`; // 238
    expect(reason(tooLongToVerify)).toMatch(/too long to verify/);
  });

  it('names the challenge record', () => {
    expect(challengeName('xn--bcher-kva.example')).toBe('_lakeport-challenge.xn--bcher-kva.example');
    expect(challengeValue('tok')).toBe('lakeport-domain-verification=tok');
  });
});
