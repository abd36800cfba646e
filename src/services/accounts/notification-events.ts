import type { NotificationResource } from '../../core/db/index.ts';

/** Every notification type (docs/notifications.md has the table). */
export const NOTIFICATION_TYPES = [
  'invite.received',
  'invite.accepted',
  'invite.withdrawn',
  'invite.declined',
  'member.role_changed',
  'member.removed',
  'member.left',
  'workspace.soft_deleted',
  'workspace.restored',
  'workspace.purged',
  'payment.succeeded',
  'payment.declined',
  'domain.verified',
] as const;

export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** What happened, as written to each recipient. `actor` null: the server itself (e.g. the purge sweep). */
export interface NotificationEvent {
  type: NotificationType;
  message: string;
  actor: string | null;
  account_id: string | null;
  resource: NotificationResource;
  data: Record<string, unknown>;
}

/** Links point at the /control prefix (workspace restore, which /control lacks, is on /billing). */
const C = '/control/v1';
const enc = encodeURIComponent;
const accountRef = (accountId: string): NotificationResource => ({ kind: 'account', id: accountId, path: `${C}/accounts/${enc(accountId)}` });
const memberRef = (accountId: string, identity: string): NotificationResource => ({
  kind: 'member',
  id: identity,
  path: `${C}/accounts/${enc(accountId)}/members/${enc(identity)}`,
});
/** A workspace has no GET of its own: the link is its account's workspace listing, which shows its state. */
const workspaceRef = (name: string, accountId: string): NotificationResource => ({ kind: 'workspace', id: name, path: `${C}/accounts/${enc(accountId)}/workspaces` });

interface MemberFacts {
  accountId: string;
  identity: string;
  actor: string;
}

