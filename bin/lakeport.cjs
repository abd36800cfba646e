#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx: `npm ci` is the only install step.
// CommonJS on purpose: an ES module entry is loaded through libuv's thread pool, which then already
// exists with its default 4 threads; here the size below is set before anything uses the pool.
// DuckDB's calls run on that pool, so a larger one keeps running queries from starving the server.
process.env.UV_THREADPOOL_SIZE ??= '32';

(async () => {
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('../src/cli/index.ts');
  const code = await main(process.argv.slice(2));
  if (code >= 0) process.exit(code);
})();
