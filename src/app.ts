import path from 'node:path';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { Authorizer, PolicyGrantSource } from './core/authz/index.ts';
import { Catalog } from './core/catalog/index.ts';
import type { Sealer } from './core/crypto/index.ts';
import type { Db } from './core/db/index.ts';
import { registerErrorHandling } from './core/errors/index.ts';
import { requestIdOptions, serviceDocs, type AdminToken, type PublicUrl } from './core/http/index.ts';
import type { Ingestor, SqlAnalyzer } from './core/engine/index.ts';
import type { BlobStore } from './core/storage/index.ts';
import { catalogNamespaces, createAccountsService, type AccountService, type WorkspaceService } from './services/accounts/index.ts';
import { AUTH_PREFIX, createAuthService, type AuthService } from './services/auth/index.ts';
import { createPolicyService, type PolicyService } from './services/policy/index.ts';
import { createJobsService, type JobsService, type WorkerPool } from './services/jobs/index.ts';
import { createUploadService, type UploadService } from './services/upload/index.ts';

export interface AppDeps {
  db: Db;
  sealer: Sealer;
  adminToken: AdminToken;
  publicUrl: PublicUrl;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  blobs: BlobStore;
  ingestor: Ingestor;
  /** Local scratch space for uploads in flight and downloads. */
  scratchDir: string;
  analyzer: SqlAnalyzer;
  jobs: { timeoutMs: number; workers: number; memoryLimit: string; threads: number };
}

export interface AppOptions {
  logger?: FastifyServerOptions['logger'];
  /** Run periodic upkeep (purging workspaces past their grace window); on in `lakeport serve`. */
  backgroundTasks?: boolean;
  /** Run query jobs in this process (`deps.jobs.workers` at once). */
  workers?: boolean;
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

/** Services whose routes are not built yet: mounted with their (empty) OpenAPI document and nothing else. */
const UNBUILT_SERVICES: { prefix: string; title: string; description: string }[] = [
  { prefix: '/odata', title: 'Lakeport OData service', description: 'OData v4 over every dataset.' },
];

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
    logger: logger && typeof logger === 'object' ? { redact: REDACTED_PATHS, ...logger } : logger,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
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
  });
  const upload = createUploadService({
    db: deps.db,
    catalog,
    authz,
    ingestor: deps.ingestor,
    blobs: deps.blobs,
    verifier: auth.verifier,
    scratchDir: deps.scratchDir,
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
    worker: { concurrency: Math.max(1, deps.jobs.workers) },
  });
  await app.register(
    async (service) => {
      await serviceDocs(service, { title: 'Lakeport authentication service', description: 'OAuth 2.0 tokens, JWKS and client credentials.' });
      await service.register(auth.routes);
    },
    { prefix: AUTH_PREFIX },
  );
  await app.register(auth.rootWellKnown);

  await app.register(
    async (service) => {
      await serviceDocs(service, { title: 'Lakeport account service (billing)', description: 'Accounts, members, invoices and workspaces.' });
      await service.register(accounts.billingRoutes);
    },
    { prefix: '/billing' },
  );
  await app.register(
    async (service) => {
      await serviceDocs(service, { title: 'Lakeport account service (control)', description: 'Accounts, members, invoices, workspaces and guards.' });
      await service.register(accounts.controlRoutes);
      await service.register(policy.genesisRoute('accounts'));
    },
    { prefix: '/control' },
  );
  await app.register(
    async (service) => {
      await serviceDocs(service, { title: 'Lakeport upload service', description: 'Schema contracts, streamed writes and atomic commits.' });
      await service.register(upload.routes);
    },
    { prefix: '/upload' },
  );
  await app.register(
    async (service) => {
      await serviceDocs(service, { title: 'Lakeport query job service', description: 'Asynchronous SQL on DuckDB: jobs, results, downloads, variables and statement check.' });
      await service.register(jobs.routes);
    },
    { prefix: '/jobs' },
  );
  await app.register(
    async (service) => {
      await serviceDocs(service, { title: 'Lakeport access policy service', description: 'Access policies per workspace.' });
      await service.register(policy.routes);
    },
    { prefix: '/policy' },
  );

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
    }, PURGE_INTERVAL_MS);
    purge.unref();
    app.addHook('onClose', async () => clearInterval(purge));
  }

  for (const svc of UNBUILT_SERVICES) {
    await app.register(async (service) => serviceDocs(service, svc), { prefix: svc.prefix });
  }
  return app;
}
