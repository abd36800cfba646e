import type { FastifyPluginAsync } from 'fastify';
import type { Authorizer, WorkspaceStates } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import type { DataKeys } from '../../core/crypto/index.ts';
import type { Db } from '../../core/db/index.ts';
import { serviceModule, type TokenVerifier } from '../../core/http/index.ts';
import type { Logger } from '../../core/logger.ts';
import type { OutboundHttp } from '../../core/net/index.ts';
import { catalogBindingRoutes } from './catalog-binding-routes.ts';
import { CatalogBindingService } from './catalog-binding-service.ts';
import { accountRoutes } from './account-routes.ts';
import { AccountService } from './account-service.ts';
import type { TxtResolver } from './dns-txt.ts';
import { domainRoutes } from './domain-routes.ts';
import { idpPolicyRoutes } from './idp-policy-routes.ts';
import { AccountSignInPolicy, IdpPolicyService } from './idp-policy-service.ts';
import { DomainService, type DomainServiceDeps } from './domain-service.ts';
import type { PaymentProcessor } from './payment-processor.ts';
import { paymentRoutes } from './payment-routes.ts';
import { PaymentService, type PaymentEventHook } from './payment-service.ts';
import { SandboxProcessor } from './sandbox-processor.ts';
import { events } from './notification-events.ts';
import { notificationRoutes } from './notification-routes.ts';
import { NotificationService } from './notification-service.ts';
import { WorkspaceRepo } from './workspace-repo.ts';
import { serviceAccountRoutes } from './service-account-routes.ts';
import { ServiceAccountService, type PlanSettings, type ServiceAccountCredentials } from './service-account-service.ts';
import type { WorkspaceDirectory } from './workspace-directory.ts';
import { workspaceRoutes } from './workspace-routes.ts';
import { WorkspaceService, type GenesisPort, type LakeFiles, type NamespacePort, type PolicyPurgePort, type WorkspaceOwnersPort } from './workspace-service.ts';

export { AccountService } from './account-service.ts';
export { WorkspaceRepo } from './workspace-repo.ts';
export { WorkspaceService, GRACE_MS, type Guards, type NamespacePort, type GenesisPort, type PolicyPurgePort, type LakeFiles } from './workspace-service.ts';
export { DomainService, type DomainVerifiedEvent } from './domain-service.ts';
export { CatalogBindingService } from './catalog-binding-service.ts';
export { AccountSignInPolicy, IdpPolicyService, FRESH_SIGN_IN_MINUTES } from './idp-policy-service.ts';
export { evaluatePolicy, DEFAULT_IDP_POLICY, type IdpPolicyDocument } from './idp-policy.ts';
export { NotificationService, type Notifier, type NotificationExecutor } from './notification-service.ts';
export { events as notificationEvents, type NotificationEvent, type NotificationType } from './notification-events.ts';
export { dnsTxtResolver, DEFAULT_DNS, type DnsOptions, type TxtResolver } from './dns-txt.ts';
export { createPaymentProcessor, type PaymentsConfig } from './payment-config.ts';
export type { PaymentProcessor } from './payment-processor.ts';
export type { PaymentEvent, PaymentEventHook } from './payment-service.ts';
export { ServiceAccountService, setAccountPlan, type PlanSettings, type ServiceAccountCredentials } from './service-account-service.ts';
export type { WorkspaceDirectory, WorkspaceEntry } from './workspace-directory.ts';

/** The catalog as the account service sees a workspace's namespace. */
export function catalogNamespaces(catalog: Catalog): NamespacePort {
  return {
    claim: async (workspace, billingAccount) => void (await catalog.claimNamespace(workspace, billingAccount)),
    guards: async (workspace) => (await catalog.findNamespace(workspace))?.guards,
    // Purging follows an approved deletion, so it is not stopped by the drop guard.
    drop: (workspace) => catalog.dropNamespace(workspace, { force: true }),
  };
}

/**
 * The account service's records, opened before the services that read them (auth: billing
 * accounts; policy, jobs and OData: workspaces) and handed to createAccountsService after them.
 */
export function openAccountRecords(db: Db) {
  const records = new WorkspaceRepo(db);
  const notifications = new NotificationService(db);
  // The sign-in policy judge, for the auth service (built before this module's routes).
  const signInPolicy = new AccountSignInPolicy(db);
  // `states`: which workspaces are soft-deleted, for core/authz's Authorizer (app.ts).
  return { db, accounts: new AccountService(db, notifications), records, directory: records as WorkspaceDirectory, states: records as WorkspaceStates, notifications, signInPolicy };
}

export type AccountRecords = ReturnType<typeof openAccountRecords>;

export interface AccountsOptions extends AccountRecords {
  /** The auth module's: ends an identity's interactive sessions (after an IdP policy write). */
  endInteractiveSessions?: (identity: string) => Promise<unknown>;
  /** The authentication service's credentials, for service accounts (auth's `delegated`). */
  serviceAccountCredentials: ServiceAccountCredentials;
  plans: PlanSettings;
  verifier: TokenVerifier;
  authz: Authorizer;
  namespaces: NamespacePort;
  genesis: GenesisPort;
  purgePolicies: PolicyPurgePort;
  /** Who owns a workspace (policy grants), told of its deletion, restore and purge. */
  workspaceOwners: WorkspaceOwnersPort;
  lake: LakeFiles;
  /** The policy service's genesis endpoint, served on /control as well. */
  genesisRoute: FastifyPluginAsync;
  /** Where the workspace purge reports a workspace it could not purge. */
  log: Logger;
  /** Domain verification: the TXT lookup (real DNS), and an optional hook called when a domain becomes verified. */
  domains: { resolveTxt: TxtResolver; onVerified?: DomainServiceDeps['onVerified'] };
  /** The payment processor (default: the test-mode sandbox). */
  payments?: PaymentProcessor;
  /** Told of each settled payment (the notification feed). */
  onPaymentEvent?: PaymentEventHook;
  /** Catalog bindings (docs/catalog-bindings.md): the data keys sealing their credentials, where sync's stubs go, and the guarded client calling external catalogs. */
  catalogBindings: { dataKeys: DataKeys; catalog: Pick<Catalog, 'replaceExternalDatasets'>; http: OutboundHttp };
}

