-- lakeport: offline — it drops upload_writes.path and column_stats, which an earlier server writes and reads for every upload
-- A write (one uploaded file) may become several Parquet parts: the upload is cut into
-- record-aligned chunks that are converted while the rest of it still arrives. The parts replace
-- upload_writes.path and upload_writes.column_stats; upload_writes keeps the file's totals.
CREATE TABLE upload_write_parts (
  write_id      text NOT NULL REFERENCES upload_writes (write_id) ON DELETE CASCADE,
  part          integer NOT NULL,                     -- 0-based, in the file's order
  path          text NOT NULL,                        -- staged Parquet file (blob key)
  rows          bigint NOT NULL,
  bytes         bigint NOT NULL,
  column_stats  jsonb NOT NULL,
  PRIMARY KEY (write_id, part)
);

INSERT INTO upload_write_parts (write_id, part, path, rows, bytes, column_stats)
  SELECT write_id, 0, path, rows, bytes, column_stats FROM upload_writes;

ALTER TABLE upload_writes DROP COLUMN path;
ALTER TABLE upload_writes DROP COLUMN column_stats;
ALTER TABLE upload_writes ADD COLUMN parts integer NOT NULL DEFAULT 1;
