import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { ZodType } from 'zod';
import { serviceDocs } from './openapi.ts';

/** One API of a service: its routes under a prefix, documented at `<prefix>/openapi.json`. */
export interface ServiceApi {
  prefix: string;
  title: string;
  description: string;
  routes: FastifyPluginAsync[];
  /** The body of its 4xx and 5xx answers when not Lakeport's `{detail, code}` (the Iceberg REST catalog's); then it answers no 422 either. */
  errorBody?: ZodType;
}

/**
 * What every service factory returns besides the objects other services use: where its routes go
 * and the work it does in the background. The composition root knows no more of a service than this.
 */
export interface ServiceModule {
  apis: ServiceApi[];
  /** Starts long-running work (query workers) once the app is ready; only in processes that run workers. */
  start?(): Promise<void>;
  /** Stops it when the app closes. */
  stop?(): Promise<void>;
  /** Writes what it holds in memory when the app closes (every process). */
  close?(): Promise<void>;
  /** Housekeeping run every minute by processes that do background tasks (purges, sweeps); logs its own outcome, never rejects. */
  upkeep?(): Promise<void>;
}

/** A service factory's result, checked against ServiceModule with its other members' types kept. */
export const serviceModule = <T extends ServiceModule>(module: T): T => module;

/** Registers an API under its prefix, with an OpenAPI document covering only its routes. */
export async function mountApi(app: FastifyInstance, api: ServiceApi): Promise<void> {
  await app.register(
    async (service) => {
      await serviceDocs(service, { title: `Lakeport ${api.title}`, description: api.description, errorBody: api.errorBody });
      for (const plugin of api.routes) await service.register(plugin);
    },
    { prefix: api.prefix },
  );
}
