-- Authentication: machine credentials, refresh tokens, signing keys, throttling.
CREATE TABLE credentials (
  credential_id text PRIMARY KEY,
  client_id     text NOT NULL,
  type          text NOT NULL,
  secret_hash   text NOT NULL UNIQUE,          -- hex SHA-256 of the secret; the secret itself is never stored
  secret_hint   text NOT NULL,                 -- prefix and last four characters, to recognise a secret
  scopes        jsonb NOT NULL,
  permissions   jsonb NOT NULL,
  created_by    text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz,
  revoked_at    timestamptz,
  last_used_at  timestamptz
);
CREATE INDEX credentials_client_id ON credentials (client_id);

CREATE TABLE refresh_tokens (
  token_hash    text PRIMARY KEY,              -- hex SHA-256 of the token
  credential_id text NOT NULL REFERENCES credentials (credential_id),
  client_id     text NOT NULL,
  scopes        jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  revoked_at    timestamptz,
  last_used_at  timestamptz
);
CREATE INDEX refresh_tokens_credential ON refresh_tokens (credential_id);

-- Access tokens revoked before expiry (RFC 7009); rows can be dropped once expired.
CREATE TABLE revoked_access_tokens (
  jti        text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);

CREATE TABLE signing_keys (
  kid          text PRIMARY KEY,
  alg          text NOT NULL,
  public_jwk   jsonb NOT NULL,
  private_jwk  text NOT NULL,                  -- sealed with the master key (AES-256-GCM)
  created_at   timestamptz NOT NULL DEFAULT now(),
  retired_at   timestamptz
);

-- Failed token requests per client_id in a fixed one-minute window, shared by every server.
CREATE TABLE token_failures (
  client_id       text PRIMARY KEY,
  window_start    timestamptz NOT NULL,
  failures        integer NOT NULL
);
