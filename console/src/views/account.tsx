/**
 * The caller's billing account (billing admins manage, members read): members and invites,
 * workspaces with the soft-delete grace countdown and restore, service accounts and their
 * credentials, domains, the sign-in (IdP) policy, payment method. One route, `/account/:section`;
 * the sections are tabs.
 */
import { useState } from 'preact/hooks';
import type { components as Control, paths as ControlPaths } from '../../../src/client/generated/control.ts';
import { api, ApiError, data, whoAmI } from '../api.ts';
import { ErrorNotice } from '../errors.tsx';
import { Link } from '../link.tsx';
import { pathFor } from '../router.ts';
import type { ViewProps } from '../routes.ts';
import { useApi } from '../use-api.ts';
import { ActionError, Choice, ConfirmButton, Countdown, OneFieldForm, TableBox, useAction, when } from './kit.tsx';
import './views.css';

const SECTIONS = {
  members: 'Members and invites',
  workspaces: 'Workspaces',
  'service-accounts': 'Service accounts',
  domains: 'Domains',
  'sign-in-policy': 'Sign-in policy',
  payment: 'Payment method',
} as const;
type Section = keyof typeof SECTIONS;

export default function AccountView({ params }: ViewProps) {
  const section: Section = params.section && params.section in SECTIONS ? (params.section as Section) : 'members';
  const me = useApi(whoAmI, []);
  const accountId = me.value?.billing_account;
  return (
    <section>
      <h1>Account</h1>
      <nav aria-label="Account sections" class="tabs">
        <ul>
          {(Object.keys(SECTIONS) as Section[]).map((s) => (
            <li key={s}>
              <Link href={pathFor('/account/:section', { section: s })} aria-current={s === section ? 'page' : undefined}>
                {SECTIONS[s]}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <ErrorNotice error={me.error} />
      {me.value && !accountId && <p>You are not a member of a billing account. A billing admin can invite you.</p>}
      {accountId && (
        <>
          <h2>{SECTIONS[section]}</h2>
          <p class="muted">Account {accountId}</p>
          {section === 'members' && <Members accountId={accountId} />}
          {section === 'workspaces' && <Workspaces accountId={accountId} identity={me.value!.identity} />}
          {section === 'service-accounts' && <ServiceAccounts accountId={accountId} />}
          {section === 'domains' && <Domains accountId={accountId} />}
          {section === 'sign-in-policy' && <SignInPolicy accountId={accountId} />}
          {section === 'payment' && <Payment accountId={accountId} />}
        </>
      )}
    </section>
  );
}

type AccountProps = { accountId: string };
const ACCOUNT_ROLES = [
  ['member', 'member'],
  ['billing_admin', 'billing admin'],
] as const;

function Members({ accountId }: AccountProps) {
  const path = { account_id: accountId };
  const list = useApi(() => data(api.GET('/control/v1/accounts/{account_id}/members', { params: { path } })), [accountId]);
  const action = useAction();
  const [invite, setInvite] = useState({ identity: '', email: '', role: 'member' as 'member' | 'billing_admin' });
  const member = (identity: string) => ({ path: { account_id: accountId, identity } });
  const done = () => list.reload();
  return (
    <>
      <ActionError action={action} />
      <ErrorNotice error={list.error} />
      {list.value && (
        <TableBox label="Members" columns={['Identity', 'Email', 'Role', 'State', 'Since / invite expires', '']}>
            {list.value.map((m) => (
              <tr key={m.identity}>
                <th scope="row">{m.identity}</th>
                <td>{m.email ?? '—'}</td>
                <td>
                  <Choice
                    label={`Role of ${m.identity}`}
                    hideLabel
                    value={m.role}
                    choices={ACCOUNT_ROLES}
                    disabled={action.busy}
                    onChange={(role) => void action.run(() => data(api.PATCH('/control/v1/accounts/{account_id}/members/{identity}', { params: member(m.identity), body: { role } })).then(done))}
                  />
                </td>
                <td>{m.state === 'pending' ? 'invited' : 'active'}</td>
                <td>{m.state === 'pending' && m.invite_expires_at ? <>expires in <Countdown until={m.invite_expires_at} /></> : when(m.added_at)}</td>
                <td class="row-actions">
                  <ConfirmButton
                    label={m.state === 'pending' ? 'Withdraw' : 'Remove'}
                    question={m.state === 'pending' ? `Withdraw the invite of ${m.identity}?` : `Remove ${m.identity} from the account?`}
                    disabled={action.busy}
                    onConfirm={() => void action.run(() => data(api.DELETE('/control/v1/accounts/{account_id}/members/{identity}', { params: member(m.identity) })).then(done))}
                  />
                </td>
              </tr>
            ))}
        </TableBox>
      )}
      <form
        class="stack"
        aria-labelledby="invite-title"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            await data(api.POST('/control/v1/accounts/{account_id}/members', { params: { path }, body: { ...invite, identity: invite.identity.trim(), email: invite.email.trim() } }));
            setInvite({ identity: '', email: '', role: 'member' });
            done();
          });
        }}
      >
        <h3 id="invite-title">Invite someone</h3>
        <div class="fields">
          <label>
            Identity
            <input name="identity" required value={invite.identity} onInput={(e) => setInvite({ ...invite, identity: e.currentTarget.value })} autoComplete="off" />
          </label>
          <label>
            Email
            <input name="email" type="email" required value={invite.email} onInput={(e) => setInvite({ ...invite, email: e.currentTarget.value })} />
          </label>
          <Choice label="Role" value={invite.role} choices={ACCOUNT_ROLES} onChange={(role) => setInvite({ ...invite, role })} />
        </div>
        <div>
          <button type="submit" class="primary" disabled={action.busy}>
            Invite
          </button>
        </div>
      </form>
    </>
  );
}

