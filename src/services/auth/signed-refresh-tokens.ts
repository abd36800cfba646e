import crypto from 'node:crypto';
import { randomBytes } from '../../core/crypto/index.ts';
import { REFRESH_TOKEN_PREFIX } from './secrets.ts';

/**
 * Self-describing refresh tokens of the client_credentials grant (docs/auth.md, "Refresh tokens of
 * client_credentials"): `lprt_2.<claims>.<mac>`, the claims as base64url JSON and the MAC an
 * HMAC-SHA256 of everything before the last dot under the cluster's random key, kept sealed in the
 * database (refresh-token-key.ts). The old
 * random tokens (`lprt_` + base62 + checksum) never contain a dot, so the two never mix up.
 */
export const SIGNED_REFRESH_TOKEN_PREFIX = `${REFRESH_TOKEN_PREFIX}2.`;

/** The MAC is 32 bytes: 43 base64url characters. Claims of any real credential stay far below 4 KiB. */
const SHAPE = /^lprt_2\.[A-Za-z0-9_-]{1,4000}\.[A-Za-z0-9_-]{43}$/;

export interface RefreshClaims {
  credentialId: string;
  clientId: string;
  scopes: string[];
  /** Epoch seconds. */
  issuedAt: number;
  expiresAt: number;
}

interface WireClaims {
  cid: string;
  sub: string;
  scope: string;
  iat: number;
  exp: number;
  /** 16 random bytes: every token is distinct, so one can be revoked alone. */
  n: string;
}

export function isSignedRefreshToken(token: string): boolean {
  return token.startsWith(SIGNED_REFRESH_TOKEN_PREFIX);
}

/** Signs and verifies self-describing refresh tokens with one key (the same on every server). */
export class RefreshTokenSigner {
  private readonly key: crypto.KeyObject;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the refresh-token key must be 32 bytes');
    this.key = crypto.createSecretKey(key);
  }

  private mac(signed: string): string {
    return crypto.createHmac('sha256', this.key).update(signed).digest('base64url');
  }

  sign(claims: RefreshClaims): string {
    const wire: WireClaims = {
      cid: claims.credentialId,
      sub: claims.clientId,
      scope: claims.scopes.join(' '),
      iat: claims.issuedAt,
      exp: claims.expiresAt,
      n: randomBytes(16).toString('base64url'),
    };
    const signed = SIGNED_REFRESH_TOKEN_PREFIX + Buffer.from(JSON.stringify(wire)).toString('base64url');
    return `${signed}.${this.mac(signed)}`;
  }

  /**
   * The claims of a token this key signed, else undefined (malformed, truncated, forged). The MAC is
   * compared as text in constant time, so each token has one spelling (and one hash to revoke it by):
   * a variant decoding to the same bytes is refused. Expiry is the caller's to check.
   */
  verify(token: string): RefreshClaims | undefined {
    if (!SHAPE.test(token)) return undefined;
    const dot = token.lastIndexOf('.');
    const signed = token.slice(0, dot);
    if (!crypto.timingSafeEqual(Buffer.from(token.slice(dot + 1)), Buffer.from(this.mac(signed)))) return undefined;
    let wire: Partial<WireClaims>;
    try {
      wire = JSON.parse(Buffer.from(signed.slice(SIGNED_REFRESH_TOKEN_PREFIX.length), 'base64url').toString('utf8')) as Partial<WireClaims>;
    } catch {
      return undefined;
    }
    // Only this key makes tokens, so a well-signed one has this shape; checked anyway.
    const { cid, sub, scope, iat, exp } = wire ?? {};
    if (typeof cid !== 'string' || typeof sub !== 'string' || typeof scope !== 'string' || !Number.isInteger(iat) || !Number.isInteger(exp)) return undefined;
    return { credentialId: cid, clientId: sub, scopes: scope === '' ? [] : scope.split(' '), issuedAt: iat!, expiresAt: exp! };
  }
}
