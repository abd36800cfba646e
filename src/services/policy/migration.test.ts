/** Migration 0008: duplicate policies (one principal, one pattern) collapse to one, then a unique index keeps it so. */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectiveRole } from '../../core/authz/index.ts';
import { loadMigrations, migrate } from '../../core/db/index.ts';
import { createTestDb, type TestDb } from '../../../test/harness.ts';

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb({ migrate: false });
});
afterAll(async () => t?.dispose());

describe('0008_policy_identity', () => {
  it('keeps one policy per workspace, principal and pattern — the highest role, then the oldest — and no one’s access changes', async () => {
    await migrate(t.db, loadMigrations().filter((m) => m.version < 8));
    const rows: [string, string, string, string, string, string][] = [
      // id, workspace, principal, role, pattern, created_at
      ['pol_a1', 'ws', 'alice', 'owner', 'ws.*', '2024-01-01'],
      ['pol_a2', 'ws', 'alice', 'owner', 'ws.*', '2024-01-02'], // identical, younger: goes
      ['pol_c1', 'ws', 'carol', 'reader', 'ws.x.*', '2024-01-01'],
      ['pol_c2', 'ws', 'carol', 'writer', 'ws.x.*', '2024-01-03'], // higher role: stays
      ['pol_c3', 'ws', 'carol', 'reader', 'ws.x.*', '2024-01-04'],
      ['pol_c4', 'ws', 'carol', 'reader', 'ws.*', '2024-01-01'], // another pattern: stays
      ['pol_c5', 'other', 'carol', 'reader', 'other.*', '2024-01-01'], // another workspace: stays
      ['pol_c6', 'other', 'carol', 'reader', 'other.*', '2024-01-01'], // same time: the smaller id stays
    ];
    const grantsBefore = await grantsByIdentity(rows);
    for (const [id, workspace, principal, role, pattern, at] of rows) {
      await sql`INSERT INTO policies (policy_id, workspace, principal, role, pattern, created_by, created_at, updated_at)
        VALUES (${id}, ${workspace}, ${principal}, ${role}, ${pattern}, 'test', ${at}::timestamptz, ${at}::timestamptz)`.execute(t.db.kysely);
    }

    expect(await migrate(t.db)).toContain(8);

    const left = await t.db.kysely.selectFrom('policies').select(['policy_id', 'role']).orderBy('policy_id').execute();
    expect(left).toEqual([
      { policy_id: 'pol_a1', role: 'owner' },
      { policy_id: 'pol_c2', role: 'writer' },
      { policy_id: 'pol_c4', role: 'reader' },
      { policy_id: 'pol_c5', role: 'reader' },
    ]);
    const after = await t.db.kysely.selectFrom('policies').select(['principal', 'workspace', 'role', 'pattern']).execute();
    expect(await grantsByIdentity(after.map((r) => ['', r.workspace, r.principal, r.role, r.pattern, '']))).toEqual(grantsBefore);

    await expect(
      sql`INSERT INTO policies (policy_id, workspace, principal, role, pattern, created_by) VALUES ('pol_dup', 'ws', 'carol', 'admin', 'ws.x.*', 'test')`.execute(t.db.kysely),
    ).rejects.toThrow(/unique|duplicate/i);
  });
});

/** Each identity's effective role on a few resources: what the migration must not change. */
async function grantsByIdentity(rows: [string, string, string, string, string, string][]) {
  const resources = [{ workspace: 'ws' }, { workspace: 'ws', collection: 'x', dataset: 'd' }, { workspace: 'ws', collection: 'y', dataset: 'd' }, { workspace: 'other' }];
  const out: Record<string, (string | null)[]> = {};
  for (const identity of ['alice', 'carol']) {
    out[identity] = resources.map((resource) =>
      effectiveRole(
        rows.filter((r) => r[2] === identity && r[1] === resource.workspace).map((r) => ({ role: r[3] as 'reader', pattern: r[4] })),
        [],
        resource,
      ),
    );
  }
  return out;
}
