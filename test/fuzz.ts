import fc from 'fast-check';
import { expect } from 'vitest';

/**
 * Inputs every route's fuzz test throws at it, beyond random text: NUL characters in every string
 * position (PostgreSQL's text cannot hold one) and JSON nested far deeper than the edge allows.
 */

/** A string with at least one NUL in it. */
export const withNul = fc.tuple(fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 })).map(([a, b]) => `${a}\u0000${b}`);

/** A string, often with a NUL. */
export const nulish = fc.oneof(fc.string({ maxLength: 40 }), withNul);

/** JSON values a few levels deep with at least one NUL, in a key or a string. */
export const jsonWithNul = fc
  .tuple(fc.object({ key: nulish, values: [nulish, fc.integer(), fc.boolean(), fc.constant(null)], maxDepth: 3 }), fc.nat())
  .map(([value, pick]) => (JSON.stringify(value).includes('\\u0000') ? value : poison(value, pick)));

/** `value` with one of its strings (or, with no string, the value itself) given a NUL. */
export function poison(value: unknown, pick: number): unknown {
  const strings: { holder: Record<string | number, unknown>; key: string | number }[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach((item, i) => (typeof item === 'string' ? strings.push({ holder: v as never, key: i }) : walk(item)));
    else if (v && typeof v === 'object') for (const [k, item] of Object.entries(v)) typeof item === 'string' ? strings.push({ holder: v as never, key: k }) : walk(item);
  };
  const copy = structuredClone(value);
  walk(copy);
  if (strings.length === 0) return typeof copy === 'string' ? `${copy}\u0000` : '\u0000';
  const { holder, key } = strings[pick % strings.length];
  holder[key] = `${holder[key] as string}\u0000x`;
  return copy;
}

/** JSON text nested deeper than the edge's limit: arrays, objects or both, bare or inside an object. */
export const deepJson = fc
  .record({ depth: fc.integer({ min: 65, max: 100_000 }), open: fc.constantFrom('[', '{"a":', '[{"a":'), wrapped: fc.boolean() })
  .map(({ depth, open, wrapped }) => {
    const levels = Math.ceil(depth / (open === '[{"a":' ? 2 : 1));
    const close = open === '[' ? ']' : open === '{"a":' ? '}' : '}]';
    const body = `${open.repeat(levels)}1${close.repeat(levels)}`;
    return wrapped ? `{"name": "x", "value": ${body}}` : body;
  });

/** A response is never a 5xx, and an error is in Lakeport's shapes: 422 `{detail: [...]}` or `{detail, code}`. */
export function expectNoServerError(res: { statusCode: number; body: string; headers: Record<string, unknown> }) {
  expect(res.statusCode, res.body.slice(0, 500)).toBeLessThan(500);
  if (res.statusCode < 400 || !String(res.headers['content-type'] ?? '').includes('json')) return;
  const body = JSON.parse(res.body) as { detail?: unknown; code?: unknown; error?: unknown };
  if (res.statusCode === 422 && Array.isArray(body.detail)) {
    for (const issue of body.detail) expect(issue).toMatchObject({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
  } else {
    expect(body, res.body.slice(0, 500)).toMatchObject({ detail: expect.any(String), code: expect.stringMatching(/^[A-Z][A-Z0-9_]*$/) });
  }
}

/** A request with a NUL or a too-deep body is refused: a 4xx in Lakeport's shapes. */
export function expectRefused(res: { statusCode: number; body: string; headers: Record<string, unknown> }) {
  expectNoServerError(res);
  expect(res.statusCode, res.body.slice(0, 500)).toBeGreaterThanOrEqual(400);
}
