-- Query jobs and saved variables.
CREATE TABLE jobs (
  execution_id      text PRIMARY KEY,
  owner             text NOT NULL,
  sql_text          text NOT NULL,
  parameters        jsonb NOT NULL,                  -- values resolved at submission (request, then saved variables)
  client_info       jsonb,
  permissions       jsonb NOT NULL,                  -- the submitting credential's narrowing grants
  status            text NOT NULL,                   -- queued | running | succeeded | failed | cancelled
  error             jsonb,
  result_key        text,
  row_count         bigint,
  columns           jsonb,
  attempts          integer NOT NULL DEFAULT 0,
  worker_id         text,
  heartbeat_at      timestamptz,
  cancel_requested  boolean NOT NULL DEFAULT false,
  timeout_ms        integer NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  started_at        timestamptz,
  finished_at       timestamptz
);
CREATE INDEX jobs_owner_recent ON jobs (owner, created_at DESC);
CREATE INDEX jobs_queue ON jobs (created_at) WHERE status = 'queued';
CREATE INDEX jobs_running ON jobs (heartbeat_at) WHERE status = 'running';

CREATE TABLE variables (
  owner       text NOT NULL,
  name        text NOT NULL,
  type        text NOT NULL,                         -- string | number | boolean
  value       jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (owner, name)
);
