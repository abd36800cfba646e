-- Notifications (docs/notifications.md): one row per recipient and event, written by the account
-- service in the transaction of the event. `seq` orders a feed (newest first) and backs its cursor.
-- A dismissed notification is also read. Retention is enforced by the account service's upkeep.
CREATE TABLE notifications (
  notification_id text PRIMARY KEY,
  seq             bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  recipient       text NOT NULL,
  type            text NOT NULL,
  message         text NOT NULL,
  actor           text,
  account_id      text,
  resource        jsonb NOT NULL,  -- {kind, id, path}
  data            jsonb NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL DEFAULT now(),
  read_at         timestamptz,
  dismissed_at    timestamptz
);
CREATE INDEX notifications_feed ON notifications (recipient, seq DESC);
CREATE INDEX notifications_unread ON notifications (recipient) WHERE read_at IS NULL;
CREATE INDEX notifications_created ON notifications (created_at);
