/** The auth upkeep deletes refresh-token rows past their expiry and nothing else. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { insertRowBasedRefreshToken } from '../../../test/auth-tokens.ts';
import { sha256Hex } from '../../core/crypto/index.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

const exchange = (fields: Record<string, string>) => t.app.inject({ method: 'POST', url: '/auth/token', headers: FORM, payload: new URLSearchParams(fields).toString() });
const rowOf = (token: string) => t.db.kysely.selectFrom('refresh_tokens').select(['token_hash', 'revoked_at']).where('token_hash', '=', sha256Hex(token)).executeTakeFirst();

describe('purging expired refresh tokens', () => {
  it('deletes the rows past their expiry, revoked or not, and keeps the rest working or refused as before', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/clients/purger/credentials', headers: { 'x-admin-token': t.adminToken }, payload: {} });
    expect(res.statusCode).toBe(200);
    const { credential_id, secret } = res.json() as { credential_id: string; secret: string };
    const expired = await insertRowBasedRefreshToken(t.db, credential_id, 'purger', ['jobs'], -60_000);
    const expiredRevoked = await insertRowBasedRefreshToken(t.db, credential_id, 'purger', ['jobs'], -60_000);
    await t.db.kysely.updateTable('refresh_tokens').set({ revoked_at: new Date() }).where('token_hash', '=', sha256Hex(expiredRevoked)).execute();
    const live = await insertRowBasedRefreshToken(t.db, credential_id, 'purger');
    // A self-describing token, revoked: its row must outlive the purge while the token has not expired.
    const issued = (await exchange({ grant_type: 'client_credentials', client_id: 'purger', client_secret: secret })).json() as { refresh_token: string };
    const revoke = await t.app.inject({ method: 'POST', url: '/auth/revoke', headers: FORM, payload: new URLSearchParams({ token: issued.refresh_token, client_id: 'purger', client_secret: secret }).toString() });
    expect(revoke.statusCode).toBe(200);
    expect(await rowOf(issued.refresh_token)).toMatchObject({ revoked_at: expect.any(Date) });

    await t.app.lakeport.auth.upkeep!();

    expect(await rowOf(expired)).toBeUndefined();
    expect(await rowOf(expiredRevoked)).toBeUndefined();
    expect(await rowOf(live)).toBeDefined();
    expect(await rowOf(issued.refresh_token)).toBeDefined();
    expect((await exchange({ grant_type: 'refresh_token', refresh_token: live })).statusCode).toBe(200);
    expect((await exchange({ grant_type: 'refresh_token', refresh_token: issued.refresh_token })).statusCode).toBe(400);
    expect((await exchange({ grant_type: 'refresh_token', refresh_token: expired })).statusCode).toBe(400);
  });
});
