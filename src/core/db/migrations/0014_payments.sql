-- Payment method and payments of billing accounts (issue 16).

-- The account's customer at a payment processor (Stripe: cus_…), made on first attach.
CREATE TABLE payment_customers (
  account_id   text NOT NULL REFERENCES accounts (account_id),
  processor    text NOT NULL,                       -- sandbox | stripe
  customer_id  text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, processor)
);

-- At most one attached payment method per account.
CREATE TABLE payment_methods (
  account_id                  text PRIMARY KEY REFERENCES accounts (account_id),
  processor                   text NOT NULL,
  processor_payment_method_id text NOT NULL,
  brand                       text NOT NULL,
  last4                       text NOT NULL,
  exp_month                   integer,
  exp_year                    integer,
  livemode                    boolean NOT NULL,
  attached_by                 text NOT NULL,
  attached_at                 timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE payments (
  payment_id                  text PRIMARY KEY,
  account_id                  text NOT NULL REFERENCES accounts (account_id),
  processor                   text NOT NULL,
  processor_payment_id        text,                 -- Stripe: pi_…; null until the processor answered
  processor_payment_method_id text NOT NULL,
  amount                      bigint NOT NULL,      -- in the currency's minor unit
  currency                    text NOT NULL,        -- ISO 4217, lower case
  description                 text,
  status                      text NOT NULL,        -- pending | succeeded | failed
  error_code                  text,                 -- the Lakeport error code answered, replayed with the key
  failure_code                text,
  decline_code                text,
  failure_message             text,
  livemode                    boolean,
  idempotency_key             text,
  request_hash                text NOT NULL,
  created_by                  text NOT NULL,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX payments_idempotency_key ON payments (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX payments_account_created ON payments (account_id, created_at DESC);