type Workspace = Awaited<ReturnType<typeof listWorkspaces>>[number];
const listWorkspaces = (accountId: string) => data(api.GET('/billing/v1/accounts/{account_id}/workspaces', { params: { path: { account_id: accountId } } }));

function Workspaces({ accountId, identity }: AccountProps & { identity: string }) {
  const list = useApi(() => listWorkspaces(accountId), [accountId]);
  const action = useAction();
  const byName = (name: string) => ({ path: { name } });
  // Billed to this account, with the caller as its first owner.
  const create = (name: string) =>
    action.run(() => data(api.PUT('/control/v1/workspaces/{name}', { params: byName(name), body: { billing_account: accountId, members: [{ identity, role: 'owner' }] } })).then(list.reload));
  const remove = (w: Workspace) => action.run(() => data(api.DELETE('/billing/v1/workspaces/{name}', { params: byName(w.name) })).then(list.reload));
  const restore = (w: Workspace) => action.run(() => data(api.POST('/billing/v1/workspaces/{name}/restore', { params: byName(w.name) })).then(list.reload));
  return (
    <>
      <ActionError action={action} />
      <ErrorNotice error={list.error} />
      {list.value && list.value.length === 0 && <p>The account has no workspaces.</p>}
      {list.value && list.value.length > 0 && (
        <TableBox label="Workspaces" columns={['Workspace', 'State', 'Protection', 'Created', '']}>
            {list.value.map((w) => (
              <tr key={w.name} class={w.state === 'deleted' ? 'deleted' : undefined}>
                <th scope="row">{w.name}</th>
                <td>
                  {w.state === 'active' ? (
                    'active'
                  ) : (
                    <>
                      deleted; restorable for{' '}
                      {w.purge_after ? <Countdown until={w.purge_after} stepMs={1000} /> : 'an unknown time'}
                    </>
                  )}
                </td>
                <td>{[w.deletion_protection && 'locked against deletion', w.drop_protection && 'drop protection', w.history_protection && 'history protection'].filter(Boolean).join(', ') || '—'}</td>
                <td>
                  {when(w.created_at)} <span class="muted">by {w.created_by}</span>
                </td>
                <td class="row-actions">
                  {w.state === 'active' ? (
                    <>
                      <Link href={pathFor('/govern/:workspace', { workspace: w.name })}>Policies</Link>{' '}
                      <ConfirmButton label="Delete" question={`Delete ${w.name}? It can be restored for 24 hours.`} disabled={action.busy || w.deletion_protection} onConfirm={() => void remove(w)} />
                    </>
                  ) : (
                    <button type="button" class="primary" disabled={action.busy} onClick={() => void restore(w)}>
                      Restore {w.name}
                    </button>
                  )}
                </td>
              </tr>
            ))}
        </TableBox>
      )}
      <OneFieldForm label="Create a workspace (you are its owner)" name="workspace" button="Create" disabled={action.busy} submit={create} />
    </>
  );
}