/** The account service's periodic work: purges workspaces past their grace window, then notifications past retention. Logs; never rejects. */
export async function accountsUpkeep(parts: {
  workspaces: Pick<WorkspaceService, 'purgeExpired'>;
  notifications: Pick<NotificationService, 'purgeExpired'>;
  log: Logger;
}): Promise<void> {
  const { log } = parts;
  await parts.workspaces.purgeExpired().then(
    (names) => void (names.length > 0 && log.info({ workspaces: names }, 'purged workspaces past their grace window')),
    (error: unknown) => log.error({ err: error }, 'workspace purge failed'),
  );
  await parts.notifications.purgeExpired().then(
    (count) => void (count > 0 && log.info({ notifications: count }, 'deleted notifications past retention')),
    (error: unknown) => log.error({ err: error }, 'notification purge failed'),
  );
}

/**
 * The account service: accounts, members and invoices on both prefixes, plus each prefix's workspace
 * routes; `directory` answers other modules whether a workspace exists and is live.
 */
export function createAccountsService(options: AccountsOptions) {
  const { accounts, records, directory, notifications, log } = options;
  const bindings = new CatalogBindingService({ db: options.db, authz: options.authz, accounts, records, ...options.catalogBindings, log: log.child({ module: 'catalog-bindings' }) });
  const workspaces = new WorkspaceService({
    accounts,
    records,
    namespaces: options.namespaces,
    genesis: options.genesis,
    purgePolicies: options.purgePolicies,
    authz: options.authz,
    files: options.lake,
    log: options.log,
    notifier: notifications,
    owners: options.workspaceOwners,
    bindings: { check: (input) => bindings.checkAtCreate(input), bind: (workspace, input, actor) => bindings.bindAtCreate(workspace, input, actor) },
  });
  const onVerified = options.domains.onVerified;
  const domains = new DomainService({
    db: options.db,
    accounts,
    ...options.domains,
    onVerified: async (event) => {
      await notifications.notifyBillingAdmins(event.account_id, events.domainVerified(event));
      await onVerified?.(event);
    },
    log,
  });
  const payments = new PaymentService({
    db: options.db,
    accounts,
    processor: options.payments ?? new SandboxProcessor(),
    log: log.child({ module: 'payments' }),
    onEvent: async (event) => {
      const { payment } = event;
      const facts = { accountId: event.account_id, paymentId: payment.payment_id, amount: payment.amount, currency: payment.currency, actor: event.actor };
      await notifications.notifyBillingAdmins(
        event.account_id,
        event.type === 'payment.succeeded'
          ? events.paymentSucceeded(facts)
          : events.paymentDeclined({ ...facts, reason: payment.decline_code ?? payment.failure_code ?? payment.error_code ?? 'declined' }),
      );
      await options.onPaymentEvent?.(event);
    },
  });
  const idpPolicies = new IdpPolicyService({
    db: options.db,
    accounts,
    isDomainVerifiedBy: (accountId, domain) => domains.isDomainVerifiedBy(accountId, domain),
    endInteractiveSessions: options.endInteractiveSessions,
  });
  const serviceAccounts = new ServiceAccountService(options.db, accounts, options.serviceAccountCredentials, options.plans);
  const common = accountRoutes({ accounts, verifier: options.verifier });
  const paymentApi = paymentRoutes({ payments, verifier: options.verifier });
  const routesFor =
    (flavor: 'billing' | 'control'): FastifyPluginAsync =>
    async (app) => {
      await app.register(common);
      await app.register(paymentApi);
      await app.register(workspaceRoutes({ workspaces, verifier: options.verifier }, flavor));
      if (flavor === 'control') {
        await app.register(domainRoutes({ domains, verifier: options.verifier }));
        await app.register(notificationRoutes({ notifications, verifier: options.verifier }));
        await app.register(serviceAccountRoutes({ serviceAccounts, verifier: options.verifier }));
        await app.register(idpPolicyRoutes({ idpPolicies, verifier: options.verifier }));
        await app.register(catalogBindingRoutes({ bindings, verifier: options.verifier }));
      }
    };
  return serviceModule({
    accounts,
    workspaces,
    domains,
    payments,
    serviceAccounts,
    idpPolicies,
    catalogBindings: bindings,
    signInPolicy: options.signInPolicy,
    notifications,
    records,
    directory,
    apis: [
      { prefix: '/billing', title: 'account service (billing)', description: 'Accounts, members, invoices and workspaces.', routes: [routesFor('billing')] },
      { prefix: '/control', title: 'account service (control)', description: 'Accounts, members, invoices, workspaces, guards, catalog bindings, domains, the sign-in (IdP) policy and notifications.', routes: [routesFor('control'), options.genesisRoute] },
    ],
    upkeep: () => accountsUpkeep({ workspaces, notifications, log }),
  });
}
