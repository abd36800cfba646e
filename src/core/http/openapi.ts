import swagger from '@fastify/swagger';
import type { FastifyInstance, FastifyReply, FastifySchema } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';

/** The body of every error but a validation error (some add fields: OAuth's `error`, the place of a refused value). */
export const ErrorBody = z
  .looseObject({ detail: z.string(), code: z.string().describe('A stable error code, e.g. NOT_FOUND or JOB_NOT_FOUND') })
  .meta({ id: 'ErrorBody' });

/** A 422: FastAPI's HTTPValidationError. */
export const ValidationErrorBody = z
  .object({
    detail: z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])), msg: z.string(), type: z.string() })),
  })
  .meta({ id: 'HTTPValidationError' });

/** Media type → schema of a body that is not JSON the serializer writes: a file, XML, a stream. */
export type Media = Record<string, z.ZodType>;

/** A file or text of any bytes. */
export const BinaryBody = z.string().meta({ format: 'binary' });

/**
 * A response whose body is sent as a string or a stream (never through the serializer), described by its
 * media types: `response: { 200: mediaResponse('The EDMX', { 'application/xml': z.string() }) }`.
 */
export function mediaResponse(description: string, media: Media, headers?: Record<string, { description: string; schema: object }>) {
  return { description, media, headers, content: Object.fromEntries(Object.entries(media).map(([type, schema]) => [type, { schema }])) };
}

/**
 * Answers `body` as JSON text, so the serializer never walks it (a page of results can be large): the
 * route documents it with `mediaResponse(…, { 'application/json': schema })`, and `schema` types it.
 */
export function sendJsonText<T extends z.ZodType>(reply: FastifyReply, _schema: T, body: z.input<T>) {
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(body));
}

declare module 'fastify' {
  interface FastifySchema {
    /** A request body the route reads itself (multipart, a streamed file): described in the OpenAPI document only. */
    bodyMedia?: Media;
  }
}

type TransformInput = Parameters<typeof jsonSchemaTransform>[0];
type MediaEntry = ReturnType<typeof mediaResponse>;

const isMediaEntry = (entry: unknown): entry is MediaEntry => typeof entry === 'object' && entry !== null && 'content' in entry && !(entry instanceof z.ZodType);

/** A schema converted as the library converts a request body's or a response's (named schemas become references). */
function toJsonSchema(input: TransformInput, part: 'body' | 'response', schema: z.ZodType): object {
  const converted = jsonSchemaTransform({ ...input, schema: part === 'body' ? { body: schema } : { response: { 200: schema } } }).schema as Record<string, Record<string, unknown>>;
  const { $schema: _schema, $id: _id, ...json } = part === 'body' ? converted.body : (converted.response[200] as Record<string, unknown>);
  return json;
}

const mediaContent = (input: TransformInput, part: 'body' | 'response', media: Media) =>
  Object.fromEntries(Object.entries(media).map(([type, schema]) => [type, { schema: toJsonSchema(input, part, schema) }]));

const ERROR_RESPONSES = {
  422: { schema: ValidationErrorBody, description: 'The request is invalid: one entry per problem, with its location' },
  '4xx': { schema: ErrorBody, description: 'Refused: not authenticated, not allowed, not found, in conflict…' },
  '5xx': { schema: ErrorBody, description: 'Server error' },
};

/**
 * The error answers of a route: `{detail, code}` for any 4xx and 5xx, a 422 too when it takes input.
 * A service answering in another shape (`errorBody`: the Iceberg REST catalog's) has it for both and no 422.
 */
function errorResponses(schema: FastifySchema, errorBody?: z.ZodType) {
  if (errorBody) return { '4xx': { ...ERROR_RESPONSES['4xx'], schema: errorBody }, '5xx': { ...ERROR_RESPONSES['5xx'], schema: errorBody } };
  const takesInput = ['body', 'bodyMedia', 'querystring', 'params', 'headers'].some((part) => schema[part as keyof FastifySchema] !== undefined);
  const { 422: invalid, ...others } = ERROR_RESPONSES;
  return takesInput ? { 422: invalid, ...others } : others;
}

/** jsonSchemaTransform, plus every route's error answers, media-typed bodies and documented-only request bodies. */
const transformWith = (errorBody?: z.ZodType) => (input: TransformInput) => {
  const schema = (input.schema ?? {}) as FastifySchema & { hide?: boolean };
  if (schema.hide) return jsonSchemaTransform(input);
  const { response = {}, bodyMedia, ...rest } = schema as FastifySchema & { response?: Record<string, unknown> };
  const entries = Object.entries(response);
  const json = Object.fromEntries(entries.filter(([, entry]) => !isMediaEntry(entry)));
  const errors = errorResponses(schema, errorBody);
  const errorSchemas = Object.fromEntries(Object.entries(errors).map(([status, error]) => [status, error.schema]));
  const result = jsonSchemaTransform({ ...input, schema: { ...rest, response: { ...errorSchemas, ...json } } });
  const transformed = result.schema as Record<string, unknown> & { response: Record<string, Record<string, unknown>> };
  for (const [status, error] of Object.entries(errors)) transformed.response[status].description = error.description;
  for (const [status, entry] of entries) {
    if (isMediaEntry(entry)) {
      transformed.response[status] = { description: entry.description, ...(entry.headers ? { headers: entry.headers } : {}), content: mediaContent(input, 'response', entry.media) };
    }
  }
  if (bodyMedia) transformed.body = { content: mediaContent(input, 'body', bodyMedia) };
  return result;
};

const referencedSchemas = (value: unknown) => [...JSON.stringify(value ?? null).matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);

/**
 * jsonSchemaTransformObject, keeping only the named schemas this service's document refers to (the
 * registry is shared by all services), without their JSON Schema `$schema` and `$id`.
 */
function transformObject(input: Parameters<typeof jsonSchemaTransformObject>[0]) {
  const document = jsonSchemaTransformObject(input);
  const { components = {}, paths } = document as { components?: { schemas?: Record<string, Record<string, unknown>> }; paths?: unknown };
  const all = components.schemas ?? {};
  const used = new Map<string, object>();
  const pending = referencedSchemas(paths);
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (used.has(name)) continue;
    const { $schema: _schema, $id: _id, ...schema } = all[name];
    used.set(name, schema);
    pending.push(...referencedSchemas(schema));
  }
  return Object.assign(document, { components: { ...components, schemas: Object.fromEntries([...used].sort(([a], [b]) => a.localeCompare(b))) } });
}

/**
 * Registers an OpenAPI document for one service, covering only the routes registered in this
 * (encapsulated) context, and serves it at `<prefix>/openapi.json`.
 */
export async function serviceDocs(app: FastifyInstance, info: { title: string; description: string; errorBody?: z.ZodType }) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: info.title, description: info.description, version: '1' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
    },
    transform: transformWith(info.errorBody),
    transformObject,
    hideUntagged: false,
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
