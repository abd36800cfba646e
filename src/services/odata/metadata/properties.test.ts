import { describe, expect, it } from 'vitest';
import { llmDescribed, materializedView, sortOrder } from './properties.ts';

describe('dataset properties', () => {
  const columns = ['id', 'Created At', 'amount'];

  it('reads sort_order as objects or "column [asc|desc]" strings, matching columns without case', () => {
    expect(sortOrder({ sort_order: [{ column: 'created at', direction: 'DESC' }, 'amount desc', 'ID', { column: 'id' }] }, columns)).toEqual([
      { column: 'Created At', direction: 'desc' },
      { column: 'amount', direction: 'desc' },
      { column: 'id', direction: 'asc' },
      { column: 'id', direction: 'asc' },
    ]);
  });

  it('drops sort keys it cannot use', () => {
    expect(sortOrder({ sort_order: 'id' }, columns)).toEqual([]);
    expect(sortOrder({ sort_order: [{ column: 'nope' }, { column: 'id', direction: 'sideways' }, { column: 3 }, null, 'amount upward'] }, columns)).toEqual([]);
    expect(sortOrder({}, columns)).toEqual([]);
  });

  it('reads llm_described only as a boolean', () => {
    expect(llmDescribed({ llm_described: true })).toBe(true);
    expect(llmDescribed({ llm_described: false })).toBe(false);
    expect(llmDescribed({ llm_described: 'true' })).toBeUndefined();
  });

  it('reads materialized_view for materialized views only, keeping well-formed fields', () => {
    const properties = { materialized_view: { definition: 'SELECT 1', refresh: '', sources: ['a.b.c', 4] } };
    expect(materializedView({ kind: 'materialized_view', properties })).toEqual({ definition: 'SELECT 1', refresh: undefined, sources: ['a.b.c'] });
    expect(materializedView({ kind: 'materialized_view', properties: { materialized_view: 'SELECT 1' } })).toEqual({ definition: undefined, refresh: undefined, sources: [] });
    expect(materializedView({ kind: 'table', properties })).toBeUndefined();
    expect(materializedView({ kind: 'view', properties })).toBeUndefined();
  });
});
