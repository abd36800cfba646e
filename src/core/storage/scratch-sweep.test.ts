import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.ts';
import { SCRATCH_STALE_MS, sweepScratch } from './scratch-sweep.ts';

const dirs: { remove(): void }[] = [];
afterEach(() => dirs.splice(0).forEach((d) => d.remove()));

function leftovers() {
  const tmp = tempDir();
  dirs.push(tmp);
  const write = (rel: string, bytes: number, ageMs = 0) => {
    const file = path.join(tmp.dir, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, Buffer.alloc(bytes));
    const when = new Date(Date.now() - ageMs);
    fs.utimesSync(file, when, when);
    fs.utimesSync(path.dirname(file), when, when);
  };
  write('duckdb/duckdb_temp_storage-0.tmp', 1000, 2 * SCRATCH_STALE_MS);
  write('scratch/upload-1/chunk-0.csv', 500, 2 * SCRATCH_STALE_MS);
  write('scratch/download.csv', 200);
  write('scratch/spill/12345/x.tmp', 300, 2 * SCRATCH_STALE_MS);
  return tmp.dir;
}

describe('sweeping scratch left by a killed process', () => {
  it('removes everything but job spill directories when the process owns the data directory', async () => {
    const dir = leftovers();
    expect(await sweepScratch(dir, { exclusive: true })).toBe(1700);
    expect(fs.readdirSync(path.join(dir, 'scratch'))).toEqual(['spill']);
    expect(fs.readdirSync(path.join(dir, 'duckdb'))).toEqual([]);
  });

  it('removes only stale entries when other processes may share the data directory', async () => {
    const dir = leftovers();
    expect(await sweepScratch(dir, { exclusive: false })).toBe(1500);
    expect(fs.readdirSync(path.join(dir, 'scratch')).sort()).toEqual(['download.csv', 'spill']);
  });
});
