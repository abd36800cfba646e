import path from 'node:path';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { Authorizer, PolicyGrantSource } from './core/authz/index.ts';
import { Catalog } from './core/catalog/index.ts';
import type { Sealer } from './core/crypto/index.ts';
import type { Db } from './core/db/index.ts';
import { registerErrorHandling } from './core/errors/index.ts';
import { registerInputGuards, requestIdOptions, serviceDocs, type AdminToken, type PublicUrl } from './core/http/index.ts';
import type { Ingestor, RowReader, SqlAnalyzer } from './core/engine/index.ts';
import type { BlobStore } from './core/storage/index.ts';
import { catalogNamespaces, createAccountsService, type AccountService, type WorkspaceService } from './services/accounts/index.ts';
import { AUTH_PREFIX, createAuthService, type AuthService } from './services/auth/index.ts';
import { createPolicyService, type PolicyService } from './services/policy/index.ts';
import { createJobsService, type ExternalReadOptions, type JobsService, type ResultPolicy, type WorkerPool } from './services/jobs/index.ts';
import { createUploadService, type UploadService } from './services/upload/index.ts';
import { createODataService } from './services/odata/index.ts';

export interface AppDeps {
  db: Db;
  sealer: Sealer;
  adminToken: AdminToken;
  publicUrl: PublicUrl;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  blobs: BlobStore;
  ingestor: Ingestor;
  /** Lakeport's own DuckDB read path (OData). */
  reader: RowReader;
  /** Local scratch space for uploads in flight and downloads. */
  scratchDir: string;
  analyzer: SqlAnalyzer;
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
  };
}

export interface AppOptions {
  logger?: FastifyServerOptions['logger'];
  /** Run periodic upkeep (purging workspaces past their grace window); on in `lakeport serve`. */
  backgroundTasks?: boolean;
  /** Run query jobs in this process (`deps.jobs.workers` at once). */
  workers?: boolean;
  /**
   * Fastify's `trustProxy` (`LAKEPORT_TRUST_PROXY`): which proxies' X-Forwarded-For to believe, so
   * `request.ip` — the source address that failed-attempt throttling counts by — is the client's.
   */
  trustProxy?: FastifyServerOptions['trustProxy'];
}

const PURGE_INTERVAL_MS = 60_000;

/** The services behind the routes, for the CLI, background work and tests. */
export interface LakeportServices {
  auth: AuthService;
  authz: Authorizer;
  catalog: Catalog;
  policy: PolicyService;
  accounts: AccountService;
  workspaces: WorkspaceService;
  uploads: UploadService;
  jobs: JobsService;
  workers: WorkerPool;
}

declare module 'fastify' {
  interface FastifyInstance {
    lakeport: LakeportServices;
  }
}

/** The seven service prefixes of the runtime contract. */
export const SERVICE_PREFIXES = ['/auth', '/upload', '/jobs', '/billing', '/control', '/policy', '/odata'] as const;

const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-admin-token"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

