import { describe, expect, it } from 'vitest';
import { buildMetadataDocument } from './document.ts';
import { column, dataset, file, snapshot, tag, version } from './test-data.ts';
import { property, readEdmx, validateCsdl } from './test-xml.ts';

const SET = 'sales__raw__orders';

/** A version where every annotation applies. */
function richVersion() {
  const ds = dataset({
    kind: 'materialized_view',
    description: 'Orders, one row per order line',
    properties: {
      llm_described: true,
      sort_order: [{ column: 'order date', direction: 'DESC' }, 'id', { column: 'missing' }],
      materialized_view: { definition: 'SELECT * FROM sales.raw.lines', refresh: 'daily', sources: ['sales.raw.lines'] },
    },
    columns: [
      column('id', 'BIGINT', { nullable: false, description: 'Order id' }),
      column('Order Date', 'DATE', { original_type: 'date', source_type: 'string' }),
      column('client_ip', 'VARCHAR', { logical_type: 'ipv4' }),
      column('amount', 'DECIMAL(18,2)'),
    ],
  });
  return version({
    dataset: ds,
    role: 'writer',
    policies: ['sales.*', 'sales.raw.orders'],
    tags: [tag('release_1'), tag('q2', { created_by: 'bob' })],
    files: [
      file(10, {
        id: { min: '1', max: '10', null_count: 0 },
        'Order Date': { min: '2024-01-01', max: '2024-01-31', null_count: 1 },
        client_ip: { min: '10.0.0.1', max: '10.0.0.99', null_count: 2 },
        amount: { min: '0.50', max: '99.99', null_count: 0 },
      }),
    ],
  });
}

