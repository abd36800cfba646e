import type { Db } from '../src/core/db/index.ts';
import { sha256Hex } from '../src/core/crypto/index.ts';
import { generateSecret, REFRESH_TOKEN_PREFIX } from '../src/services/auth/secrets.ts';

/**
 * A row-based refresh token of a credential, as client_credentials issued them before
 * self-describing tokens (and interactive sessions still do): `lprt_` + random + checksum, its hash a row.
 */
export async function insertRowBasedRefreshToken(db: Db, credentialId: string, clientId: string, scopes = ['jobs', 'odata'], ttlMs = 86_400_000): Promise<string> {
  const token = generateSecret(REFRESH_TOKEN_PREFIX);
  await db.kysely
    .insertInto('refresh_tokens')
    .values({ token_hash: sha256Hex(token), credential_id: credentialId, client_id: clientId, scopes: JSON.stringify(scopes), expires_at: new Date(Date.now() + ttlMs) })
    .execute();
  return token;
}