function ServiceAccounts({ accountId }: AccountProps) {
  const path = { account_id: accountId };
  const list = useApi(() => data(api.GET('/control/v1/accounts/{account_id}/service-accounts', { params: { path } })), [accountId]);
  const action = useAction();
  const [open, setOpen] = useState<string>();
  const full = list.value !== undefined && list.value.used >= list.value.limit;
  return (
    <>
      <ActionError action={action} />
      <ErrorNotice error={list.error} />
      {list.value && (
        <>
          <p>
            Plan <strong>{list.value.plan}</strong>: {list.value.used} of {list.value.limit} service accounts used.
          </p>
          <TableBox label="Service accounts" columns={['Identity', 'Added', '']} empty={list.value.service_accounts.length === 0 && 'No service accounts.'}>
              {list.value.service_accounts.map((s) => [
                <tr key={s.identity}>
                  <th scope="row">{s.identity}</th>
                  <td>
                    {when(s.added_at)} <span class="muted">by {s.added_by}</span>
                  </td>
                  <td class="row-actions">
                    <button type="button" aria-expanded={open === s.identity} aria-controls={`credentials-${s.identity}`} onClick={() => setOpen(open === s.identity ? undefined : s.identity)}>
                      Credentials<span class="sr-only"> of {s.identity}</span>
                    </button>{' '}
                    <ConfirmButton
                      label="Remove"
                      question={`Remove service account ${s.identity}?`}
                      disabled={action.busy}
                      onConfirm={() => void action.run(() => data(api.DELETE('/control/v1/accounts/{account_id}/service-accounts/{identity}', { params: { path: { account_id: accountId, identity: s.identity } } })).then(list.reload))}
                    />
                  </td>
                </tr>,
                open === s.identity && (
                  <tr key={`${s.identity}-credentials`} id={`credentials-${s.identity}`}>
                    <td colSpan={3}>
                      <Credentials accountId={accountId} identity={s.identity} />
                    </td>
                  </tr>
                ),
              ])}
          </TableBox>
        </>
      )}
      <OneFieldForm
        label="Add a service account (its client id)"
        name="identity"
        button="Add"
        disabled={action.busy}
        submit={(identity) => action.run(() => data(api.POST('/control/v1/accounts/{account_id}/service-accounts', { params: { path }, body: { identity } })).then(list.reload))}
      >
        {full && <span class="muted">The plan has no room left; adding answers why.</span>}
      </OneFieldForm>
    </>
  );
}

const LIFETIMES = [
  ['30', '30 days'],
  ['90', '90 days'],
  ['365', '1 year'],
  ['never', 'never expires'],
] as const;
type Lifetime = (typeof LIFETIMES)[number][0];
type MintedCredential = Pick<ControlPaths['/control/v1/accounts/{account_id}/service-accounts/{identity}/credentials']['post']['responses'][201]['content']['application/json'], 'credential_id' | 'client_id' | 'secret'>;

/**
 * A service account's credentials (billing admins only; docs/service-accounts.md): listed without
 * their secrets, created — the secret is shown here once and kept nowhere else — and revoked.
 */
