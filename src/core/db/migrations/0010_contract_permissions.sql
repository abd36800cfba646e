-- The permissions (credential narrowing) an upload contract was negotiated under, as jobs record
-- theirs: a narrowed credential sees only contracts made under permissions within its own
-- (core/authz mayAccessOwned). Contracts from before this migration count as made unnarrowed ([]),
-- so only the identity's unnarrowed credentials see them.
ALTER TABLE upload_contracts ADD COLUMN permissions jsonb NOT NULL DEFAULT '[]'::jsonb;
