import crypto from 'node:crypto';
import { ProcessorError, type ChargeRequest, type PaymentProcessor, type ProcessorCharge, type ProcessorPaymentMethod } from './payment-processor.ts';

interface TestCard {
  brand: string;
  last4: string;
  /** What a charge does: succeed, or be declined with this decline code. */
  outcome: 'succeeds' | 'generic_decline' | 'insufficient_funds' | 'authentication_required';
}

/**
 * The sandbox's test payment methods, named as Stripe's test mode names them. Nothing else attaches,
 * and only the `succeeds` ones are ever charged successfully. Documented in docs/payments.md.
 */
export const SANDBOX_TEST_METHODS: Readonly<Record<string, TestCard>> = {
  pm_card_visa: { brand: 'visa', last4: '4242', outcome: 'succeeds' },
  pm_card_mastercard: { brand: 'mastercard', last4: '4444', outcome: 'succeeds' },
  pm_card_visa_chargeDeclined: { brand: 'visa', last4: '0002', outcome: 'generic_decline' },
  pm_card_visa_chargeDeclinedInsufficientFunds: { brand: 'visa', last4: '9995', outcome: 'insufficient_funds' },
  pm_card_authenticationRequired: { brand: 'visa', last4: '3184', outcome: 'authentication_required' },
};

const DECLINE_MESSAGES: Record<Exclude<TestCard['outcome'], 'succeeds'>, string> = {
  generic_decline: 'Your card was declined.',
  insufficient_funds: 'Your card has insufficient funds.',
  authentication_required: 'Your card was declined. This transaction requires authentication.',
};

const randomId = (prefix: string) => `${prefix}_sandbox_${crypto.randomBytes(12).toString('hex')}`;

/**
 * A test-mode processor in the spirit of Stripe's test mode: the documented test ids, every answer
 * `livemode: false`, no money moves. An idempotency key replays its first outcome (kept in memory
 * for the process's life; the payment service keeps its own record of keys as well).
 */
export class SandboxProcessor implements PaymentProcessor {
  readonly name = 'sandbox' as const;
  private readonly charges = new Map<string, { fingerprint: string; outcome: ProcessorCharge | ProcessorError }>();

  async retrievePaymentMethod(paymentMethodId: string): Promise<ProcessorPaymentMethod> {
    const card = SANDBOX_TEST_METHODS[paymentMethodId];
    if (!Object.hasOwn(SANDBOX_TEST_METHODS, paymentMethodId) || card === undefined) {
      throw new ProcessorError('rejected', `No such PaymentMethod: '${paymentMethodId}' (the sandbox knows only its documented test payment methods)`, {
        code: 'resource_missing',
      });
    }
    return { id: paymentMethodId, brand: card.brand, last4: card.last4, exp_month: 12, exp_year: 2034, livemode: false, customer: null };
  }

  async createCustomer(): Promise<string> {
    return randomId('cus');
  }

  async attachPaymentMethod(paymentMethodId: string): Promise<ProcessorPaymentMethod> {
    return this.retrievePaymentMethod(paymentMethodId);
  }

  async detachPaymentMethod(): Promise<void> {}

  async charge(request: ChargeRequest): Promise<ProcessorCharge> {
    const fingerprint = JSON.stringify([request.customerId, request.paymentMethodId, request.amount, request.currency, request.description]);
    const previous = this.charges.get(request.idempotencyKey);
    if (previous) {
      if (previous.fingerprint !== fingerprint) {
        throw new ProcessorError('idempotency', 'Keys for idempotent requests can only be used with the same parameters they were first used with.');
      }
      if (previous.outcome instanceof ProcessorError) throw previous.outcome;
      return previous.outcome;
    }
    const outcome = this.decide(request);
    this.charges.set(request.idempotencyKey, { fingerprint, outcome });
    if (outcome instanceof ProcessorError) throw outcome;
    return outcome;
  }

  private decide(request: ChargeRequest): ProcessorCharge | ProcessorError {
    const id = randomId('pi');
    const card = Object.hasOwn(SANDBOX_TEST_METHODS, request.paymentMethodId) ? SANDBOX_TEST_METHODS[request.paymentMethodId] : undefined;
    if (card === undefined) {
      return new ProcessorError('declined', 'The payment method is not a sandbox test payment method.', {
        code: 'payment_method_unactivated',
        declineCode: 'generic_decline',
        livemode: false,
      });
    }
    if (card.outcome === 'succeeds') return { id, status: 'succeeded', amount: request.amount, currency: request.currency, livemode: false };
    return new ProcessorError('declined', DECLINE_MESSAGES[card.outcome], {
      code: card.outcome === 'authentication_required' ? 'authentication_required' : 'card_declined',
      declineCode: card.outcome,
      paymentId: id,
      status: 'requires_payment_method',
      livemode: false,
    });
  }
}