function Credentials({ accountId, identity }: AccountProps & { identity: string }) {
  const path = { account_id: accountId, identity };
  const list = useApi(() => data(api.GET('/control/v1/accounts/{account_id}/service-accounts/{identity}/credentials', { params: { path } })), [accountId, identity]);
  const action = useAction();
  const [type, setType] = useState('service');
  const [lifetime, setLifetime] = useState<Lifetime>('90');
  const [minted, setMinted] = useState<MintedCredential>();
  const create = () =>
    action.run(async () => {
      const body = { type, expires_in_days: lifetime === 'never' ? null : Number(lifetime) };
      setMinted(await data(api.POST('/control/v1/accounts/{account_id}/service-accounts/{identity}/credentials', { params: { path }, body })));
      list.reload();
    });
  const revoke = (credentialId: string) =>
    action.run(() => data(api.DELETE('/control/v1/accounts/{account_id}/service-accounts/{identity}/credentials/{credential_id}', { params: { path: { ...path, credential_id: credentialId } } })).then(list.reload));
  return (
    <div>
      <h3>Credentials of {identity}</h3>
      <ActionError action={action} />
      <ErrorNotice error={list.error} />
      {minted && <MintedSecret credential={minted} onDone={() => setMinted(undefined)} />}
      {list.value && (
        <TableBox label={`Credentials of ${identity}`} columns={['Credential', 'Type', 'Created', 'Expires', 'Last used', '']} empty={list.value.length === 0 && 'No credentials: create one below.'}>
          {list.value.map((c) => (
            <tr key={c.credential_id}>
              <th scope="row">
                {c.credential_id} <span class="muted">{c.secret_hint}</span>
              </th>
              <td>{c.type}</td>
              <td>
                {when(c.created_at)} <span class="muted">by {c.created_by}</span>
              </td>
              <td>{c.expires_at === null ? 'never' : c.expired ? <span class="tag">expired</span> : when(c.expires_at)}</td>
              <td>{when(c.last_used_at)}</td>
              <td class="row-actions">
                <ConfirmButton label="Revoke" question={`Revoke ${c.credential_id} of ${identity}?`} disabled={action.busy} onConfirm={() => void revoke(c.credential_id)} />
              </td>
            </tr>
          ))}
        </TableBox>
      )}
      <form
        class="inline-form"
        aria-label={`Create a credential for ${identity}`}
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <label>
          Credential type
          <input name="type" required pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,63}" value={type} onInput={(e) => setType(e.currentTarget.value)} autoComplete="off" />
        </label>
        <Choice label="Expires" value={lifetime} choices={LIFETIMES} onChange={setLifetime} />
        <button type="submit" class="primary" disabled={action.busy}>
          Create a credential
        </button>
      </form>
    </div>
  );
}

