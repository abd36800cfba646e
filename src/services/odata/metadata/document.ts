import type { DatasetVersion } from '../model.ts';
import { columnAnnotations, datasetAnnotations } from './annotations.ts';
import { edmType, lakeportType, type EdmType } from './edm-types.ts';
import { annotation, EDM_NAMESPACE, stringValue } from './expressions.ts';
import { entitySetNames, propertyNames } from './names.ts';
import { columnStatistics } from './stats.ts';
import { vocabularySchema } from './vocabulary.ts';
import { element, xmlDocument, type XmlElement } from './xml.ts';

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

interface DatasetElements {
  entityType: XmlElement;
  entitySet: XmlElement;
  annotations: XmlElement[];
}

/** The EntityType, the EntitySet and the annotations of one dataset version. */
function datasetElements(version: DatasetVersion, name: string): DatasetElements {
  const { columns } = version.dataset;
  const names = propertyNames(columns);
  const typeName = `${SCHEMA_NAMESPACE}.${name}`;
  const propertyOf = (column: string) => names.columns[columns.findIndex((c) => c.name === column)];
  const properties = columns.map((column, i) => {
    const type = lakeportType(column);
    const stats = columnStatistics(column.name, type, version.files);
    return { element: property(names.columns[i], edmType(type), column.nullable), annotations: columnAnnotations(column, stats) };
  });
  const key = element('Key', {}, [element('PropertyRef', { Name: names.rowId })]);
  return {
    entityType: element('EntityType', { Name: name }, [key, ...properties.map((p) => p.element), property(names.rowId, { type: 'Edm.Int64' }, false)]),
    entitySet: element('EntitySet', { Name: name, EntityType: typeName }),
    annotations: [
      ...annotationsFor(`${SCHEMA_NAMESPACE}.${CONTAINER_NAME}/${name}`, datasetAnnotations(version, propertyOf)),
      ...properties.flatMap((p, i) => annotationsFor(`${typeName}/${names.columns[i]}`, p.annotations)),
      ...annotationsFor(`${typeName}/${names.rowId}`, [annotation('Description', stringValue(ROW_ID_DESCRIPTION))]),
    ],
  };
}

/**
 * The EDMX document describing `versions`: the Custom vocabulary, then one schema with an entity
 * type per dataset and the container with an entity set per dataset. The service-wide $metadata
 * passes every readable dataset at its current version; a dataset's own $metadata passes one.
 */
export function buildMetadataDocument(versions: readonly DatasetVersion[]): string {
  const names = entitySetNames(versions.map((v) => v.ref));
  const parts = versions.map((version, i) => datasetElements(version, names[i]));
  // CSDL 4.0's XML schema wants at least one child in a container: say (inline) why it is empty.
  const empty = [annotation('Description', stringValue('No dataset is readable with these credentials'))];
  const container = element('EntityContainer', { Name: CONTAINER_NAME }, parts.length > 0 ? parts.map((p) => p.entitySet) : empty);
  const schema = element('Schema', { Namespace: SCHEMA_NAMESPACE, xmlns: EDM_NAMESPACE }, [
    ...parts.map((p) => p.entityType),
    container,
    ...parts.flatMap((p) => p.annotations),
  ]);
  // The vocabulary comes first: readers that merge schemas (SAP's edmx-parser) keep the last container they see.
  const dataServices = element('edmx:DataServices', {}, [vocabularySchema(), schema]);
  return xmlDocument(element('edmx:Edmx', { Version: '4.0', 'xmlns:edmx': EDMX }, [dataServices]));
}
