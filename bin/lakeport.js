#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx: `npm ci` is the only install step.
// DuckDB's asynchronous calls run on libuv's thread pool; a larger pool keeps one long query from
// starving the rest of the server. It must be set before the pool is first used.
process.env.UV_THREADPOOL_SIZE ??= '32';
const { register } = await import('tsx/esm/api');

register();
const { main } = await import('../src/cli/index.ts');
const code = await main(process.argv.slice(2));
if (code >= 0) process.exit(code);
