import { z } from 'zod';
import { NOTIFICATION_TYPES } from './notification-events.ts';
import { FEED_DEFAULT_LIMIT, FEED_MAX_LIMIT } from './notification-service.ts';

const NotificationId = z.string().regex(/^ntf_[A-Za-z0-9]{1,64}$/, 'must be ntf_ followed by 1-64 letters or digits');

export const NotificationParams = z.object({ notification_id: NotificationId });

export const FeedQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(FEED_MAX_LIMIT)
    .optional()
    .describe(`How many notifications to return, newest first (default ${FEED_DEFAULT_LIMIT}, at most ${FEED_MAX_LIMIT})`),
  before: NotificationId.optional().describe("Continue after this notification (the previous page's next_before)"),
});

export const Notification = z
  .object({
    notification_id: z.string(),
    type: z.enum(NOTIFICATION_TYPES).describe('What happened (docs/notifications.md lists the types)'),
    message: z.string().describe('What happened, for people'),
    actor: z.string().nullable().describe('The identity that caused it; null for the server itself (the purge sweep)'),
    account_id: z.string().nullable().describe('The billing account concerned'),
    resource: z
      .object({ kind: z.string(), id: z.string(), path: z.string().describe('API path of the resource, on /control') })
      .describe('What the notification is about'),
    data: z.record(z.string(), z.unknown()).describe('Event-specific facts (e.g. purge_after)'),
    created_at: z.string(),
    read: z.boolean(),
    read_at: z.string().nullable(),
    dismissed_at: z.string().nullable().describe('Dismissed notifications leave the feed; they count as read'),
  })
  .meta({ id: 'Notification' });

export const NotificationFeed = z.object({
  notifications: z.array(Notification),
  unread: z.number().int().describe('Unread notifications in the whole feed (not only this page)'),
  next_before: z.string().nullable().describe('Pass as `before` for the next page; null on the last page'),
});

export const ReadAllResponse = z.object({
  marked: z.number().int().describe('How many notifications this call marked read'),
  unread: z.number().int(),
});
