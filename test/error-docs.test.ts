/**
 * docs/errors.md against the code: every registered error code is documented under its module with
 * its status, every documented code exists, and likewise for job failure codes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_TABLES, JOB_FAILURE_CODES } from '../src/errors.ts';

interface Row {
  section: string;
  cells: string[];
}

/** The body rows of the markdown tables whose header is `header`, with the `###` section they are in. */
function tableRows(markdown: string, header: string): Row[] {
  const rows: Row[] = [];
  let section = '';
  let inTable = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('### ')) section = line.slice(4).trim().toLowerCase();
    if (!line.startsWith('|')) {
      inTable = false;
      continue;
    }
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    if (cells.join('|') === header) inTable = true;
    else if (inTable && !cells[0].startsWith('---')) rows.push({ section, cells });
  }
  return rows;
}

const codesIn = (cell: string) => [...cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]);

const markdown = fs.readFileSync(path.join(import.meta.dirname, '../docs/errors.md'), 'utf8');

describe('docs/errors.md', () => {
  it('documents every HTTP error code under its module with its status, and no other', () => {
    const documented = tableRows(markdown, 'status|code|when').flatMap(({ section, cells }) =>
      codesIn(cells[1]).map((code) => `${section} ${cells[0]} ${code}`),
    );
    const registered = Object.entries(ERROR_TABLES).flatMap(([module, table]) =>
      Object.entries(table).map(([code, status]) => `${module} ${status} ${code}`),
    );
    expect(documented.sort()).toEqual(registered.sort());
  });

  it('documents every job failure code, and no other', () => {
    const documented = tableRows(markdown, 'code|when').flatMap(({ cells }) => codesIn(cells[0]));
    expect(documented.sort()).toEqual([...JOB_FAILURE_CODES].sort());
  });

  it('declares each error code in one module only', () => {
    const codes = Object.values(ERROR_TABLES).flatMap((table) => Object.keys(table));
    expect(codes.filter((code, i) => codes.indexOf(code) !== i)).toEqual([]);
  });
});
