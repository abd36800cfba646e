export { Sealer } from './sealing.ts';
export { readOrCreateSecretFile, loadMasterKey } from './secret-files.ts';
export { base62, base62Fixed, newId, randomBytes, sha256Hex, safeEqual } from './random.ts';
export { DataKeys } from './data-keys.ts';
