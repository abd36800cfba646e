/** Process groups of the Lakeport processes tests start (`detached`, so a group holds a process and what it started). */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Whether any process of the group led by `pgid` is still alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    // EPERM: the processes exist but we may not signal them (should not happen for our own group).
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function signalGroup(pgid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pgid, signal);
  } catch {
    /* already gone */
  }
}
