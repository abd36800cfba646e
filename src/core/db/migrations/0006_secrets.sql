-- CREATE SECRET: encrypted, write-only credentials per workspace (docs/secrets.md).
--
-- Every billing account has one data key: 32 random bytes, stored only sealed (AES-256-GCM) with the
-- master key. A secret's values are sealed with the data key of its workspace's billing account and
-- bound to the secret's workspace, name and type. No column ever holds a value in clear.
CREATE TABLE secret_data_keys (
  billing_account text PRIMARY KEY,
  wrapped_key     text NOT NULL,                      -- the data key sealed with the master key
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE secrets (
  -- A secret lives and dies with its workspace's catalog namespace (a purge removes it).
  workspace       text NOT NULL REFERENCES catalog_namespaces (workspace) ON DELETE CASCADE,
  name            text NOT NULL,                      -- 1-63 letters, digits, underscores; lowercased
  type            text NOT NULL,                      -- gcs_service_account | s3_access_key | http_endpoint
  billing_account text NOT NULL,                      -- whose data key sealed the values
  ciphertext      text NOT NULL,                      -- the values (a JSON object) sealed with that data key
  created_by      text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  replaced_by     text,                               -- who last ran CREATE OR REPLACE on it
  replaced_at     timestamptz,
  last_used_at    timestamptz,
  use_count       bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace, name)
);
