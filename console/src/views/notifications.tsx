/**
 * The notifications bell (in the header: the unread count, re-read on every navigation and each
 * minute) and the notifications page (newest first; mark read, mark all read, dismiss).
 */
import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../../src/client/generated/control.ts';
import { api, data } from '../api.ts';
import { ErrorNotice } from '../errors.tsx';
import { navigate, useLocation } from '../router.ts';
import { useApi } from '../use-api.ts';
import { ActionError, useAction, when } from './kit.tsx';
import './views.css';

type Notification = components['schemas']['Notification'];
const CHANGED = 'lakeport:notifications-changed';
const REFRESH_MS = 60_000;

const feed = (limit: number) => data(api.GET('/control/v1/notifications', { params: { query: { limit } } }));

export function NotificationsBell() {
  const here = useLocation();
  const [unread, setUnread] = useState<number>();
  useEffect(() => {
    let live = true;
    // A failed read leaves the last count; the notifications page shows the error itself.
    const read = () => void feed(1).then((f) => live && setUnread(f.unread), () => undefined);
    read();
    const timer = setInterval(read, REFRESH_MS);
    window.addEventListener(CHANGED, read);
    return () => {
      live = false;
      clearInterval(timer);
      window.removeEventListener(CHANGED, read);
    };
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

export default function NotificationsView() {
  const list = useApi(() => feed(50), []);
  const action = useAction();
  const changed = () => {
    list.reload();
    window.dispatchEvent(new Event(CHANGED));
  };
  const act = (n: Notification, what: 'read' | 'dismiss') =>
    action.run(async () => {
      const path = { notification_id: n.notification_id };
      await data(what === 'read' ? api.POST('/control/v1/notifications/{notification_id}/read', { params: { path } }) : api.POST('/control/v1/notifications/{notification_id}/dismiss', { params: { path } }));
      changed();
    });
  return (
    <section>
      <h1>Notifications</h1>
      <ActionError action={action} />
      <ErrorNotice error={list.error} />
      {list.value && (
        <>
          <div class="buttons">
            <span role="status">{list.value.unread} unread</span>
            <button type="button" disabled={action.busy || list.value.unread === 0} onClick={() => void action.run(() => data(api.POST('/control/v1/notifications/read-all', {})).then(changed))}>
              Mark all read
            </button>
          </div>
          {list.value.notifications.length === 0 && <p>Nothing yet.</p>}
          <ul class="feed">
            {list.value.notifications.map((n) => (
              <li key={n.notification_id} class={n.read ? 'read' : 'unread'}>
                <p>
                  {!n.read && <span class="sr-only">Unread: </span>}
                  {n.message}
                </p>
                <p class="muted">
                  {n.type} · {when(n.created_at)}
                </p>
                <div class="buttons">
                  {!n.read && (
                    <button type="button" disabled={action.busy} onClick={() => void act(n, 'read')}>
                      Mark read
                    </button>
                  )}
                  <button type="button" disabled={action.busy} onClick={() => void act(n, 'dismiss')}>
                    Dismiss
                  </button>
                </div>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
