-- Domains claimed by billing accounts (docs/domains.md). `domain` is the lowercase ASCII (punycode)
-- form without a trailing dot. Several accounts may hold unverified claims on one domain; at most one
-- may have it verified (the partial unique index), and re-claiming keeps the row, token and verification.
CREATE TABLE account_domains (
  account_id      text NOT NULL REFERENCES accounts (account_id),
  domain          text NOT NULL,
  token           text NOT NULL,
  claimed_by      text NOT NULL,
  claimed_at      timestamptz NOT NULL DEFAULT now(),
  verified_at     timestamptz,
  verified_by     text,
  last_checked_at timestamptz,
  last_outcome    text,          -- verified | record_missing | dns_unavailable
  last_error      text,
  last_found      jsonb,         -- TXT values seen at the challenge name on the last check
  PRIMARY KEY (account_id, domain)
);
CREATE UNIQUE INDEX account_domains_one_verified ON account_domains (domain) WHERE verified_at IS NOT NULL;
CREATE INDEX account_domains_domain ON account_domains (domain);
