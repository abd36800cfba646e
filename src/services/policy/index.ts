import type { Authorizer } from '../../core/authz/index.ts';
import type { Db } from '../../core/db/index.ts';
import type { AdminToken, TokenVerifier } from '../../core/http/index.ts';
import { genesisRoute, policyRoutes } from './routes.ts';
import { PolicyService, type PolicyDirectory } from './service.ts';

export { PolicyService, type GenesisCaller, type PolicyDirectory } from './service.ts';

export interface PolicyOptions {
  db: Db;
  authz: Authorizer;
  directory: PolicyDirectory;
  verifier: TokenVerifier;
  adminToken: AdminToken;
}

/** The access policy service (/policy); `genesisRoute(scope)` also serves genesis on /control. */
export function createPolicyService(options: PolicyOptions) {
  const policies = new PolicyService(options.db, options.authz, options.directory);
  const deps = { policies, verifier: options.verifier, adminToken: options.adminToken };
  return { policies, routes: policyRoutes(deps), genesisRoute: (scope: string) => genesisRoute(deps, scope) };
}
