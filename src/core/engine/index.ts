export { Ingestor, ValueNotStorableError, FileShapeError, type FileFormat, type ReadOptions, type SampleSchema, type SourceColumn, type TargetColumn, type ConvertedFile } from './ingest.ts';
export { normalizeType, isNestedType, isWidening, commonType, physicalType, IPV4, IPV4_REGEX } from './types.ts';
export { quoteIdent, quoteString } from './sql.ts';
