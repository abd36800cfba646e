import type { FastifyPluginAsync } from 'fastify';
import type { Authorizer } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import type { Db } from '../../core/db/index.ts';
import type { TokenVerifier } from '../../core/http/index.ts';
import type { Logger } from '../../core/logger.ts';
import { accountRoutes } from './account-routes.ts';
import { AccountService } from './account-service.ts';
import { WorkspaceRepo } from './workspace-repo.ts';
import { workspaceRoutes } from './workspace-routes.ts';
import { WorkspaceService, type GenesisPort, type LakeFiles, type NamespacePort } from './workspace-service.ts';

export { AccountService } from './account-service.ts';
export { WorkspaceRepo } from './workspace-repo.ts';
export { WorkspaceService, GRACE_MS, type Guards, type NamespacePort, type GenesisPort, type LakeFiles } from './workspace-service.ts';

/** The catalog as the account service sees a workspace's namespace. */
export function catalogNamespaces(catalog: Catalog): NamespacePort {
  return {
    claim: async (workspace, billingAccount) => void (await catalog.claimNamespace(workspace, billingAccount)),
    guards: async (workspace) => (await catalog.findNamespace(workspace))?.guards,
    // Purging follows an approved deletion, so it is not stopped by the drop guard.
    drop: (workspace) => catalog.dropNamespace(workspace, { force: true }),
  };
}

export interface AccountsOptions {
  db: Db;
  verifier: TokenVerifier;
  authz: Authorizer;
  namespaces: NamespacePort;
  genesis: GenesisPort;
  lake: LakeFiles;
  /** Where the workspace purge reports a workspace it could not purge. */
  log: Logger;
}

/** The account service: accounts, members and invoices on both prefixes, plus each prefix's workspace routes. */
export function createAccountsService(options: AccountsOptions) {
  const accounts = new AccountService(options.db);
  const records = new WorkspaceRepo(options.db);
  const workspaces = new WorkspaceService({
    accounts,
    records,
    namespaces: options.namespaces,
    genesis: options.genesis,
    authz: options.authz,
    files: options.lake,
    log: options.log,
  });
  const common = accountRoutes({ accounts, verifier: options.verifier });
  const routesFor =
    (flavor: 'billing' | 'control'): FastifyPluginAsync =>
    async (app) => {
      await app.register(common);
      await app.register(workspaceRoutes({ workspaces, verifier: options.verifier }, flavor));
    };
  return { accounts, workspaces, records, billingRoutes: routesFor('billing'), controlRoutes: routesFor('control') };
}
