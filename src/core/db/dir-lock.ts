import fs from 'node:fs';
import path from 'node:path';
import { processAlive as alive } from '../processes.ts';


/**
 * Claims `dir` for this process with a lock file beside it (`<dir>.lock`, holding the pid), and
 * returns the release. Refuses while another live process holds it; a lock left by a process that
 * stopped is taken over. Creates the directory that holds `dir` (and the lock) if it is missing.
 */
export function lockDirectory(dir: string, refusal: (pid: number) => string): () => void {
  const lock = `${dir}.lock`;
  // Written aside, then linked into place: a lock file is never seen empty.
  const mine = `${lock}.${process.pid}`;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  fs.writeFileSync(mine, String(process.pid));
  try {
    for (;;) {
      try {
        fs.linkSync(mine, lock);
        return () => fs.rmSync(lock, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = Number.parseInt(fs.readFileSync(lock, 'utf8'), 10);
      // (The same pid is a restart that reused it, as in a container.)
      if (Number.isInteger(holder) && holder !== process.pid && alive(holder)) throw new Error(refusal(holder));
      fs.rmSync(lock, { force: true });
    }
  } finally {
    fs.rmSync(mine, { force: true });
  }
}
