export { compileQuery, type CompiledQuery, type ODataQueryOptions } from './query.ts';
export { SqlParams, type SqlValue } from './params.ts';
export type { OrderKey } from './orderby.ts';
export { MAX_DEPTH, MAX_OPTION_LENGTH } from './errors.ts';
