import fs from 'node:fs/promises';
import path from 'node:path';
import { isNotFoundError, readdirIfExists, statIfExists } from '../files.ts';
import { silentLogger, type Logger } from '../logger.ts';

/** Entries of the data directory's `tmp/` older than this are taken to be left by a process that died. */
export const SCRATCH_STALE_MS = 3600_000;

/**
 * Removes what killed processes left under `<data dir>/tmp` (DuckDB spill files, uploads and
 * downloads in flight), at start. `exclusive`: this process alone uses the data directory (the
 * embedded database holds its lock), so everything there is left over; otherwise (PostgreSQL,
 * where `serve` and `worker` may share one data directory) only entries older than
 * SCRATCH_STALE_MS. Job spill directories are removed by their query host (named by pid).
 * An entry that cannot be removed is logged and left. Returns the bytes removed.
 */
export async function sweepScratch(tmpDir: string, options: { exclusive: boolean; now?: number; log?: Logger }): Promise<number> {
  const now = options.now ?? Date.now();
  const log = options.log ?? silentLogger;
  let removed = 0;
  for (const area of await readdirIfExists(tmpDir)) {
    const areaPath = path.join(tmpDir, area);
    if (!(await statIfExists(areaPath))?.isDirectory()) continue;
    for (const entry of await readdirIfExists(areaPath)) {
      if (entry === 'spill') continue;
      const full = path.join(areaPath, entry);
      try {
        const stat = await statIfExists(full);
        if (!stat || (!options.exclusive && now - stat.mtimeMs < SCRATCH_STALE_MS)) continue;
        removed += await sizeOf(full);
        await fs.rm(full, { recursive: true, force: true });
      } catch (error) {
        log.warn({ err: error, path: full }, 'could not remove scratch left by an earlier process');
      }
    }
  }
  return removed;
}

async function sizeOf(target: string): Promise<number> {
  let stat;
  try {
    stat = await fs.lstat(target);
  } catch (error) {
    if (isNotFoundError(error)) return 0;
    throw error;
  }
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const entry of await readdirIfExists(target)) total += await sizeOf(path.join(target, entry));
  return total;
}
