// The web console's build: `npm run build:console` (run by `npm ci`) writes dist/console, which the
// server serves at `/` (src/services/console). Hashed files go to dist/console/_console/.
import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  plugins: [preact()],
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    assetsDir: '_console',
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
});
