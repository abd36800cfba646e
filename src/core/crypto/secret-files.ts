import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Reads a secret kept in a file of the data directory, creating it (mode 0600) on first use.
 * Concurrent first starts race safely: the exclusive create wins and the loser reads the winner's value.
 */
export function readOrCreateSecretFile(file: string, generate: () => string): { value: string; created: boolean } {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    const value = generate();
    fs.writeFileSync(file, `${value}\n`, { mode: 0o600, flag: 'wx' });
    return { value, created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { value: fs.readFileSync(file, 'utf8').trim(), created: false };
  }
}

export function loadMasterKey(dataDir: string, fromEnv: string | undefined): Buffer {
  const encoded = fromEnv ?? readOrCreateSecretFile(path.join(dataDir, 'master-key'), () => crypto.randomBytes(32).toString('base64')).value;
  const key = Buffer.from(encoded, 'base64');
  if (key.length !== 32) throw new Error('the master key must be 32 bytes, base64-encoded (LAKEPORT_MASTER_KEY or <data dir>/master-key)');
  return key;
}
