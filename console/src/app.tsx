/** The console's frame: header with the signed-in identity, navigation from routes.ts, the current view. */
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { onSessionExpired, signOut, whoAmI, type Me } from './api.ts';
import { ErrorNotice } from './errors.tsx';
import { Link } from './link.tsx';
import { currentLocation, matchRoute, navigate, useLocation } from './router.ts';
import { routes, type ViewProps } from './routes.ts';
import { NotificationsBell } from './views/bell.tsx';

type Session = { state: 'checking' } | { state: 'signed-in'; me: Me } | { state: 'signed-out' };

/** Back to sign-in, remembering the page to return to. */
function toSignIn(): void {
  const here = currentLocation();
  if (location.pathname === '/sign-in') return;
  navigate(`/sign-in?next=${encodeURIComponent(here)}`, { replace: true });
}

export function App() {
  const path = useLocation();
  const [session, setSession] = useState<Session>({ state: 'checking' });
  const [error, setError] = useState<unknown>();
  const url = new URL(path, location.origin);
  const match = matchRoute(url.pathname);

  useEffect(
    () =>
      onSessionExpired(() => {
        setSession({ state: 'signed-out' });
        toSignIn();
      }),
    [],
  );
  // Who is signed in: asked at start and after each sign-in (the sign-in page navigates away).
  useEffect(() => {
    if (match?.route.public || session.state === 'signed-in') return;
    whoAmI().then(
      (me) => setSession({ state: 'signed-in', me }),
      (e: unknown) => {
        setSession({ state: 'signed-out' });
        if ((e as { status?: number }).status !== 401) setError(e);
      },
    );
  }, [match?.route.public, session.state]);

  useEffect(() => {
    document.title = match ? `${match.route.title} · Lakeport` : 'Not found · Lakeport';
  }, [match]);

  const signedIn = session.state === 'signed-in';
  const showView = match && (match.route.public || signedIn);

  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link href="/" class="brand">
          Lakeport
        </Link>
        {signedIn && (
          <nav aria-label="Main">
            <ul>
              {routes
                .filter((r) => r.nav)
                .map((r) => (
                  <li key={r.path}>
                    <Link href={r.path} aria-current={match?.route === r ? 'page' : undefined}>
                      {r.nav!}
                    </Link>
                  </li>
                ))}
            </ul>
          </nav>
        )}
        {signedIn && (
          <div class="who">
            <NotificationsBell />
            <span class="identity" title="Signed in as">
              {session.me.identity}
            </span>
            <button
              type="button"
              onClick={() =>
                signOut().then(
                  () => {
                    setSession({ state: 'signed-out' });
                    navigate('/sign-in', { replace: true });
                  },
                  setError,
                )
              }
            >
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        <ErrorNotice error={error} onDismiss={() => setError(undefined)} />
        {!match && <NotFound />}
        {showView && <LazyView key={match.route.path} load={match.route.load} props={{ params: match.params, query: url.searchParams }} />}
        {match && !match.route.public && session.state === 'checking' && <p class="muted">Checking your session…</p>}
      </main>
    </div>
  );
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        <Link href="/">Go to the datasets</Link>
      </p>
    </section>
  );
}

/** A view's module, loaded on first use. */
function LazyView({ load, props }: { load: () => Promise<{ default: ComponentType<ViewProps> }>; props: ViewProps }) {
  const [view, setView] = useState<{ Component?: ComponentType<ViewProps>; error?: unknown }>({});
  useEffect(() => {
    let live = true;
    load().then(
      (m) => live && setView({ Component: m.default }),
      (error: unknown) => live && setView({ error }),
    );
    return () => {
      live = false;
    };
  }, [load]);
  if (view.error) return <ErrorNotice error={view.error} />;
  if (!view.Component) return <p class="muted">Loading…</p>;
  return <view.Component {...props} />;
}
