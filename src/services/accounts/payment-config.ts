import type { PaymentProcessor } from './payment-processor.ts';
import { SandboxProcessor } from './sandbox-processor.ts';
import { StripeProcessor } from './stripe-processor.ts';

/** LAKEPORT_PAYMENTS_PROCESSOR and the Stripe settings (docs/payments.md). */
export interface PaymentsConfig {
  processor: 'sandbox' | 'stripe';
  stripe: { secretKey: string | undefined; apiBase: string; timeoutMs: number };
}

export function createPaymentProcessor(config: PaymentsConfig): PaymentProcessor {
  if (config.processor === 'sandbox') return new SandboxProcessor();
  if (!config.stripe.secretKey) throw new Error('LAKEPORT_PAYMENTS_PROCESSOR=stripe needs LAKEPORT_STRIPE_SECRET_KEY');
  return new StripeProcessor({ secretKey: config.stripe.secretKey, apiBase: config.stripe.apiBase, timeoutMs: config.stripe.timeoutMs });
}
