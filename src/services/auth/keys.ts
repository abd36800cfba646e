import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Db } from '../../core/db/index.ts';
import { newId, type Sealer } from '../../core/crypto/index.ts';

export const SIGNING_ALG = 'EdDSA';
const RELOAD_INTERVAL_MS = 60_000;
const UNKNOWN_KID_RELOAD_MS = 5_000;

interface LoadedKey {
  kid: string;
  publicJwk: JWK;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  createdAt: Date;
  retiredAt: Date | null;
}

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

  private sealContext(kid: string) {
    return `signing-key:${kid}`;
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
        private_jwk: this.sealer.seal(JSON.stringify(privateJwk), this.sealContext(kid)),
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
        const privateJwk = JSON.parse(this.sealer.open(row.private_jwk, this.sealContext(row.kid)).toString('utf8')) as JWK;
        return {
          kid: row.kid,
          publicJwk: row.public_jwk as JWK,
          privateKey: (await importJWK(privateJwk, row.alg)) as CryptoKey,
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

  async signingKey(): Promise<{ kid: string; privateKey: CryptoKey }> {
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
