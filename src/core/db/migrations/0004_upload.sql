-- Upload contracts, their writes, and commit idempotency keys.
CREATE TABLE upload_contracts (
  contract_id         text PRIMARY KEY,
  owner               text NOT NULL,                  -- the identity that negotiated it
  workspace           text NOT NULL,
  collection          text NOT NULL,
  dataset             text NOT NULL,
  dataset_id          text,                           -- the destination when it existed at negotiation
  definition_version  integer,                        -- the destination's definition version seen then
  requested_mode      text NOT NULL,
  mode                text NOT NULL,                  -- declared | infer | dataset
  state               text NOT NULL,                  -- proposed | accepted | stale | committed
  format              jsonb NOT NULL,                 -- read options
  files               jsonb NOT NULL,                 -- [{name, format, columns}] from the samples
  declared            jsonb,                          -- declared columns (declared mode)
  overrides           jsonb NOT NULL,                 -- PATCH: {column: {type?, ignore?}}
  plan                jsonb NOT NULL,
  issues              jsonb NOT NULL,
  sample_values       jsonb NOT NULL,
  target              jsonb NOT NULL,                 -- the columns written
  schema_fingerprint  text NOT NULL,
  snapshot_id         bigint,
  rows_written        bigint,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  expires_at          timestamptz NOT NULL
);
CREATE INDEX upload_contracts_expiry ON upload_contracts (expires_at) WHERE state <> 'committed';

CREATE TABLE upload_writes (
  write_id       text PRIMARY KEY,
  contract_id    text NOT NULL REFERENCES upload_contracts (contract_id) ON DELETE CASCADE,
  file_name      text NOT NULL,
  format         text NOT NULL,
  path           text NOT NULL,                       -- staged Parquet file (blob key)
  rows           bigint NOT NULL,
  bytes          bigint NOT NULL,
  source_bytes   bigint NOT NULL,
  column_stats   jsonb NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (contract_id, file_name)
);

CREATE TABLE upload_commits (
  owner            text NOT NULL,
  idempotency_key  text NOT NULL,
  contract_id      text NOT NULL,
  state            text NOT NULL,                     -- running | done
  response         jsonb,
  started_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (owner, idempotency_key)
);
