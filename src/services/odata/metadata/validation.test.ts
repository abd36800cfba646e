import { parse } from '@sap-ux/edmx-parser';
import { XMLParser } from 'fast-xml-parser';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildMetadataDocument } from './document.ts';
import { column, dataset, file, tag, version } from './test-data.ts';
import { validateCsdl } from './test-xml.ts';

/** Every Lakeport type, with statistics, descriptions, tags, sort order and a view: the widest document we make. */
function wideDocument(): string {
  const types = ['BOOLEAN', 'TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'FLOAT', 'DOUBLE', 'DECIMAL(38,10)', 'VARCHAR', 'DATE', 'TIME', 'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE', 'INTEGER[]'];
  const values: Record<string, [string | boolean, string | boolean]> = {
    BOOLEAN: [false, true], FLOAT: ['-inf', '1.5'], DOUBLE: ['-1e300', 'inf'], 'DECIMAL(38,10)': ['-1.0000000001', '12345.5'], VARCHAR: ['a', 'z'],
    DATE: ['2024-01-01', '2024-12-31'], TIME: ['00:00:00', '23:59:59.999999'], TIMESTAMP: ['2024-01-01 00:00:00', '2024-12-31 23:59:59.999999'],
    'TIMESTAMP WITH TIME ZONE': ['2024-01-01 00:00:00+00', '2024-12-31 23:59:59+05:30'], 'INTEGER[]': ['[1]', '[2]'],
  };
  const columns = [
    ...types.map((type, i) => column(`c${i}`, type, { description: `${type} column` })),
    column('ip', 'VARCHAR', { logical_type: 'ipv4', original_type: 'INET', source_type: 'string' }),
  ];
  const stats = Object.fromEntries(columns.map((c, i) => {
    const [min, max] = values[types[i]] ?? (c.name === 'ip' ? ['10.1.0.1', '10.1.9.9'] : ['-5', '120']);
    return [c.name, { min, max, null_count: 1 }];
  }));
  const table = version({
    dataset: dataset({ columns, description: 'Every type', properties: { llm_described: false, sort_order: [{ column: 'c4', direction: 'desc' }] } }),
    files: [file(100, stats)],
    tags: [tag('v1'), tag('v2')],
  });
  const view = version({
    dataset: dataset({ workspace: '9lives', kind: 'materialized_view', properties: { materialized_view: { definition: 'SELECT 1', refresh: 'hourly', sources: ['a.b.c', 'd.e.f'] } } }),
    policies: ['9lives.*'],
  });
  return buildMetadataDocument([table, view]);
}

describe('OASIS CSDL 4.0 XML schemas (xmllint)', () => {
  it('accept the widest document', async () => {
    expect(await validateCsdl(wideDocument())).toEqual({ valid: true, errors: [] });
  });

  it('are really checking: they refuse broken documents', async () => {
    const xml = wideDocument();
    const noType = await validateCsdl(xml.replace('<Property Name="c0" Type="Edm.Boolean"', '<Property Name="c0"'));
    expect(noType.valid).toBe(false);
    const badName = await validateCsdl(xml.replace('EntityType Name="sales__raw__orders"', 'EntityType Name="sales raw"'));
    expect(badName.valid).toBe(false);
    const badInt = await validateCsdl(xml.replace('Int="1"', 'Int="one"'));
    expect(badInt.valid).toBe(false);
    expect((await validateCsdl(xml.replace('<edmx:DataServices>', '<edmx:DataServices><x>'))).valid).toBe(false);
  });
});

/** The part of @sap-ux/edmx-parser's result the tests read (its types live in a package that is not installed). */
interface SapAnnotation {
  term: string;
  value?: unknown;
  record?: { propertyValues: { name: string; value: unknown }[] };
  collection?: unknown[];
  annotations?: SapAnnotation[];
}
interface SapSchema {
  entityContainer: { fullyQualifiedName: string };
  entitySets: { name: string }[];
  entityTypes: { name: string; keys: { name: string }[]; entityProperties: { name: string; type: string }[] }[];
  annotations: Record<string, { target: string; annotations: SapAnnotation[] }[]>;
}
const sapParse = (xml: string) => (parse(xml) as unknown as { schema: SapSchema }).schema;

describe("SAP's EDMX parser", () => {
  const errors = vi.spyOn(console, 'error');
  afterEach(() => errors.mockClear());

  it('reads the document without an error and finds types, keys, sets and annotations', () => {
    const metadata = sapParse(wideDocument());
    expect(errors).not.toHaveBeenCalled();
    expect(metadata.entityContainer.fullyQualifiedName).toBe('Lakeport.Container');
    expect(metadata.entitySets.map((s) => s.name).sort()).toEqual(['_9lives__raw__orders', 'sales__raw__orders']);
    const type = metadata.entityTypes.find((t) => t.name === 'sales__raw__orders')!;
    expect(type.keys.map((k) => k.name)).toEqual(['_lakeport_row_id']);
    expect(type.entityProperties).toHaveLength(21);
    expect(type.entityProperties.find((p) => p.name === 'c12')).toMatchObject({ type: 'Edm.Decimal', precision: 38, scale: 10 });
    const annotation = (target: string, term: string) =>
      metadata.annotations.serviceFile.find((list) => list.target === target)?.annotations.find((a) => a.term === term);
    const tags = annotation('Lakeport.Container/sales__raw__orders', 'Custom.Tags');
    expect((tags?.collection as SapAnnotation['record'][]).map((r) => r!.propertyValues.map((pv) => pv.name))).toEqual([
      ['Name', 'SnapshotId', 'CreatedBy'],
      ['Name', 'SnapshotId', 'CreatedBy'],
    ]);
    expect(tags?.annotations?.[0]).toMatchObject({ term: 'Custom.Count', value: { type: 'Int', Int: 2 } });
    const stats = annotation('Lakeport.sales__raw__orders/ip', 'Custom.Statistics');
    expect(stats?.record?.propertyValues.find((pv) => pv.name === 'CIDR')?.value).toEqual({ type: 'String', String: '10.1.0.0/16' });
    expect([...(annotation('Lakeport.Container/_9lives__raw__orders', 'Custom.Policy')?.collection ?? [])]).toEqual([{ type: 'String', String: '9lives.*' }]);
  });

  it('reads the document of a service with nothing to show', () => {
    const metadata = sapParse(buildMetadataDocument([]));
    expect(errors).not.toHaveBeenCalled();
    expect(metadata.entitySets).toEqual([]);
    expect(metadata.entityContainer.fullyQualifiedName).toBe('Lakeport.Container');
  });
});

/** What SAP's annotation converter would check: every annotation names a declared term, applies where it is used, and records only use declared properties. */
describe('the Custom vocabulary', () => {
  const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', preserveOrder: true });
  type Ordered = Record<string, unknown> & { ':@'?: Record<string, string> };

  type Visit = (name: string, attrs: Record<string, string>, children: Ordered[], parent: string) => void;

  /** Visits every element; `parent` is the kind of element an annotation applies to (for an <Annotations> block, its target's). */
  function walk(nodes: Ordered[], visit: Visit, parent = '') {
    for (const node of nodes) {
      const name = Object.keys(node).find((k) => k !== ':@')!;
      const attrs = node[':@'] ?? {};
      const children = (node[name] as Ordered[]) ?? [];
      visit(name, attrs, children, parent);
      if (Array.isArray(children)) walk(children, visit, name === 'Annotations' ? targetKind(attrs.Target) : name);
    }
  }

  function targetKind(target: string): string {
    if (target === 'Lakeport.Container') return 'EntityContainer';
    return target.startsWith('Lakeport.Container/') ? 'EntitySet' : 'Property';
  }

  it('declares every term and record property the document uses, where it is used', () => {
    const tree = parser.parse(wideDocument()) as Ordered[];
    const terms = new Map<string, { type: string; appliesTo: string[] }>();
    const complex = new Map<string, Set<string>>();
    let currentComplex = '';
    walk(tree, (name, attrs) => {
      if (name === 'Term') terms.set(`Custom.${attrs.Name}`, { type: attrs.Type, appliesTo: attrs.AppliesTo.split(' ') });
      if (name === 'ComplexType') complex.set((currentComplex = `Custom.${attrs.Name}`), new Set());
      if (name === 'Property' && complex.has(currentComplex) && !attrs.Nullable) complex.get(currentComplex)!.add(attrs.Name);
    });
    expect(terms.size).toBeGreaterThan(10);

    const used = new Set<string>();
    const checkRecords = (children: Ordered[], type: string) => {
      const recordType = type.replace(/^Collection\((.*)\)$/, '$1');
      walk(children, (name, attrs) => {
        if (name === 'PropertyValue' && complex.has(recordType)) expect(complex.get(recordType)!.has(attrs.Property), `${recordType}/${attrs.Property}`).toBe(true);
      });
    };
    walk(tree, (name, attrs, children, parent) => {
      if (name !== 'Annotation') return;
      const term = terms.get(attrs.Term);
      expect(term, attrs.Term).toBeDefined();
      expect(term!.appliesTo, `${attrs.Term} on ${parent}`).toContain(parent);
      used.add(attrs.Term);
      checkRecords(children, term!.type);
    });
    expect([...used].sort()).toEqual([...terms.keys()].sort());
  });
});
