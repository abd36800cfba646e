import path from 'node:path';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { sql } from 'kysely';
import { registerServiceMetrics } from './app-metrics.ts';
import { Authorizer } from './core/authz/index.ts';
import type { SignInPolicy } from './core/authz/sign-in-policy.ts';
import type { IdentityProviderConfig } from './config.ts';
import { Catalog, CatalogSweeper, type LifecycleSettings } from './core/catalog/index.ts';
import { DataKeys, type Sealer } from './core/crypto/index.ts';
import type { Db } from './core/db/index.ts';
import { clientErrorHandler, frameworkErrors, registerErrorHandling } from './core/errors/index.ts';
import { Metrics, MetricsAccess, mountApi, readinessRoute, registerInputGuards, requestIdOptions, type AdminToken, type PublicUrl, type ServiceModule } from './core/http/index.ts';
import type { Ingestor, RowReader, SqlAnalyzer } from './core/engine/index.ts';
import { OutboundHttp, type OutboundSettings } from './core/net/index.ts';
import type { BlobStore } from './core/storage/index.ts';
import { catalogNamespaces, createAccountsService, dnsTxtResolver, openAccountRecords, type AccountService, type DnsOptions, type DomainService, type PaymentEventHook, type PaymentProcessor, type PlanSettings, type WorkspaceService } from './services/accounts/index.ts';
import { createAuthService, type AuthService } from './services/auth/index.ts';
import { createPolicyService, PolicyStore, type PolicyService } from './services/policy/index.ts';
import { createJobsService, type ExternalReadOptions, type MaterializedViewOptions, type JobsService, type ResultPolicy, type WorkerPool } from './services/jobs/index.ts';
import { createUploadService, type Compactor, type CompactionSettings, type UploadService } from './services/upload/index.ts';
import { createODataService } from './services/odata/index.ts';
import { createIcebergService } from './services/iceberg/index.ts';
import { registerConsole } from './services/console/index.ts';

export interface AppDeps {
  db: Db;
  sealer: Sealer;
  adminToken: AdminToken;
  /** The bearer token that reads GET /metrics besides the admin token (LAKEPORT_METRICS_TOKEN; absent: the admin token only). */
  metricsToken?: string;
  publicUrl: PublicUrl;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  /** How long verified credentials and tokens are kept (LAKEPORT_AUTH_CACHE_SECONDS): another server's revocation bites within it. */
  authCacheSeconds: number;
  blobs: BlobStore;
  ingestor: Ingestor;
  /** Lakeport's own DuckDB read path (OData). */
  reader: RowReader;
  /** The Iceberg catalog's file locations (LAKEPORT_ICEBERG_LOCATIONS): Lakeport's file route (`http`, default) or the store's own URIs (`storage`). */
  icebergLocations?: 'http' | 'storage';
  /** Local scratch space for uploads in flight and downloads. */
  scratchDir: string;
  analyzer: SqlAnalyzer;
  /** Domain verification's TXT lookups (LAKEPORT_DNS_*); absent: the system's resolvers, 2 s, 2 tries. */
  dns?: DnsOptions;
  /** The payment processor (LAKEPORT_PAYMENTS_PROCESSOR; default: the test-mode sandbox). */
  payments?: PaymentProcessor;
  /** Told of each settled payment (for the notification feed). */
  onPaymentEvent?: PaymentEventHook;
  /** Service-account quota per plan, and the plan of accounts not given one. */
  plans: PlanSettings;
  /** Interactive sign-in: the configured OpenID Connect providers and how long a started login may take. */
  identityProviders?: readonly IdentityProviderConfig[];
  loginTtlSeconds?: number;
  idpTimeoutSeconds?: number;
  /** The sign-in policy (tests); default: the accounts module's, else everything allowed. */
  signInPolicy?: SignInPolicy;
  /** Serve the web console at `/` (`lakeport serve` does) from this built directory, or the default dist/console. */
  console?: { dir?: string };
  /** Dataset lifecycle (docs/lifecycle.md): the undrop window and the grace before expired files are deleted. */
  lifecycle?: Partial<LifecycleSettings>;
  /** Compaction thresholds (LAKEPORT_COMPACTION_*, docs/compaction.md); absent: the defaults, automatic on. */
  compaction?: CompactionSettings;
  /** Calls to external catalogs (LAKEPORT_CATALOG_*, docs/catalog-bindings.md): time limit, private networks (refused by default), a resolver for tests. */
  catalogs?: Partial<OutboundSettings>;
  jobs: {
    timeoutMs: number;
    workers: number;
    memoryLimit: string;
    threads: number;
    /** Where job queries run: a child process (`process`, as `lakeport serve` does) or this one (`inline`, the default here). */
    isolation?: 'process' | 'inline';
    /** Memory of all job queries together (the child process's data limit); default: workers × memoryLimit + 512 MiB. */
    memoryBudgetBytes?: number;
    /** Jobs of one identity running at once (default: all the workers). */
    perIdentity?: number;
    /** Result caps and retention (defaults: 1 GiB a job, 10 GiB an identity, 24 h). */
    results?: Partial<ResultPolicy>;
    /** READ_* of private storage: adapter endpoints (S3: LAKEPORT_EXTERNAL_S3_ENDPOINT) and the per-job byte cap. */
    external?: ExternalReadOptions;
    /** Materialized views: the scheduler's tick and a test hook before a refresh commits. */
    materializedViews?: MaterializedViewOptions;
  };
}

