/**
 * The port to an external payment processor. Two adapters: `SandboxProcessor` (test mode, the
 * default) and `StripeProcessor` (the `stripe` SDK). Adapters throw `ProcessorError`s, never an SDK's
 * own errors, so the payment service maps one set of failures to HTTP answers.
 */

export type ProcessorName = 'sandbox' | 'stripe';

/** A payment method as the processor reports it (the source of truth for brand and last4). */
export interface ProcessorPaymentMethod {
  id: string;
  brand: string;
  last4: string;
  exp_month: number | null;
  exp_year: number | null;
  /** false in test mode. */
  livemode: boolean;
  /** The processor's customer it is attached to, if any. */
  customer: string | null;
}

/** A charge the processor confirmed. */
export interface ProcessorCharge {
  id: string;
  status: 'succeeded';
  amount: number;
  currency: string;
  livemode: boolean;
}

export interface ChargeRequest {
  customerId: string;
  paymentMethodId: string;
  /** In the currency's minor unit. */
  amount: number;
  currency: string;
  description: string | null;
  /** Sent as the processor's idempotency key: a retry with it returns the first outcome. */
  idempotencyKey: string;
  metadata: Record<string, string>;
}

export interface PaymentProcessor {
  readonly name: ProcessorName;
  /** Fetches the method to verify it exists and is usable; throws `rejected` when it is not. */
  retrievePaymentMethod(paymentMethodId: string): Promise<ProcessorPaymentMethod>;
  /** Creates the account's customer; `idempotencyKey` makes a concurrent first attach reuse it. */
  createCustomer(accountId: string, idempotencyKey: string): Promise<string>;
  attachPaymentMethod(paymentMethodId: string, customerId: string): Promise<ProcessorPaymentMethod>;
  /** Detaches the method; one that is already detached or unknown is not an error. */
  detachPaymentMethod(paymentMethodId: string): Promise<void>;
  /** Creates and confirms a charge in one call; a decline throws `declined`, an unfinished one `incomplete`. */
  charge(request: ChargeRequest): Promise<ProcessorCharge>;
}

export type ProcessorFailure =
  /** The processor refused the payment method (unknown id, unusable card). */
  | 'rejected'
  /** The card was declined (or needs authentication the customer is not there to give). */
  | 'declined'
  /** The processor accepted the request but the payment is not finished (processing, requires_action). */
  | 'incomplete'
  /** The processor refused the request itself (e.g. an amount below its minimum). */
  | 'invalid'
  /** The same idempotency key with other parameters. */
  | 'idempotency'
  /** Unreachable, a 5xx, or it refused our own credentials. */
  | 'unavailable'
  | 'timeout';

export class ProcessorError extends Error {
  constructor(
    readonly failure: ProcessorFailure,
    message: string,
    readonly details: {
      code?: string | null;
      declineCode?: string | null;
      /** The processor's id of the (failed) payment, when it made one. */
      paymentId?: string | null;
      status?: string | null;
      livemode?: boolean | null;
    } = {},
  ) {
    super(message);
    this.name = 'ProcessorError';
  }
}

export function isProcessorError(error: unknown): error is ProcessorError {
  return error instanceof ProcessorError;
}
