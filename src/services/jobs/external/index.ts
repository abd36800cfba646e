export { EXTERNAL_READERS, ExternalReadRefusal, checkSecretFits, globToRegExp, parseExternalRead, renderRead, withinScope, type ExternalFormat, type ExternalRead, type ExternalUrl } from './reads.ts';
export { ExternalReadPlanner, SECRET_USE_ROLE, type SecretScopes } from './resolve.ts';
export {
  DEFAULT_EXTERNAL_MAX_BYTES,
  DEFAULT_EXTERNAL_MAX_OBJECTS,
  ExternalFetcher,
  ExternalReadFailure,
  type ExternalReadOptions,
  type FetchedReads,
  type SecretValues,
  type StoreOpener,
} from './fetch.ts';
