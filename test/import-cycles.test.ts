import path from 'node:path';
import { fileURLToPath } from 'node:url';
import madge from 'madge';
import { beforeAll, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Each module under src (as `core/db/index.ts`) with the modules it imports, type imports included. */
let graph: Awaited<ReturnType<typeof madge>>;
beforeAll(async () => {
  graph = await madge(path.join(ROOT, 'src'), { fileExtensions: ['ts'], tsConfig: path.join(ROOT, 'tsconfig.json') });
}, 120_000);

it('src has no import cycles', () => {
  expect(graph.circular()).toEqual([]);
});

it('nothing under src/core imports from src/services', () => {
  const core = Object.entries(graph.obj()).filter(([file]) => file.startsWith('core/'));
  expect(core.length).toBeGreaterThan(0);
  expect(core.flatMap(([file, imports]) => imports.filter((i) => i.startsWith('services/')).map((i) => `${file} imports ${i}`))).toEqual([]);
});
