import fs from 'node:fs/promises';
import path from 'node:path';

/** Entries of the data directory's `tmp/` older than this are taken to be left by a process that died. */
export const SCRATCH_STALE_MS = 3600_000;

/**
 * Removes what killed processes left under `<data dir>/tmp` (DuckDB spill files, uploads and
 * downloads in flight), at start. `exclusive`: this process alone uses the data directory (the
 * embedded database holds its lock), so everything there is left over; otherwise (PostgreSQL,
 * where `serve` and `worker` may share one data directory) only entries older than
 * SCRATCH_STALE_MS. Job spill directories are removed by their query host (named by pid).
 * Returns the bytes removed.
 */
export async function sweepScratch(tmpDir: string, options: { exclusive: boolean; now?: number }): Promise<number> {
  const now = options.now ?? Date.now();
  let removed = 0;
  for (const area of await fs.readdir(tmpDir).catch(() => [] as string[])) {
    const areaPath = path.join(tmpDir, area);
    for (const entry of await fs.readdir(areaPath).catch(() => [] as string[])) {
      if (entry === 'spill') continue;
      const full = path.join(areaPath, entry);
      const stat = await fs.stat(full).catch(() => undefined);
      if (!stat || (!options.exclusive && now - stat.mtimeMs < SCRATCH_STALE_MS)) continue;
      removed += await sizeOf(full);
      await fs.rm(full, { recursive: true, force: true });
    }
  }
  return removed;
}

async function sizeOf(target: string): Promise<number> {
  const stat = await fs.lstat(target).catch(() => undefined);
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const entry of await fs.readdir(target).catch(() => [] as string[])) total += await sizeOf(path.join(target, entry));
  return total;
}
