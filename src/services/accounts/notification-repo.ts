import { type Kysely, type Selectable } from 'kysely';
import type { Database, NotificationResource, NotificationsTable } from '../../core/db/index.ts';

export type NotificationRow = Selectable<NotificationsTable>;

export interface NewNotification {
  notification_id: string;
  recipient: string;
  type: string;
  message: string;
  actor: string | null;
  account_id: string | null;
  resource: NotificationResource;
  data: Record<string, unknown>;
  created_at: Date;
}

/** SQL of notifications; over the root Kysely instance or a transaction of another repo (`new NotificationRepo(trx)`). */
export class NotificationRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(rows: NewNotification[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db
      .insertInto('notifications')
      .values(rows.map((r) => ({ ...r, resource: JSON.stringify(r.resource), data: JSON.stringify(r.data) })))
      .execute();
  }

  /** Active billing_admins of an active account (the recipients of account-wide events). */
  async billingAdminsOf(accountId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('members as m')
      .innerJoin('accounts as a', 'a.account_id', 'm.account_id')
      .select('m.identity')
      .where('m.account_id', '=', accountId)
      .where('m.state', '=', 'active')
      .where('m.role', '=', 'billing_admin')
      .where('a.status', '=', 'active')
      .orderBy('m.identity')
      .execute();
    return rows.map((r) => r.identity);
  }

  find(recipient: string, notificationId: string): Promise<NotificationRow | undefined> {
    return this.db.selectFrom('notifications').selectAll().where('recipient', '=', recipient).where('notification_id', '=', notificationId).executeTakeFirst();
  }

  /** The recipient's feed (not dismissed), newest first; `before` continues after that notification. */
  feed(recipient: string, limit: number, before?: string): Promise<NotificationRow[]> {
    let query = this.db
      .selectFrom('notifications')
      .selectAll()
      .where('recipient', '=', recipient)
      .where('dismissed_at', 'is', null)
      .orderBy('seq', 'desc')
      .limit(limit);
    if (before !== undefined) {
      query = query.where('seq', '<', (eb) =>
        eb.selectFrom('notifications').select('seq').where('recipient', '=', recipient).where('notification_id', '=', before),
      );
    }
    return query.execute();
  }

  async unreadCount(recipient: string): Promise<number> {
    const row = await this.db
      .selectFrom('notifications')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('recipient', '=', recipient)
      .where('read_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Marks read (and, with `dismiss`, dismissed); keeps earlier stamps. */
  mark(recipient: string, notificationId: string, now: Date, dismiss: boolean): Promise<NotificationRow | undefined> {
    return this.db
      .updateTable('notifications')
      .set((eb) => ({
        read_at: eb.fn.coalesce('read_at', eb.val(now)),
        ...(dismiss ? { dismissed_at: eb.fn.coalesce('dismissed_at', eb.val(now)) } : {}),
      }))
      .where('recipient', '=', recipient)
      .where('notification_id', '=', notificationId)
      .returningAll()
      .executeTakeFirst();
  }

  /** Marks every unread notification of the recipient read; returns how many. */
  async markAllRead(recipient: string, now: Date): Promise<number> {
    const result = await this.db.updateTable('notifications').set({ read_at: now }).where('recipient', '=', recipient).where('read_at', 'is', null).executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** Deletes read (or dismissed) notifications created before `readBefore`, and any created before `anyBefore`. */
  async purge(readBefore: Date, anyBefore: Date): Promise<number> {
    const result = await this.db
      .deleteFrom('notifications')
      .where((eb) => eb.or([eb.and([eb('read_at', 'is not', null), eb('created_at', '<', readBefore)]), eb('created_at', '<', anyBefore)]))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
