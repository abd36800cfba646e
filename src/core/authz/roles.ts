import type { Role } from '../db/schema.ts';

export type { Role };
export const ROLES = ['reader', 'writer', 'admin', 'owner'] as const satisfies readonly Role[];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** owner > admin > writer > reader */
export function roleAtLeast(have: Role, need: Role): boolean {
  return ROLES.indexOf(have) >= ROLES.indexOf(need);
}
