-- One policy per workspace, principal and pattern (docs/policies.md), held by the table itself: two
-- identical grants racing each other could both insert, and a later REVOKE removed only one of them.
-- Duplicates made so far collapse to the one with the highest role (the role that principal
-- effectively holds there, so nobody's access changes), then the oldest, then the smallest id.
DELETE FROM policies
WHERE policy_id IN (
  SELECT policy_id
  FROM (
    SELECT policy_id,
           row_number() OVER (
             PARTITION BY workspace, principal, pattern
             ORDER BY CASE role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 WHEN 'writer' THEN 2 ELSE 3 END,
                      created_at,
                      policy_id
           ) AS rank
    FROM policies
  ) ranked
  WHERE rank > 1
);

CREATE UNIQUE INDEX policies_identity ON policies (workspace, principal, pattern);
