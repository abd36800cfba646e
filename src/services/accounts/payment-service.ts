import { newId, sha256Hex } from '../../core/crypto/index.ts';
import type { AppError } from '../../core/errors/index.ts';
import type { Db } from '../../core/db/index.ts';
import type { Logger } from '../../core/logger.ts';
import type { AccountService } from './account-service.ts';
import { accountsError } from './errors.ts';
import { isProcessorError, type PaymentProcessor, type ProcessorError } from './payment-processor.ts';
import { PaymentRepo, type PaymentMethodRow, type PaymentOutcome, type PaymentRow } from './payment-repo.ts';

export interface PaymentMethodView {
  account_id: string;
  processor: string;
  processor_payment_method_id: string;
  brand: string;
  last4: string;
  exp_month: number | null;
  exp_year: number | null;
  livemode: boolean;
  attached_by: string;
  attached_at: string;
}

export interface PaymentView {
  payment_id: string;
  account_id: string;
  processor: string;
  processor_payment_id: string | null;
  processor_payment_method_id: string;
  amount: number;
  currency: string;
  description: string | null;
  status: 'pending' | 'succeeded' | 'failed';
  error_code: string | null;
  failure_code: string | null;
  decline_code: string | null;
  failure_message: string | null;
  livemode: boolean | null;
  idempotency_key: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface AttachInput {
  processor_payment_method_id: string;
  brand: string;
  last4: string;
}

export interface PaymentInput {
  amount: number;
  currency: string;
  description?: string | null;
}

/** What the notification feed (built elsewhere) is told: a payment succeeded or failed. */
export interface PaymentEvent {
  type: 'payment.succeeded' | 'payment.failed';
  account_id: string;
  actor: string;
  payment: PaymentView;
}

/** Called once per settled payment (not on an idempotent replay); a failure is logged, never answered. */
export type PaymentEventHook = (event: PaymentEvent) => void | Promise<void>;

export interface PaymentServiceDeps {
  db: Db;
  accounts: Pick<AccountService, 'requireActiveMember' | 'requireBillingAdmin'>;
  processor: PaymentProcessor;
  log: Logger;
  onEvent?: PaymentEventHook;
}

export function paymentMethodView(row: PaymentMethodRow): PaymentMethodView {
  return { ...row, attached_at: row.attached_at.toISOString() };
}

export function paymentView(row: PaymentRow): PaymentView {
  const { request_hash: _, ...rest } = row;
  return { ...rest, amount: Number(row.amount), created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString() };
}

/** The answer to a processor failure: the status and code the API gives it, and the detail. */
function failureAnswer(error: ProcessorError): AppError {
  const d = error.details;
  const processor = { processor_code: d.code ?? null, decline_code: d.declineCode ?? null };
  switch (error.failure) {
    case 'rejected':
      return accountsError('PAYMENT_METHOD_REJECTED', `The payment processor refused the payment method: ${error.message}`, { extra: processor });
    case 'declined':
      return accountsError(
        'PAYMENT_DECLINED',
        d.code === 'authentication_required' || d.declineCode === 'authentication_required'
          ? 'The payment was declined: the card requires the customer to authenticate (e.g. 3-D Secure), which a charge made without them cannot do; attach another payment method'
          : `The payment was declined: ${error.message}`,
        { extra: processor },
      );
    case 'incomplete':
      return accountsError('PAYMENT_INCOMPLETE', `The payment processor did not complete the payment (status ${d.status ?? 'unknown'}); nothing was confirmed`, { extra: processor });
    case 'invalid':
      return accountsError('PAYMENT_REJECTED', `The payment processor refused the payment: ${error.message}`, { extra: processor });
    case 'idempotency':
      return accountsError('PAYMENT_IDEMPOTENCY_KEY_REUSED', `The payment processor refused the idempotency key: ${error.message}`);
    case 'timeout':
      return accountsError('PROCESSOR_TIMEOUT', `${error.message}; the outcome is unknown: retry with the same Idempotency-Key`);
    case 'unavailable':
      return accountsError('PROCESSOR_UNAVAILABLE', `${error.message}; nothing was confirmed: retry with the same Idempotency-Key`);
  }
}

/** A settled failure as stored, so a replay with its key answers it again. */
function storedFailure(row: PaymentRow): AppError {
  const code = (row.error_code ?? 'PAYMENT_DECLINED') as 'PAYMENT_DECLINED';
  return accountsError(code, row.failure_message ?? 'The payment failed', {
    extra: { payment_id: row.payment_id, processor_code: row.failure_code, decline_code: row.decline_code },
  });
}

/**
 * The account's payment method and payments. Reading the method takes an active member; attach,
 * detach, paying and the payment list take the billing_admin (AccountService: 404 / 403 otherwise).
 */
export class PaymentService {
  private readonly repo: PaymentRepo;
  private readonly processor: PaymentProcessor;

