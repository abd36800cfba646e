import { describe, expect, it } from 'vitest';
import { ReadAhead, type PageText } from './read-ahead.ts';

/** Pages of a 5-page read: page n starts at token n. */
function pagesOf(count: number) {
  const reads: string[] = [];
  const read = async (token: string): Promise<PageText> => {
    reads.push(token);
    if (token === 'boom') throw new Error('failed');
    const n = Number(token);
    return { pieces: [`page ${n}`], next: n + 1 < count ? String(n + 1) : undefined };
  };
  return { reads, read, keyOf: (token: string) => `alice\n7\n/rows?$skiptoken=${token}` };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe('ReadAhead', () => {
  it('reads the pages after the one asked for, up to its depth, and hands each out once', async () => {
    const ahead = new ReadAhead({ maxChars: 1_000, ttlMs: 10_000, maxRunning: 2, depth: 2 });
    const { reads, read, keyOf } = pagesOf(5);
    ahead.follow('1', keyOf, read);
    await settle();
    expect(reads).toEqual(['1', '2']);
    expect((await ahead.take(keyOf('1')))?.pieces).toEqual(['page 1']);
    expect(ahead.take(keyOf('1'))).toBeUndefined();
    // Following on from page 2 reads page 3 (page 2 is there already), and nothing past the last page.
    ahead.follow('2', keyOf, read);
    await settle();
    expect(reads).toEqual(['1', '2', '3']);
    ahead.follow('4', keyOf, read);
    await settle();
    expect(reads).toEqual(['1', '2', '3', '4']);
  });

  it('keys pages by who asked: another key finds nothing', async () => {
    const ahead = new ReadAhead({ maxChars: 1_000, ttlMs: 10_000, maxRunning: 2, depth: 1 });
    const { read, keyOf } = pagesOf(3);
    ahead.follow('1', keyOf, read);
    await settle();
    expect(ahead.take(`bob\n7\n/rows?$skiptoken=1`)).toBeUndefined();
    expect(ahead.take(keyOf('1'))).toBeDefined();
  });

  it('keeps no failed page, runs a bounded number of reads, and drops pages larger than its budget', async () => {
    const ahead = new ReadAhead({ maxChars: 5, ttlMs: 10_000, maxRunning: 1, depth: 1 });
    const { reads, read, keyOf } = pagesOf(9);
    ahead.follow('boom', keyOf, read);
    ahead.follow('1', keyOf, read); // refused: one read runs already
    expect(await ahead.take(keyOf('boom'))).toBeUndefined();
    expect(reads).toEqual(['boom']);
    ahead.follow('2', keyOf, read);
    await settle();
    // 'page 2' is 6 characters, more than the 5 allowed.
    expect(ahead.take(keyOf('2'))).toBeUndefined();
  });
});
