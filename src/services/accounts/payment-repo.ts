import type { Kysely, Selectable } from 'kysely';
import type { Database, PaymentMethodsTable, PaymentStatus, PaymentsTable } from '../../core/db/index.ts';

export type PaymentMethodRow = Selectable<PaymentMethodsTable>;
export type PaymentRow = Selectable<PaymentsTable>;

export interface NewPaymentMethod {
  account_id: string;
  processor: string;
  processor_payment_method_id: string;
  brand: string;
  last4: string;
  exp_month: number | null;
  exp_year: number | null;
  livemode: boolean;
  attached_by: string;
  attached_at: Date;
}

export interface NewPayment {
  payment_id: string;
  account_id: string;
  processor: string;
  processor_payment_method_id: string;
  amount: number;
  currency: string;
  description: string | null;
  idempotency_key: string | null;
  request_hash: string;
  created_by: string;
  now: Date;
}

export interface PaymentOutcome {
  status: PaymentStatus;
  processor_payment_id: string | null;
  livemode: boolean | null;
  error_code: string | null;
  failure_code: string | null;
  decline_code: string | null;
  failure_message: string | null;
}

/** The SQL of payment_customers, payment_methods and payments. */
export class PaymentRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async customerOf(accountId: string, processor: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('payment_customers')
      .select('customer_id')
      .where('account_id', '=', accountId)
      .where('processor', '=', processor)
      .executeTakeFirst();
    return row?.customer_id;
  }

  /** Remembers the account's customer; a concurrent first save wins, and its id is returned. */
  async saveCustomer(accountId: string, processor: string, customerId: string): Promise<string> {
    await this.db
      .insertInto('payment_customers')
      .values({ account_id: accountId, processor, customer_id: customerId })
      .onConflict((oc) => oc.columns(['account_id', 'processor']).doNothing())
      .execute();
    return (await this.customerOf(accountId, processor)) ?? customerId;
  }

  findMethod(accountId: string): Promise<PaymentMethodRow | undefined> {
    return this.db.selectFrom('payment_methods').selectAll().where('account_id', '=', accountId).executeTakeFirst();
  }

  /**
   * Stores the account's method and returns the one it replaced. The account row is locked, so of
   * two attaches at once each sees the other's method as the one replaced (and detaches it).
   */
  replaceMethod(row: NewPaymentMethod): Promise<{ method: PaymentMethodRow; previous: PaymentMethodRow | undefined }> {
    return this.db.transaction().execute(async (trx) => {
      await trx.selectFrom('accounts').select('account_id').where('account_id', '=', row.account_id).forUpdate().executeTakeFirst();
      const previous = await trx.selectFrom('payment_methods').selectAll().where('account_id', '=', row.account_id).executeTakeFirst();
      const { account_id: _, ...rest } = row;
      const method = await trx
        .insertInto('payment_methods')
        .values(row)
        .onConflict((oc) => oc.column('account_id').doUpdateSet(rest))
        .returningAll()
        .executeTakeFirstOrThrow();
      return { method, previous };
    });
  }

  /** Removes the account's method if it is still this one. */
  async deleteMethod(accountId: string, processorPaymentMethodId: string): Promise<void> {
    await this.db
      .deleteFrom('payment_methods')
      .where('account_id', '=', accountId)
      .where('processor_payment_method_id', '=', processorPaymentMethodId)
      .execute();
  }

  /** Inserts a pending payment; undefined when its idempotency key is already taken. */
  insertPayment(p: NewPayment): Promise<PaymentRow | undefined> {
    return this.db
      .insertInto('payments')
      .values({
        payment_id: p.payment_id,
        account_id: p.account_id,
        processor: p.processor,
        processor_payment_method_id: p.processor_payment_method_id,
        amount: p.amount,
        currency: p.currency,
        description: p.description,
        status: 'pending',
        idempotency_key: p.idempotency_key,
        request_hash: p.request_hash,
        created_by: p.created_by,
        created_at: p.now,
        updated_at: p.now,
      })
      .onConflict((oc) => oc.columns(['account_id', 'idempotency_key']).where('idempotency_key', 'is not', null).doNothing())
      .returningAll()
      .executeTakeFirst();
  }

  findPaymentByKey(accountId: string, idempotencyKey: string): Promise<PaymentRow | undefined> {
    return this.db
      .selectFrom('payments')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('idempotency_key', '=', idempotencyKey)
      .executeTakeFirst();
  }

  settlePayment(paymentId: string, outcome: PaymentOutcome): Promise<PaymentRow> {
    return this.db
      .updateTable('payments')
      .set({ ...outcome, updated_at: new Date() })
      .where('payment_id', '=', paymentId)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** Newest first. */
  listPayments(accountId: string, limit: number): Promise<PaymentRow[]> {
    return this.db
      .selectFrom('payments')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .orderBy('payment_id', 'desc')
      .limit(limit)
      .execute();
  }
}
