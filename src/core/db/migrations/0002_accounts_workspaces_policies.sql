-- Accounts, members, workspaces and access policies.
CREATE TABLE accounts (
  account_id        text PRIMARY KEY,
  name              text NOT NULL,
  tax_id            text,
  address           jsonb,
  member_min_age_ms bigint,
  status            text NOT NULL DEFAULT 'active',   -- active | deactivated
  created_by        text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  deactivated_at    timestamptz
);

CREATE TABLE members (
  account_id        text NOT NULL REFERENCES accounts (account_id),
  identity          text NOT NULL,
  email             text,
  role              text NOT NULL,                    -- billing_admin | member
  state             text NOT NULL,                    -- pending | active
  invited_by        text,
  invited_at        timestamptz,
  invite_expires_at timestamptz,
  added_at          timestamptz,
  min_age_ms        bigint,
  eligible_at       timestamptz,
  PRIMARY KEY (account_id, identity)
);
-- Membership is exclusive: at most one active membership per identity.
CREATE UNIQUE INDEX members_one_active_membership ON members (identity) WHERE state = 'active';
CREATE INDEX members_identity ON members (identity);

-- The account service's own workspace record.
CREATE TABLE workspaces (
  name            text PRIMARY KEY,
  billing_account text NOT NULL REFERENCES accounts (account_id),
  members         jsonb NOT NULL,                     -- [{identity, role}] as given at creation
  created_by      text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  deleted_at      timestamptz,
  deleted_by      text,
  purge_after     timestamptz
);
CREATE INDEX workspaces_billing_account ON workspaces (billing_account);

-- Names of workspaces purged after their grace window, so a late restore answers 410.
CREATE TABLE purged_workspaces (
  name      text PRIMARY KEY,
  purged_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE policies (
  policy_id      text PRIMARY KEY,
  workspace      text NOT NULL,
  principal      text NOT NULL,                       -- an identity string
  principal_type text NOT NULL DEFAULT 'user',
  role           text NOT NULL,                       -- owner | admin | writer | reader
  pattern        text NOT NULL,                       -- ws.* | ws.coll.* | ws.coll.ds
  created_by     text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX policies_workspace ON policies (workspace);
CREATE INDEX policies_principal ON policies (principal, workspace);
