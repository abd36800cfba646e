-- The catalog (the table format, in the spirit of DuckLake): namespaces, collections, datasets,
-- snapshots, the data files that make up each snapshot, and tags. See docs/catalog.md.
CREATE TABLE catalog_namespaces (
  workspace       text PRIMARY KEY,
  billing_account text NOT NULL,                      -- the account that claimed the workspace name
  properties      jsonb NOT NULL DEFAULT '{}',        -- {deletion_protection?, drop_protection?, history_protection?}
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX catalog_namespaces_billing_account ON catalog_namespaces (billing_account);

CREATE TABLE catalog_collections (
  workspace  text NOT NULL REFERENCES catalog_namespaces (workspace) ON DELETE CASCADE,
  name       text NOT NULL,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace, name)
);

CREATE TABLE catalog_datasets (
  dataset_id          text PRIMARY KEY,               -- ds_…
  workspace           text NOT NULL,
  collection          text NOT NULL,
  name                text NOT NULL,
  kind                text NOT NULL CHECK (kind IN ('table', 'view', 'external')),
  columns             jsonb NOT NULL,                 -- [ColumnDef]
  description         text,
  properties          jsonb NOT NULL DEFAULT '{}',
  definition_version  integer NOT NULL DEFAULT 1,     -- bumped by every change of columns, description or properties
  current_snapshot_id bigint,                         -- null until the first commit
  created_by          text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_by          text NOT NULL,
  updated_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace, collection, name),
  FOREIGN KEY (workspace, collection) REFERENCES catalog_collections (workspace, name) ON DELETE CASCADE
);

CREATE TABLE catalog_snapshots (
  snapshot_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- unique across datasets
  dataset_id         text NOT NULL REFERENCES catalog_datasets (dataset_id) ON DELETE CASCADE,
  parent_snapshot_id bigint,                          -- history: kept even if the parent is expired one day
  sequence           integer NOT NULL,                -- 1, 2, 3… per dataset
  committed_at       timestamptz NOT NULL DEFAULT now(),
  author             text NOT NULL,
  message            text,
  operation          text NOT NULL CHECK (operation IN ('create', 'append', 'overwrite', 'delete', 'maintenance')),
  rows_added         bigint NOT NULL,
  rows_removed       bigint NOT NULL,
  total_records      bigint NOT NULL,
  total_size         bigint NOT NULL,                 -- bytes of the data files
  changed_rows       boolean NOT NULL,
  definition_version integer NOT NULL,                -- the dataset's definition when committed
  UNIQUE (dataset_id, sequence)
);
ALTER TABLE catalog_datasets
  ADD FOREIGN KEY (current_snapshot_id) REFERENCES catalog_snapshots (snapshot_id);

-- A snapshot's files are those added at or before it and not removed at or before it (by sequence).
CREATE TABLE catalog_data_files (
  file_id             text PRIMARY KEY,               -- file_…
  dataset_id          text NOT NULL REFERENCES catalog_datasets (dataset_id) ON DELETE CASCADE,
  path                text NOT NULL UNIQUE,           -- storage key: lake/<ws>/<coll>/<ds>/<uuid>.parquet
  format              text NOT NULL DEFAULT 'parquet',
  row_count           bigint NOT NULL,
  size_bytes          bigint NOT NULL,
  column_stats        jsonb NOT NULL DEFAULT '{}',    -- {column: {min, max, null_count, distinct_count?}}
  added_in_snapshot   bigint NOT NULL REFERENCES catalog_snapshots (snapshot_id) ON DELETE CASCADE,
  removed_in_snapshot bigint REFERENCES catalog_snapshots (snapshot_id)
);
CREATE INDEX catalog_data_files_dataset ON catalog_data_files (dataset_id);
CREATE INDEX catalog_data_files_live ON catalog_data_files (dataset_id) WHERE removed_in_snapshot IS NULL;
CREATE INDEX catalog_data_files_added ON catalog_data_files (added_in_snapshot);
CREATE INDEX catalog_data_files_removed ON catalog_data_files (removed_in_snapshot);

CREATE TABLE catalog_tags (
  dataset_id  text NOT NULL REFERENCES catalog_datasets (dataset_id) ON DELETE CASCADE,
  name        text NOT NULL,
  snapshot_id bigint NOT NULL REFERENCES catalog_snapshots (snapshot_id),
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset_id, name)
);
CREATE INDEX catalog_tags_snapshot ON catalog_tags (snapshot_id);
