import { AppError } from '../../core/errors/index.ts';

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'unsupported_token_type'
  | 'slow_down';

/** RFC 6749 §5.2 error: `{error, error_description}`, plus Lakeport's own `{detail, code}`. */
export function oauthError(
  status: number,
  error: OAuthErrorCode,
  description: string,
  headers: Record<string, string> = {},
): AppError {
  return new AppError(status, error.toUpperCase(), description, {
    headers: { 'cache-control': 'no-store', ...headers },
    extra: { error, error_description: description },
  });
}
