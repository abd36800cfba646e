import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { errno, statIfExists } from '../files.ts';
import { silentLogger, type Logger } from '../logger.ts';
import {
  BlobNotFoundError,
  InvalidBlobKeyError,
  compareKeys,
  validateBlobKey,
  validateBlobPrefix,
  validateDeletePrefix,
  validateRange,
  validateTempSuffix,
  type BlobInfo,
  type BlobStore,
} from './blob-store.ts';

/** The directory under the root that holds files being written; never listed, never a key. */
const TMP_DIR = '.tmp';
/** Temp files older than this are leftovers of a crash (no write takes a day). */
const STALE_TEMP_MS = 24 * 3600_000;

/** What rmdir says of a directory that has files again. */
const STILL_IN_USE = ['ENOTEMPTY', 'EEXIST'];
/** What says a directory is not there (any more). */
const GONE = ['ENOENT', 'ENOTDIR'];

/**
 * Blobs as plain files under `root`: key `lake/ws/c/d/x.parquet` is the file `<root>/lake/ws/c/d/x.parquet`.
 * Writes go to `<root>/.tmp/` first and are renamed into place, so a reader never sees a partial file.
 */
export class LocalBlobStore implements BlobStore {
  readonly kind = 'file' as const;
  readonly root: string;
  readonly location: string;
  private readonly tmpDir: string;
  private tmpReady: Promise<void> | undefined;
  private readonly log: Logger;

  /** `log`: where directories that cannot be pruned after a delete are reported. */
  constructor(root: string, options: { log?: Logger } = {}) {
    this.root = path.resolve(root);
    this.log = options.log ?? silentLogger;
    this.location = pathToFileURL(this.root).href;
    this.tmpDir = path.join(this.root, TMP_DIR);
  }

  private pathOf(key: string): string {
    validateBlobKey(key);
    if (key.split('/')[0] === TMP_DIR) throw new InvalidBlobKeyError(key, `'${TMP_DIR}/' is reserved for files being written`);
    return path.join(this.root, ...key.split('/'));
  }

  private async freshTemp(suffix: string): Promise<string> {
    this.tmpReady ??= this.prepareTmp();
    await this.tmpReady;
    await fsp.mkdir(this.tmpDir, { recursive: true }); // cheap, and survives someone removing it
    return path.join(this.tmpDir, `${crypto.randomUUID()}${suffix}`);
  }

  /** Creates `<root>/.tmp` and, once per store, removes what a crash left there more than a day ago. */
  private async prepareTmp(): Promise<void> {
    await fsp.mkdir(this.tmpDir, { recursive: true });
    const now = Date.now();
    for (const name of await fsp.readdir(this.tmpDir)) {
      const file = path.join(this.tmpDir, name);
      const st = await statIfExists(file);
      if (st && now - st.mtimeMs > STALE_TEMP_MS) await fsp.rm(file, { recursive: true, force: true });
    }
  }

