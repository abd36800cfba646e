-- The account sign-in (IdP) policy (docs/idp-policy.md). One row per account once written: `document`
-- is the IdpPolicyRequest as stored (null after DELETE), `version` counts every write, DELETE included.
CREATE TABLE idp_policies (
  account_id  text PRIMARY KEY REFERENCES accounts (account_id),
  document    jsonb,
  version     integer NOT NULL,
  updated_by  text NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Interactive sign-ins the policy refused, newest first per account.
CREATE TABLE idp_denials (
  denial_id   text PRIMARY KEY,
  seq         bigint GENERATED ALWAYS AS IDENTITY,  -- ties of `at` keep insertion order
  account_id  text NOT NULL REFERENCES accounts (account_id),
  identity    text NOT NULL,
  provider    text NOT NULL,
  email       text,
  code        text NOT NULL,
  reason      text NOT NULL,
  at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idp_denials_account_at ON idp_denials (account_id, at DESC, seq DESC);

-- Each identity's last admitted interactive sign-in (what preview judges a candidate policy against).
CREATE TABLE idp_last_sign_ins (
  identity        text PRIMARY KEY,
  account_id      text,
  provider        text NOT NULL,
  issuer          text NOT NULL,
  subject         text NOT NULL,
  email           text,
  email_verified  boolean NOT NULL,
  amr             jsonb NOT NULL,
  groups          jsonb NOT NULL,
  auth_time       timestamptz NOT NULL,
  signed_in_at    timestamptz NOT NULL DEFAULT now()
);
