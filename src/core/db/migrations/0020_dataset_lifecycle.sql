-- lakeport: offline — an earlier server knows nothing of dropped datasets and expired snapshots: it would list and write dropped datasets and read snapshots whose files are deleted
-- Dataset lifecycle (docs/lifecycle.md): soft-dropped datasets (restorable by UNDROP within a
-- window), expired snapshots kept as history rows, rollbacks that name old files again (zero copy),
-- a queue of storage paths to delete after a grace time, and snapshot leases held by readers.

-- A dropped dataset keeps its rows until purged; only live ones hold their name.
ALTER TABLE catalog_datasets ADD COLUMN dropped_at timestamptz;
ALTER TABLE catalog_datasets ADD COLUMN dropped_by text;
ALTER TABLE catalog_datasets DROP CONSTRAINT catalog_datasets_workspace_collection_name_key;
CREATE UNIQUE INDEX catalog_datasets_live_name ON catalog_datasets (workspace, collection, name) WHERE dropped_at IS NULL;
CREATE INDEX catalog_datasets_dropped ON catalog_datasets (dropped_at) WHERE dropped_at IS NOT NULL;

-- An expired snapshot stays in the history but can no longer be read.
ALTER TABLE catalog_snapshots ADD COLUMN expired_at timestamptz;

-- A rollback adds rows naming the files of an older snapshot: a path may now appear more than once.
ALTER TABLE catalog_data_files DROP CONSTRAINT catalog_data_files_path_key;
CREATE INDEX catalog_data_files_path ON catalog_data_files (path);

-- Storage paths no catalog row names any more, deleted by the sweeper once delete_after has passed.
CREATE TABLE catalog_file_deletions (
  path         text PRIMARY KEY,
  size_bytes   bigint NOT NULL DEFAULT 0,
  queued_at    timestamptz NOT NULL DEFAULT now(),
  delete_after timestamptz NOT NULL
);
CREATE INDEX catalog_file_deletions_due ON catalog_file_deletions (delete_after);

-- A reader (a job, an OData cursor) that needs a snapshot until expires_at: expiry skips it.
CREATE TABLE catalog_snapshot_leases (
  snapshot_id bigint NOT NULL REFERENCES catalog_snapshots (snapshot_id) ON DELETE CASCADE,
  holder      text NOT NULL,
  expires_at  timestamptz NOT NULL,
  PRIMARY KEY (snapshot_id, holder)
);
CREATE INDEX catalog_snapshot_leases_holder ON catalog_snapshot_leases (holder);
CREATE INDEX catalog_snapshot_leases_expires ON catalog_snapshot_leases (expires_at);
