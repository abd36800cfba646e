/** Sign in: the organisation's identity providers (when configured), or a client id + credential secret. */
import { useState } from 'preact/hooks';
import { identityProviders, signInWithSecret } from '../api.ts';
import { ErrorNotice } from '../errors.tsx';
import { navigate, safeReturnPath } from '../router.ts';
import type { ViewProps } from '../routes.ts';
import { useApi } from '../use-api.ts';

export default function SignIn({ query }: ViewProps) {
  const next = safeReturnPath(query.get('next'));
  const providers = useApi(identityProviders, []);
  const [clientId, setClientId] = useState('');
  const [secret, setSecret] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await signInWithSecret(clientId.trim(), secret.trim());
      setSecret('');
      navigate(next, { replace: true });
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  const idps = providers.value?.providers ?? [];
  return (
    <section class="sign-in">
      <h1>Sign in to Lakeport</h1>
      {query.has('next') && <p class="muted">Your session ended. Sign in again to return to where you were.</p>}
      {idps.length > 0 && (
        <div class="idps">
          {idps.map((p) => (
            <a key={p.id} class="button primary" href={`${p.login_url}&return_to=${encodeURIComponent(next)}`}>
              Sign in with {p.name}
            </a>
          ))}
          <p class="muted">or with a credential:</p>
        </div>
      )}
      <form onSubmit={submit} class="stack">
        <label>
          Client id
          <input name="client_id" autoComplete="username" required value={clientId} onInput={(e) => setClientId(e.currentTarget.value)} />
        </label>
        <label>
          Credential secret
          <input name="client_secret" type="password" autoComplete="current-password" required placeholder="lpsk_…" value={secret} onInput={(e) => setSecret(e.currentTarget.value)} />
        </label>
        <ErrorNotice error={error} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p class="muted small">The secret is exchanged for a short-lived session cookie; the console never stores it.</p>
    </section>
  );
}
