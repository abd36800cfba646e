import { defineErrors } from '../../core/errors/index.ts';

export const POLICY_ERRORS = {
  GENESIS_NOT_ALLOWED: 403,
  ROLE_ABOVE_OWN: 403,
  POLICY_NOT_FOUND: 404,
  ROLE_MISMATCH: 409,
  GENESIS_ALREADY_DONE: 409,
  LAST_OWNER: 409,
} as const;

declare module '../../core/errors/app-error.ts' {
  interface ErrorStatuses extends Readonly<typeof POLICY_ERRORS> {}
}

export const policyError = defineErrors(POLICY_ERRORS);
