// The web console's build: `npm run build:console` (run by `npm ci`) writes dist/console, which the
// server serves at `/` (src/services/console). Hashed files go to dist/console/_console/.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import preact from '@preact/preset-vite';
import { defineConfig, type Plugin } from 'vite';

/** Writes .br and .gz beside each asset: the server sends them to browsers that accept them (@fastify/static preCompressed). */
function precompress(): Plugin {
  let outDir = '';
  return {
    name: 'lakeport-precompress',
    apply: 'build',
    configResolved(config) {
      outDir = path.resolve(config.root, config.build.outDir, config.build.assetsDir);
    },
    closeBundle() {
      if (!fs.existsSync(outDir)) return;
      for (const name of fs.readdirSync(outDir).filter((f) => /\.(js|css|svg)$/.test(f))) {
        const file = path.join(outDir, name);
        const body = fs.readFileSync(file);
        fs.writeFileSync(`${file}.br`, zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }));
        fs.writeFileSync(`${file}.gz`, zlib.gzipSync(body, { level: 9 }));
      }
    },
  };
}

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  plugins: [preact(), precompress()],
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    assetsDir: '_console',
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
});
