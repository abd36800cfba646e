import { defineErrors } from '../../core/errors/index.ts';

export const ODATA_ERRORS = {
  // query options
  INVALID_FILTER: 400,
  INVALID_SELECT: 400,
  INVALID_ORDERBY: 400,
  INVALID_APPLY: 400,
  FILTER_TYPE_MISMATCH: 400,
  INVALID_TOP: 400,
  INVALID_SKIP: 400,
  INVALID_SKIPTOKEN: 400,
  INVALID_COUNT: 400,
  SKIP_WITHOUT_ORDERBY: 400,
  UNSUPPORTED_QUERY_OPTION: 400,
  DUPLICATE_QUERY_OPTION: 400,
  UNSUPPORTED_FORMAT: 406,
  // key access
  INVALID_KEY: 400,
  ENTITY_NOT_FOUND: 404,
  // datasets and credentials
  DATASET_NOT_VERSIONED: 400,
  VIEW_ROWS_NOT_SUPPORTED: 400,
  INVALID_CREDENTIALS: 401,
} as const;

declare module '../../core/errors/app-error.ts' {
  interface ErrorStatuses extends Readonly<typeof ODATA_ERRORS> {}
}

export const odataError = defineErrors(ODATA_ERRORS);
