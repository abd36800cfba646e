import { readFileSync } from 'node:fs';
import { XMLParser } from 'fast-xml-parser';
import { validateXML } from 'xmllint-wasm';

/** Test helpers: read a generated EDMX back, and validate it against OASIS's CSDL 4.0 XML schemas. */

const CSDL_DIR = new URL('../../../../test/fixtures/csdl/', import.meta.url);

/** Imports both OASIS schemas (the edmx one names edm.xsd by namespace only). */
const DRIVER = `<?xml version="1.0" encoding="utf-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:import namespace="http://docs.oasis-open.org/odata/ns/edm" schemaLocation="edm.xsd"/>
  <xs:import namespace="http://docs.oasis-open.org/odata/ns/edmx" schemaLocation="edmx.xsd"/>
</xs:schema>`;

const schemaFile = (name: string) => ({ fileName: name, contents: readFileSync(new URL(name, CSDL_DIR), 'utf8') });

/** xmllint's verdict (libxml2: well-formedness and the OASIS XSDs); `errors` holds its messages. */
export async function validateCsdl(xml: string): Promise<{ valid: boolean; errors: string[] }> {
  const result = await validateXML({
    xml: { fileName: 'metadata.xml', contents: xml },
    schema: { fileName: 'csdl.xsd', contents: DRIVER },
    preload: [schemaFile('edm.xsd'), schemaFile('edmx.xsd')],
  });
  return { valid: result.valid, errors: result.errors.map((e) => e.rawMessage) };
}

type Node = Record<string, unknown>;
const LISTS = new Set(['Annotations', 'Schema', 'EntityType', 'ComplexType', 'Term', 'Property', 'PropertyRef', 'EntitySet', 'Annotation', 'Record', 'PropertyValue', 'String']);
const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', htmlEntities: true, trimValues: false, isArray: (name) => LISTS.has(name) });

const nodes = (value: unknown): Node[] => (Array.isArray(value) ? (value as Node[]) : []);
const CONSTANTS = ['String', 'Int', 'Decimal', 'Float', 'Bool', 'Date'];

/** An annotation or property value: a constant as a string, a record as an object, a collection as an array. */
function valueOf(node: Node): unknown {
  for (const kind of CONSTANTS) if (typeof node[`@${kind}`] === 'string') return node[`@${kind}`];
  const record = nodes(node.Record)[0];
  if (record) return Object.fromEntries(nodes(record.PropertyValue).map((pv) => [pv['@Property'], valueOf(pv)]));
  const items = node.Collection as Node | '' | undefined;
  if (items === undefined) return undefined;
  if (items === '' || typeof items !== 'object') return [];
  if (items.Record) return nodes(items.Record).map((r) => valueOf({ Record: [r] }));
  return nodes(items.String).map((s) => (typeof s === 'string' ? s : String((s as Node)['#text'] ?? '')));
}

/** Annotations by term without the `Custom.` prefix; annotations of annotations as `Term@Inner`. */
export function annotationsOf(node: Node): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of nodes(node.Annotation)) {
    const term = String(a['@Term']).replace(/^Custom\./, '');
    out[term] = valueOf(a);
    for (const [inner, value] of Object.entries(annotationsOf(a))) out[`${term}@${inner}`] = value;
  }
  return out;
}

export interface PropertyView {
  type: string;
  nullable: string;
  facets: Record<string, string>;
  annotations: Record<string, unknown>;
}

export interface EdmxView {
  /** Entity types of the Lakeport schema: key property names and properties in document order. */
  types: Record<string, { key: string[]; properties: [string, PropertyView][] }>;
  sets: Record<string, { entityType: string; annotations: Record<string, unknown> }>;
  container: Node;
  vocabulary: Node;
}

/** The parts of a generated $metadata document the tests look at. */
export function readEdmx(xml: string): EdmxView {
  const root = parser.parse(xml)['edmx:Edmx'] as Node;
  const schemas = nodes((root['edmx:DataServices'] as Node).Schema);
  const vocabulary = schemas.find((s) => s['@Namespace'] === 'Custom')!;
  const main = schemas.find((s) => s['@Namespace'] === 'Lakeport')!;
  const byTarget = Object.fromEntries(nodes(main.Annotations).map((a) => [String(a['@Target']), annotationsOf(a)]));
  const types: EdmxView['types'] = {};
  for (const type of nodes(main.EntityType)) {
    const key = nodes((type.Key as Node).PropertyRef).map((r) => String(r['@Name']));
    const properties = nodes(type.Property).map((p): [string, PropertyView] => {
      const facets = Object.fromEntries(['MaxLength', 'Precision', 'Scale'].filter((f) => p[`@${f}`] !== undefined).map((f) => [f, String(p[`@${f}`])]));
      const annotations = byTarget[`Lakeport.${type['@Name']}/${p['@Name']}`] ?? {};
      return [String(p['@Name']), { type: String(p['@Type']), nullable: String(p['@Nullable']), facets, annotations }];
    });
    types[String(type['@Name'])] = { key, properties };
  }
  const container = main.EntityContainer as Node;
  const sets = Object.fromEntries(
    nodes(container.EntitySet).map((s) => [String(s['@Name']), { entityType: String(s['@EntityType']), annotations: byTarget[`Lakeport.Container/${s['@Name']}`] ?? {} }]),
  );
  return { types, sets, container, vocabulary };
}

export function property(view: EdmxView, type: string, name: string): PropertyView {
  const found = view.types[type]?.properties.find(([n]) => n === name);
  if (!found) throw new Error(`no property ${type}/${name}`);
  return found[1];
}
