/**
 * A workspace's access policies (owners and admins): list, grant, change, revoke, and the
 * effective-permissions CSV (owners).
 */
import { useState } from 'preact/hooks';
import type { paths } from '../../../src/client/generated/policy.ts';
import { api, data, getText } from '../api.ts';
import { ErrorNotice } from '../errors.tsx';
import { Link } from '../link.tsx';
import type { ViewProps } from '../routes.ts';
import { useApi } from '../use-api.ts';
import { ActionError, Choice, ConfirmButton, TableBox, saveText, useAction, when, type Action } from './kit.tsx';
import './views.css';

type Grant = paths['/policy/v1/access/workspace/{workspace}/policies']['post']['requestBody']['content']['application/json'];
type Policy = paths['/policy/v1/access/workspace/{workspace}']['get']['responses'][200]['content']['application/json']['policies'][number];
type Role = Grant['role'];
const ROLES = (['reader', 'writer', 'admin', 'owner'] as const).map((r) => [r, r] as const);
const KINDS = [
  ['user', 'user'],
  ['service_account', 'service account'],
] as const;

export default function PoliciesView({ params }: ViewProps) {
  const workspace = params.workspace;
  const path = { workspace };
  const list = useApi(() => data(api.GET('/policy/v1/access/workspace/{workspace}', { params: { path } })), [workspace]);
  const action = useAction();
  const [editing, setEditing] = useState<string>();

  const revoke = (policy: Policy) =>
    action.run(async () => {
      await data(api.DELETE('/policy/v1/access/workspace/{workspace}/policies/{policy_id}', { params: { path: { workspace, policy_id: policy.policy_id } } }));
      list.reload();
    });

  const download = () =>
    action.run(async () => {
      const csv = await getText(`/policy/v1/access/workspace/${encodeURIComponent(workspace)}/effective-permissions.csv`, 'text/csv');
      saveText(csv, `${workspace}-effective-permissions.csv`, 'text/csv');
    });

  return (
    <section>
      <p class="muted">
        <Link href="/govern">Govern</Link> / {workspace}
      </p>
      <h1>Access policies of {workspace}</h1>
      <ActionError action={action} />
      <ErrorNotice error={list.error} />
      <div class="buttons">
        <button type="button" onClick={() => void download()} disabled={action.busy}>
          Download effective permissions (CSV)
        </button>
      </div>
      {list.value && (
        <TableBox label={`Policies of ${workspace}`} columns={['Principal', 'Role', 'Pattern', 'Granted by', 'Changed', '']} empty={list.value.policies.length === 0 && 'No policies.'}>
            {list.value.policies.map((policy) =>
              editing === policy.policy_id ? (
                <PolicyEditor key={policy.policy_id} workspace={workspace} policy={policy} action={action} onDone={() => (setEditing(undefined), list.reload())} />
              ) : (
                <tr key={policy.policy_id}>
                  <th scope="row">
                    {policy.principal.identity}
                    {policy.principal.type !== 'user' && <span class="muted"> ({policy.principal.type.replace('_', ' ')})</span>}
                  </th>
                  <td>{policy.role}</td>
                  <td>
                    <code>{policy.pattern}</code>
                  </td>
                  <td>{policy.created_by}</td>
                  <td>{when(policy.updated_at)}</td>
                  <td class="row-actions">
                    <button type="button" onClick={() => setEditing(policy.policy_id)} aria-label={`Change ${policy.principal.identity}'s ${policy.role} on ${policy.pattern}`}>
                      Change
                    </button>{' '}
                    <ConfirmButton label="Revoke" question={`Revoke ${policy.principal.identity}'s ${policy.role} on ${policy.pattern}?`} onConfirm={() => void revoke(policy)} disabled={action.busy} />
                  </td>
                </tr>
              ),
            )}
        </TableBox>
      )}
      <GrantForm workspace={workspace} action={action} onGranted={list.reload} />
    </section>
  );
}

function PolicyEditor({ workspace, policy, action, onDone }: { workspace: string; policy: Policy; action: Action; onDone: () => void }) {
  const [role, setRole] = useState(policy.role as Role);
  const [pattern, setPattern] = useState(policy.pattern);
  const save = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      await data(api.PUT('/policy/v1/access/workspace/{workspace}/policies/{policy_id}', { params: { path: { workspace, policy_id: policy.policy_id } }, body: { role, pattern } }));
      onDone();
    });
  };
  const formId = `edit-${policy.policy_id}`;
  return (
    <tr>
      <th scope="row">{policy.principal.identity}</th>
      <td>
        <Choice label={`Role of ${policy.principal.identity}`} hideLabel value={role} choices={ROLES} onChange={setRole} />
      </td>
      <td>
        <input form={formId} aria-label={`Pattern of ${policy.principal.identity}`} value={pattern} required onInput={(e) => setPattern(e.currentTarget.value)} />
      </td>
      <td colSpan={2}>
        <form id={formId} onSubmit={save} />
      </td>
      <td class="row-actions">
        <button type="submit" form={formId} class="primary" disabled={action.busy}>
          Save
        </button>{' '}
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </td>
    </tr>
  );
}

function GrantForm({ workspace, action, onGranted }: { workspace: string; action: Action; onGranted: () => void }) {
  const empty = { identity: '', type: 'user' as const, role: 'reader' as Role, pattern: `${workspace}.*` };
  const [grant, setGrant] = useState<{ identity: string; type: 'user' | 'service_account'; role: Role; pattern: string }>(empty);
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const body: Grant = { principal: { identity: grant.identity.trim(), type: grant.type }, role: grant.role, pattern: grant.pattern.trim() };
      await data(api.POST('/policy/v1/access/workspace/{workspace}/policies', { params: { path: { workspace } }, body }));
      setGrant(empty);
      onGranted();
    });
  };
  return (
    <form class="grant stack" onSubmit={submit} aria-labelledby="grant-title">
      <h2 id="grant-title">Grant a role</h2>
      <div class="fields">
        <label>
          Identity
          <input name="identity" required value={grant.identity} onInput={(e) => setGrant({ ...grant, identity: e.currentTarget.value })} autoComplete="off" />
        </label>
        <Choice label="Kind" value={grant.type} choices={KINDS} onChange={(type) => setGrant({ ...grant, type })} />
        <Choice label="Role" value={grant.role} choices={ROLES} onChange={(role) => setGrant({ ...grant, role })} />
        <label>
          Pattern <span class="muted">(ws.*, ws.collection.*, ws.collection.dataset)</span>
          <input name="pattern" required value={grant.pattern} onInput={(e) => setGrant({ ...grant, pattern: e.currentTarget.value })} />
        </label>
      </div>
      <div>
        <button type="submit" class="primary" disabled={action.busy}>
          Grant
        </button>
      </div>
    </form>
  );
}