export interface AppOptions {
  logger?: FastifyServerOptions['logger'];
  /** Run the services' periodic upkeep (purges and sweeps, every minute); on in `lakeport serve`. */
  backgroundTasks?: boolean;
  /** Start the services' workers: query jobs run in this process (`deps.jobs.workers` at once). */
  workers?: boolean;
  /** Mount the services' APIs (default); false: only /healthz, /readyz and /metrics (`lakeport worker`). */
  apis?: boolean;
  /**
   * Fastify's `trustProxy` (`LAKEPORT_TRUST_PROXY`): which proxies' X-Forwarded-For to believe, so
   * `request.ip` — the source address that failed-attempt throttling counts by — is the client's.
   */
  trustProxy?: FastifyServerOptions['trustProxy'];
}

const UPKEEP_INTERVAL_MS = 60_000;

/** The services behind the routes, for the CLI, background work and tests. */
export interface LakeportServices {
  auth: AuthService;
  authz: Authorizer;
  catalog: Catalog;
  policy: PolicyService;
  accounts: AccountService;
  workspaces: WorkspaceService;
  domains: DomainService;
  uploads: UploadService;
  compactor: Compactor;
  jobs: JobsService;
  workers: WorkerPool;
  /** Purges dropped datasets and deletes files past their grace (run by upkeep). */
  catalogSweeper: CatalogSweeper;
}

declare module 'fastify' {
  interface FastifyInstance {
    lakeport: LakeportServices;
  }
}

/** The eight service prefixes of the runtime contract. */
export const SERVICE_PREFIXES = ['/auth', '/upload', '/jobs', '/billing', '/control', '/policy', '/odata', '/iceberg'] as const;

/** Routes beside the services that are never the console's. */
const OPERATIONAL_PATHS = ['/healthz', '/readyz', '/metrics', '/.well-known'] as const;

const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-admin-token"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

/** Query parameters that carry one-time secrets (the OpenID callback's authorization code and state). */
const SECRET_QUERY_PARAMS = ['code', 'state'];

/** A request as the log shows it: Fastify's fields, with the values of secret query parameters replaced. */
export function requestForLog(request: { method: string; url: string; hostname?: string; ip?: string; socket?: { remotePort?: number } }) {
  const [path, query] = request.url.split('?', 2);
  let url = request.url;
  if (query !== undefined) {
    const params = new URLSearchParams(query);
    const secrets = SECRET_QUERY_PARAMS.filter((name) => params.has(name));
    for (const name of secrets) params.set(name, 'redacted');
    if (secrets.length > 0) url = `${path}?${params}`;
  }
  return { method: request.method, url, host: request.hostname, remoteAddress: request.ip, remotePort: request.socket?.remotePort };
}

