import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.ts';
import { lockDirectory } from './dir-lock.ts';

const dir = tempDir('lakeport-dir-lock-');
afterAll(() => dir.remove());

const refusal = (pid: number) => `in use by ${pid}`;

describe('lockDirectory', () => {
  it('claims a directory with its pid beside it, and the release frees it', () => {
    const data = path.join(dir.dir, 'a');
    const release = lockDirectory(data, refusal);
    expect(fs.readFileSync(`${data}.lock`, 'utf8')).toBe(String(process.pid));
    release();
    expect(fs.existsSync(`${data}.lock`)).toBe(false);
    lockDirectory(data, refusal)();
  });

  it('creates the directory that holds the lock when it is missing', () => {
    const data = path.join(dir.dir, 'missing', 'deeper', 'pgdata');
    const release = lockDirectory(data, refusal);
    expect(fs.readFileSync(`${data}.lock`, 'utf8')).toBe(String(process.pid));
    release();
  });

  it('refuses while another live process holds it', async () => {
    const data = path.join(dir.dir, 'b');
    const other = spawn('sleep', ['30']);
    try {
      fs.writeFileSync(`${data}.lock`, String(other.pid));
      expect(() => lockDirectory(data, refusal)).toThrow(`in use by ${other.pid}`);
      expect(fs.readFileSync(`${data}.lock`, 'utf8')).toBe(String(other.pid));
    } finally {
      other.kill();
    }
  });

  it('takes over a lock left by a process that stopped, or by this pid before a restart, or unreadable', () => {
    const data = path.join(dir.dir, 'c');
    const stopped = spawnSync('true').pid!;
    for (const left of [String(stopped), String(process.pid), 'garbage']) {
      fs.writeFileSync(`${data}.lock`, left);
      const release = lockDirectory(data, refusal);
      expect(fs.readFileSync(`${data}.lock`, 'utf8')).toBe(String(process.pid));
      release();
    }
  });
});