  constructor(private readonly deps: PaymentServiceDeps) {
    this.repo = new PaymentRepo(deps.db.kysely);
    this.processor = deps.processor;
  }

  async getPaymentMethod(caller: string, accountId: string): Promise<PaymentMethodView | null> {
    await this.deps.accounts.requireActiveMember(caller, accountId);
    const row = await this.repo.findMethod(accountId);
    return row === undefined ? null : paymentMethodView(row);
  }

  /**
   * Verifies the method with the processor (its brand and last4 must match what was sent), attaches
   * it to the account's customer, stores it, then detaches the method it replaced.
   */
  async attachPaymentMethod(caller: string, accountId: string, input: AttachInput): Promise<PaymentMethodView> {
    await this.deps.accounts.requireBillingAdmin(caller, accountId);
    const verified = await this.atProcessor(() => this.processor.retrievePaymentMethod(input.processor_payment_method_id));
    if (verified.brand.toLowerCase() !== input.brand.toLowerCase() || verified.last4 !== input.last4) {
      throw accountsError(
        'PAYMENT_METHOD_MISMATCH',
        `The payment processor reports ${verified.brand} ending ${verified.last4} for ${verified.id}, not ${input.brand} ending ${input.last4}`,
      );
    }
    const customer = await this.customerOf(accountId);
    if (verified.customer !== null && verified.customer !== customer) {
      // Another customer's card (another account's, say): never taken over.
      throw accountsError('PAYMENT_METHOD_REJECTED', `The payment processor reports ${verified.id} attached to another customer`, {
        extra: { processor_code: 'payment_method_attached_elsewhere', decline_code: null },
      });
    }
    const attached = verified.customer === customer ? verified : await this.atProcessor(() => this.processor.attachPaymentMethod(verified.id, customer));
    const { method, previous } = await this.repo.replaceMethod({
      account_id: accountId,
      processor: this.processor.name,
      processor_payment_method_id: attached.id,
      brand: attached.brand,
      last4: attached.last4,
      exp_month: attached.exp_month,
      exp_year: attached.exp_year,
      livemode: attached.livemode,
      attached_by: caller,
      attached_at: new Date(),
    });
    if (previous && previous.processor_payment_method_id !== attached.id && previous.processor === this.processor.name) {
      // The new method is stored either way; a method left attached at the processor is only logged.
      await this.processor.detachPaymentMethod(previous.processor_payment_method_id).catch((error: unknown) =>
        this.deps.log.warn({ account_id: accountId, payment_method: previous.processor_payment_method_id, err: messageOf(error) }, 'could not detach the replaced payment method'),
      );
    }
    return paymentMethodView(method);
  }

  /** Detaches the method at the processor, then forgets it; no method is a no-op. */
  async detachPaymentMethod(caller: string, accountId: string): Promise<void> {
    await this.deps.accounts.requireBillingAdmin(caller, accountId);
    const current = await this.repo.findMethod(accountId);
    if (!current) return;
    if (current.processor === this.processor.name) {
      await this.atProcessor(() => this.processor.detachPaymentMethod(current.processor_payment_method_id));
    }
    await this.repo.deleteMethod(accountId, current.processor_payment_method_id);
  }

  /**
   * Charges the attached method: created and confirmed at the processor in one call; a success is
   * answered only once the processor confirmed it. With an idempotency key, a retry answers the first
   * outcome (or, when that was never known, asks the processor again under the same key).
   */
  async pay(caller: string, accountId: string, input: PaymentInput, idempotencyKey?: string): Promise<{ payment: PaymentView; replayed: boolean }> {
    await this.deps.accounts.requireBillingAdmin(caller, accountId);
    const description = input.description ?? null;
    const requestHash = sha256Hex(JSON.stringify([input.amount, input.currency, description]));
    let row: PaymentRow | undefined;
    if (idempotencyKey !== undefined) {
      row = await this.repo.findPaymentByKey(accountId, idempotencyKey);
      if (row) {
        const replay = this.replay(row, requestHash);
        if (replay) return { payment: replay, replayed: true };
      }
    }
    if (!row) {
      const method = await this.repo.findMethod(accountId);
      if (!method || method.processor !== this.processor.name) {
        throw accountsError('PAYMENT_METHOD_REQUIRED', `Account ${accountId} has no payment method attached; attach one first`);
      }
      const payment_id = newId('pay');
      row = await this.repo.insertPayment({
        payment_id,
        account_id: accountId,
        processor: this.processor.name,
        processor_payment_method_id: method.processor_payment_method_id,
        amount: input.amount,
        currency: input.currency,
        description,
        idempotency_key: idempotencyKey ?? null,
        request_hash: requestHash,
        created_by: caller,
        now: new Date(),
      });
      if (!row) {
        // Another request with the same key got there first.
        row = await this.repo.findPaymentByKey(accountId, idempotencyKey!);
        const replay = row && this.replay(row, requestHash);
        if (replay) return { payment: replay, replayed: true };
      }
    }
    return { payment: await this.charge(caller, row!), replayed: false };
  }

