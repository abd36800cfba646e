import Stripe from 'stripe';
import { ProcessorError, type ChargeRequest, type PaymentProcessor, type ProcessorCharge, type ProcessorPaymentMethod } from './payment-processor.ts';

export interface StripeProcessorOptions {
  /** The secret key (sk_test_… or sk_live_…); never logged nor answered. */
  secretKey: string;
  /** The API's base URL; https://api.stripe.com unless pointed elsewhere (tests: a local server). */
  apiBase?: string;
  /** Per-request time limit; past it the request is a `timeout` (504). */
  timeoutMs?: number;
  /** Network retries of the SDK (safe: every write carries an idempotency key). */
  maxNetworkRetries?: number;
}

type Where = 'method' | 'charge' | 'customer';

/** Stripe through its official SDK: customers, payment methods, and PaymentIntents confirmed off-session. */
export class StripeProcessor implements PaymentProcessor {
  readonly name = 'stripe' as const;
  private readonly stripe: Stripe;

  constructor(options: StripeProcessorOptions) {
    const base = new URL(options.apiBase ?? 'https://api.stripe.com');
    const protocol = base.protocol === 'http:' ? 'http' : 'https';
    this.stripe = new Stripe(options.secretKey, {
      host: base.hostname,
      port: base.port === '' ? (protocol === 'http' ? 80 : 443) : Number(base.port),
      protocol,
      timeout: options.timeoutMs ?? 20_000,
      maxNetworkRetries: options.maxNetworkRetries ?? 1,
      telemetry: false,
      appInfo: { name: 'Lakeport' },
    });
  }

  async retrievePaymentMethod(paymentMethodId: string): Promise<ProcessorPaymentMethod> {
    return methodOf(await this.call('method', () => this.stripe.paymentMethods.retrieve(paymentMethodId)));
  }

  async createCustomer(accountId: string, idempotencyKey: string): Promise<string> {
    const customer = await this.call('customer', () =>
      this.stripe.customers.create({ metadata: { lakeport_account_id: accountId } }, { idempotencyKey }),
    );
    return customer.id;
  }

  async attachPaymentMethod(paymentMethodId: string, customerId: string): Promise<ProcessorPaymentMethod> {
    return methodOf(await this.call('method', () => this.stripe.paymentMethods.attach(paymentMethodId, { customer: customerId })));
  }

  async detachPaymentMethod(paymentMethodId: string): Promise<void> {
    try {
      await this.stripe.paymentMethods.detach(paymentMethodId);
    } catch (error) {
      // Unknown, or not attached to a customer any more: nothing left to detach.
      if (error instanceof Stripe.errors.StripeInvalidRequestError) return;
      throw translate(error, 'method');
    }
  }

  /**
   * A PaymentIntent created and confirmed in one call for the saved method, off-session (the
   * customer is not there to authenticate), with no redirect-based method allowed.
   */
  async charge(request: ChargeRequest): Promise<ProcessorCharge> {
    const intent = await this.call('charge', () =>
      this.stripe.paymentIntents.create(
        {
          amount: request.amount,
          currency: request.currency,
          customer: request.customerId,
          payment_method: request.paymentMethodId,
          confirm: true,
          off_session: true,
          automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
          ...(request.description === null ? {} : { description: request.description }),
          metadata: request.metadata,
        },
        { idempotencyKey: request.idempotencyKey },
      ),
    );
    if (intent.status !== 'succeeded') {
      throw new ProcessorError('incomplete', `The payment is ${intent.status}, not succeeded`, {
        code: intent.status,
        paymentId: intent.id,
        status: intent.status,
        livemode: intent.livemode,
      });
    }
    return { id: intent.id, status: 'succeeded', amount: intent.amount, currency: intent.currency, livemode: intent.livemode };
  }

  private async call<T>(where: Where, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw translate(error, where);
    }
  }
}

function methodOf(pm: Stripe.PaymentMethod): ProcessorPaymentMethod {
  if (pm.type !== 'card' || !pm.card) {
    throw new ProcessorError('rejected', `Payment method ${pm.id} is a ${pm.type}, not a card`, { code: 'unsupported_payment_method_type' });
  }
  return { id: pm.id, brand: pm.card.brand, last4: pm.card.last4, exp_month: pm.card.exp_month, exp_year: pm.card.exp_year, livemode: pm.livemode, customer: typeof pm.customer === 'string' ? pm.customer : (pm.customer?.id ?? null) };
}

/** Stripe's errors as the processor failures the payment service answers (no SDK detail, no key, leaves here). */
function translate(error: unknown, where: Where): ProcessorError {
  const E = Stripe.errors;
  if (error instanceof E.StripeCardError) {
    const intent = error.payment_intent;
    const details = { code: error.code ?? null, declineCode: error.decline_code || null, paymentId: intent?.id ?? null, status: intent?.status ?? null, livemode: intent?.livemode ?? null };
    return new ProcessorError(where === 'charge' ? 'declined' : 'rejected', error.message, details);
  }
  if (error instanceof E.StripeIdempotencyError) return new ProcessorError('idempotency', error.message);
  if (error instanceof E.StripeInvalidRequestError) {
    return new ProcessorError(where === 'method' ? 'rejected' : 'invalid', error.message, { code: error.code ?? null });
  }
  if (error instanceof E.StripeConnectionError) {
    const timedOut = (error.detail as { code?: unknown } | undefined)?.code === 'ETIMEDOUT';
    return timedOut
      ? new ProcessorError('timeout', 'The payment processor did not answer in time')
      : new ProcessorError('unavailable', 'The payment processor could not be reached');
  }
  if (error instanceof E.StripeAuthenticationError || error instanceof E.StripePermissionError) {
    return new ProcessorError('unavailable', "The payment processor refused Lakeport's credentials (check LAKEPORT_STRIPE_SECRET_KEY)");
  }
  if (error instanceof E.StripeRateLimitError) return new ProcessorError('unavailable', 'The payment processor is rate limiting requests; retry later');
  if (error instanceof E.StripeError) return new ProcessorError('unavailable', `The payment processor failed (HTTP ${error.statusCode ?? 'error'})`);
  if (error instanceof ProcessorError) return error;
  return new ProcessorError('unavailable', 'The payment processor call failed');
}
