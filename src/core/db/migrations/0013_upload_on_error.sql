-- What a write does with a value its contract cannot store: 'fail' refuses the file (as before),
-- 'null' stores NULL instead (a record whose NOT NULL column would be NULL is left out), 'skip'
-- leaves the record out. A write counts what it left out and stored as NULL, and keeps the rejected
-- values (the first 100 000) in a staged CSV file, `rejects_path` (a blob key; NULL: none).
ALTER TABLE upload_contracts ADD COLUMN on_error text NOT NULL DEFAULT 'fail';
ALTER TABLE upload_writes ADD COLUMN rows_rejected bigint NOT NULL DEFAULT 0;
ALTER TABLE upload_writes ADD COLUMN values_nulled bigint NOT NULL DEFAULT 0;
ALTER TABLE upload_writes ADD COLUMN rejects_path text;
