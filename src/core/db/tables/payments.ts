// Owner: src/services/accounts (payment_customers, payment_methods, payments; see test/table-ownership.test.ts).
import type { ColumnType } from 'kysely';
import type { DefaultTimestamp } from './types.ts';

export type PaymentStatus = 'pending' | 'succeeded' | 'failed';

export interface PaymentCustomersTable {
  account_id: string;
  processor: string;
  customer_id: string;
  created_at: DefaultTimestamp;
}

export interface PaymentMethodsTable {
  account_id: string;
  processor: string;
  processor_payment_method_id: string;
  brand: string;
  last4: string;
  exp_month: number | null;
  exp_year: number | null;
  livemode: boolean;
  attached_by: string;
  attached_at: DefaultTimestamp;
}

export interface PaymentsTable {
  payment_id: string;
  account_id: string;
  processor: string;
  processor_payment_id: string | null;
  processor_payment_method_id: string;
  /** bigint: read as a string by the PostgreSQL driver, a number by PGlite. */
  amount: ColumnType<string | number, number, number>;
  currency: string;
  description: string | null;
  status: PaymentStatus;
  error_code: string | null;
  failure_code: string | null;
  decline_code: string | null;
  failure_message: string | null;
  livemode: boolean | null;
  idempotency_key: string | null;
  request_hash: string;
  created_by: string;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
}

export interface PaymentTables {
  payment_customers: PaymentCustomersTable;
  payment_methods: PaymentMethodsTable;
  payments: PaymentsTable;
}
