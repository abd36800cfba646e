// Owner: src/services/accounts (notifications; see test/table-ownership.test.ts).
import type { ColumnType } from 'kysely';
import type { DefaultTimestamp, Json, Timestamp } from './types.ts';

/** What a notification links to: a kind, its id, and the API path that shows it. */
export interface NotificationResource {
  kind: string;
  id: string;
  path: string;
}

export interface NotificationsTable {
  notification_id: string;
  /** Orders a feed (bigint identity; the drivers differ in how they read it, so compare it in SQL only). */
  seq: ColumnType<number | string, never, never>;
  recipient: string;
  type: string;
  message: string;
  actor: string | null;
  account_id: string | null;
  resource: Json<NotificationResource>;
  data: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: DefaultTimestamp;
  read_at: Timestamp | null;
  dismissed_at: Timestamp | null;
}

export interface NotificationTables {
  notifications: NotificationsTable;
}
