-- How an upload contract's commit changes its dataset: 'append' adds the upload's files to the current
-- snapshot; 'replace' makes a snapshot (operation 'overwrite') holding only the upload's files, the
-- earlier snapshots staying in history. Contracts from before this migration append, as they did.
ALTER TABLE upload_contracts ADD COLUMN commit_mode text NOT NULL DEFAULT 'append';
