import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processAlive as alive } from '../processes.ts';

/** Who holds a lock: a process on a host (a lock written before hosts were recorded is taken as this host's). */
export interface LockHolder {
  pid: number;
  host: string;
  /** The holder's host is another machine: its process cannot be looked at from here. */
  elsewhere: boolean;
}

/** The holder rewrites its lock this often (only the file's time changes), so that another host can tell a live lock. */
export const LOCK_TOUCH_MS = 10_000;
/** A lock of another host not rewritten for this long is left by a process that is gone (a container re-created under a new name). */
export const LOCK_STALE_MS = 60_000;

function readHolder(lock: string): (LockHolder & { touchedMs: number }) | undefined {
  let text: string;
  let touchedMs: number;
  try {
    text = fs.readFileSync(lock, 'utf8');
    touchedMs = fs.statSync(lock).mtimeMs;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const [pidText, host = os.hostname()] = text.trim().split(/\s+/);
  const pid = Number.parseInt(pidText, 10);
  if (!Number.isInteger(pid) || String(pid) !== pidText) return undefined;
  return { pid, host, elsewhere: host !== os.hostname(), touchedMs };
}

/**
 * Claims `dir` for this process with a lock file beside it (`<dir>.lock`, holding `<pid> <host>`),
 * and returns the release. Refuses (with the error `refusal` makes) while another live process
 * holds it: on this host a process with that pid; on another host (a directory shared over the
 * network) a lock rewritten within LOCK_STALE_MS, since that host's processes cannot be looked at.
 * A lock left by a process that stopped is taken over. Creates the directory that holds `dir` (and
 * the lock) if it is missing. While held, the lock's time is renewed every LOCK_TOUCH_MS.
 */
export function lockDirectory(dir: string, refusal: (holder: LockHolder) => Error): () => void {
  const lock = `${dir}.lock`;
  // Written aside, then linked into place: a lock file is never seen empty.
  const mine = `${lock}.${process.pid}`;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  fs.writeFileSync(mine, `${process.pid} ${os.hostname()}`);
  try {
    for (;;) {
      try {
        fs.linkSync(mine, lock);
        return held(lock);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = readHolder(lock);
      if (holder?.elsewhere && Date.now() - holder.touchedMs < LOCK_STALE_MS) throw refusal(holder);
      // (The same pid is a restart that reused it, as in a container.)
      if (holder && !holder.elsewhere && holder.pid !== process.pid && alive(holder.pid)) throw refusal(holder);
      fs.rmSync(lock, { force: true });
    }
  } finally {
    fs.rmSync(mine, { force: true });
  }
}

/** Renews the lock's time while it is held; the release stops that and removes the lock. */
function held(lock: string): () => void {
  const touch = setInterval(() => {
    const now = new Date();
    fs.utimes(lock, now, now, () => undefined);
  }, LOCK_TOUCH_MS);
  touch.unref();
  return () => {
    clearInterval(touch);
    fs.rmSync(lock, { force: true });
  };
}
