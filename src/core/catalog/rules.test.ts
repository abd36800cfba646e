import { describe, expect, it } from 'vitest';
import { normalizeColumns } from './definition.ts';
import { mergeProperties, resolveGuards } from './guards.ts';
import { NAME_REGEX, normalizeName, normalizeRef, normalizeTagName } from './names.ts';
import { parseSelector } from './selectors.ts';

describe('names', () => {
  it('lowercases valid names', () => {
    expect(normalizeName('workspace', 'Sales_EU')).toBe('sales_eu');
    expect(normalizeName('dataset', 'x'.repeat(63))).toBe('x'.repeat(63));
    expect(normalizeRef({ workspace: 'WS', collection: 'Raw', dataset: 'Orders_2024' })).toEqual({
      workspace: 'ws',
      collection: 'raw',
      dataset: 'orders_2024',
    });
  });

  it('refuses anything else with 400 INVALID_NAME', () => {
    for (const bad of ['', 'x'.repeat(64), 'has-dash', 'has.dot', 'spa ce', 'ünï', 'a;drop']) {
      expect(() => normalizeName('collection', bad)).toThrow(expect.objectContaining({ status: 400, code: 'INVALID_NAME' }));
    }
    expect(() => normalizeName('workspace', undefined as unknown as string)).toThrow(expect.objectContaining({ code: 'INVALID_NAME' }));
    expect(() => normalizeName('dataset', 'a-b')).toThrow(/not a valid dataset name/);
    expect(NAME_REGEX.test('A_1')).toBe(true);
  });

  it('accepts tag names that cannot be mistaken for a selector', () => {
    expect(normalizeTagName('Release-1.2')).toBe('release-1.2');
    expect(normalizeTagName('_v2')).toBe('_v2');
    for (const bad of ['', '12', '1abc', 'current', 'PREVIOUS', 'a b', 'x'.repeat(64)]) {
      expect(() => normalizeTagName(bad)).toThrow(expect.objectContaining({ status: 400, code: 'INVALID_NAME' }));
    }
  });
});

describe('parseSelector', () => {
  it('reads current, previous, snapshot ids and tags', () => {
    expect(parseSelector('current')).toEqual({ kind: 'current' });
    expect(parseSelector('Previous')).toEqual({ kind: 'previous' });
    expect(parseSelector('@current')).toEqual({ kind: 'current' });
    expect(parseSelector('42')).toEqual({ kind: 'id', snapshotId: 42 });
    expect(parseSelector('Gold')).toEqual({ kind: 'tag', name: 'gold' });
    expect(parseSelector('v1.0-rc')).toEqual({ kind: 'tag', name: 'v1.0-rc' });
  });

  it('refuses malformed labels with 400 INVALID_SELECTOR', () => {
    for (const bad of ['', '@', '0', '-1', '1.5', '12345678901234567', 'a b', "x';--", '1abc']) {
      expect(() => parseSelector(bad)).toThrow(expect.objectContaining({ status: 400, code: 'INVALID_SELECTOR' }));
    }
  });
});

describe('guards', () => {
  it('defaults everything off', () => {
    expect(resolveGuards({})).toEqual({ deletion_protection: false, drop_protection: false, history_protection: false });
  });

  it('lets a locked workspace refuse drops unless drop_protection says otherwise', () => {
    expect(resolveGuards({ deletion_protection: true })).toEqual({ deletion_protection: true, drop_protection: true, history_protection: false });
    expect(resolveGuards({ deletion_protection: true, drop_protection: false }).drop_protection).toBe(false);
    expect(resolveGuards({ drop_protection: true })).toEqual({ deletion_protection: false, drop_protection: true, history_protection: false });
    expect(resolveGuards({ history_protection: true }).history_protection).toBe(true);
  });

  it('merges patches, null restoring the default', () => {
    expect(mergeProperties({ deletion_protection: true, drop_protection: false }, { drop_protection: null, history_protection: true })).toEqual({
      deletion_protection: true,
      history_protection: true,
    });
    expect(() => mergeProperties({}, { nope: true } as never)).toThrow(expect.objectContaining({ status: 400, code: 'INVALID_PROPERTY' }));
    expect(() => mergeProperties({}, { drop_protection: 'yes' } as never)).toThrow(expect.objectContaining({ code: 'INVALID_PROPERTY' }));
  });
});

describe('column definitions', () => {
  const id = { name: 'id', type: 'BIGINT', nullable: false };

  it('keeps known fields in a fixed order', () => {
    const [column] = normalizeColumns('table', [
      { description: 'd', nullable: true, type: ' VARCHAR ', name: ' ip ', logical_type: 'ipv4', source_type: 'string', original_type: 'text' },
    ]);
    expect(Object.keys(column)).toEqual(['name', 'type', 'nullable', 'logical_type', 'source_type', 'original_type', 'description']);
    expect(column).toMatchObject({ name: 'ip', type: 'VARCHAR' });
  });

  it('refuses a table without columns, duplicate names, missing types', () => {
    const invalid = expect.objectContaining({ status: 400, code: 'INVALID_DEFINITION' });
    expect(() => normalizeColumns('table', [])).toThrow(invalid);
    expect(normalizeColumns('external', [])).toEqual([]);
    expect(() => normalizeColumns('table', [id, { ...id, name: 'ID' }])).toThrow(/more than once/);
    expect(() => normalizeColumns('table', [{ ...id, type: ' ' }])).toThrow(/no type/);
    expect(() => normalizeColumns('table', [{ ...id, name: '' }])).toThrow(/no name/);
    expect(() => normalizeColumns('table', [{ ...id, nullable: undefined as unknown as boolean }])).toThrow(invalid);
  });
});
