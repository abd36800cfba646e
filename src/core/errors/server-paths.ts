import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isNotFoundError } from '../files.ts';

/** What a server path is replaced with in a message a user sees. */
export const SERVER_PATH = '<server path>';

const roots = new Set<string>();
let pattern: RegExp | undefined;

/**
 * A directory whose paths must never reach a user (the data directory, a file store's root); the
 * system's temporary directory and the working directory are known from the start. `/` is ignored.
 */
export function addServerPath(dir: string): void {
  const resolved = path.resolve(dir);
  let real = resolved;
  try {
    real = fs.realpathSync(resolved);
  } catch (error) {
    // Not there (yet): its resolved path is what messages will name.
    if (!isNotFoundError(error)) throw error;
  }
  for (const p of [resolved, real]) {
    const root = p.replace(/[\\/]+$/, '');
    if (root.length > 1 && !roots.has(root)) {
      roots.add(root);
      pattern = undefined;
    }
  }
}
addServerPath(os.tmpdir());
addServerPath(process.cwd());

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The message with every path under a server directory (see addServerPath) replaced by
 * `<server path>`: DuckDB's and the file system's errors name the files they were at, and those
 * reveal the server's layout. Everything else of the message is kept.
 */
export function scrubServerPaths(message: string): string {
  pattern ??= new RegExp(
    `(?<![\\w.-])(?:${[...roots].sort((a, b) => b.length - a.length).map(escape).join('|')})(?:[\\\\/][^\\s"'\`]*)?(?![\\w.-])`,
    'g',
  );
  return message.replace(pattern, SERVER_PATH);
}