export async function buildApp(deps: AppDeps, options: AppOptions = {}): Promise<FastifyInstance> {
  const logger = options.logger === undefined ? false : options.logger;
  const app = Fastify({
    ...requestIdOptions,
    trustProxy: options.trustProxy ?? false,
    logger: logger && typeof logger === 'object' ? { redact: REDACTED_PATHS, ...logger } : logger,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  registerInputGuards(app);
  await app.register(cookie);
  await app.register(formbody);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.decorateRequest('principal', null);

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  const auth = await createAuthService({
    db: deps.db,
    sealer: deps.sealer,
    adminToken: deps.adminToken,
    publicUrl: deps.publicUrl,
    accessTokenTtlSeconds: deps.accessTokenTtlSeconds,
    refreshTokenTtlDays: deps.refreshTokenTtlDays,
    billingAccountOf: (identity) => accounts.accounts.billingAccountOf(identity),
  });
  // Before any service's routes, so a source guessing the admin token is held back everywhere.
  app.addHook('onRequest', auth.adminTokenGuard);
  const authz = new Authorizer(new PolicyGrantSource(deps.db));
  const catalog = new Catalog(deps.db);
  const policy = createPolicyService({
    db: deps.db,
    authz,
    verifier: auth.verifier,
    adminToken: deps.adminToken,
    directory: {
      workspace: async (name) => {
        const record = await accounts.records.get(name);
        return record && !record.deleted_at ? { billingAccount: record.billing_account } : undefined;
      },
      isActiveBillingAdmin: (identity, accountId) => accounts.accounts.isActiveBillingAdmin(identity, accountId),
      datasets: async (workspace) => (await catalog.listDatasets(workspace)).map((d) => ({ collection: d.collection, name: d.name, kind: d.kind })),
    },
  });
  const accounts = createAccountsService({
    db: deps.db,
    verifier: auth.verifier,
    authz,
    namespaces: catalogNamespaces(catalog),
    genesis: async (workspace, grants, caller) =>
      void (await policy.policies.genesis({ kind: 'identity', identity: caller.identity }, workspace, grants)),
    lake: {
      removeWorkspace: async (workspace, files) => {
        for (const key of files) await deps.blobs.delete(key);
        await deps.blobs.deletePrefix(`lake/${workspace}/`);
      },
    },
    log: app.log.child({ module: 'accounts' }),
  });
  const upload = createUploadService({
    db: deps.db,
    catalog,
    authz,
    ingestor: deps.ingestor,
    blobs: deps.blobs,
    verifier: auth.verifier,
    scratchDir: deps.scratchDir,
    log: app.log.child({ module: 'upload' }),
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
    baseUrl: () => deps.publicUrl.service('/jobs'),
    timeoutMs: deps.jobs.timeoutMs,
    sandbox: { memoryLimit: deps.jobs.memoryLimit, threads: deps.jobs.threads, tempDirectory: path.join(deps.scratchDir, 'spill') },
    isolation: deps.jobs.isolation ?? 'inline',
    memoryBudgetBytes: deps.jobs.memoryBudgetBytes,
    results: deps.jobs.results,
    log: app.log.child({ module: 'jobs' }),
    worker: { concurrency: Math.max(1, deps.jobs.workers), perIdentity: deps.jobs.perIdentity ?? Math.max(1, deps.jobs.workers) },
    external: deps.jobs.external,
    statements: {
      policy: policy.policies,
      sealer: deps.sealer,
      directory: {
        workspace: async (name) => {
          const record = await accounts.records.get(name);
          return record && { billingAccount: record.billing_account, deleted: record.deleted_at !== null };
        },
      },
    },
  });
  /** A service under its prefix, with its own OpenAPI document at `<prefix>/openapi.json`. */
  const mount = (prefix: string, title: string, description: string, ...plugins: FastifyPluginAsync[]) =>
    app.register(
      async (service) => {
        await serviceDocs(service, { title: `Lakeport ${title}`, description });
        for (const plugin of plugins) await service.register(plugin);
      },
      { prefix },
    );
  await mount(AUTH_PREFIX, 'authentication service', 'OAuth 2.0 tokens, JWKS and client credentials.', auth.routes);
  await app.register(auth.rootWellKnown);
  await mount('/billing', 'account service (billing)', 'Accounts, members, invoices and workspaces.', accounts.billingRoutes);
  await mount('/control', 'account service (control)', 'Accounts, members, invoices, workspaces and guards.', accounts.controlRoutes, policy.genesisRoute('accounts'));
  await mount('/upload', 'upload service', 'Schema contracts, streamed writes and atomic commits.', upload.routes);
  await mount('/jobs', 'query job service', 'Asynchronous SQL on DuckDB: jobs, results, downloads, variables and statement check.', jobs.routes);
  await mount('/policy', 'access policy service', 'Access policies per workspace.', policy.routes);
  const odata = createODataService({
    catalog,
    authz,
    blobs: deps.blobs,
    reader: deps.reader,
    verifier: auth.verifier,
    clients: auth.tokens,
    baseUrl: () => deps.publicUrl.service('/odata'),
    workspaceActive: async (name) => {
      const record = await accounts.records.get(name);
      return record !== undefined && !record.deleted_at;
    },
    db: deps.db,
    log: app.log.child({ module: 'odata' }),
  });
  await mount('/odata', 'OData service', 'OData v4 over every dataset the caller may read, for Power BI, Excel and scripts.', odata.routes);

  app.decorate('lakeport', { auth, authz, catalog, policy: policy.policies, accounts: accounts.accounts, workspaces: accounts.workspaces, uploads: upload.uploads, jobs: jobs.jobs, workers: jobs.pool });
  if (options.workers && deps.jobs.workers > 0) {
    app.addHook('onReady', async () => jobs.pool.start());
    app.addHook('onClose', async () => jobs.pool.stop());
  }

  if (options.backgroundTasks) {
    const purge = setInterval(() => {
      accounts.workspaces.purgeExpired().then(
        (names) => names.length > 0 && app.log.info({ workspaces: names }, 'purged workspaces past their grace window'),
        (error: unknown) => app.log.error({ err: error }, 'workspace purge failed'),
      );
      upload.uploads.sweepExpired().then(
        (n) => n > 0 && app.log.info({ contracts: n }, 'swept expired upload contracts'),
        (error: unknown) => app.log.error({ err: error }, 'contract sweep failed'),
      );
      jobs.jobs.sweepExpiredResults().then(
        (n) => n > 0 && app.log.info({ results: n }, 'removed job results past their retention'),
        (error: unknown) => app.log.error({ err: error }, 'result sweep failed'),
      );
    }, PURGE_INTERVAL_MS);
    purge.unref();
    app.addHook('onClose', async () => clearInterval(purge));
  }

  return app;
}
