-- Job results are capped and kept for a while: their size (per-identity cap) and when they were removed.
ALTER TABLE jobs ADD COLUMN result_bytes bigint;
ALTER TABLE jobs ADD COLUMN results_expired_at timestamptz;
CREATE INDEX jobs_kept_results ON jobs (owner) WHERE result_key IS NOT NULL;
CREATE INDEX jobs_results_by_age ON jobs (finished_at) WHERE result_key IS NOT NULL;
