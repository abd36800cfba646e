export { ROLES, isRole, roleAtLeast, type Role } from './roles.ts';
export {
  parsePattern,
  formatPattern,
  patternMatches,
  patternCovers,
  PATTERN_HINT,
  type Pattern,
  type Resource,
} from './patterns.ts';
export { SCOPES, DEFAULT_SCOPES, type Principal, type Scope } from './principal.ts';
export { permissionsWithin } from './narrowing.ts';
export {
  isNarrowed,
  manageRefusal,
  mayManage,
  requireManage,
  mayAccessOwned,
  seesOnlyNarrowedRecords,
  type ManagementAction,
  type ManagementTarget,
} from './manage.ts';
export { Authorizer, collectionsReached, effectiveRole, type AuthorizeOptions, type Grant, type GrantSource, type Standing, type WorkspaceStates } from './authorize.ts';
