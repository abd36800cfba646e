-- The source snapshots the last refresh attempt of a materialized view read ({dataset_id: snapshot_id}).
-- A REFRESH ON COMMIT view whose source has moved past them, with no refresh queued or running, is
-- refreshed by the scheduler's next tick: a commit whose refresh was never queued (the process stopped
-- between the two) or that landed while a refresh was reading older snapshots is caught up. NULL: not
-- known yet (a view created before this migration, until its next refresh).
ALTER TABLE materialized_views ADD COLUMN refreshed_from jsonb;
