import type { PermissionPair } from '../db/schema.ts';
import { parsePattern, patternCovers } from './patterns.ts';
import { roleAtLeast } from './roles.ts';

/**
 * Whether a set of narrowing grants stays within another. An empty `outer` means "not narrowed"
 * (the identity's full grants), which contains everything; an empty `inner` is "not narrowed",
 * so it is within only an unnarrowed outer.
 */
export function permissionsWithin(inner: PermissionPair[], outer: PermissionPair[]): boolean {
  if (outer.length === 0) return true;
  if (inner.length === 0) return false;
  return inner.every(([innerPattern, innerRole]) => {
    const ip = parsePattern(innerPattern);
    return (
      ip !== null &&
      outer.some(([outerPattern, outerRole]) => {
        const op = parsePattern(outerPattern);
        return op !== null && patternCovers(op, ip) && roleAtLeast(outerRole, innerRole);
      })
    );
  });
}
