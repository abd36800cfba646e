import { defineErrors } from '../../core/errors/index.ts';

export const AUTH_ERRORS = {
  // token endpoint (RFC 6749 §5.2): the code is the upper-cased OAuth `error`
  INVALID_REQUEST: 400,
  INVALID_GRANT: 400,
  UNSUPPORTED_GRANT_TYPE: 400,
  INVALID_SCOPE: 400,
  INVALID_CLIENT: 401,
  // credentials
  SCOPE_NOT_HELD: 403,
  CREDENTIAL_NOT_FOUND: 404,
  // interactive sign-in
  SIGN_IN_FAILED: 400,
  SIGN_IN_REQUIRED: 400,
  SIGN_IN_REFUSED: 403,
  IDP_NOT_CONFIGURED: 404,
  IDP_UNREACHABLE: 502,
  IDP_TIMEOUT: 504,
} as const;

declare module '../../core/errors/app-error.ts' {
  interface ErrorStatuses extends Readonly<typeof AUTH_ERRORS> {}
}

export const authError = defineErrors(AUTH_ERRORS);
