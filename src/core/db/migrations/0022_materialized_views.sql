-- lakeport: offline — an earlier worker would claim refresh jobs and fail them as unknown SQL
-- Materialized views (docs/materialized-views.md): a dataset of kind 'materialized_view' whose
-- snapshots are written by refresh jobs; its definition and schedule live in materialized_views.
ALTER TABLE catalog_datasets DROP CONSTRAINT IF EXISTS catalog_datasets_kind_check;
ALTER TABLE catalog_datasets ADD CONSTRAINT catalog_datasets_kind_check CHECK (kind IN ('table', 'view', 'external', 'materialized_view'));

CREATE TABLE materialized_views (
  dataset_id          text PRIMARY KEY REFERENCES catalog_datasets (dataset_id) ON DELETE CASCADE,
  definition          text NOT NULL,                  -- the SELECT, as written
  refresh_mode        text NOT NULL CHECK (refresh_mode IN ('every', 'on_commit', 'manual')),
  refresh_every_ms    bigint,                         -- REFRESH EVERY: the period
  source_ids          jsonb NOT NULL DEFAULT '[]',    -- ["ds_…"]: the datasets the definition reads
  sources             jsonb NOT NULL DEFAULT '[]',    -- ["ws.coll.ds"]: their names when created
  owner               text NOT NULL,                  -- refreshes run with this identity's grants …
  owner_permissions   jsonb NOT NULL,                 -- … narrowed as its credential was at create
  next_refresh_at     timestamptz,                    -- REFRESH EVERY: claimed by compare-and-set
  last_refresh_at     timestamptz,
  last_refresh_job    text,
  last_refresh_status text,                           -- succeeded | failed
  last_refresh_error  text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  CHECK ((refresh_mode = 'every') = (refresh_every_ms IS NOT NULL))
);
CREATE INDEX materialized_views_due ON materialized_views (next_refresh_at) WHERE refresh_mode = 'every';

-- A refresh is a job marked with the view it refreshes; at most one is queued or running per view.
ALTER TABLE jobs ADD COLUMN refresh_of text;
CREATE UNIQUE INDEX jobs_one_refresh_in_progress ON jobs (refresh_of) WHERE refresh_of IS NOT NULL AND status IN ('queued', 'running');
