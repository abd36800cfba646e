import { annotation, EDM_NAMESPACE, stringValue, VOCABULARY } from './expressions.ts';
import { attr, xmlElement } from './xml.ts';

/**
 * The `Custom` vocabulary: every term Lakeport's $metadata uses, declared with its type and where it
 * applies, so strict CSDL readers accept the annotations. Documented in docs/odata-metadata.md.
 */

const COMPLEX_TYPES: Record<string, [property: string, type: string][]> = {
  StatisticsType: [
    ['Min', 'Edm.String'],
    ['Max', 'Edm.String'],
    ['DistinctValueCount', 'Edm.Int64'],
    ['NullCount', 'Edm.Int64'],
    ['CIDR', 'Edm.String'],
  ],
  SnapshotType: [
    ['Id', 'Edm.Int64'],
    ['TotalRecords', 'Edm.Int64'],
    ['TotalDataSize', 'Edm.Int64'],
    ['CommitMessage', 'Edm.String'],
    ['Author', 'Edm.String'],
  ],
  SortKeyType: [
    ['Column', 'Edm.String'],
    ['Direction', 'Edm.String'],
  ],
  TagType: [
    ['Name', 'Edm.String'],
    ['SnapshotId', 'Edm.Int64'],
    ['CreatedBy', 'Edm.String'],
  ],
  MaterializedViewType: [
    ['Definition', 'Edm.String'],
    ['Refresh', 'Edm.String'],
    ['Sources', 'Collection(Edm.String)'],
    ['LastRefreshed', 'Edm.String'],
  ],
};

const TERMS: [name: string, type: string, appliesTo: string, description: string][] = [
  ['Description', 'Edm.String', 'EntitySet Property EntityContainer Term', 'What the dataset, column or term holds'],
  ['LLMDescribed', 'Edm.Boolean', 'EntitySet', 'Whether a language model wrote the descriptions of this dataset'],
  ['Role', 'Edm.String', 'EntitySet', "The caller's effective role on the dataset: owner, admin, writer or reader"],
  ['Policy', 'Collection(Edm.String)', 'EntitySet', "The caller's access policy patterns that grant that role"],
  ['Snapshot', `${VOCABULARY}.SnapshotType`, 'EntitySet', 'The selected version: snapshot id, row count, size in bytes, commit message and author'],
  ['Tags', `Collection(${VOCABULARY}.TagType)`, 'EntitySet', 'The tags that name the selected version'],
  ['Count', 'Edm.Int32', 'Annotation', 'The number of items of the collection this annotation annotates'],
  ['SortOrder', `Collection(${VOCABULARY}.SortKeyType)`, 'EntitySet', 'The order the rows are stored in: property name and asc or desc'],
  ['MaterializedView', `${VOCABULARY}.MaterializedViewType`, 'EntitySet', 'How a materialized view is defined and refreshed; LastRefreshed is ISO 8601'],
  ['OriginalType', 'Edm.String', 'Property', 'The type the column was declared with'],
  ['SourceType', 'Edm.String', 'Property', 'The type the column had in the file it was loaded from'],
  ['Statistics', `${VOCABULARY}.StatisticsType`, 'Property', 'Statistics of the column in the selected version; Min and Max are written as $filter literals'],
];

/** `<Schema Namespace="Custom">` with the complex types and terms, written at `indent`. */
export function vocabularySchema(indent: string): string {
  const inner = `${indent}  `;
  const types = Object.entries(COMPLEX_TYPES).map(([name, properties]) =>
    xmlElement(inner, 'ComplexType', attr('Name', name), properties.map(([property, type]) => xmlElement(`${inner}  `, 'Property', attr('Name', property) + attr('Type', type))).join('')),
  );
  const terms = TERMS.map(([name, type, appliesTo, description]) =>
    xmlElement(inner, 'Term', attr('Name', name) + attr('Type', type) + attr('AppliesTo', appliesTo), annotation(`${inner}  `, 'Description', stringValue(description))),
  );
  return xmlElement(indent, 'Schema', attr('Namespace', VOCABULARY) + attr('xmlns', EDM_NAMESPACE), types.join('') + terms.join(''));
}
