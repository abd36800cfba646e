import type { DatasetVersion } from '../model.ts';
import { columnAnnotations, datasetAnnotations } from './annotations.ts';
import { edmType, lakeportType, type EdmType } from './edm-types.ts';
import { annotation, EDM_NAMESPACE, stringValue } from './expressions.ts';
import { entitySetNames, propertyNames } from './names.ts';
import { columnStatistics } from './stats.ts';
import { vocabularySchema } from './vocabulary.ts';
import { attr, escapeXml, XML_DECLARATION, xmlElement } from './xml.ts';

type PropertyNames = ReturnType<typeof propertyNames>;

/** The namespace of the entity types and the container. */
export const SCHEMA_NAMESPACE = 'Lakeport';
export const CONTAINER_NAME = 'Container';

const EDMX = 'http://docs.oasis-open.org/odata/ns/edmx';

const ROW_ID_DESCRIPTION =
  'Synthetic key (datasets have no primary key): identifies a row within the selected version; ' +
  'stable for an @<tag> or @<snapshot_id> version, not across versions.';

function property(indent: string, name: string, type: EdmType, nullable: boolean): string {
  const facet = (label: string, value: number | undefined) => (value === undefined ? '' : ` ${label}="${value}"`);
  return (
    `${indent}<Property${attr('Name', name)}${attr('Type', type.type)} Nullable="${nullable}"` +
    `${facet('MaxLength', type.maxLength)}${facet('Precision', type.precision)}${facet('Scale', type.scale)}/>\n`
  );
}

/**
 * `<Annotations Target="…">` at `indent` around `annotations` (written two spaces deeper), or nothing
 * when there is nothing to say. Annotations are written out of line, by target path, rather than
 * inside the elements they describe: every CSDL reader understands both, and some (SAP's
 * edmx-parser) only read these.
 */
function annotationsFor(indent: string, target: string, annotations: string): string {
  return annotations === '' ? '' : xmlElement(indent, 'Annotations', attr('Target', target), annotations);
}

/** The EntityType of one dataset version at `indent`: its key and properties. */
function entityType(version: DatasetVersion, name: string, names: PropertyNames, indent: string): string {
  const { columns } = version.dataset;
  const inner = `${indent}  `;
  let body = `${inner}<Key>\n${inner}  <PropertyRef${attr('Name', names.rowId)}/>\n${inner}</Key>\n`;
  for (let i = 0; i < columns.length; i++) body += property(inner, names.columns[i], edmType(lakeportType(columns[i])), columns[i].nullable);
  body += property(inner, names.rowId, { type: 'Edm.Int64' }, false);
  return xmlElement(indent, 'EntityType', attr('Name', name), body);
}

/** The annotations of one dataset version at `indent`: the EntitySet's, each property's, the key's. */
function annotationsOf(version: DatasetVersion, name: string, names: PropertyNames, indent: string): string {
  const { columns } = version.dataset;
  const inner = `${indent}  `;
  const typeName = `${SCHEMA_NAMESPACE}.${name}`;
  const propertyOf = (column: string) => names.columns[columns.findIndex((c) => c.name === column)];
  let text = annotationsFor(indent, `${SCHEMA_NAMESPACE}.${CONTAINER_NAME}/${name}`, datasetAnnotations(version, propertyOf, inner));
  for (let i = 0; i < columns.length; i++) {
    const column = columns[i];
    const stats = columnStatistics(column.name, lakeportType(column), version.files);
    text += annotationsFor(indent, `${typeName}/${names.columns[i]}`, columnAnnotations(column, stats, inner));
  }
  return text + annotationsFor(indent, `${typeName}/${names.rowId}`, ROW_ID_ANNOTATION(inner));
}

const ROW_ID_ANNOTATION = (indent: string) => annotation(indent, 'Description', stringValue(ROW_ID_DESCRIPTION));

/** The Custom vocabulary's schema, the same for every document (written once). */
let vocabularyText: string | undefined;

/** Text handed on once it is about this long, so a large document leaves as it is written. */
const CHUNK_CHARS = 64 * 1024;

/**
 * The EDMX document describing `versions`, a piece at a time: the Custom vocabulary, then one schema
 * with an entity type per dataset, the container with an entity set per dataset, and the annotations.
 * The service-wide $metadata passes every readable dataset at its current version; a dataset's own
 * $metadata passes one. Written straight to text, a dataset at a time.
 */
export function* metadataDocumentChunks(versions: readonly DatasetVersion[]): Generator<string> {
  const names = entitySetNames(versions.map((v) => v.ref));
  const properties = versions.map((v) => propertyNames(v.dataset.columns));
  const schemaIndent = '    ';
  const memberIndent = '      ';
  vocabularyText ??= vocabularySchema(schemaIndent);
  let text =
    `${XML_DECLARATION}\n<edmx:Edmx Version="4.0"${attr('xmlns:edmx', EDMX)}>\n  <edmx:DataServices>\n` +
    // The vocabulary comes first: readers that merge schemas (SAP's edmx-parser) keep the last container they see.
    `${vocabularyText}${schemaIndent}<Schema${attr('Namespace', SCHEMA_NAMESPACE)}${attr('xmlns', EDM_NAMESPACE)}>\n`;
  function* add(piece: string): Generator<string> {
    text += piece;
    if (text.length >= CHUNK_CHARS) {
      yield text;
      text = '';
    }
  }
  for (let i = 0; i < versions.length; i++) yield* add(entityType(versions[i], names[i], properties[i], memberIndent));
  const container = attr('Name', CONTAINER_NAME);
  if (versions.length === 0) {
    // CSDL 4.0's XML schema wants at least one child in a container: say (inline) why it is empty.
    yield* add(xmlElement(memberIndent, 'EntityContainer', container, annotation(`${memberIndent}  `, 'Description', stringValue('No dataset is readable with these credentials'))));
  } else {
    yield* add(`${memberIndent}<EntityContainer${container}>\n`);
    for (const name of names) {
      const set = escapeXml(name);
      yield* add(`${memberIndent}  <EntitySet Name="${set}" EntityType="${SCHEMA_NAMESPACE}.${set}"/>\n`);
    }
    yield* add(`${memberIndent}</EntityContainer>\n`);
  }
  for (let i = 0; i < versions.length; i++) yield* add(annotationsOf(versions[i], names[i], properties[i], memberIndent));
  yield `${text}${schemaIndent}</Schema>\n  </edmx:DataServices>\n</edmx:Edmx>\n`;
}

/** The whole EDMX document describing `versions` as one string (see metadataDocumentChunks). */
export function buildMetadataDocument(versions: readonly DatasetVersion[]): string {
  return [...metadataDocumentChunks(versions)].join('');
}
