/** OData metadata: the EDMX document, the service document, llms.txt and the names and types they share. See docs/odata-metadata.md. */
export { buildMetadataDocument, metadataDocumentChunks, CONTAINER_NAME, SCHEMA_NAMESPACE } from './document.ts';
export { edmType, lakeportType, type EdmType } from './edm-types.ts';
export { entitySetName, entitySetNames, findEntitySet, isSimpleIdentifier, propertyNames, ROW_ID, type PropertyNames } from './names.ts';
export { llmsTxt, tokenUrlFor } from './llms.ts';
export { isExternalStub, isLogicalView, supportsVersions } from './properties.ts';
export { buildServiceDocument, serviceDocumentChunks, type ServiceDocument, type ServiceDocumentEntry } from './service-document.ts';
export { columnStatistics, coveringCidr, type ColumnStatistics } from './stats.ts';
