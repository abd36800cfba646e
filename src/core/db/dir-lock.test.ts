import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.ts';
import { LOCK_STALE_MS, lockDirectory, type LockHolder } from './dir-lock.ts';

const dir = tempDir('lakeport-dir-lock-');
afterAll(() => dir.remove());

const refusal = (holder: LockHolder) => new Error(`in use by ${holder.pid} on ${holder.host}${holder.elsewhere ? ' (elsewhere)' : ''}`);
const mine = `${process.pid} ${os.hostname()}`;

describe('lockDirectory', () => {
  it('claims a directory with its pid and host beside it, and the release frees it', () => {
    const data = path.join(dir.dir, 'a');
    const release = lockDirectory(data, refusal);
    expect(fs.readFileSync(`${data}.lock`, 'utf8')).toBe(mine);
    release();
    expect(fs.existsSync(`${data}.lock`)).toBe(false);
    lockDirectory(data, refusal)();
  });

  it('creates the directory that holds the lock when it is missing', () => {
    const data = path.join(dir.dir, 'missing', 'deeper', 'pgdata');
    const release = lockDirectory(data, refusal);
    expect(fs.readFileSync(`${data}.lock`, 'utf8')).toBe(mine);
    release();
  });

  it('refuses while another live process holds it (a lock of an earlier release holds only the pid)', async () => {
    const data = path.join(dir.dir, 'b');
    const other = spawn('sleep', ['30']);
    try {
      for (const held of [String(other.pid), `${other.pid} ${os.hostname()}`]) {
        fs.writeFileSync(`${data}.lock`, held);
        expect(() => lockDirectory(data, refusal)).toThrow(`in use by ${other.pid} on ${os.hostname()}`);
        expect(fs.readFileSync(`${data}.lock`, 'utf8')).toBe(held);
      }
    } finally {
      other.kill();
    }
  });

  it('takes over a lock left by a process that stopped, or by this pid before a restart, or unreadable', () => {
    const data = path.join(dir.dir, 'c');
    const stopped = spawnSync('true').pid!;
    for (const left of [String(stopped), `${stopped} ${os.hostname()}`, String(process.pid), 'garbage']) {
      fs.writeFileSync(`${data}.lock`, left);
      const release = lockDirectory(data, refusal);
      expect(fs.readFileSync(`${data}.lock`, 'utf8')).toBe(mine);
      release();
    }
  });

  it("refuses a lock another host renewed lately, whatever its pid, and takes over one it stopped renewing", () => {
    const data = path.join(dir.dir, 'd');
    // This process's own pid: on another host it says nothing about whether that process runs.
    fs.writeFileSync(`${data}.lock`, `${process.pid} other-host.example`);
    expect(() => lockDirectory(data, refusal)).toThrow(`in use by ${process.pid} on other-host.example (elsewhere)`);
    const old = new Date(Date.now() - LOCK_STALE_MS - 5_000);
    fs.utimesSync(`${data}.lock`, old, old);
    const release = lockDirectory(data, refusal);
    expect(fs.readFileSync(`${data}.lock`, 'utf8')).toBe(mine);
    release();
  });
});
