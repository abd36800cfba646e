-- Service accounts: machine identities that belong to one billing account (docs/accounts.md).
-- An account's plan sets how many it may have; NULL is the configured default plan
-- (LAKEPORT_DEFAULT_PLAN), so changing that setting moves every account still on the default.
ALTER TABLE accounts ADD COLUMN plan text;

-- The primary key makes a service account exclusive to one account.
CREATE TABLE service_accounts (
  identity   text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (account_id),
  added_by   text NOT NULL,
  added_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX service_accounts_account ON service_accounts (account_id, identity);
