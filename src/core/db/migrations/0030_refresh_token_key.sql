-- The MAC key of client_credentials refresh tokens (docs/auth.md, "Refresh tokens of client_credentials"):
-- one row, 32 random bytes sealed with the master key, written by the first server that needs it
-- (INSERT … ON CONFLICT DO NOTHING, so of servers starting together exactly one key wins) and read by all.
CREATE TABLE refresh_token_key (
  singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  sealed_key  text NOT NULL,                        -- sealed with the master key (AES-256-GCM)
  created_at  timestamptz NOT NULL DEFAULT now()
);