/** A just-created secret: shown once, with a copy button; dismissing it forgets it. */
function MintedSecret({ credential, onDone }: { credential: MintedCredential; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = () => void navigator.clipboard?.writeText(credential.secret).then(() => setCopied(true), () => setCopied(false));
  return (
    <div class="success" role="status">
      <p>
        Credential {credential.credential_id} for <strong>{credential.client_id}</strong> created. Copy its secret now: it is not shown again.
      </p>
      <label>
        Secret
        <input readOnly value={credential.secret} onFocus={(e) => e.currentTarget.select()} autoComplete="off" spellcheck={false} />
      </label>
      <div class="buttons">
        {navigator.clipboard && (
          <button type="button" onClick={copy}>
            {copied ? 'Copied' : 'Copy'}
          </button>
        )}
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

type IdpPolicy = ControlPaths['/control/v1/accounts/{account_id}/idp-policy']['get']['responses'][200]['content']['application/json'];
type IdpPolicyRequest = ControlPaths['/control/v1/accounts/{account_id}/idp-policy']['put']['requestBody']['content']['application/json'];
type Preview = ControlPaths['/control/v1/accounts/{account_id}/idp-policy/preview']['post']['responses'][200]['content']['application/json'];
const PROVIDERS = ['idp_a', 'idp_b'] as const;

/** The policy as the form edits it: lists as comma-separated text, numbers as text ('' is none). */
interface PolicyForm {
  enforced: boolean;
  providers: Record<(typeof PROVIDERS)[number], boolean>;
  allow_password_auth: boolean;
  require_mfa: boolean;
  max_auth_age_hours: string;
  max_session_hours: string;
  email_domains: string;
  blocks: Record<(typeof PROVIDERS)[number], { allowed_email_domains: string; required_groups: string }>;
  members_may_mint: boolean;
  max_lifetime_days: string;
}

const listText = (values: readonly string[] | null | undefined) => (values ?? []).join(', ');
const textList = (text: string) => {
  const values = text.split(',').map((v) => v.trim()).filter(Boolean);
  return values.length > 0 ? values : null;
};
const numberText = (value: number | null | undefined) => (value == null ? '' : String(value));
const textNumber = (text: string) => (text.trim() === '' ? null : Number(text));

function formOf(policy: IdpPolicy): PolicyForm {
  return {
    enforced: policy.enforced,
    providers: { idp_a: policy.providers?.includes('idp_a') ?? false, idp_b: policy.providers?.includes('idp_b') ?? false },
    allow_password_auth: policy.allow_password_auth,
    require_mfa: policy.require_mfa,
    max_auth_age_hours: numberText(policy.max_auth_age_hours),
    max_session_hours: numberText(policy.max_session_hours),
    email_domains: listText(policy.email_domains),
    blocks: Object.fromEntries(PROVIDERS.map((p) => [p, { allowed_email_domains: listText(policy[p]?.allowed_email_domains), required_groups: listText(policy[p]?.required_groups) }])) as PolicyForm['blocks'],
    members_may_mint: policy.machine_credentials?.members_may_mint ?? true,
    max_lifetime_days: numberText(policy.machine_credentials?.max_lifetime_days),
  };
}

/** The whole document a PUT replaces the policy with (docs/idp-policy.md): what the form does not set is its default. */
function requestOf(form: PolicyForm): IdpPolicyRequest {
  const providers = PROVIDERS.filter((p) => form.providers[p]);
  const block = (p: (typeof PROVIDERS)[number]) => {
    const b = { allowed_email_domains: textList(form.blocks[p].allowed_email_domains), required_groups: textList(form.blocks[p].required_groups) };
    return b.allowed_email_domains || b.required_groups ? b : null;
  };
  const maxLifetime = textNumber(form.max_lifetime_days);
  return {
    enforced: form.enforced,
    providers: providers.length > 0 ? [...providers] : null,
    idp_a: block('idp_a'),
    idp_b: block('idp_b'),
    allow_password_auth: form.allow_password_auth,
    require_mfa: form.require_mfa,
    max_auth_age_hours: textNumber(form.max_auth_age_hours),
    max_session_hours: textNumber(form.max_session_hours),
    email_domains: textList(form.email_domains),
    machine_credentials: form.members_may_mint && maxLifetime === null ? null : { members_may_mint: form.members_may_mint, max_lifetime_days: maxLifetime },
  };
}

/**
 * The account's sign-in (IdP) policy (docs/idp-policy.md): every member reads it and its recent
 * denials; a billing admin previews a change against each member's last sign-in, then saves it —
 * and, when the API answers that it would lock the admin out (409 IDP_POLICY_WOULD_DENY_YOU), may
 * save it anyway.
 */
function SignInPolicy({ accountId }: AccountProps) {
  const path = { account_id: accountId };
  const policy = useApi(() => data(api.GET('/control/v1/accounts/{account_id}/idp-policy', { params: { path } })), [accountId]);
  const denials = useApi(() => data(api.GET('/control/v1/accounts/{account_id}/idp-policy/denials', { params: { path, query: { limit: 20 } } })), [accountId]);
  const action = useAction();
  const [edited, setEdited] = useState<PolicyForm>();
  const [preview, setPreview] = useState<Preview>();
  const [wouldDenyYou, setWouldDenyYou] = useState(false);
  const form = edited ?? (policy.value && formOf(policy.value));
  /** Sets the edited form (undefined: the stored policy's); a preview or lock-out warning of the old one no longer applies. */
  const edit = (next: PolicyForm | undefined) => {
    setEdited(next);
    setPreview(undefined);
    setWouldDenyYou(false);
  };
  const change = (patch: Partial<PolicyForm>) => edit({ ...form!, ...patch });
  const save = (force: boolean) =>
    action.run(async () => {
      try {
        await data(api.PUT('/control/v1/accounts/{account_id}/idp-policy', { params: { path, query: force ? { force: 'true' } : {} }, body: requestOf(form!) }));
      } catch (error) {
        setWouldDenyYou(error instanceof ApiError && error.code === 'IDP_POLICY_WOULD_DENY_YOU');
        throw error;
      }
      setEdited(undefined);
      setWouldDenyYou(false);
      policy.reload();
    });
  const runPreview = () => action.run(async () => setPreview(await data(api.POST('/control/v1/accounts/{account_id}/idp-policy/preview', { params: { path }, body: requestOf(form!) }))));
  const check = (label: string, checked: boolean, onChange: (value: boolean) => void) => (
    <label class="check">
      <input type="checkbox" checked={checked} onChange={(e) => onChange(e.currentTarget.checked)} /> {label}
    </label>
  );
  const text = (label: string, value: string, onChange: (value: string) => void, hint?: string) => (
    <label>
      {label}
      <input value={value} onInput={(e) => onChange(e.currentTarget.value)} autoComplete="off" placeholder={hint} />
    </label>
  );
  const hours = (label: string, value: string, onChange: (value: string) => void) => (
    <label>
      {label}
      <input type="number" min={1} step={1} value={value} onInput={(e) => onChange(e.currentTarget.value)} placeholder="no limit" />
    </label>
  );
  return (
    <>
      <ErrorNotice error={policy.error} />
      {policy.value && form && (
        <>
          <p>
            {policy.value.configured ? (
              <>
                Version {policy.value.version}, changed {when(policy.value.updated_at)} <span class="muted">by {policy.value.updated_by}</span>.
              </>
            ) : (
              'No policy is stored: every sign-in is admitted.'
            )}
          </p>
          <form
            aria-label="Sign-in policy"
            onSubmit={(e) => {
              e.preventDefault();
              void save(false);
            }}
          >
            {check('Enforced (off: every sign-in is admitted)', form.enforced, (enforced) => change({ enforced }))}
            <fieldset>
              <legend>Providers people may sign in with (none ticked: any)</legend>
              {PROVIDERS.map((p) => check(p, form.providers[p], (on) => change({ providers: { ...form.providers, [p]: on } })))}
            </fieldset>
            {check('Allow password-only sign-in', form.allow_password_auth, (allow_password_auth) => change({ allow_password_auth }))}
            {check('Require multi-factor authentication', form.require_mfa, (require_mfa) => change({ require_mfa }))}
            <div class="fields">
              {hours('Re-authenticate at the provider every (hours)', form.max_auth_age_hours, (max_auth_age_hours) => change({ max_auth_age_hours }))}
              {hours('Longest session (hours)', form.max_session_hours, (max_session_hours) => change({ max_session_hours }))}
            </div>
            <div class="fields">{text('Email domains (verified domains of this account, comma-separated)', form.email_domains, (email_domains) => change({ email_domains }), 'any')}</div>
            {PROVIDERS.map((p) => (
              <fieldset key={p}>
                <legend>Through {p} only</legend>
                <div class="fields">
                  {text(`Email domains for ${p}`, form.blocks[p].allowed_email_domains, (v) => change({ blocks: { ...form.blocks, [p]: { ...form.blocks[p], allowed_email_domains: v } } }), 'any')}
                  {text(`Required groups for ${p} (any of)`, form.blocks[p].required_groups, (v) => change({ blocks: { ...form.blocks, [p]: { ...form.blocks[p], required_groups: v } } }), 'none')}
                </div>
              </fieldset>
            ))}
            <fieldset>
              <legend>Machine credentials members mint for themselves</legend>
              {check('Members may mint them', form.members_may_mint, (members_may_mint) => change({ members_may_mint }))}
              <div class="fields">
                <label>
                  Longest lifetime (days)
                  <input type="number" min={1} max={3650} step={1} value={form.max_lifetime_days} onInput={(e) => change({ max_lifetime_days: e.currentTarget.value })} placeholder="no limit" />
                </label>
              </div>
            </fieldset>
            <ActionError action={action} />
            <div class="buttons">
              <button type="button" disabled={action.busy} onClick={() => void runPreview()}>
                Preview
              </button>
              <button type="submit" class="primary" disabled={action.busy}>
                Save
              </button>
              {wouldDenyYou && (
                <button type="button" class="danger" disabled={action.busy} onClick={() => void save(true)}>
                  Save anyway
                </button>
              )}
              {edited && (
                <button type="button" disabled={action.busy} onClick={() => edit(undefined)}>
                  Discard changes
                </button>
              )}
            </div>
          </form>
          {preview && (
            <>
              <h3>Preview</h3>
              <p role="status">
                Judged against each member's last sign-in: {preview.admitted} admitted, {preview.denied} denied, {preview.unknown} never signed in (their first sign-in will be judged).
              </p>
              <TableBox label="Preview by member" columns={['Member', 'Role', 'Outcome', 'Why', 'Last sign-in']} empty={preview.members.length === 0 && 'No active members.'}>
                {preview.members.map((m) => (
                  <tr key={m.identity}>
                    <th scope="row">{m.identity}</th>
                    <td>{m.role}</td>
                    <td>{m.outcome}</td>
                    <td>{m.code ? <><code>{m.code}</code> {m.reason}</> : '—'}</td>
                    <td>{when(m.last_sign_in_at)}</td>
                  </tr>
                ))}
              </TableBox>
            </>
          )}
        </>
      )}
      <h3>Refused sign-ins</h3>
      <ErrorNotice error={denials.error} />
      {denials.value && (
        <TableBox label="Refused sign-ins" columns={['When', 'Identity', 'Provider', 'Email', 'Why']} empty={denials.value.denials.length === 0 && 'No refused sign-ins.'}>
          {denials.value.denials.map((d) => (
            <tr key={d.denial_id}>
              <td>{when(d.at)}</td>
              <th scope="row">{d.identity}</th>
              <td>{d.provider}</td>
              <td>{d.email ?? '—'}</td>
              <td>
                <code>{d.code}</code> {d.reason}
              </td>
            </tr>
          ))}
        </TableBox>
      )}
    </>
  );
}

function Domains({ accountId }: AccountProps) {
  const path = { account_id: accountId };
  const list = useApi(() => data(api.GET('/control/v1/accounts/{account_id}/domains', { params: { path } })), [accountId]);
  const action = useAction();
  const [checked, setChecked] = useState<string>();
  const one = (d: string) => ({ path: { account_id: accountId, domain: d } });
  return (
    <>
      <ActionError action={action} />
      <ErrorNotice error={list.error} />
      {checked && <p role="status">{checked}</p>}
      {list.value && (
        <TableBox label="Domains" columns={['Domain', 'State', 'TXT record to publish', '']} empty={list.value.domains.length === 0 && 'No domains claimed.'}>
            {list.value.domains.map((d) => (
              <tr key={d.domain}>
                <th scope="row">{d.domain_unicode}</th>
                <td>{d.state}</td>
                <td>
                  <code>{d.record.name}</code> TXT <code>{d.record.value}</code>
                </td>
                <td class="row-actions">
                  {d.state !== 'verified' && (
                    <button
                      type="button"
                      disabled={action.busy}
                      onClick={() =>
                        void action.run(async () => {
                          await data(api.POST('/control/v1/accounts/{account_id}/domains/{domain}/verify', { params: one(d.domain) }));
                          setChecked(`${d.domain_unicode} is verified.`);
                          list.reload();
                        })
                      }
                    >
                      Verify {d.domain_unicode}
                    </button>
                  )}{' '}
                  <ConfirmButton label="Release" question={`Release ${d.domain_unicode}?`} disabled={action.busy} onConfirm={() => void action.run(() => data(api.DELETE('/control/v1/accounts/{account_id}/domains/{domain}', { params: one(d.domain) })).then(list.reload))} />
                </td>
              </tr>
            ))}
        </TableBox>
      )}
      <OneFieldForm
        label="Claim a domain"
        name="domain"
        button="Claim"
        placeholder="example.com"
        disabled={action.busy}
        submit={(domain) => action.run(() => data(api.POST('/control/v1/accounts/{account_id}/domains', { params: { path }, body: { domain } })).then(list.reload))}
      />
    </>
  );
}

type AttachRequest = Control['schemas']['AttachPaymentMethodRequestInput'];

function Payment({ accountId }: AccountProps) {
  const path = { account_id: accountId };
  const current = useApi(() => data(api.GET('/control/v1/accounts/{account_id}/payment-methods', { params: { path } })), [accountId]);
  const action = useAction();
  const [card, setCard] = useState<AttachRequest>({ processor_payment_method_id: '', brand: '', last4: '' });
  const method = current.value;
  return (
    <>
      <ActionError action={action} />
      <ErrorNotice error={current.error} />
      {current.value === null && <p>No payment method is attached.</p>}
      {method && (
        <div class="stack">
          <p>
            <strong>
              {method.brand} ending in {method.last4}
            </strong>
            {method.exp_month !== null && method.exp_year !== null && <> · expires {String(method.exp_month).padStart(2, '0')}/{method.exp_year}</>} ·{' '}
            {method.livemode ? 'live' : 'test mode'} · attached {when(method.attached_at)} by {method.attached_by}
          </p>
          <div>
            <ConfirmButton label="Detach" question="Detach this payment method?" disabled={action.busy} onConfirm={() => void action.run(() => data(api.DELETE('/control/v1/accounts/{account_id}/payment-methods', { params: { path } })).then(current.reload))} />
          </div>
        </div>
      )}
      <form
        class="stack"
        aria-labelledby="attach-title"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            await data(api.POST('/control/v1/accounts/{account_id}/payment-methods', { params: { path }, body: card }));
            setCard({ processor_payment_method_id: '', brand: '', last4: '' });
            current.reload();
          });
        }}
      >
        <h3 id="attach-title">{method ? 'Replace the payment method' : 'Attach a payment method'}</h3>
        <p class="muted">The processor's payment method id comes from its card form; the brand and last four digits are checked against it.</p>
        <div class="fields">
          <label>
            Payment method id
            <input name="processor_payment_method_id" required value={card.processor_payment_method_id} onInput={(e) => setCard({ ...card, processor_payment_method_id: e.currentTarget.value })} autoComplete="off" />
          </label>
          <label>
            Brand
            <input name="brand" required value={card.brand} onInput={(e) => setCard({ ...card, brand: e.currentTarget.value })} />
          </label>
          <label>
            Last four digits
            <input name="last4" required pattern="[0-9]{4}" inputMode="numeric" value={card.last4} onInput={(e) => setCard({ ...card, last4: e.currentTarget.value })} />
          </label>
        </div>
        <div>
          <button type="submit" class="primary" disabled={action.busy}>
            Attach
          </button>
        </div>
      </form>
      <Payments accountId={accountId} />
    </>
  );
}