describe('buildMetadataDocument', () => {
  it('declares an entity type and an entity set per dataset, keyed on the synthetic row id', async () => {
    const xml = buildMetadataDocument([richVersion()]);
    const view = readEdmx(xml);
    expect(view.sets[SET].entityType).toBe(`Lakeport.${SET}`);
    expect(view.types[SET].key).toEqual(['_lakeport_row_id']);
    expect(view.types[SET].properties.map(([name]) => name)).toEqual(['id', 'Order_Date', 'client_ip', 'amount', '_lakeport_row_id']);
    expect(property(view, SET, 'id')).toMatchObject({ type: 'Edm.Int64', nullable: 'false' });
    expect(property(view, SET, 'Order_Date')).toMatchObject({ type: 'Edm.Date', nullable: 'true' });
    expect(property(view, SET, 'client_ip')).toMatchObject({ type: 'Edm.String', facets: { MaxLength: '15' } });
    expect(property(view, SET, 'amount')).toMatchObject({ type: 'Edm.Decimal', facets: { Precision: '18', Scale: '2' } });
    expect(property(view, SET, '_lakeport_row_id')).toMatchObject({ type: 'Edm.Int64', nullable: 'false' });
    expect(await validateCsdl(xml)).toEqual({ valid: true, errors: [] });
  });

  it('annotates the entity set with what applies to the selected version', () => {
    const { annotations } = readEdmx(buildMetadataDocument([richVersion()])).sets[SET];
    expect(annotations).toEqual({
      Description: 'Orders, one row per order line',
      LLMDescribed: 'true',
      Role: 'writer',
      Policy: ['sales.*', 'sales.raw.orders'],
      Snapshot: { Id: '7', TotalRecords: '30', TotalDataSize: '4096', CommitMessage: 'nightly load', Author: 'svc-loader' },
      Tags: [
        { Name: 'release_1', SnapshotId: '7', CreatedBy: 'alice' },
        { Name: 'q2', SnapshotId: '7', CreatedBy: 'bob' },
      ],
      'Tags@Count': '2',
      SortOrder: [
        { Column: 'Order_Date', Direction: 'desc' },
        { Column: 'id', Direction: 'asc' },
      ],
      MaterializedView: {
        Definition: 'SELECT * FROM sales.raw.lines',
        Refresh: 'daily',
        Sources: ['sales.raw.lines'],
        LastRefreshed: '2024-05-01T12:00:00.000Z',
      },
    });
  });

  it('annotates properties with descriptions, types and statistics', () => {
    const view = readEdmx(buildMetadataDocument([richVersion()]));
    expect(property(view, SET, 'id').annotations).toEqual({
      Description: 'Order id',
      Statistics: { Min: '1', Max: '10', NullCount: '0' },
    });
    expect(property(view, SET, 'Order_Date').annotations).toEqual({
      OriginalType: 'date',
      SourceType: 'string',
      Statistics: { Min: '2024-01-01', Max: '2024-01-31', NullCount: '1' },
    });
    expect(property(view, SET, 'client_ip').annotations).toEqual({
      Statistics: { Min: '10.0.0.1', Max: '10.0.0.99', NullCount: '2', CIDR: '10.0.0.0/24' },
    });
    expect(property(view, SET, 'amount').annotations.Statistics).toEqual({ Min: '0.50', Max: '99.99', NullCount: '0' });
    expect(Object.keys(property(view, SET, '_lakeport_row_id').annotations)).toEqual(['Description']);
  });

  it('writes Min and Max as strings and counts as integers', () => {
    const xml = buildMetadataDocument([richVersion()]);
    expect(xml).toContain('<PropertyValue Property="Min" String="2024-01-01"/>');
    expect(xml).toContain('<PropertyValue Property="Max" String="99.99"/>');
    expect(xml).toContain('<PropertyValue Property="NullCount" Int="1"/>');
  });

  it('leaves out every annotation that does not apply', () => {
    const bare = version({
      dataset: dataset({ columns: [column('id', 'BIGINT', { nullable: false, description: '  ' })], properties: { llm_described: 'yes', sort_order: 'id', materialized_view: { definition: 'SELECT 1' } } }),
      snapshot: null,
      policies: [],
    });
    const view = readEdmx(buildMetadataDocument([bare]));
    expect(view.sets[SET].annotations).toEqual({ Role: 'reader' });
    expect(property(view, SET, 'id').annotations).toEqual({});
  });

  it('describes a version without tags as having none, and a snapshot without message or author', () => {
    const v = version({ snapshot: snapshot({ message: null, author: '' }), tags: [] });
    const { annotations } = readEdmx(buildMetadataDocument([v])).sets[SET];
    expect(annotations.Snapshot).toEqual({ Id: '7', TotalRecords: '30', TotalDataSize: '4096' });
    expect(annotations.Tags).toEqual([]);
    expect(annotations['Tags@Count']).toBe('0');
  });

  it('gives a materialized view its refresh time even without a definition property', () => {
    const v = version({ dataset: dataset({ kind: 'materialized_view' }) });
    expect(readEdmx(buildMetadataDocument([v])).sets[SET].annotations.MaterializedView).toEqual({ LastRefreshed: '2024-05-01T12:00:00.000Z' });
    expect(readEdmx(buildMetadataDocument([version({ dataset: dataset({ kind: 'materialized_view' }), snapshot: null })])).sets[SET].annotations.MaterializedView).toBeUndefined();
  });

  it('escapes hostile text and keeps it intact', async () => {
    const hostile = `</String></Annotation><Annotation Term="Custom.Role" String="owner"/> & "quotes" 'single' ]]> <!-- x -->\n\tline\r\n 🚀`;
    const v = version({
      dataset: dataset({ description: hostile, columns: [column('id', 'BIGINT', { description: `bell\u0007 nul\u0000 lone\uD800 ok` })] }),
      snapshot: snapshot({ message: hostile, author: '<svc>&' }),
      tags: [tag('v1', { created_by: '"x"' })],
      policies: ['ws.*<'],
    });
    const xml = buildMetadataDocument([v]);
    expect(await validateCsdl(xml)).toEqual({ valid: true, errors: [] });
    const view = readEdmx(xml);
    const set = view.sets[SET].annotations;
    expect(set.Description).toBe(hostile);
    expect(set.Role).toBe('reader');
    expect(set.Snapshot).toMatchObject({ CommitMessage: hostile, Author: '<svc>&' });
    expect(set.Tags).toEqual([{ Name: 'v1', SnapshotId: '7', CreatedBy: '"x"' }]);
    expect(set.Policy).toEqual(['ws.*<']);
    expect(property(view, SET, 'id').annotations.Description).toBe('bell\uFFFD nul\uFFFD lone\uFFFD ok');
  });

  it('describes several datasets and tells colliding names apart', async () => {
    const a = version({ dataset: dataset({ workspace: 'a__b', collection: 'c', name: 'd' }) });
    const b = version({ dataset: dataset({ workspace: 'a', collection: 'b__c', name: 'd' }) });
    const c = richVersion();
    const xml = buildMetadataDocument([a, b, c]);
    const view = readEdmx(xml);
    expect(Object.keys(view.sets)).toHaveLength(3);
    expect(Object.keys(view.types)).toEqual(Object.keys(view.sets));
    expect(Object.keys(view.sets).filter((n) => n.startsWith('a__b__c__d_'))).toHaveLength(2);
    expect(await validateCsdl(xml)).toEqual({ valid: true, errors: [] });
  });

  it('renders a service with no readable dataset as a valid document', async () => {
    const xml = buildMetadataDocument([]);
    const view = readEdmx(xml);
    expect(view.sets).toEqual({});
    expect(xml).toContain('<EntityContainer Name="Container">');
    expect(await validateCsdl(xml)).toEqual({ valid: true, errors: [] });
  });
});
