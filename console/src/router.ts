/** A small history router: the URL is the state; `routes.ts` lists what each path shows. */
import { useEffect, useState } from 'preact/hooks';
import { routes, type RouteEntry } from './routes.ts';

type Listener = () => void;
const listeners = new Set<Listener>();
const notify = () => listeners.forEach((l) => l());
window.addEventListener('popstate', notify);

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  notify();
}

/** The current path + query; re-renders on navigation. */
export function useLocation(): string {
  const [location, setLocation] = useState(currentLocation());
  useEffect(() => {
    const listener = () => setLocation(currentLocation());
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return location;
}

export const currentLocation = () => `${location.pathname}${location.search}`;

export interface Match {
  route: RouteEntry;
  params: Record<string, string>;
}

/** The first route whose pattern (`/a/:name`) matches the path; segments are URL-decoded. */
export function matchRoute(pathname: string): Match | undefined {
  const segments = pathname.split('/').filter(Boolean);
  for (const route of routes) {
    const pattern = route.path.split('/').filter(Boolean);
    if (pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const ok = pattern.every((part, i) => {
      if (part.startsWith(':')) {
        params[part.slice(1)] = decodeURIComponent(segments[i]);
        return true;
      }
      return part === segments[i];
    });
    if (ok) return { route, params };
  }
  return undefined;
}

/** A path from a pattern and its params: `pathFor('/browse/:workspace', {workspace: 'acme'})`. */
export function pathFor(pattern: string, params: Record<string, string> = {}): string {
  return pattern.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
}

/** Where to go after signing in: a path on this site, else `/`. */
export function safeReturnPath(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/sign-in') ? next : '/';
}