/** An amount in the currency's smallest unit (docs/payments.md), as the browser's locale writes money. */
function formatAmount(amount: number, currency: string): string {
  try {
    const format = new Intl.NumberFormat(undefined, { style: 'currency', currency: currency.toUpperCase() });
    return format.format(amount / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
  } catch {
    return `${amount} ${currency}`;
  }
}

/** The account's payments, newest first (billing admins; others see the API's 403). */
function Payments({ accountId }: AccountProps) {
  const list = useApi(() => data(api.GET('/control/v1/accounts/{account_id}/payments', { params: { path: { account_id: accountId }, query: { limit: 50 } } })), [accountId]);
  return (
    <>
      <h3>Payments</h3>
      <ErrorNotice error={list.error} />
      {list.value && (
        <TableBox label="Payments" columns={['When', 'Amount', 'Description', 'Status', 'By']} empty={list.value.length === 0 && 'No payments yet.'}>
          {list.value.map((p) => (
            <tr key={p.payment_id}>
              <td>{when(p.created_at)}</td>
              <th scope="row">{formatAmount(p.amount, p.currency)}</th>
              <td>{p.description ?? '—'}</td>
              <td>
                {p.status}
                {p.failure_message && <span class="muted"> — {p.failure_message}</span>}
              </td>
              <td>{p.created_by}</td>
            </tr>
          ))}
        </TableBox>
      )}
    </>
  );
}
