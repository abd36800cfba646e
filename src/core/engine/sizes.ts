/** A size in DuckDB's notation: `512MB`, `2GiB`, `100B`. */
export const SIZE = /^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i;
const UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/** Bytes of a size such as `512MB` or `2GiB` (DuckDB's units: KB = 1000 B, KiB = 1024 B). */
export function parseSize(text: string): number {
  const [, amount, unit] = /^(\d+(?:\.\d+)?)\s*([a-z]+)$/i.exec(text.trim()) ?? [];
  if (amount === undefined || UNITS[unit.toLowerCase()] === undefined) throw new Error(`not a size: ${text}`);
  return Math.floor(Number(amount) * UNITS[unit.toLowerCase()]);
}
