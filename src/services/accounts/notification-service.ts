import type { Kysely } from 'kysely';
import { requireManage, type Principal } from '../../core/authz/index.ts';
import { newId } from '../../core/crypto/index.ts';
import type { Database, Db } from '../../core/db/index.ts';
import { RequestValidationError } from '../../core/errors/index.ts';
import { accountsError } from './errors.ts';
import type { NotificationEvent, NotificationType } from './notification-events.ts';
import { NotificationRepo, type NotificationRow } from './notification-repo.ts';

/** A transaction (or the root instance) that notifications are written with. */
export type NotificationExecutor = Kysely<Database>;

/** Feed page size: default and maximum (a larger `limit` is a 422). */
export const FEED_DEFAULT_LIMIT = 50;
export const FEED_MAX_LIMIT = 200;

/** Retention: read or dismissed notifications are kept 90 days after they were written, any notification a year. */
export const READ_RETENTION_MS = 90 * 86_400_000;
export const UNREAD_RETENTION_MS = 365 * 86_400_000;

/**
 * The port through which events become notifications. Recipients are deduplicated and the event's
 * actor is never among them (it caused the event and got the API's answer). With `within`, the rows
 * are written in that transaction, so a rolled-back event leaves none.
 */
export interface Notifier {
  notify(recipients: Iterable<string>, event: NotificationEvent, within?: NotificationExecutor): Promise<void>;
  /** To the account's active billing_admins at this moment, plus `also`. */
  notifyBillingAdmins(accountId: string, event: NotificationEvent, options?: { also?: Iterable<string | null>; within?: NotificationExecutor }): Promise<void>;
}

export interface NotificationView {
  notification_id: string;
  type: NotificationType;
  message: string;
  actor: string | null;
  account_id: string | null;
  resource: { kind: string; id: string; path: string };
  data: Record<string, unknown>;
  created_at: string;
  read: boolean;
  read_at: string | null;
  dismissed_at: string | null;
}

export function notificationView(row: NotificationRow): NotificationView {
  return {
    notification_id: row.notification_id,
    type: row.type as NotificationType,
    message: row.message,
    actor: row.actor,
    account_id: row.account_id,
    resource: row.resource,
    data: row.data,
    created_at: row.created_at.toISOString(),
    read: row.read_at !== null,
    read_at: row.read_at?.toISOString() ?? null,
    dismissed_at: row.dismissed_at?.toISOString() ?? null,
  };
}

const notFound = (id: string) => accountsError('NOTIFICATION_NOT_FOUND', `Notification ${id} not found`);

/**
 * Notifications: written by the account service's events (the `Notifier` port), read by each
 * identity from its own feed. Another identity's notification is answered as unknown (404).
 * Any credential may read its identity's feed; changing read state needs an unnarrowed one.
 */
export class NotificationService implements Notifier {
  private readonly repo: NotificationRepo;

  constructor(db: Db) {
    this.repo = new NotificationRepo(db.kysely);
  }

  // ---- writing (the Notifier port) ----

  async notify(recipients: Iterable<string>, event: NotificationEvent, within?: NotificationExecutor): Promise<void> {
    const to = new Set(recipients);
    if (event.actor !== null) to.delete(event.actor);
    const now = new Date();
    await (within ? new NotificationRepo(within) : this.repo).insert(
      [...to].sort().map((recipient) => ({ notification_id: newId('ntf'), recipient, ...event, created_at: now })),
    );
  }

  async notifyBillingAdmins(accountId: string, event: NotificationEvent, options: { also?: Iterable<string | null>; within?: NotificationExecutor } = {}): Promise<void> {
    const repo = options.within ? new NotificationRepo(options.within) : this.repo;
    const also = [...(options.also ?? [])].filter((x): x is string => x !== null);
    await this.notify([...(await repo.billingAdminsOf(accountId)), ...also], event, options.within);
  }

  // ---- the caller's feed ----

  async feed(caller: Principal, options: { limit?: number; before?: string } = {}) {
    requireManage(caller, 'notification.read');
    const limit = options.limit ?? FEED_DEFAULT_LIMIT;
    if (options.before !== undefined && !(await this.repo.find(caller.identity, options.before))) {
      throw RequestValidationError.at(['query', 'before'], `no notification ${options.before} in your feed to continue from`);
    }
    const [rows, unread] = await Promise.all([this.repo.feed(caller.identity, limit + 1, options.before), this.repo.unreadCount(caller.identity)]);
    const page = rows.slice(0, limit);
    return {
      notifications: page.map(notificationView),
      unread,
      next_before: rows.length > limit ? page[page.length - 1].notification_id : null,
    };
  }

  /** Marks one notification read; repeating it is harmless. */
  async read(caller: Principal, notificationId: string): Promise<NotificationView> {
    return this.mark(caller, notificationId, false);
  }

  /** Dismisses a notification: it leaves the feed and counts as read. */
  async dismiss(caller: Principal, notificationId: string): Promise<NotificationView> {
    return this.mark(caller, notificationId, true);
  }

  async readAll(caller: Principal): Promise<{ marked: number; unread: number }> {
    requireManage(caller, 'notification.update');
    const marked = await this.repo.markAllRead(caller.identity, new Date());
    return { marked, unread: await this.repo.unreadCount(caller.identity) };
  }

  // ---- upkeep ----

  /** Deletes notifications past retention (see READ_RETENTION_MS, UNREAD_RETENTION_MS); returns how many. */
  purgeExpired(now = new Date()): Promise<number> {
    return this.repo.purge(new Date(now.getTime() - READ_RETENTION_MS), new Date(now.getTime() - UNREAD_RETENTION_MS));
  }

  private async mark(caller: Principal, notificationId: string, dismiss: boolean): Promise<NotificationView> {
    requireManage(caller, 'notification.update');
    const row = await this.repo.mark(caller.identity, notificationId, new Date(), dismiss);
    if (!row) throw notFound(notificationId);
    return notificationView(row);
  }
}
