-- Compaction (docs/compaction.md): one compaction of a dataset at a time across every Lakeport
-- process. A process takes the dataset's lease with one atomic INSERT … ON CONFLICT … WHERE expired,
-- renews it while it works and deletes it when done; a holder that died leaves a lease that expires.
CREATE TABLE catalog_maintenance_leases (
  dataset_id  text PRIMARY KEY REFERENCES catalog_datasets (dataset_id) ON DELETE CASCADE,
  holder      text NOT NULL,                          -- <process id>:<random>, for logs and renewals
  acquired_at timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