export async function buildApp(deps: AppDeps, options: AppOptions = {}): Promise<FastifyInstance> {
  const metrics = new Metrics();
  const app = await createServer(options, metrics);
  const { services, modules, queryEngine } = await createServices(deps, app.log);
  // Operations (docs/deploy.md): readiness without authentication, like /healthz; metrics for the admin or metrics token.
  readinessRoute(app, {
    database: async () => void (await sql`SELECT 1`.execute(deps.db.kysely)),
    storage: (signal) => deps.blobs.check(signal),
  });
  registerServiceMetrics(metrics.registry, { db: deps.db, jobs: services.jobs, workers: services.workers, uploads: services.uploads, queryEngine, ingestor: deps.ingestor, reader: deps.reader, log: app.log.child({ module: 'metrics' }) });
  metrics.route(app, new MetricsAccess(deps.adminToken, deps.metricsToken));
  // Before any service's routes, so a source guessing the admin token is held back everywhere.
  app.addHook('onRequest', services.auth.adminTokenGuard);
  if (options.apis !== false) {
    await app.register(services.auth.rootWellKnown);
    for (const api of modules.flatMap((m) => m.apis)) await mountApi(app, api);
    if (deps.console) await registerConsole(app, { dir: deps.console.dir, reserved: [...SERVICE_PREFIXES, ...OPERATIONAL_PATHS] });
  }
  app.decorate('lakeport', services);
  // Pending automatic compactions end with the app, whether or not it runs workers.
  app.addHook('onClose', () => services.compactor.stop());
  app.addHook('onClose', async () => {
    for (const module of modules) await module.close?.();
  });

  if (options.workers) {
    app.addHook('onReady', async () => {
      for (const module of modules) await module.start?.();
    });
    app.addHook('onClose', async () => {
      for (const module of modules) await module.stop?.();
    });
  }
  if (options.backgroundTasks) {
    const upkeep = setInterval(() => {
      for (const module of modules) void module.upkeep?.();
    }, UPKEEP_INTERVAL_MS);
    upkeep.unref();
    app.addHook('onClose', async () => clearInterval(upkeep));
  }
  return app;
}

