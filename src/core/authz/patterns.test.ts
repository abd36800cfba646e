import { describe, expect, it } from 'vitest';
import { formatPattern, parsePattern, patternMatches, permissionsWithin } from './index.ts';

describe('grant patterns', () => {
  it.each([
    ['sales.*', { workspace: 'sales' }],
    ['Sales.Orders.*', { workspace: 'sales', collection: 'orders' }],
    ['sales.orders.daily', { workspace: 'sales', collection: 'orders', dataset: 'daily' }],
  ])('parses %s', (text, expected) => {
    expect(parsePattern(text)).toEqual(expected);
  });

  it.each(['sales', '*', '*.*', 'sales.', 'sales.*.x', 'sales.orders', 'a.b.c.d', 'sa les.*', 'sales.or-ders.*', 'ws.%.*', `${'a'.repeat(64)}.*`, ''])(
    'refuses %j',
    (text) => {
      expect(parsePattern(text)).toBeNull();
    },
  );

  it('round-trips through formatPattern', () => {
    for (const text of ['sales.*', 'sales.orders.*', 'sales.orders.daily']) expect(formatPattern(parsePattern(text)!)).toBe(text);
  });

  it('matches whole names only', () => {
    const ws = parsePattern('ws.*')!;
    expect(patternMatches(ws, { workspace: 'ws' })).toBe(true);
    expect(patternMatches(ws, { workspace: 'ws', collection: 'c', dataset: 'd' })).toBe(true);
    expect(patternMatches(ws, { workspace: 'ws_evil' })).toBe(false);
    expect(patternMatches(ws, { workspace: 'w' })).toBe(false);
    const coll = parsePattern('ws.c.*')!;
    expect(patternMatches(coll, { workspace: 'ws', collection: 'c', dataset: 'x' })).toBe(true);
    expect(patternMatches(coll, { workspace: 'ws', collection: 'c2', dataset: 'x' })).toBe(false);
    expect(patternMatches(coll, { workspace: 'ws' })).toBe(false);
  });
});

describe('permissionsWithin (credential narrowing)', () => {
  it('treats an empty outer set as unnarrowed', () => {
    expect(permissionsWithin([], [])).toBe(true);
    expect(permissionsWithin([['a.*', 'owner']], [])).toBe(true);
  });

  it('never lets an unnarrowed set inside a narrowed one', () => {
    expect(permissionsWithin([], [['a.*', 'reader']])).toBe(false);
  });

  it('requires a covering pattern with at least the role', () => {
    const outer: [string, 'owner' | 'admin' | 'writer' | 'reader'][] = [['a.*', 'writer'], ['b.c.d', 'owner']];
    expect(permissionsWithin([['a.x.*', 'reader']], outer)).toBe(true);
    expect(permissionsWithin([['a.x.y', 'writer']], outer)).toBe(true);
    expect(permissionsWithin([['a.*', 'admin']], outer)).toBe(false);
    expect(permissionsWithin([['b.c.*', 'reader']], outer)).toBe(false);
    expect(permissionsWithin([['b.c.d', 'owner']], outer)).toBe(true);
    expect(permissionsWithin([['a_evil.*', 'reader']], outer)).toBe(false);
  });
});
