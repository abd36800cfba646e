/**
 * The MAC key of client_credentials refresh tokens: created once per database whoever asks first,
 * even when several servers ask at the same moment, and opened only with the master key.
 */
import crypto from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Sealer } from '../../core/crypto/index.ts';
import { createTestDb, type TestDb } from '../../../test/harness.ts';
import { loadRefreshTokenKey } from './refresh-token-key.ts';

let testDb: TestDb | undefined;
afterEach(async () => {
  await testDb?.dispose();
  testDb = undefined;
});

describe('loadRefreshTokenKey', () => {
  it('creates exactly one key when many servers ask for it at once, and every one gets it', async () => {
    testDb = await createTestDb();
    const { db } = testDb;
    const sealer = new Sealer(crypto.randomBytes(32));
    expect(await db.kysely.selectFrom('refresh_token_key').selectAll().execute()).toEqual([]);
    const keys = await Promise.all(Array.from({ length: 8 }, () => loadRefreshTokenKey(db, sealer)));
    expect(keys[0]).toHaveLength(32);
    for (const key of keys) expect(key).toEqual(keys[0]);
    expect(await db.kysely.selectFrom('refresh_token_key').selectAll().execute()).toHaveLength(1);
    // A later start reads the same key.
    expect(await loadRefreshTokenKey(db, sealer)).toEqual(keys[0]);
  });

  it('is refused, without a word of the key, under another master key', async () => {
    testDb = await createTestDb();
    const { db } = testDb;
    const key = await loadRefreshTokenKey(db, new Sealer(crypto.randomBytes(32)));
    const error = await loadRefreshTokenKey(db, new Sealer(crypto.randomBytes(32))).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/master key does not open the refresh-token key/);
    for (const spelling of [key.toString('base64url'), key.toString('base64'), key.toString('hex')]) expect(String((error as Error).stack)).not.toContain(spelling);
  });
});
