export { Ingestor, ROW_GROUP_ROWS, ValueNotStorableError, FileShapeError, type FileFormat, type ReadOptions, type SampleSchema, type SourceColumn, type TargetColumn, type ConvertedFile } from './ingest.ts';
export { normalizeType, isNestedType, isWidening, commonType, physicalType, IPV4, IPV4_REGEX } from './types.ts';
export { quoteIdent, quoteString } from './sql.ts';
export { SqlAnalyzer, FILE_OR_ENVIRONMENT_FUNCTIONS, type Analysis, type SelectAnalysis, type TableRef, type FunctionRef, type FunctionArg, type ArgValue } from './sql-analysis.ts';
export { rewritePlaceholders, lineColumn, tokenizeSql, type PlaceholderRewrite, type SqlToken } from './placeholders.ts';
export { RowReader, ReadSession, type BoundValue } from './row-reader.ts';
export { datasetRelation, type DatasetFiles } from './relation.ts';
export { Sandbox, SandboxInterruptedError, SandboxQueryError, type SandboxView, type SandboxOptions, type QueryResult } from './sandbox.ts';
export { SandboxPool, DEFAULT_SANDBOX_POOL_OPTIONS, type SandboxPoolOptions, type SandboxPoolStats } from './sandbox-pool.ts';
