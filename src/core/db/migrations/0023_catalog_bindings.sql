-- A workspace's binding to an external catalog (docs/catalog-bindings.md). No row: the native catalog.
-- `sealed_auth` is the CatalogAuthRequest sealed with the billing account's data key (core/crypto
-- DataKeys, as CREATE SECRET's values), bound to the workspace; `auth_redacted` is what reads show.
-- `version` counts writes, so a sync only stores its listing if the binding it listed is still the one.
CREATE TABLE workspace_catalog_bindings (
  workspace          text PRIMARY KEY REFERENCES workspaces (name) ON DELETE CASCADE,
  billing_account    text NOT NULL,
  kind               text NOT NULL,
  config             jsonb NOT NULL,
  sealed_auth        text,
  auth_redacted      jsonb,
  preserve_sql_case  boolean NOT NULL DEFAULT false,
  version            integer NOT NULL DEFAULT 1,
  updated_by         text NOT NULL,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  last_sync          jsonb
);
