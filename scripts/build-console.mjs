// Builds the web console (console/) into dist/console with Vite; the server serves it at `/`.
// Runs from the `prepare` script of `npm ci`, so a fresh clone serves the console with `npm start`.
// A failed build fails the install (the server would otherwise answer 503 CONSOLE_NOT_BUILT at `/`);
// without Vite (an install without devDependencies) it prints one warning and exits 0.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

let vite;
try {
  vite = await import('vite');
} catch {
  console.warn('lakeport: vite is not installed (devDependencies omitted?): the web console was not built; `/` answers 503 CONSOLE_NOT_BUILT');
  process.exit(0);
}
await vite.build({ configFile: path.join(ROOT, 'console', 'vite.config.ts'), logLevel: 'warn' });
console.log('lakeport: web console built into dist/console');