  /**
   * Renames a finished temp file to its key's path; when the directory is missing, creates it and
   * tries again (again, if a concurrent delete pruned it).
   */
  private async publish(temp: string, dest: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        if (attempt > 0) await fsp.mkdir(path.dirname(dest), { recursive: true });
        await fsp.rename(temp, dest);
        return;
      } catch (err) {
        // Node's recursive mkdir says ENOTDIR when a directory it met is pruned before it looks again.
        if (!['ENOENT', 'ENOTDIR'].includes(errno(err) ?? '') || attempt >= 50) throw err;
        // No directory yet, or a concurrent delete pruned a (then empty) parent directory during mkdir or before the rename.
        await fsp.access(temp); // the temp file itself missing is a real error: let it throw
      }
    }
  }

  private async finish(key: string, temp: string, dest: string): Promise<BlobInfo> {
    try {
      const st = await fsp.stat(temp);
      await this.publish(temp, dest);
      return { key, size: st.size, lastModified: st.mtime };
    } catch (err) {
      await fsp.rm(temp, { force: true });
      throw err;
    }
  }

  async put(key: string, body: NodeJS.ReadableStream | Buffer | string, _options?: { contentType?: string }): Promise<BlobInfo> {
    const dest = this.pathOf(key);
    const temp = await this.freshTemp('.part');
    try {
      if (typeof body === 'string' || Buffer.isBuffer(body)) {
        await fsp.writeFile(temp, body, { flag: 'wx' });
      } else {
        const source = body instanceof Readable ? body : new Readable().wrap(body);
        await pipeline(source, fs.createWriteStream(temp, { flags: 'wx' }));
      }
    } catch (err) {
      await fsp.rm(temp, { force: true });
      throw err;
    }
    return this.finish(key, temp, dest);
  }

  /** Renames a file from `tempPath()` into place (it is consumed); copies any other file (left in place). */
  async putFile(key: string, localPath: string, _options?: { contentType?: string }): Promise<BlobInfo> {
    const dest = this.pathOf(key);
    const source = path.resolve(localPath);
    if (path.dirname(source) === this.tmpDir) {
      const st = await fsp.stat(source);
      if (!st.isFile()) throw new Error(`putFile: ${source} is not a file`);
      await this.publish(source, dest);
      return { key, size: st.size, lastModified: st.mtime };
    }
    const temp = await this.freshTemp('.part');
    try {
      await fsp.copyFile(source, temp, fs.constants.COPYFILE_EXCL | fs.constants.COPYFILE_FICLONE);
    } catch (err) {
      await fsp.rm(temp, { force: true });
      throw err;
    }
    return this.finish(key, temp, dest);
  }

  async get(key: string, range?: { start: number; end?: number }): Promise<NodeJS.ReadableStream> {
    const file = this.pathOf(key);
    validateRange(range);
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(file, 'r');
    } catch (err) {
      if (['ENOENT', 'ENOTDIR', 'EISDIR'].includes(errno(err) ?? '')) throw new BlobNotFoundError(key, this.location);
      throw err;
    }
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new BlobNotFoundError(key, this.location);
    } catch (err) {
      await handle.close();
      throw err;
    }
    return handle.createReadStream({ start: range?.start, end: range?.end });
  }

  async head(key: string): Promise<BlobInfo | undefined> {
    const file = this.pathOf(key);
    try {
      const st = await fsp.stat(file);
      return st.isFile() ? { key, size: st.size, lastModified: st.mtime } : undefined;
    } catch (err) {
      if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return undefined;
      throw err;
    }
  }

  async *list(prefix: string): AsyncIterable<BlobInfo> {
    validateBlobPrefix(prefix);
    // Start at the deepest directory the prefix names; its last partial segment filters entries there.
    const slash = prefix.lastIndexOf('/');
    const baseKey = slash < 0 ? '' : prefix.slice(0, slash + 1);
    yield* this.walk(baseKey, prefix);
  }

  private async *walk(dirKey: string, prefix: string): AsyncGenerator<BlobInfo> {
    const dir = dirKey === '' ? this.root : path.join(this.root, ...dirKey.slice(0, -1).split('/'));
    let entries: fs.Dirent[];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (['ENOENT', 'ENOTDIR'].includes(errno(err) ?? '')) return;
      throw err;
    }
    // Sorting names (directories as `name/`) byte-wise makes the depth-first walk yield keys in S3's order.
    const items = entries
      .filter((e) => !(dirKey === '' && e.name === TMP_DIR) && (e.isFile() || e.isDirectory()))
      .map((e) => ({ key: dirKey + e.name + (e.isDirectory() ? '/' : ''), dir: e.isDirectory() }))
      .sort((a, b) => compareKeys(a.key, b.key));
    for (const item of items) {
      if (item.dir) {
        if (item.key.startsWith(prefix) || prefix.startsWith(item.key)) yield* this.walk(item.key, prefix);
        continue;
      }
      if (!item.key.startsWith(prefix)) continue;
      try {
        const st = await fsp.stat(path.join(dir, item.key.slice(dirKey.length)));
        if (st.isFile()) yield { key: item.key, size: st.size, lastModified: st.mtime };
      } catch (err) {
        if (errno(err) !== 'ENOENT') throw err; // deleted while listing
      }
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    try {
      await fsp.unlink(file);
    } catch (err) {
      if (['ENOENT', 'ENOTDIR', 'EISDIR'].includes(errno(err) ?? '')) return;
      throw err;
    }
    await this.pruneUp(path.dirname(file));
  }

  async deletePrefix(prefix: string): Promise<number> {
    validateDeletePrefix(prefix);
    let deleted = 0;
    for await (const blob of this.list(prefix)) {
      try {
        await fsp.unlink(this.pathOf(blob.key));
        deleted++;
      } catch (err) {
        if (errno(err) !== 'ENOENT') throw err;
      }
    }
    const dir = path.join(this.root, ...prefix.slice(0, -1).split('/'));
    await this.pruneDown(dir);
    await this.pruneUp(path.dirname(dir));
    return deleted;
  }

  /** Removes now-empty directories from `dir` up to (not including) the root. */
  private async pruneUp(dir: string): Promise<void> {
    for (; dir.startsWith(this.root + path.sep); dir = path.dirname(dir)) {
      try {
        await fsp.rmdir(dir);
      } catch (err) {
        if (errno(err) === 'ENOENT') continue;
        // Still in use is expected; anything else is worth a look.
        if (!STILL_IN_USE.includes(errno(err) ?? '')) this.log.warn({ err, dir }, 'could not remove an empty directory of the blob store');
        return;
      }
    }
  }

  /** Removes empty directories inside and including `dir`, bottom-up. */
  private async pruneDown(dir: string): Promise<void> {
    let entries: fs.Dirent[];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (!GONE.includes(errno(err) ?? '')) this.log.warn({ err, dir }, 'could not list a directory of the blob store to prune it');
      return;
    }
    for (const e of entries) if (e.isDirectory()) await this.pruneDown(path.join(dir, e.name));
    try {
      await fsp.rmdir(dir);
    } catch (err) {
      // Not empty (a file written meanwhile) or gone is expected; anything else is worth a look.
      if (![...GONE, ...STILL_IN_USE].includes(errno(err) ?? '')) this.log.warn({ err, dir }, 'could not remove an empty directory of the blob store');
    }
  }

  async localPath(key: string): Promise<string> {
    return this.pathOf(key);
  }

  async check(): Promise<void> {
    if (!(await fsp.stat(this.root)).isDirectory()) throw new Error(`${this.location} is not a directory`);
    await fsp.access(this.root, fs.constants.W_OK);
  }

  async tempPath(suffix: string): Promise<string> {
    return this.freshTemp(validateTempSuffix(suffix));
  }
}