  async listPayments(caller: string, accountId: string, limit: number): Promise<PaymentView[]> {
    await this.deps.accounts.requireBillingAdmin(caller, accountId);
    return (await this.repo.listPayments(accountId, limit)).map(paymentView);
  }

  /** A settled payment's answer for a retry with its key (throws a stored failure); undefined while pending. */
  private replay(row: PaymentRow, requestHash: string): PaymentView | undefined {
    if (row.request_hash !== requestHash) {
      throw accountsError(
        'PAYMENT_IDEMPOTENCY_KEY_REUSED',
        `Idempotency-Key '${row.idempotency_key}' was used for another payment request (payment ${row.payment_id}); use a new key`,
        { extra: { payment_id: row.payment_id } },
      );
    }
    if (row.status === 'succeeded') return paymentView(row);
    if (row.status === 'failed') throw storedFailure(row);
    return undefined;
  }

  private async charge(caller: string, row: PaymentRow): Promise<PaymentView> {
    const key = row.idempotency_key === null ? `lakeport:${row.payment_id}` : `lakeport:${row.account_id}:${row.idempotency_key}`;
    const customerId = await this.customerOf(row.account_id);
    let outcome: PaymentOutcome;
    let failure: AppError | undefined;
    try {
      const charge = await this.processor.charge({
        customerId,
        paymentMethodId: row.processor_payment_method_id,
        amount: Number(row.amount),
        currency: row.currency,
        description: row.description,
        idempotencyKey: key,
        metadata: { lakeport_account_id: row.account_id, lakeport_payment_id: row.payment_id },
      });
      outcome = { status: 'succeeded', processor_payment_id: charge.id, livemode: charge.livemode, error_code: null, failure_code: null, decline_code: null, failure_message: null };
    } catch (error) {
      if (!isProcessorError(error)) throw error;
      failure = failureAnswer(error).withExtra({ payment_id: row.payment_id });
      // Unreachable, timed out or a key conflict: the outcome is unknown, so the row stays pending for a retry.
      if (error.failure === 'unavailable' || error.failure === 'timeout' || error.failure === 'idempotency') throw failure;
      outcome = {
        status: error.failure === 'incomplete' ? 'pending' : 'failed',
        processor_payment_id: error.details.paymentId ?? null,
        livemode: error.details.livemode ?? null,
        error_code: failure.code,
        failure_code: error.details.code ?? null,
        decline_code: error.details.declineCode ?? null,
        failure_message: failure.message,
      };
    }
    const settled = paymentView(await this.repo.settlePayment(row.payment_id, outcome));
    if (settled.status !== 'pending') await this.emit({ type: settled.status === 'succeeded' ? 'payment.succeeded' : 'payment.failed', account_id: settled.account_id, actor: caller, payment: settled });
    if (failure) throw failure;
    return settled;
  }

  private async emit(event: PaymentEvent): Promise<void> {
    if (!this.deps.onEvent) return;
    try {
      await this.deps.onEvent(event);
    } catch (error) {
      this.deps.log.error({ account_id: event.account_id, payment_id: event.payment.payment_id, err: messageOf(error) }, 'payment event hook failed');
    }
  }

  /** The account's customer at the processor, created on first use (one per account, even when two attaches race). */
  private async customerOf(accountId: string): Promise<string> {
    const known = await this.repo.customerOf(accountId, this.processor.name);
    if (known) return known;
    const created = await this.atProcessor(() => this.processor.createCustomer(accountId, `lakeport-customer:${accountId}`));
    return this.repo.saveCustomer(accountId, this.processor.name, created);
  }

  /** A processor call whose failure is answered as such (4xx / 502 / 504). */
  private async atProcessor<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw isProcessorError(error) ? failureAnswer(error) : error;
    }
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
