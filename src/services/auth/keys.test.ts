import crypto from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createTestDb, type TestDb } from '../../../test/harness.ts';
import { Sealer } from '../../core/crypto/index.ts';
import { SigningKeyStore } from './keys.ts';

describe('SigningKeyStore', () => {
  let t: TestDb;
  const sealer = new Sealer(crypto.randomBytes(32));
  beforeAll(async () => {
    t = await createTestDb();
  });
  afterAll(async () => t.dispose());

  async function sign(store: SigningKeyStore) {
    const { kid, privateKey } = await store.signingKey();
    return { kid, token: await new SignJWT({}).setProtectedHeader({ alg: 'EdDSA', kid }).setExpirationTime('1m').sign(privateKey) };
  }

  it('creates one key and keeps its private half sealed', async () => {
    // A database of its own: the other tests here rotate keys into the shared one.
    const own = await createTestDb();
    try {
      const store = new SigningKeyStore(own.db, sealer, 600);
      await store.init();
      const jwks = await store.jwks();
      expect(jwks.keys).toHaveLength(1);
      expect(jwks.keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
      expect(jwks.keys[0]).not.toHaveProperty('d');
      const row = await own.db.kysely.selectFrom('signing_keys').selectAll().executeTakeFirstOrThrow();
      expect(row.private_jwk.startsWith('v1.')).toBe(true);
      expect(row.private_jwk).not.toContain('"d"');
    } finally {
      await own.dispose();
    }
  });

  it('rotates: signs with the new key, still verifies the old key, and another server sees both', async () => {
    // A database of its own: the other tests here add keys to the shared one.
    const own = await createTestDb();
    onTestFinished(() => own.dispose());
    const a = new SigningKeyStore(own.db, sealer, 600);
    await a.init();
    const before = await sign(a);
    const { kid, retired } = await a.rotate();
    expect(retired).toContain(before.kid);
    const after = await sign(a);
    expect(after.kid).toBe(kid);
    expect(after.kid).not.toBe(before.kid);

    const b = new SigningKeyStore(own.db, sealer, 600); // a peer server sharing the database
    await b.init();
    expect((await b.jwks()).keys.map((k) => k.kid).sort()).toEqual([before.kid, kid].sort());
    for (const { kid: k, token } of [before, after]) {
      const key = await b.verificationKey(k);
      expect(key).toBeDefined();
      await expect(jwtVerify(token, key!)).resolves.toBeDefined();
    }
  });

  it('stops publishing a retired key once its tokens must have expired', async () => {
    const store = new SigningKeyStore(t.db, sealer, 1);
    await store.init();
    const old = await store.signingKey();
    await store.rotate();
    await new Promise((r) => setTimeout(r, 1100));
    expect(await store.verificationKey(old.kid)).toBeUndefined();
    expect((await store.jwks()).keys.map((k) => k.kid)).not.toContain(old.kid);
  });

  it('cannot open keys sealed under another master key', async () => {
    // A key sealed under this test's master key (init creates one when the table is empty).
    await new SigningKeyStore(t.db, sealer, 600).init();
    expect(await t.db.kysely.selectFrom('signing_keys').select('kid').execute()).not.toHaveLength(0);
    const other = new SigningKeyStore(t.db, new Sealer(crypto.randomBytes(32)), 600);
    await expect(other.init()).rejects.toThrow();
  });
});
