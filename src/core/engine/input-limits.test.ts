import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.ts';
import { FileShapeError, Ingestor } from './ingest.ts';
import { commentsTooDeep, INPUT_LIMITS, jsonFileTooDeep, sqlTextViolation, tooDeep, valueViolation } from './input-limits.ts';

const chunks = (...parts: string[]) => Readable.from(parts.map((p) => Buffer.from(p)));

describe('nesting and size limits', () => {
  it('finds where brackets first nest past the limit', () => {
    expect(tooDeep('('.repeat(10) + ')'.repeat(10), 10)).toBeUndefined();
    expect(tooDeep('[{(' + '['.repeat(8), 10)).toEqual({ message: 'nests brackets more than 10 levels deep', position: 10 });
    // Closing brackets never go below zero, so a stray one cannot hide depth.
    expect(tooDeep(')))' + '('.repeat(11), 10)?.position).toBe(13);
  });

  it('agrees with a plain depth count on any text', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('(', ')', '[', ']', '{', '}', 'a', "'")), fc.integer({ min: 1, max: 8 }), (parts, limit) => {
        let depth = 0;
        let max = 0;
        for (const c of parts) {
          if ('([{'.includes(c)) max = Math.max(max, ++depth);
          else if (')]}'.includes(c) && depth > 0) depth--;
        }
        expect(tooDeep(parts.join(''), limit) !== undefined).toBe(max > limit);
      }),
    );
  });

  it('bounds nested block comments, text size and parameter values', () => {
    expect(commentsTooDeep('/* /* */ */ SELECT 1', 2)).toBeUndefined();
    expect(commentsTooDeep('/*/*/*', 2)?.position).toBe(4);
    expect(sqlTextViolation('SELECT 1 ' + '/*'.repeat(INPUT_LIMITS.commentDepth + 1))?.message).toMatch(/block comments/);
    expect(sqlTextViolation('x'.repeat(INPUT_LIMITS.sqlTextBytes + 1))?.message).toMatch(/longer than/);
    expect(sqlTextViolation("SELECT 'é'" + 'x'.repeat(INPUT_LIMITS.sqlTextBytes - 10))?.message).toMatch(/bytes/);
    expect(valueViolation('['.repeat(INPUT_LIMITS.nestingDepth + 1))?.message).toMatch(/nests/);
    expect(valueViolation(12)).toBeUndefined();
  });

  it('scans JSON lines across chunk boundaries, skipping strings, and resets at each line', async () => {
    expect(await jsonFileTooDeep(chunks('{"a":"[[[[[[[[[[[["}\n', '[[[', ']]]\n'), 4)).toBeUndefined();
    expect(await jsonFileTooDeep(chunks('{"a":1}\n{"b":"\\"[[[[["}\n', '[[', '[[[\n'), 4)).toEqual({ line: 3 });
    expect(await jsonFileTooDeep(chunks('[[[\n[[[\n'), 3)).toBeUndefined();
  });
});

describe('uploads of deeply nested JSON lines', () => {
  let ingestor: Ingestor;
  const tmp = tempDir();
  beforeAll(async () => {
    ingestor = await Ingestor.create({ threads: 1, memoryLimit: '256MB' });
  });
  afterAll(() => tmp.remove());

  it('refuses a sample nested 10 000 levels deep before DuckDB reads it (it crashed the process)', async () => {
    const file = path.join(tmp.dir, 'deep.jsonl');
    fs.writeFileSync(file, `{"id":1,"v":{"a":1}}\n{"id":2,"v":${'['.repeat(10_000)}${']'.repeat(10_000)}}\n`);
    const refused = ingestor.inspect(file, 'jsonl', {});
    await expect(refused).rejects.toBeInstanceOf(FileShapeError);
    await expect(refused).rejects.toMatchObject({ line: 2 });
    // The engine is still there for the next file.
    fs.writeFileSync(file, '{"id":1,"v":[[1]]}\n');
    expect((await ingestor.inspect(file, 'jsonl', {})).columns.map((c) => c.name)).toEqual(['id', 'v']);
  });
});
