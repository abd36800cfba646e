/**
 * Every view of the console, in one list: its path pattern, its title, whether the navigation shows
 * it, and its module (loaded when first shown, so each view is its own chunk). Add a view by adding
 * an entry here and its file under views/. Paths must not fall under the service prefixes (/auth,
 * /upload, /jobs, /billing, /control, /policy, /odata, /iceberg) nor /healthz, /readyz, /metrics:
 * the server never serves the console there (src/services/console; test/console/server.test.ts checks).
 */
import type { ComponentType } from 'preact';

export interface ViewProps {
  /** The `:name` segments of the path, decoded. */
  params: Record<string, string>;
  /** The query string. */
  query: URLSearchParams;
}

export interface RouteEntry {
  path: string;
  title: string;
  /** The label in the navigation; absent: not listed there. */
  nav?: string;
  /** Shown without a session (the sign-in page). */
  public?: boolean;
  load: () => Promise<{ default: ComponentType<ViewProps> }>;
}

const browse = () => import('./views/browse.tsx');
const account = () => import('./views/account.tsx');

export const routes: RouteEntry[] = [
  { path: '/sign-in', title: 'Sign in', public: true, load: () => import('./views/sign-in.tsx') },
  { path: '/', title: 'Datasets', nav: 'Datasets', load: browse },
  { path: '/browse/:workspace', title: 'Workspace', load: browse },
  { path: '/browse/:workspace/:collection', title: 'Collection', load: browse },
  { path: '/browse/:workspace/:collection/:dataset', title: 'Dataset', load: () => import('./views/dataset.tsx') },
  { path: '/query', title: 'Query', nav: 'Query', load: () => import('./views/query.tsx') },
  { path: '/load', title: 'Upload', nav: 'Upload', load: () => import('./views/upload.tsx') },
  { path: '/govern', title: 'Govern', nav: 'Govern', load: () => import('./views/govern.tsx') },
  { path: '/govern/:workspace', title: 'Access policies', load: () => import('./views/policies.tsx') },
  { path: '/account', title: 'Account', nav: 'Account', load: account },
  { path: '/account/:section', title: 'Account', load: account },
  { path: '/notifications', title: 'Notifications', load: () => import('./views/notifications.tsx') },
];
