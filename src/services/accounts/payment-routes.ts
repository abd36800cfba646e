import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf, requireAuth, type TokenVerifier } from '../../core/http/index.ts';
import { AccountParams } from './account-schemas.ts';
import { managerOf } from './manager.ts';
import * as S from './payment-schemas.ts';
import type { PaymentService } from './payment-service.ts';

export interface PaymentRouteDeps {
  payments: PaymentService;
  verifier: TokenVerifier;
}

/** The account's payment method and payments; mounted under both /billing and /control. */
export const paymentRoutes =
  (deps: PaymentRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { payments } = deps;
    const onRequest = requireAuth(deps.verifier, 'accounts');
    const security = [{ bearer: [] }];

    app.get(
      '/v1/accounts/:account_id/payment-methods',
      {
        onRequest,
        schema: {
          summary: "The account's payment method, or null when none is attached (active member)",
          security,
          params: AccountParams,
          response: { 200: S.PaymentMethod.nullable() },
        },
      },
      async (request) => payments.getPaymentMethod(principalOf(request).identity, request.params.account_id),
    );

    app.post(
      '/v1/accounts/:account_id/payment-methods',
      {
        onRequest,
        schema: {
          summary: 'Attach a payment method, verified with the processor; replaces (and detaches) the previous one (billing_admin)',
          security,
          params: AccountParams,
          body: S.AttachPaymentMethodRequest,
          response: { 200: S.PaymentMethod },
        },
      },
      async (request) => payments.attachPaymentMethod(managerOf(request, 'payment_method.attach'), request.params.account_id, request.body),
    );

    app.delete(
      '/v1/accounts/:account_id/payment-methods',
      {
        onRequest,
        schema: {
          summary: 'Detach the payment method at the processor (billing_admin); 204 also when none is attached',
          security,
          params: AccountParams,
          response: { 204: z.undefined() },
        },
      },
      async (request, reply) => {
        await payments.detachPaymentMethod(managerOf(request, 'payment_method.detach'), request.params.account_id);
        return reply.status(204).send();
      },
    );

    app.post(
      '/v1/accounts/:account_id/payments',
      {
        onRequest,
        schema: {
          summary: 'Charge the attached payment method, confirmed synchronously (billing_admin); Idempotency-Key makes retries safe',
          security,
          params: AccountParams,
          headers: S.PaymentHeaders,
          body: S.CreatePaymentRequest,
          response: { 201: S.Payment },
        },
      },
      async (request, reply) => {
        const { payment, replayed } = await payments.pay(
          managerOf(request, 'payment.create'),
          request.params.account_id,
          request.body,
          request.headers['idempotency-key'],
        );
        if (replayed) reply.header('idempotent-replayed', 'true');
        return reply.status(201).send(payment);
      },
    );

    app.get(
      '/v1/accounts/:account_id/payments',
      {
        onRequest,
        schema: {
          summary: "The account's payments, newest first (billing_admin)",
          security,
          params: AccountParams,
          querystring: S.PaymentListQuery,
          response: { 200: z.array(S.Payment) },
        },
      },
      async (request) => payments.listPayments(principalOf(request).identity, request.params.account_id, request.query.limit),
    );
  };
