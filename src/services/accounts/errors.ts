import { defineErrors } from '../../core/errors/index.ts';

export const ACCOUNTS_ERRORS = {
  // accounts and members
  NOT_THE_INVITEE: 403,
  NOT_A_MEMBER: 403,
  BILLING_ADMIN_REQUIRED: 403,
  ACCOUNT_NOT_FOUND: 404,
  MEMBER_NOT_FOUND: 404,
  NO_PENDING_INVITE: 404,
  ALREADY_MEMBER: 409,
  MEMBER_OF_ANOTHER_ACCOUNT: 409,
  LAST_BILLING_ADMIN: 409,
  ACCOUNT_HAS_WORKSPACES: 409,
  INVITE_EXPIRED: 410,
  // workspaces
  WORKSPACE_NAME_CLAIMED: 409,
  WORKSPACE_EXISTS: 409,
  WORKSPACE_NOT_DELETED: 409,
  WORKSPACE_PURGED: 410,
  WORKSPACE_LOCKED: 423,
  WORKSPACE_RECORD_FAILED: 503,
  GENESIS_FAILED: 503,
  // domains
  DOMAIN_NOT_FOUND: 404,
  DOMAIN_VERIFIED_ELSEWHERE: 409,
  // notifications
  NOTIFICATION_NOT_FOUND: 404,
} as const;

declare module '../../core/errors/app-error.ts' {
  interface ErrorStatuses extends Readonly<typeof ACCOUNTS_ERRORS> {}
}

export const accountsError = defineErrors(ACCOUNTS_ERRORS);
