/**
 * The byte range of a `Range` header (RFC 9110 §14) over a representation of `size` bytes:
 * `bytes=0-99`, `bytes=100-`, `bytes=-500` (the last 500). `undefined` means "send it all": no
 * header, another unit, several ranges (a server may ignore Range) or a malformed one; `unsatisfiable`
 * a range starting at or past the end (416).
 */
export function parseByteRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (!Number.isSafeInteger(start) || start >= size) return 'unsatisfiable';
  if (end < start) return undefined;
  return { start, end };
}