/** Fastify with what every route shares: Zod schemas, errors, input guards, cookies, request ids, request metrics and /healthz. */
async function createServer(options: AppOptions, metrics: Metrics) {
  const logger = options.logger === undefined ? false : options.logger;
  const app = Fastify({
    ...requestIdOptions,
    trustProxy: options.trustProxy ?? false,
    // What Node's parser and Fastify's router refuse answers in Lakeport's shape too.
    clientErrorHandler,
    frameworkErrors,
    logger: logger && typeof logger === 'object' ? { redact: REDACTED_PATHS, serializers: { req: requestForLog }, ...logger } : logger,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  metrics.instrument(app);
  registerInputGuards(app);
  await app.register(cookie);
  await app.register(formbody);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.decorateRequest('principal', null);

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  return app;
}

/**
 * Every service, built in dependency order: a factory gets only what was built before it. The
 * account records come first, since auth, policy, jobs and OData read accounts and workspaces
 * while the account service itself needs auth's verifier and policy's genesis.
 */
async function createServices(deps: AppDeps, log: FastifyBaseLogger) {
  const catalog = new Catalog(deps.db, deps.lifecycle);
  const catalogSweeper = new CatalogSweeper(catalog, deps.blobs, log.child({ module: 'catalog' }));
  const policyStore = new PolicyStore(deps.db);
  const accounts = openAccountRecords(deps.db);
  // Grants from the policy module, workspace states from the account records: core/authz refuses soft-deleted workspaces.
  const authz = new Authorizer(policyStore, accounts.states);
  const auth = await createAuthService({
    db: deps.db,
    sealer: deps.sealer,
    adminToken: deps.adminToken,
    publicUrl: deps.publicUrl,
    accessTokenTtlSeconds: deps.accessTokenTtlSeconds,
    refreshTokenTtlDays: deps.refreshTokenTtlDays,
    cacheSeconds: deps.authCacheSeconds,
    log: log.child({ module: 'auth' }),
    billingAccountOf: (identity) => accounts.accounts.billingAccountOf(identity),
    identityProviders: deps.identityProviders,
    loginTtlSeconds: deps.loginTtlSeconds,
    idpTimeoutSeconds: deps.idpTimeoutSeconds,
    // (a test may judge sign-ins itself; otherwise the accounts module's IdP policy does)
    signInPolicy: deps.signInPolicy ?? accounts.signInPolicy,
  });
  const policy = createPolicyService({
    store: policyStore,
    authz,
    workspaces: accounts.directory,
    verifier: auth.verifier,
    adminToken: deps.adminToken,
    directory: {
      isActiveBillingAdmin: (identity, accountId) => accounts.accounts.isActiveBillingAdmin(identity, accountId),
      datasets: async (workspace) => (await catalog.listDatasets(workspace)).map((d) => ({ collection: d.collection, name: d.name, kind: d.kind })),
    },
  });
  const accountService = createAccountsService({
    ...accounts,
    endInteractiveSessions: (identity) => auth.interactiveSessions.end(identity),
    serviceAccountCredentials: auth.delegated,
    plans: deps.plans,
    verifier: auth.verifier,
    authz,
    namespaces: catalogNamespaces(catalog),
    genesis: async (workspace, grants, caller) =>
      void (await policy.policies.genesis({ kind: 'identity', identity: caller.identity }, workspace, grants)),
    purgePolicies: (workspace) => policyStore.removeWorkspace(workspace),
    workspaceOwners: async (workspace) => [...new Set((await policyStore.list(workspace)).filter((p) => p.role === 'owner').map((p) => p.principal))],
    lake: {
      removeWorkspace: async (workspace, files) => {
        for (const key of files) await deps.blobs.delete(key);
        await deps.blobs.deletePrefix(`lake/${workspace}/`);
      },
    },
    genesisRoute: policy.genesisRoute('accounts'),
    log: log.child({ module: 'accounts' }),
    domains: { resolveTxt: dnsTxtResolver(deps.dns) },
    payments: deps.payments,
    onPaymentEvent: deps.onPaymentEvent,
    catalogBindings: {
      dataKeys: new DataKeys(deps.db, deps.sealer),
      catalog,
      http: new OutboundHttp({ timeoutMs: 10_000, allowPrivateNetworks: false, ...deps.catalogs }),
    },
  });
  // Upload commits queue the REFRESH ON COMMIT views over their dataset; the jobs module that does it is built next.
  let onCommitted: (datasetId: string) => void = () => undefined;
  const upload = createUploadService({
    onCommitted: (datasetId) => onCommitted(datasetId),
    db: deps.db,
    catalog,
    authz,
    ingestor: deps.ingestor,
    blobs: deps.blobs,
    verifier: auth.verifier,
    scratchDir: deps.scratchDir,
    log: log.child({ module: 'upload' }),
    compaction: deps.compaction,
  });
  const jobs = createJobsService({
    db: deps.db,
    catalog,
    authz,
    analyzer: deps.analyzer,
    ingestor: deps.ingestor,
    blobs: deps.blobs,
    verifier: auth.verifier,
    scratchDir: deps.scratchDir,
    publicUrl: deps.publicUrl,
    timeoutMs: deps.jobs.timeoutMs,
    sandbox: { memoryLimit: deps.jobs.memoryLimit, threads: deps.jobs.threads, tempDirectory: path.join(deps.scratchDir, 'spill') },
    isolation: deps.jobs.isolation ?? 'inline',
    memoryBudgetBytes: deps.jobs.memoryBudgetBytes,
    results: deps.jobs.results,
    log: log.child({ module: 'jobs' }),
    worker: { concurrency: deps.jobs.workers, perIdentity: deps.jobs.perIdentity ?? Math.max(1, deps.jobs.workers) },
    external: deps.jobs.external,
    materializedViews: deps.jobs.materializedViews,
    statements: {
      policies: policy.policies.planner,
      workspaces: accounts.directory,
      sealer: deps.sealer,
      compactor: upload.compactor,
    },
  });
  onCommitted = (datasetId) => jobs.views.committedInBackground(datasetId);
  const odata = createODataService({
    catalog,
    authz,
    blobs: deps.blobs,
    reader: deps.reader,
    verifier: auth.verifier,
    clients: auth.tokens,
    publicUrl: deps.publicUrl,
    changes: deps.db.changes,
    writes: deps.db.writes,
    log: log.child({ module: 'odata' }),
  });
  const iceberg = createIcebergService({
    catalog,
    authz,
    blobs: deps.blobs,
    verifier: auth.verifier,
    tokens: auth,
    publicUrl: deps.publicUrl,
    locations: deps.icebergLocations,
    changes: deps.db.changes,
    log: log.child({ module: 'iceberg' }),
  });

  const services: LakeportServices = {
    auth,
    authz,
    catalog,
    policy: policy.policies,
    accounts: accounts.accounts,
    workspaces: accountService.workspaces,
    domains: accountService.domains,
    uploads: upload.uploads,
    compactor: upload.compactor,
    jobs: jobs.jobs,
    workers: jobs.pool,
    catalogSweeper,
  };
  // In the order their APIs are mounted.
  const lifecycle: ServiceModule = { apis: [], upkeep: async () => void (await catalogSweeper.run()) };
  const modules: ServiceModule[] = [auth, accountService, upload, jobs, policy, odata, iceberg, lifecycle];
  return { services, modules, queryEngine: jobs.queryEngine };
}
