import { describe, expect, it } from 'vitest';
import { entitySetName, entitySetNames, findEntitySet, isSimpleIdentifier, propertyNames, ROW_ID } from './names.ts';

const ref = (workspace: string, collection: string, dataset: string) => ({ workspace, collection, dataset });

describe('entity set names', () => {
  it('joins workspace, collection and dataset with double underscores, lowercased', () => {
    expect(entitySetName(ref('sales', 'raw', 'orders'))).toBe('sales__raw__orders');
    expect(entitySetName(ref('Sales', 'RAW', 'Orders_2024'))).toBe('sales__raw__orders_2024');
  });

  it('puts an underscore before a leading digit', () => {
    expect(entitySetName(ref('2024', 'q1', 'x'))).toBe('_2024__q1__x');
    expect(entitySetName(ref('w', '1', '2'))).toBe('w__1__2');
  });

  it('keeps names within 128 characters and tells long ones apart', () => {
    const long = (d: string) => ref('w'.repeat(63), 'c'.repeat(63), d);
    const [a, b] = entitySetNames([long('d'.repeat(62) + 'a'), long('d'.repeat(62) + 'b')]);
    expect(a).toHaveLength(128);
    expect(b).toHaveLength(128);
    expect(a).not.toBe(b);
    expect(isSimpleIdentifier(a)).toBe(true);
  });

  it('suffixes every member of a collision with a hash of its full name, whatever the order', () => {
    const x = ref('a__b', 'c', 'd');
    const y = ref('a', 'b__c', 'd');
    const z = ref('a', 'b', 'c__d');
    const other = ref('sales', 'raw', 'orders');
    const names = entitySetNames([x, y, other, z]);
    expect(names[2]).toBe('sales__raw__orders');
    for (const name of [names[0], names[1], names[3]]) expect(name).toMatch(/^a__b__c__d_[0-9a-f]{8}$/);
    expect(new Set(names).size).toBe(4);
    expect(entitySetNames([z, other, y, x])).toEqual([names[3], names[2], names[1], names[0]]);
    // Without its rivals a dataset keeps the plain name.
    expect(entitySetNames([x, other])).toEqual(['a__b__c__d', 'sales__raw__orders']);
  });

  it('collides names with edge underscores too, and a repeated dataset keeps one name', () => {
    const [p, q] = entitySetNames([ref('a_', 'b', 'c'), ref('a', '_b', 'c')]);
    expect(p).not.toBe(q);
    expect(entitySetNames([ref('s', 'r', 'o'), ref('s', 'r', 'o')])).toEqual(['s__r__o', 's__r__o']);
  });

  it('finds the dataset behind a name', () => {
    const refs = [ref('a__b', 'c', 'd'), ref('a', 'b__c', 'd'), ref('s', 'r', 'o')];
    const names = entitySetNames(refs);
    expect(findEntitySet(names[1], refs)).toEqual(refs[1]);
    expect(findEntitySet('s__r__o', refs)).toEqual(refs[2]);
    expect(findEntitySet('a__b__c__d', refs)).toBeUndefined();
  });
});

describe('property names', () => {
  it('keeps column names that are identifiers, including non-Latin letters', () => {
    const names = propertyNames([{ name: 'id' }, { name: 'Größe' }, { name: '名前' }, { name: 'café_2' }]);
    expect(names.columns).toEqual(['id', 'Größe', '名前', 'café_2']);
    expect(names.rowId).toBe(ROW_ID);
  });

  it('replaces other characters with underscores and guards a leading digit', () => {
    const names = propertyNames([{ name: 'Order ID' }, { name: '2023' }, { name: 'a.b-c' }, { name: 'µs' }, { name: '' }, { name: 'price ($)' }]);
    expect(names.columns).toEqual(['Order_ID', '_2023', 'a_b_c', '_s', '_', 'price____']);
    for (const n of names.columns) expect(isSimpleIdentifier(n)).toBe(true);
  });

  it('resolves collisions without renaming a column that was already valid', () => {
    const names = propertyNames([{ name: 'a b' }, { name: 'a_b' }, { name: 'a-b' }, { name: ROW_ID }]);
    expect(names.columns[1]).toBe('a_b');
    expect(names.columns[3]).toBe(ROW_ID);
    expect(names.columns[0]).toMatch(/^a_b_[0-9a-f]{8}$/);
    expect(names.columns[2]).toMatch(/^a_b_[0-9a-f]{8}$/);
    expect(new Set([...names.columns, names.rowId]).size).toBe(5);
    expect(names.rowId).toMatch(/^_lakeport_row_id_[0-9a-f]{8}$/);
    expect(propertyNames([{ name: 'a b' }, { name: 'a_b' }, { name: 'a-b' }, { name: ROW_ID }])).toEqual(names);
  });

  it('cuts names to 128 characters', () => {
    const [name] = propertyNames([{ name: 'x y'.repeat(100) }]).columns;
    expect(name).toHaveLength(128);
    expect(isSimpleIdentifier(name)).toBe(true);
  });
});
