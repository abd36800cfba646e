/** Govern: pick a workspace for its access policies; the account's pages are a link away. */
import { api, data, whoAmI } from '../api.ts';
import { ErrorNotice } from '../errors.tsx';
import { Link } from '../link.tsx';
import { navigate, pathFor } from '../router.ts';
import { useApi } from '../use-api.ts';
import { OneFieldForm } from './kit.tsx';
import './views.css';

export default function GovernView() {
  const workspaces = useApi(async () => {
    const me = await whoAmI();
    if (!me.billing_account) return [];
    const all = await data(api.GET('/billing/v1/accounts/{account_id}/workspaces', { params: { path: { account_id: me.billing_account } } }));
    return all.filter((w) => w.state === 'active').map((w) => w.name);
  }, []);
  return (
    <section>
      <h1>Govern</h1>
      <h2>Access policies</h2>
      <p>Owners and admins of a workspace see and change who may do what in it.</p>
      <ErrorNotice error={workspaces.error} />
      {workspaces.value && workspaces.value.length > 0 && (
        <ul class="plain">
          {workspaces.value.map((w) => (
            <li key={w}>
              <Link href={pathFor('/govern/:workspace', { workspace: w })}>{w}</Link>
            </li>
          ))}
        </ul>
      )}
      <OneFieldForm label="Workspace" name="workspace" button="Open its policies" submit={(workspace) => navigate(pathFor('/govern/:workspace', { workspace }))} />
      <h2>Billing account</h2>
      <p>
        <Link href="/account/members">Members and invites</Link> · <Link href="/account/workspaces">Workspaces</Link> · <Link href="/account/service-accounts">Service accounts</Link> ·{' '}
        <Link href="/account/domains">Domains</Link> · <Link href="/account/payment">Payment method</Link>
      </p>
    </section>
  );
}
