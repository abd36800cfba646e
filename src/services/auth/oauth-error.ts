import type { AppError } from '../../core/errors/index.ts';
import { authError } from './errors.ts';

export type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unsupported_grant_type' | 'invalid_scope';

/** RFC 6749 §5.2 error: `{error, error_description}`, plus Lakeport's own `{detail, code}`. */
export function oauthError(error: OAuthErrorCode, description: string, headers: Record<string, string> = {}): AppError {
  return authError(error.toUpperCase() as Uppercase<OAuthErrorCode>, description, {
    headers: { 'cache-control': 'no-store', ...headers },
    extra: { error, error_description: description },
  });
}
