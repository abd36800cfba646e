#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx: `npm ci` is the only install step.
// CommonJS on purpose: an ES module entry is loaded through libuv's thread pool, which then already
// exists with its default 4 threads; here the size below is set before anything uses the pool.
// DuckDB's calls run on that pool, so a larger one keeps running queries from starving the server.
process.env.UV_THREADPOOL_SIZE ??= '32';

const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const BUNDLE = path.join(ROOT, 'dist', 'cli');

/**
 * The CLI precompiled at `npm ci` (scripts/build-cli.mjs), when every source it was built from is
 * unchanged (size and mtime); else undefined. LAKEPORT_CLI=tsx skips it.
 */
function freshBundle() {
  if (process.env.LAKEPORT_CLI === 'tsx') return undefined;
  try {
    const { inputs } = JSON.parse(fs.readFileSync(path.join(BUNDLE, 'inputs.json'), 'utf8'));
    for (const [file, [size, mtimeMs]] of Object.entries(inputs)) {
      const stat = fs.statSync(path.join(ROOT, file));
      if (stat.size !== size || stat.mtimeMs !== mtimeMs) return undefined;
    }
    return require('node:url').pathToFileURL(path.join(BUNDLE, 'index.mjs')).href;
  } catch {
    return undefined;
  }
}

let registered;
/** Registers tsx once, so that `.ts` modules can be imported. */
const typescript = () =>
  (registered ??= import('tsx/esm/api').then(({ register }) => {
    register();
  }));

/** The CLI's main(): from the bundle, which needs tsx only for server commands (main() asks), else through tsx. */
async function loadMain() {
  const bundle = freshBundle();
  if (bundle) {
    try {
      return (await import(bundle)).main;
    } catch {
      // being rebuilt right now, or broken: the sources will do
    }
  }
  await typescript();
  return (await import('../src/cli/index.ts')).main;
}

(async () => {
  const main = await loadMain();
  const code = await main(process.argv.slice(2), { typescript });
  if (code >= 0) process.exit(code);
})();
