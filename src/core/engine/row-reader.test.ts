import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RowReader } from './row-reader.ts';

describe('RowReader', () => {
  let dir: string;
  let reader: RowReader | undefined;

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'lakeport-row-reader-'));
  });

  afterEach(async () => {
    reader?.close();
    reader = undefined;
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('writes the rows of a query as JSON lines, in order, with values bound', async () => {
    reader = await RowReader.create({ scratchDirectory: path.join(dir, 'out') });
    const session = await reader.open({ files: [], columns: [], rowId: '_row' });
    try {
      const { path: file, written } = session.jsonLines('SELECT i, $1 || i AS label FROM range(3) t(i) ORDER BY i', ['row ']);
      await written;
      expect(await fs.readFile(file, 'utf8')).toBe('{"i":0,"label":"row 0"}\n{"i":1,"label":"row 1"}\n{"i":2,"label":"row 2"}\n');
      expect(path.dirname(file)).toBe(path.join(dir, 'out'));
    } finally {
      session.close();
    }
  });

  it('removes the rows files a stopped process left, and nothing else', async () => {
    const out = path.join(dir, 'out');
    await fs.mkdir(out);
    const stale = path.join(out, 'rows-stale.json');
    const fresh = path.join(out, 'rows-fresh.json');
    const other = path.join(out, 'notes.txt');
    for (const file of [stale, fresh, other]) await fs.writeFile(file, '{}\n');
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await fs.utimes(stale, twoHoursAgo, twoHoursAgo);
    await fs.utimes(other, twoHoursAgo, twoHoursAgo);

    reader = await RowReader.create({ scratchDirectory: out });
    expect((await fs.readdir(out)).sort()).toEqual(['notes.txt', 'rows-fresh.json']);
  });
});
