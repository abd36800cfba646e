import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';

/** A Node system error's code (`ENOENT`, `EXDEV`, …), if it has one. */
export function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** Whether an error is Node's "no such file or directory". */
export function isNotFoundError(error: unknown): boolean {
  return errno(error) === 'ENOENT';
}

/** Whether `error` (or what caused it) is a local disk out of room: ENOSPC/EDQUOT from Node, or DuckDB's words for it. */
export function isDiskFullError(error: unknown): boolean {
  for (let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && typeof e === 'object' && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === 'ENOSPC' || e.code === 'EDQUOT' || (typeof e.message === 'string' && /No space left on device|Disk quota exceeded/.test(e.message))) return true;
  }
  return false;
}

/** The file's stat, or undefined when it does not exist (any other failure throws). */
export async function statIfExists(file: string): Promise<Stats | undefined> {
  try {
    return await fs.stat(file);
  } catch (error) {
    if (isNotFoundError(error)) return undefined;
    throw error;
  }
}

/** The directory's entry names, or none when it does not exist (any other failure throws). */
export async function readdirIfExists(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (error) {
    if (isNotFoundError(error)) return [];
    throw error;
  }
}
