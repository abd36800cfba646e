import crypto, { KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Db } from '../../core/db/index.ts';
import { newId, type Sealer } from '../../core/crypto/index.ts';

export const SIGNING_ALG = 'EdDSA';
const RELOAD_INTERVAL_MS = 60_000;
const UNKNOWN_KID_RELOAD_MS = 5_000;

interface LoadedKey {
  kid: string;
  publicJwk: JWK;
  /** The private key as node:crypto signs with it (directly, without WebCrypto's round trip). */
  privateKey: KeyObject;
  publicKey: CryptoKey;
  createdAt: Date;
  retiredAt: Date | null;
}

const sealContext = (kid: string) => `signing-key:${kid}`;

/**
 * Signing keys live in the metadata database, private halves sealed with the master key, so every
 * server signs and verifies with the same set. The newest unretired key signs; a rotated-out key
 * stays published (and accepted) until every token it signed has expired.
 */
export class SigningKeyStore {
  private keys: LoadedKey[] = [];
  private loadedAt = 0;

  constructor(
    private readonly db: Db,
    private readonly sealer: Sealer,
    /** How long a retired key stays in the JWKS: the access-token lifetime plus slack for clock skew and reloads. */
    private readonly retainSeconds: number,
  ) {}

  /**
   * Whether `sealer` opens the private keys kept in the database (undefined: there are none yet): the
   * start-up check of the master key on a database that has no key check of its own yet (core/startup).
   */
  static async openWith(db: Db, sealer: Sealer): Promise<boolean | undefined> {
    const row = await db.kysely.selectFrom('signing_keys').select(['kid', 'private_jwk']).orderBy('created_at', 'desc').limit(1).executeTakeFirst();
    if (!row) return undefined;
    try {
      sealer.open(row.private_jwk, sealContext(row.kid));
      return true;
    } catch {
      return false;
    }
  }

  /** Creates the first key when there is none. */
  async init(): Promise<void> {
    await this.reload();
    if (!this.keys.some((k) => k.retiredAt === null)) {
      await this.insertKey();
      await this.reload();
    }
  }

  private async insertKey(): Promise<string> {
    const kid = newId('key');
    const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
    const privateJwk = await exportJWK(privateKey);
    const publicJwk = await exportJWK(publicKey);
    await this.db.kysely
      .insertInto('signing_keys')
      .values({
        kid,
        alg: SIGNING_ALG,
        public_jwk: JSON.stringify({ ...publicJwk, kid, alg: SIGNING_ALG, use: 'sig' }),
        private_jwk: this.sealer.seal(JSON.stringify(privateJwk), sealContext(kid)),
      })
      .execute();
    return kid;
  }

  /** Adds a new signing key and retires the others; returns the new key's id. */
  async rotate(): Promise<{ kid: string; retired: string[] }> {
    const kid = await this.insertKey();
    const retired = await this.db.kysely
      .updateTable('signing_keys')
      .set({ retired_at: new Date() })
      .where('retired_at', 'is', null)
      .where('kid', '!=', kid)
      .returning('kid')
      .execute();
    await this.db.kysely
      .deleteFrom('signing_keys')
      .where('retired_at', '<', new Date(Date.now() - this.retainSeconds * 1000))
      .execute();
    await this.reload();
    return { kid, retired: retired.map((r) => r.kid) };
  }

  private async reload(): Promise<void> {
    const rows = await this.db.kysely.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').execute();
    this.keys = await Promise.all(
      rows.map(async (row) => {
        const privateJwk = JSON.parse(this.sealer.open(row.private_jwk, sealContext(row.kid)).toString('utf8')) as JWK;
        return {
          kid: row.kid,
          publicJwk: row.public_jwk as JWK,
          privateKey: KeyObject.from((await importJWK(privateJwk, row.alg)) as CryptoKey),
          publicKey: (await importJWK(row.public_jwk as JWK, row.alg)) as CryptoKey,
          createdAt: row.created_at,
          retiredAt: row.retired_at,
        };
      }),
    );
    this.loadedAt = Date.now();
  }

  private async fresh(maxAgeMs = RELOAD_INTERVAL_MS): Promise<LoadedKey[]> {
    if (Date.now() - this.loadedAt > maxAgeMs) await this.reload();
    return this.keys;
  }

  private isPublished(key: LoadedKey, now = Date.now()): boolean {
    return key.retiredAt === null || now - key.retiredAt.getTime() < this.retainSeconds * 1000;
  }

  /**
   * A compact JWS (RFC 7515) of `payload` with header `{alg, kid, typ}`, signed by the active key
   * through node:crypto: Ed25519 signs in tens of microseconds, a fraction of WebCrypto's cost.
   */
  async signJwt(payload: Record<string, unknown>, typ: string): Promise<string> {
    const { kid, privateKey } = await this.signingKey();
    const header = Buffer.from(JSON.stringify({ alg: SIGNING_ALG, kid, typ })).toString('base64url');
    const input = `${header}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
    return `${input}.${crypto.sign(null, Buffer.from(input), privateKey).toString('base64url')}`;
  }

  async signingKey(): Promise<{ kid: string; privateKey: KeyObject }> {
    const active = (await this.fresh()).find((k) => k.retiredAt === null);
    if (!active) {
      await this.init();
      return this.signingKey();
    }
    return active;
  }

  /** The public key for `kid`, reloading (at most every few seconds) when a peer server rotated. */
  async verificationKey(kid: string): Promise<CryptoKey | undefined> {
    let key = (await this.fresh()).find((k) => k.kid === kid);
    if (!key) key = (await this.fresh(UNKNOWN_KID_RELOAD_MS)).find((k) => k.kid === kid);
    return key && this.isPublished(key) ? key.publicKey : undefined;
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    const now = Date.now();
    return { keys: (await this.fresh()).filter((k) => this.isPublished(k, now)).map((k) => k.publicJwk) };
  }
}
