import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { principalOf, requireAuth, type TokenVerifier } from '../../core/http/index.ts';
import * as S from './notification-schemas.ts';
import type { NotificationService } from './notification-service.ts';

export interface NotificationRouteDeps {
  notifications: NotificationService;
  verifier: TokenVerifier;
}

/** The caller's own notification feed (docs/notifications.md); /control only. */
export const notificationRoutes =
  (deps: NotificationRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { notifications } = deps;
    const onRequest = requireAuth(deps.verifier, 'accounts');
    const security = [{ bearer: [] }];

    app.get(
      '/v1/notifications',
      {
        onRequest,
        schema: {
          summary: "The caller's notifications, newest first, with the unread count (any credential of the identity)",
          security,
          querystring: S.FeedQuery,
          response: { 200: S.NotificationFeed },
        },
      },
      async (request) => notifications.feed(principalOf(request), request.query),
    );

    app.post(
      '/v1/notifications/read-all',
      {
        onRequest,
        schema: { summary: "Mark all the caller's unread notifications read (unnarrowed credential)", security, response: { 200: S.ReadAllResponse } },
      },
      async (request) => notifications.readAll(principalOf(request)),
    );

    app.post(
      '/v1/notifications/:notification_id/read',
      {
        onRequest,
        schema: { summary: 'Mark one notification read (unnarrowed credential)', security, params: S.NotificationParams, response: { 200: S.Notification } },
      },
      async (request) => notifications.read(principalOf(request), request.params.notification_id),
    );

    app.post(
      '/v1/notifications/:notification_id/dismiss',
      {
        onRequest,
        schema: {
          summary: 'Dismiss a notification: it leaves the feed and counts as read (unnarrowed credential)',
          security,
          params: S.NotificationParams,
          response: { 200: S.Notification },
        },
      },
      async (request) => notifications.dismiss(principalOf(request), request.params.notification_id),
    );
  };
