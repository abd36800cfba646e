import type { Authorizer } from '../../core/authz/index.ts';
import type { Db } from '../../core/db/index.ts';
import { serviceModule, type AdminToken, type TokenVerifier } from '../../core/http/index.ts';
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
  return serviceModule({
    policies,
    genesisRoute: (scope: string) => genesisRoute(deps, scope),
    apis: [{ prefix: '/policy', title: 'access policy service', description: 'Access policies per workspace.', routes: [policyRoutes(deps)] }],
  });
}
