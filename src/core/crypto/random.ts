import crypto from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 62^8 < 2^53: eight digits at a time in plain numbers, one BigInt division per eight. */
const CHUNK = 62n ** 8n;

/** The bytes as one big-endian number in base62 (no leading zeros). */
export function base62(bytes: Uint8Array): string {
  let n = BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
  let out = '';
  while (n >= CHUNK) {
    out = base62Fixed(Number(n % CHUNK), 8) + out;
    n /= CHUNK;
  }
  for (let rest = Number(n); rest > 0; rest = Math.floor(rest / 62)) out = BASE62[rest % 62] + out;
  return out;
}

/** Random bytes drawn from a pool filled 4 KiB at a time (as node:crypto does for randomUUID): one system call per many ids. */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
export function randomBytes(size: number): Buffer {
  if (size > pool.length) return crypto.randomBytes(size);
  if (poolOffset + size > pool.length) {
    crypto.randomFillSync(pool);
    poolOffset = 0;
  }
  const bytes = Buffer.from(pool.subarray(poolOffset, poolOffset + size));
  pool.fill(0, poolOffset, poolOffset + size);
  poolOffset += size;
  return bytes;
}

/** Fixed-width base62 of a non-negative integer below 2^53 (a 32-bit one for a checksum). */
export function base62Fixed(value: number, width: number): string {
  let n = value;
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** A prefixed random identifier such as `cred_4XbK…` (128 bits). */
export function newId(prefix: string): string {
  return `${prefix}_${base62(randomBytes(16)).padStart(22, '0')}`;
}

export function sha256Hex(value: string): string {
  return crypto.createHash('sha256').update(value).digest('hex');
}

/** Constant-time comparison of two strings by their SHA-256 digests (equal lengths by construction). */
export function safeEqual(a: string, b: string): boolean {
  return crypto.timingSafeEqual(crypto.createHash('sha256').update(a).digest(), crypto.createHash('sha256').update(b).digest());
}
