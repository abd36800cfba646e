// `npm run bench -- <name>`: runs the `run()` exported by bench/<name>.ts.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

interface Benchmark {
  run(): Promise<void>;
}

const dir = path.dirname(fileURLToPath(import.meta.url));
const available = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts')
  .map((f) => f.slice(0, -3))
  .filter((n) => /^[a-z0-9-]+$/.test(n))
  .sort();

const name = process.argv[2] ?? '';
if (!available.includes(name)) {
  process.stderr.write(`${name ? `unknown benchmark '${name}'` : 'no benchmark named'}\n`);
  process.stderr.write(`usage: npm run bench -- <name>\navailable: ${available.join(', ') || '(none)'}\n`);
  process.exit(2);
}

const mod = (await import(pathToFileURL(path.join(dir, `${name}.ts`)).href)) as Partial<Benchmark>;
if (typeof mod.run !== 'function') {
  process.stderr.write(`bench/${name}.ts does not export run()\n`);
  process.exit(2);
}
try {
  await mod.run();
} catch (error) {
  process.stderr.write(`bench ${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
}
