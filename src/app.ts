import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Sealer } from './core/crypto/index.ts';
import type { Db } from './core/db/index.ts';
import { registerErrorHandling } from './core/errors/index.ts';
import { requestIdOptions, serviceDocs, type AdminToken, type PublicUrl } from './core/http/index.ts';
import { AUTH_PREFIX, createAuthService } from './services/auth/index.ts';

export interface AppDeps {
  db: Db;
  sealer: Sealer;
  adminToken: AdminToken;
  publicUrl: PublicUrl;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
}

export interface AppOptions {
  logger?: FastifyServerOptions['logger'];
}

/** The seven service prefixes of the runtime contract. */
export const SERVICE_PREFIXES = ['/auth', '/upload', '/jobs', '/billing', '/control', '/policy', '/odata'] as const;

/** Services whose routes are not built yet: mounted with their (empty) OpenAPI document and nothing else. */
const UNBUILT_SERVICES: { prefix: string; title: string; description: string }[] = [
  { prefix: '/upload', title: 'Lakeport upload service', description: 'Schema contracts, streamed writes and atomic commits.' },
  { prefix: '/jobs', title: 'Lakeport query job service', description: 'Asynchronous SQL on DuckDB.' },
  { prefix: '/billing', title: 'Lakeport account service (billing)', description: 'Accounts, members and workspaces.' },
  { prefix: '/control', title: 'Lakeport account service (control)', description: 'Accounts, members, workspaces and controls.' },
  { prefix: '/policy', title: 'Lakeport access policy service', description: 'Access policies per workspace.' },
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
  });
  await app.register(
    async (service) => {
      await serviceDocs(service, { title: 'Lakeport authentication service', description: 'OAuth 2.0 tokens, JWKS and client credentials.' });
      await service.register(auth.routes);
    },
    { prefix: AUTH_PREFIX },
  );
  await app.register(auth.rootWellKnown);

  for (const svc of UNBUILT_SERVICES) {
    await app.register(async (service) => serviceDocs(service, svc), { prefix: svc.prefix });
  }
  return app;
}
