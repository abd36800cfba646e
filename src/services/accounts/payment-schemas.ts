import { z } from 'zod';
import { CURRENCIES, MAX_PAYMENT_AMOUNT, THREE_DECIMAL_CURRENCIES } from './currencies.ts';

export const AttachPaymentMethodRequest = z
  .object({
    processor_payment_method_id: z
      .string()
      .min(1)
      .max(255)
      .regex(/^[A-Za-z0-9_]+$/, 'letters, digits and underscores (a processor id such as pm_1Nx…)')
      .describe("The processor's payment method id (Stripe: pm_…); sandbox: one of its test ids"),
    brand: z.string().trim().min(1).max(32).describe('Card brand as shown to the user (checked against the processor)'),
    last4: z.string().regex(/^\d{4}$/, 'four digits').describe('Last four digits (checked against the processor)'),
  })
  .meta({ id: 'AttachPaymentMethodRequest' });

export const CreatePaymentRequest = z
  .object({
    amount: z
      .number()
      .int()
      .min(1)
      .max(MAX_PAYMENT_AMOUNT)
      .describe("In the currency's smallest unit: cents for usd (1000 = $10.00), yen for jpy (1000 = ¥1000)"),
    currency: z
      .string()
      .toLowerCase()
      .refine((c) => CURRENCIES.has(c), 'an ISO 4217 currency code such as usd, eur or jpy')
      .default('usd')
      .describe('ISO 4217 code, any case (answered in lower case)'),
    description: z.string().max(1000).nullable().optional(),
  })
  .superRefine((body, ctx) => {
    if (THREE_DECIMAL_CURRENCIES.has(body.currency) && body.amount % 10 !== 0) {
      ctx.addIssue({ code: 'custom', path: ['amount'], message: `${body.currency} amounts must end in 0 (the processor charges whole hundredths)` });
    }
  })
  .meta({ id: 'CreatePaymentRequest' });

export const PaymentHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
    .optional()
    .describe('A retry with the same key answers the first outcome instead of charging again'),
});

export const PaymentListQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(50).describe('At most this many, newest first') });

export const PaymentMethod = z
  .object({
    account_id: z.string(),
    processor: z.string().describe('sandbox or stripe'),
    processor_payment_method_id: z.string(),
    brand: z.string(),
    last4: z.string(),
    exp_month: z.number().nullable(),
    exp_year: z.number().nullable(),
    livemode: z.boolean().describe('false in test mode (always, for the sandbox)'),
    attached_by: z.string(),
    attached_at: z.string(),
  })
  .meta({ id: 'PaymentMethod' });

export const Payment = z
  .object({
    payment_id: z.string(),
    account_id: z.string(),
    processor: z.string(),
    processor_payment_id: z.string().nullable().describe('Stripe: the PaymentIntent (pi_…)'),
    processor_payment_method_id: z.string(),
    amount: z.number(),
    currency: z.string(),
    description: z.string().nullable(),
    status: z.enum(['pending', 'succeeded', 'failed']).describe('pending: the processor has not (yet) answered; retry with the same Idempotency-Key'),
    error_code: z.string().nullable().describe('The Lakeport error code a failure was answered with'),
    failure_code: z.string().nullable().describe("The processor's error code (card_declined, …)"),
    decline_code: z.string().nullable(),
    failure_message: z.string().nullable(),
    livemode: z.boolean().nullable(),
    idempotency_key: z.string().nullable(),
    created_by: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Payment' });
