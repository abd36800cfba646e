import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

/**
 * Registers an OpenAPI document for one service, covering only the routes registered in this
 * (encapsulated) context, and serves it at `<prefix>/openapi.json`.
 */
export async function serviceDocs(app: FastifyInstance, info: { title: string; description: string }) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: info.title, description: info.description, version: '1' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
    },
    transform: jsonSchemaTransform,
    hideUntagged: false,
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
