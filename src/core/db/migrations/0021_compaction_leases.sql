-- Compaction (docs/compaction.md): one compaction of a dataset at a time across every Lakeport
-- process. A process takes the dataset's lease with one atomic INSERT … ON CONFLICT … WHERE expired,
-- renews it while it works and deletes it when done; a holder that died leaves a lease that expires.
CREATE TABLE catalog_maintenance_leases (
  dataset_id  text PRIMARY KEY REFERENCES catalog_datasets (dataset_id) ON DELETE CASCADE,
  holder      text NOT NULL,                          -- <process id>:<random>, for logs and renewals
  acquired_at timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);

-- A file a compaction rewrote names the file that holds its rows now (docs/compaction.md). Reads of an
-- older snapshot that holds every file an output replaced (contiguously) read the output instead:
-- the same rows in the same order, in one file rather than thousands.
ALTER TABLE catalog_data_files ADD COLUMN replaced_by text;
CREATE INDEX catalog_data_files_replaced_by ON catalog_data_files (replaced_by) WHERE replaced_by IS NOT NULL;
