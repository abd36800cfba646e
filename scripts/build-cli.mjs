// Precompiles the CLI's own code (src/cli, src/client) into dist/cli/ with esbuild, so that
// `lakeport --help` and the client commands start without tsx. Runs as the `prepare` script of
// `npm ci`; bin/lakeport.cjs uses the bundle only while every source it was built from is unchanged,
// else it loads the TypeScript through tsx as before. Never fails the install: without esbuild or
// on any error it prints one warning and exits 0 (the CLI then simply runs through tsx).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BUNDLE_DIR = path.join(ROOT, 'dist', 'cli');
/** The bundle's list of inputs with their size and mtime, which bin/lakeport.cjs compares. */
export const INPUTS_FILE = 'inputs.json';

/** Code that is bundled; a dynamic import of anything else in src/ stays an import of its .ts source (loaded through tsx). */
const BUNDLED = [path.join(ROOT, 'src', 'cli'), path.join(ROOT, 'src', 'client')];
const inside = (file, dir) => file === dir || file.startsWith(dir + path.sep);

export async function buildCli(outdir = BUNDLE_DIR) {
  const esbuild = await import('esbuild');
  const serverModules = {
    name: 'server-modules-stay-typescript',
    setup(build) {
      build.onResolve({ filter: /^\.\.?\// }, (args) => {
        if (args.kind !== 'dynamic-import') return undefined;
        const file = path.resolve(args.resolveDir, args.path);
        if (BUNDLED.some((dir) => inside(file, dir))) return undefined;
        return { path: path.relative(outdir, file).split(path.sep).join('/'), external: true };
      });
    },
  };
  // Built beside it (same depth, so the relative imports above hold), then moved into place.
  const building = path.join(path.dirname(outdir), `.${path.basename(outdir)}-${process.pid}`);
  fs.rmSync(building, { recursive: true, force: true });
  let result;
  try {
    result = await esbuild.build({
      entryPoints: { index: path.join(ROOT, 'src', 'cli', 'index.ts') },
      outdir: building,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      absWorkingDir: ROOT,
      outExtension: { '.js': '.mjs' },
      metafile: true,
      logLevel: 'error',
      plugins: [serverModules],
    });
  } catch (error) {
    fs.rmSync(building, { recursive: true, force: true });
    throw error;
  }
  const inputs = Object.fromEntries(
    Object.keys(result.metafile.inputs).map((input) => {
      const stat = fs.statSync(path.resolve(ROOT, input));
      return [path.relative(ROOT, path.resolve(ROOT, input)).split(path.sep).join('/'), [stat.size, stat.mtimeMs]];
    }),
  );
  fs.writeFileSync(path.join(building, INPUTS_FILE), `${JSON.stringify({ inputs })}\n`);
  fs.rmSync(outdir, { recursive: true, force: true });
  fs.renameSync(building, outdir);
  return { outdir, inputs: Object.keys(inputs) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const { outdir, inputs } = await buildCli();
    process.stdout.write(`lakeport: CLI bundle in ${path.relative(ROOT, outdir)} (${inputs.length} sources)\n`);
  } catch (error) {
    process.stderr.write(`lakeport: no CLI bundle (${error instanceof Error ? error.message.split('\n')[0] : error}); the CLI runs through tsx\n`);
  }
}
