-- What every server and worker sharing this database must agree on (docs/deploy.md, "Start-up
-- refusals"): one row, written by the first process that starts on it and read by every later start.
CREATE TABLE cluster_identity (
  singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  cluster_id       text NOT NULL,                     -- clu_…; also in the storage's marker object
  key_check        text NOT NULL,                     -- a constant sealed with the master key: opens only with that key
  storage_location text NOT NULL,                     -- the storage it was initialised with (file:///… or s3://…), for messages
  created_at       timestamptz NOT NULL DEFAULT now()
);
