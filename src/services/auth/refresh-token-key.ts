import type { Db } from '../../core/db/index.ts';
import { randomBytes, type Sealer } from '../../core/crypto/index.ts';

/** The sealed value is bound to this purpose: it cannot be passed off as another sealed value. */
const SEAL_CONTEXT = 'refresh-token-mac-key';

/**
 * The MAC key of client_credentials refresh tokens (docs/auth.md, "Refresh tokens of
 * client_credentials"): 32 random bytes kept in the metadata database sealed with the master key, so
 * minting a token takes both the master key and the database, as for the signing keys. The first
 * server to need it inserts one; of servers starting together exactly one insert wins (ON CONFLICT DO
 * NOTHING) and every one then reads and uses the winner. Read once per auth service (per process).
 */
export async function loadRefreshTokenKey(db: Db, sealer: Sealer): Promise<Buffer> {
  const read = () => db.kysely.selectFrom('refresh_token_key').select('sealed_key').executeTakeFirst();
  let row = await read();
  if (!row) {
    await db.kysely
      .insertInto('refresh_token_key')
      .values({ sealed_key: sealer.seal(randomBytes(32), SEAL_CONTEXT) })
      .onConflict((oc) => oc.column('singleton').doNothing())
      .execute();
    row = await read();
    if (!row) throw new Error('the refresh-token key was inserted but cannot be read back');
  }
  let key: Buffer;
  try {
    key = sealer.open(row.sealed_key, SEAL_CONTEXT);
  } catch {
    // Start-up checks the master key first (core/startup), so this is a tampered row. Never say more.
    throw new Error('the master key does not open the refresh-token key in the metadata database (refresh_token_key)');
  }
  if (key.length !== 32) throw new Error('the refresh-token key in the metadata database is not 32 bytes');
  return key;
}
