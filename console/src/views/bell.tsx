/** The notifications bell in the header: the unread count, read at sign-in, each minute, on navigation when older than 15 s, and when the notifications page changes it. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, data } from '../api.ts';
import { navigate, useLocation } from '../router.ts';
import './bell.css';

export const NOTIFICATIONS_CHANGED = 'lakeport:notifications-changed';
const REFRESH_MS = 60_000;
const NAVIGATION_MS = 15_000;

export const notificationFeed = (limit: number) => data(api.GET('/control/v1/notifications', { params: { query: { limit } } }));

export function NotificationsBell() {
  const here = useLocation();
  const [unread, setUnread] = useState<number>();
  const lastRead = useRef(0);
  const live = useRef(true);
  // A failed read leaves the last count (a 401 ends the session through api.ts); the notifications page shows errors itself.
  const read = () => {
    lastRead.current = Date.now();
    void notificationFeed(1).then((f) => live.current && setUnread(f.unread), () => undefined);
  };
  useEffect(() => {
    live.current = true;
    read();
    const timer = setInterval(read, REFRESH_MS);
    window.addEventListener(NOTIFICATIONS_CHANGED, read);
    return () => {
      live.current = false;
      clearInterval(timer);
      window.removeEventListener(NOTIFICATIONS_CHANGED, read);
    };
  }, []);
  // Moving between pages re-reads a count older than NAVIGATION_MS (not on every click).
  useEffect(() => {
    if (Date.now() - lastRead.current > NAVIGATION_MS) read();
  }, [here]);
  const label = unread ? `Notifications, ${unread} unread` : 'Notifications';
  return (
    <a
      href="/notifications"
      class="bell"
      aria-label={label}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigate('/notifications');
      }}
    >
      <svg aria-hidden="true" viewBox="0 0 24 24" width="20" height="20">
        <path fill="currentColor" d="M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22Zm7-6V11a7 7 0 0 0-5.5-6.84V3a1.5 1.5 0 0 0-3 0v1.16A7 7 0 0 0 5 11v5l-2 2v1h18v-1Z" />
      </svg>
      {unread ? <span class="badge">{unread > 99 ? '99+' : unread}</span> : null}
    </a>
  );
}
