/**
 * A Python with fastavro and pyarrow, for tests that check Lakeport's files with Python's own readers
 * (the Iceberg manifests, test/interop/iceberg.test.ts) and for the Iceberg bench's Python reader
 * (bench/iceberg_scan.py): a virtual environment in
 * node_modules/.cache/lakeport-py, made on first use with the machine's pip (its configured package
 * index). `.ci/run` makes it before the tests (`node --import tsx test/python.ts`), so CI never skips.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const VENV = path.join(ROOT, 'node_modules', '.cache', 'lakeport-py');
const PYTHON = path.join(VENV, 'bin', 'python');
const PACKAGES = ['fastavro', 'pyarrow'];

async function hasPackages(python: string): Promise<boolean> {
  try {
    await run(python, ['-c', `import ${PACKAGES.join(', ')}`]);
    return true;
  } catch {
    return false;
  }
}

let found: Promise<string | undefined> | undefined;

/** The path of a Python that imports fastavro and pyarrow, making the environment when missing; undefined when that cannot be done here. */
export function lakeportPython(): Promise<string | undefined> {
  found ??= (async () => {
    if (fs.existsSync(PYTHON) && (await hasPackages(PYTHON))) return PYTHON;
    try {
      await run('python3', ['-m', 'venv', VENV]);
      await run(path.join(VENV, 'bin', 'pip'), ['install', '--quiet', ...PACKAGES], { timeout: 600_000 });
    } catch {
      return undefined;
    }
    return (await hasPackages(PYTHON)) ? PYTHON : undefined;
  })();
  return found;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const python = await lakeportPython();
  if (!python) {
    process.stderr.write(`could not make a Python with ${PACKAGES.join(', ')} in ${VENV}\n`);
    process.exit(1);
  }
  process.stdout.write(`${python} has ${PACKAGES.join(', ')}\n`);
}
