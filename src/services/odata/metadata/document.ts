import type { DatasetVersion } from '../model.ts';
import { columnAnnotations, datasetAnnotations } from './annotations.ts';
import { edmType, lakeportType, type EdmType } from './edm-types.ts';
import { annotation, EDM_NAMESPACE, stringValue } from './expressions.ts';
import { entitySetNames, propertyNames } from './names.ts';
import { columnStatistics } from './stats.ts';
import { vocabularySchema } from './vocabulary.ts';
import { element, serialize, startTag, XML_DECLARATION, type XmlElement } from './xml.ts';

/** The namespace of the entity types and the container. */
export const SCHEMA_NAMESPACE = 'Lakeport';
export const CONTAINER_NAME = 'Container';

const EDMX = 'http://docs.oasis-open.org/odata/ns/edmx';

const ROW_ID_DESCRIPTION =
  'Synthetic key (datasets have no primary key): identifies a row within the selected version; ' +
  'stable for an @<tag> or @<snapshot_id> version, not across versions.';

function property(name: string, type: EdmType, nullable: boolean): XmlElement {
  const facet = (value: number | undefined) => (value === undefined ? undefined : String(value));
  return element('Property', {
    Name: name,
    Type: type.type,
    Nullable: String(nullable),
    MaxLength: facet(type.maxLength),
    Precision: facet(type.precision),
    Scale: facet(type.scale),
  });
}

/**
 * `<Annotations Target="…">`, or nothing when there is nothing to say. Annotations are written out of
 * line, by target path, rather than inside the elements they describe: every CSDL reader understands
 * both, and some (SAP's edmx-parser) only read these.
 */
function annotationsFor(target: string, annotations: XmlElement[]): XmlElement[] {
  return annotations.length === 0 ? [] : [element('Annotations', { Target: target }, annotations)];
}

/** The EntityType of one dataset version: its key and properties. */
function entityType(version: DatasetVersion, name: string): XmlElement {
  const { columns } = version.dataset;
  const names = propertyNames(columns);
  const properties = columns.map((column, i) => property(names.columns[i], edmType(lakeportType(column)), column.nullable));
  const key = element('Key', {}, [element('PropertyRef', { Name: names.rowId })]);
  return element('EntityType', { Name: name }, [key, ...properties, property(names.rowId, { type: 'Edm.Int64' }, false)]);
}

const entitySet = (name: string) => element('EntitySet', { Name: name, EntityType: `${SCHEMA_NAMESPACE}.${name}` });

/** The annotations of one dataset version: the EntitySet's, each property's, the key's. */
function annotationsOf(version: DatasetVersion, name: string): XmlElement[] {
  const { columns } = version.dataset;
  const names = propertyNames(columns);
  const typeName = `${SCHEMA_NAMESPACE}.${name}`;
  const propertyOf = (column: string) => names.columns[columns.findIndex((c) => c.name === column)];
  const properties = columns.map((column) => columnAnnotations(column, columnStatistics(column.name, lakeportType(column), version.files)));
  return [
    ...annotationsFor(`${SCHEMA_NAMESPACE}.${CONTAINER_NAME}/${name}`, datasetAnnotations(version, propertyOf)),
    ...properties.flatMap((annotations, i) => annotationsFor(`${typeName}/${names.columns[i]}`, annotations)),
    ...annotationsFor(`${typeName}/${names.rowId}`, [annotation('Description', stringValue(ROW_ID_DESCRIPTION))]),
  ];
}

/** Text handed on once it is about this long, so a large document leaves as it is written. */
const CHUNK_CHARS = 64 * 1024;

/**
 * The EDMX document describing `versions`, a piece at a time: the Custom vocabulary, then one schema
 * with an entity type per dataset, the container with an entity set per dataset, and the annotations.
 * The service-wide $metadata passes every readable dataset at its current version; a dataset's own
 * $metadata passes one. The text is that of serializing the whole tree at once (buildMetadataDocument).
 */
export function* metadataDocumentChunks(versions: readonly DatasetVersion[]): Generator<string> {
  const names = entitySetNames(versions.map((v) => v.ref));
  const schemaIndent = '    ';
  const memberIndent = '      ';
  let text =
    `${XML_DECLARATION}\n${startTag('edmx:Edmx', { Version: '4.0', 'xmlns:edmx': EDMX }, '')}\n${startTag('edmx:DataServices', {}, '  ')}\n` +
    // The vocabulary comes first: readers that merge schemas (SAP's edmx-parser) keep the last container they see.
    `${serialize(vocabularySchema(), schemaIndent)}\n${startTag('Schema', { Namespace: SCHEMA_NAMESPACE, xmlns: EDM_NAMESPACE }, schemaIndent)}\n`;
  function* add(piece: string): Generator<string> {
    text += piece;
    if (text.length >= CHUNK_CHARS) {
      yield text;
      text = '';
    }
  }
  for (const [i, version] of versions.entries()) yield* add(`${serialize(entityType(version, names[i]), memberIndent)}\n`);
  if (versions.length === 0) {
    // CSDL 4.0's XML schema wants at least one child in a container: say (inline) why it is empty.
    const empty = [annotation('Description', stringValue('No dataset is readable with these credentials'))];
    yield* add(`${serialize(element('EntityContainer', { Name: CONTAINER_NAME }, empty), memberIndent)}\n`);
  } else {
    yield* add(`${startTag('EntityContainer', { Name: CONTAINER_NAME }, memberIndent)}\n`);
    for (const name of names) yield* add(`${serialize(entitySet(name), `${memberIndent}  `)}\n`);
    yield* add(`${memberIndent}</EntityContainer>\n`);
  }
  for (const [i, version] of versions.entries()) {
    for (const element of annotationsOf(version, names[i])) yield* add(`${serialize(element, memberIndent)}\n`);
  }
  yield `${text}${schemaIndent}</Schema>\n  </edmx:DataServices>\n</edmx:Edmx>\n`;
}

/** The whole EDMX document describing `versions` as one string (see metadataDocumentChunks). */
export function buildMetadataDocument(versions: readonly DatasetVersion[]): string {
  return [...metadataDocumentChunks(versions)].join('');
}
