/** The notifications page: newest first; mark read, mark all read, dismiss, accept an invite (the bell is bell.tsx). */
import { useState } from 'preact/hooks';
import type { components } from '../../../src/client/generated/control.ts';
import { api, data } from '../api.ts';
import { ErrorNotice } from '../errors.tsx';
import { Link } from '../link.tsx';
import { useApi } from '../use-api.ts';
import { ActionError, useAction, when } from './kit.tsx';
import { NOTIFICATIONS_CHANGED, notificationFeed } from './bell.tsx';
import './views.css';

type Notification = components['schemas']['Notification'];

export default function NotificationsView() {
  const list = useApi(() => notificationFeed(50), []);
  const action = useAction();
  const [accepted, setAccepted] = useState<string>();
  const changed = () => {
    list.reload();
    window.dispatchEvent(new Event(NOTIFICATIONS_CHANGED));
  };
  const act = (n: Notification, what: 'read' | 'dismiss') =>
    action.run(async () => {
      const path = { notification_id: n.notification_id };
      await data(what === 'read' ? api.POST('/control/v1/notifications/{notification_id}/read', { params: { path } }) : api.POST('/control/v1/notifications/{notification_id}/dismiss', { params: { path } }));
      changed();
    });
  /** An invite's notification names the account and the invited identity (resource.id). */
  const accept = (accountId: string, identity: string) =>
    action.run(async () => {
      await data(api.POST('/control/v1/accounts/{account_id}/members/{identity}/accept', { params: { path: { account_id: accountId, identity } } }));
      setAccepted(accountId);
      changed();
    });
  return (
    <section>
      <h1>Notifications</h1>
      {accepted && (
        <p role="status" class="success">
          You joined account {accepted}. <Link href="/account/members">Open the account</Link>
        </p>
      )}
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
                  {n.type === 'invite.received' && n.account_id && (
                    <button type="button" class="primary" disabled={action.busy} onClick={() => void accept(n.account_id!, n.resource.id)}>
                      Accept the invite
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
