-- Interactive sign-in through OpenID Connect providers (docs/auth.md, "Interactive sign-in").

-- A login under way: created by GET /auth/login, consumed (deleted) once by GET /auth/callback.
CREATE TABLE oidc_pending_logins (
  state          text PRIMARY KEY,
  provider       text NOT NULL,
  nonce          text NOT NULL,
  code_verifier  text NOT NULL,
  return_to      text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz NOT NULL
);

-- A person at a provider (iss + sub, stable) → the Lakeport identity made at first sign-in.
CREATE TABLE identity_links (
  issuer      text NOT NULL,
  subject     text NOT NULL,
  identity    text NOT NULL UNIQUE,
  email       text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  last_sign_in_at timestamptz,
  PRIMARY KEY (issuer, subject)
);

-- An interactive session is a credential of type 'interactive' (no usable secret) plus how the
-- person signed in; its refresh tokens and access tokens live and die with that credential.
CREATE TABLE interactive_sessions (
  credential_id   text PRIMARY KEY REFERENCES credentials (credential_id),
  provider        text NOT NULL,
  issuer          text NOT NULL,
  subject         text NOT NULL,
  email           text,
  email_verified  boolean NOT NULL,
  amr             jsonb NOT NULL,
  groups          jsonb NOT NULL,
  auth_time       timestamptz NOT NULL,
  started_at      timestamptz NOT NULL DEFAULT now(),
  policy_version  integer NOT NULL
);
