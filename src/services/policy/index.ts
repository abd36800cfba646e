import type { Authorizer } from '../../core/authz/index.ts';
import { serviceModule, type AdminToken, type TokenVerifier } from '../../core/http/index.ts';
import type { WorkspaceDirectory } from '../accounts/index.ts';
import { PolicyPlanner } from './planner.ts';
import { genesisRoute, policyRoutes } from './routes.ts';
import { PolicyService, type PolicyDirectory } from './service.ts';
import type { PolicyStore } from './store.ts';

export { PolicyService, type GenesisCaller, type PolicyDirectory } from './service.ts';
export { PolicyPlanner, type AppliedPolicyChange, type PolicyChange, type PolicyEffect, type PolicyPlan, type PolicyTarget } from './planner.ts';
export { PolicyStore, type PolicyRow } from './store.ts';

export interface PolicyOptions {
  /** The `policies` table; app.ts also hands it to core/authz's Authorizer as its GrantSource. */
  store: PolicyStore;
  authz: Authorizer;
  workspaces: WorkspaceDirectory;
  directory: PolicyDirectory;
  verifier: TokenVerifier;
  adminToken: AdminToken;
}

/** The access policy service (/policy); `genesisRoute(scope)` also serves genesis on /control. */
export function createPolicyService(options: PolicyOptions) {
  const { store, authz, workspaces, directory } = options;
  const policies = new PolicyService({ store, authz, workspaces, directory, planner: new PolicyPlanner(store, authz) });
  const deps = { policies, verifier: options.verifier, adminToken: options.adminToken };
  return serviceModule({
    policies,
    genesisRoute: (scope: string) => genesisRoute(deps, scope),
    apis: [{ prefix: '/policy', title: 'access policy service', description: 'Access policies per workspace.', routes: [policyRoutes(deps)] }],
  });
}