/** Typed builders: each event's type, message, resource and data in one place. */
export const events = {
  inviteReceived: (f: MemberFacts & { role: string; expiresAt: Date }): NotificationEvent => ({
    type: 'invite.received',
    message: `${f.actor} invited you to account ${f.accountId} as ${f.role}; accept before ${f.expiresAt.toISOString()}`,
    actor: f.actor,
    account_id: f.accountId,
    resource: { kind: 'invite', id: f.identity, path: `${memberRef(f.accountId, f.identity).path}/accept` },
    data: { role: f.role, invite_expires_at: f.expiresAt.toISOString() },
  }),
  inviteAccepted: (f: MemberFacts & { role: string; invitedBy: string | null }): NotificationEvent => ({
    type: 'invite.accepted',
    message: `${f.identity} accepted the invite to account ${f.accountId} and is now a ${f.role}`,
    actor: f.actor,
    account_id: f.accountId,
    resource: memberRef(f.accountId, f.identity),
    data: { identity: f.identity, role: f.role, invited_by: f.invitedBy },
  }),
  inviteWithdrawn: (f: MemberFacts): NotificationEvent => ({
    type: 'invite.withdrawn',
    message: `${f.actor} withdrew your invite to account ${f.accountId}`,
    actor: f.actor,
    account_id: f.accountId,
    resource: accountRef(f.accountId),
    data: { identity: f.identity },
  }),
  inviteDeclined: (f: MemberFacts & { invitedBy: string | null }): NotificationEvent => ({
    type: 'invite.declined',
    message: `${f.identity} declined the invite to account ${f.accountId}`,
    actor: f.actor,
    account_id: f.accountId,
    resource: accountRef(f.accountId),
    data: { identity: f.identity, invited_by: f.invitedBy },
  }),
  roleChanged: (f: MemberFacts & { from: string; to: string; state: string }): NotificationEvent => ({
    type: 'member.role_changed',
    message: `${f.actor} changed your role in account ${f.accountId} from ${f.from} to ${f.to}`,
    actor: f.actor,
    account_id: f.accountId,
    resource: memberRef(f.accountId, f.identity),
    data: { identity: f.identity, from: f.from, to: f.to, state: f.state },
  }),
  memberRemoved: (f: MemberFacts): NotificationEvent => ({
    type: 'member.removed',
    message: `${f.actor} removed you from account ${f.accountId}`,
    actor: f.actor,
    account_id: f.accountId,
    resource: accountRef(f.accountId),
    data: { identity: f.identity },
  }),
  memberLeft: (f: MemberFacts & { role: string }): NotificationEvent => ({
    type: 'member.left',
    message: `${f.identity} left account ${f.accountId}`,
    actor: f.actor,
    account_id: f.accountId,
    resource: memberRef(f.accountId, f.identity),
    data: { identity: f.identity, role: f.role },
  }),
  workspaceSoftDeleted: (f: { workspace: string; accountId: string; actor: string; purgeAfter: Date }): NotificationEvent => ({
    type: 'workspace.soft_deleted',
    message: `${f.actor} deleted workspace ${f.workspace}; an owner can restore it until ${f.purgeAfter.toISOString()}, then it is purged`,
    actor: f.actor,
    account_id: f.accountId,
    resource: workspaceRef(f.workspace, f.accountId),
    data: { workspace: f.workspace, purge_after: f.purgeAfter.toISOString(), restore_path: `/billing/v1/workspaces/${enc(f.workspace)}/restore` },
  }),
  workspaceRestored: (f: { workspace: string; accountId: string; actor: string }): NotificationEvent => ({
    type: 'workspace.restored',
    message: `${f.actor} restored workspace ${f.workspace}`,
    actor: f.actor,
    account_id: f.accountId,
    resource: workspaceRef(f.workspace, f.accountId),
    data: { workspace: f.workspace },
  }),
  workspacePurged: (f: { workspace: string; accountId: string; deletedBy: string | null }): NotificationEvent => ({
    type: 'workspace.purged',
    message: `Workspace ${f.workspace} was purged after its grace window; its data and access policies are gone`,
    actor: null,
    account_id: f.accountId,
    resource: workspaceRef(f.workspace, f.accountId),
    data: { workspace: f.workspace, deleted_by: f.deletedBy },
  }),
  paymentSucceeded: (f: { accountId: string; paymentId: string; amount: number; currency: string; actor: string | null }): NotificationEvent => ({
    type: 'payment.succeeded',
    message: `A payment of ${f.amount} ${f.currency} on account ${f.accountId} succeeded`,
    actor: f.actor,
    account_id: f.accountId,
    resource: { kind: 'payment', id: f.paymentId, path: `${C}/accounts/${enc(f.accountId)}/payments` },
    data: { payment_id: f.paymentId, amount: f.amount, currency: f.currency },
  }),
  paymentDeclined: (f: { accountId: string; paymentId: string; amount: number; currency: string; actor: string | null; reason: string }): NotificationEvent => ({
    type: 'payment.declined',
    message: `A payment of ${f.amount} ${f.currency} on account ${f.accountId} was declined: ${f.reason}`,
    actor: f.actor,
    account_id: f.accountId,
    resource: { kind: 'payment', id: f.paymentId, path: `${C}/accounts/${enc(f.accountId)}/payments` },
    data: { payment_id: f.paymentId, amount: f.amount, currency: f.currency, reason: f.reason },
  }),
  /** DomainService's DomainVerifiedEvent (not imported: domain-service depends on account-service, which uses these). */
  domainVerified: (e: { account_id: string; domain: string; domain_unicode: string; verified_by: string; verified_at: string }): NotificationEvent => ({
    type: 'domain.verified',
    message: `${e.verified_by} verified ${e.domain_unicode} for account ${e.account_id}`,
    actor: e.verified_by,
    account_id: e.account_id,
    resource: { kind: 'domain', id: e.domain, path: `${C}/accounts/${enc(e.account_id)}/domains` },
    data: { domain: e.domain, domain_unicode: e.domain_unicode, verified_at: e.verified_at },
  }),
};
