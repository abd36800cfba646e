/** The one place API errors are shown: plain words, the server's detail and its code. */
import { ApiError } from './api.ts';

export function asApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  return new ApiError(0, 'CONSOLE_ERROR', 'Something went wrong in the console', error instanceof Error ? error.message : String(error));
}

export function ErrorNotice({ error, onDismiss }: { error: unknown; onDismiss?: () => void }) {
  if (!error) return null;
  const e = asApiError(error);
  return (
    <div class="error" role="alert">
      <strong>{e.title}.</strong> <span class="error-detail">{e.detail}</span> <code class="error-code">{e.code}</code>
      {onDismiss && (
        <button type="button" class="link" onClick={onDismiss} aria-label="Dismiss the error">
          Dismiss
        </button>
      )}
    </div>
  );
}
