import { execFile } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from './server.ts';

const BIN = path.join(REPO_ROOT, 'bin', 'lakeport.cjs');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `node bin/lakeport.cjs …` in the repository root, no terminal; resolves with the exit code whatever it is. */
export function lakeport(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, ...args], { cwd: REPO_ROOT, env, timeout: 110_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') {
        reject(new Error(`lakeport ${args.join(' ')} did not exit normally (${error.code ?? error.signal ?? error.message})\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`));
        return;
      }
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}

export const describeRun = (run: CliRun) => `exit ${run.code}\n--- stdout ---\n${run.stdout}\n--- stderr ---\n${run.stderr}`;
export const linesOf = (text: string) => text.split('\n').filter((line) => line.trim() !== '');
