import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AppError, RequestValidationError, type ErrorCode } from './app-error.ts';
import { isDiskFullError } from '../files.ts';
import { scrubServerPaths } from './server-paths.ts';

/** One entry of FastAPI's HTTPValidationError body. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

const LOCATION: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

export function validationErrorBody(issues: ValidationIssue[]) {
  return { detail: issues };
}

function issueType(keyword: string, params: Record<string, unknown>): string {
  switch (keyword) {
    case 'invalid_type':
      return `${String(params.expected ?? 'value')}_type`;
    case 'too_small':
      return params.origin === 'string' ? 'string_too_short' : params.origin === 'array' ? 'too_short' : 'greater_than_equal';
    case 'too_big':
      return params.origin === 'string' ? 'string_too_long' : params.origin === 'array' ? 'too_long' : 'less_than_equal';
    case 'invalid_value':
      return 'enum';
    case 'invalid_format':
      return 'string_pattern_mismatch';
    case 'unrecognized_keys':
      return 'extra_forbidden';
    default:
      return keyword;
  }
}

function valueAt(root: unknown, path: (string | number)[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[key];
  }
  return value;
}

function toLoc(context: string | undefined, instancePath: string): (string | number)[] {
  const segments = instancePath
    .split('/')
    .filter((s) => s !== '')
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  return [LOCATION[context ?? 'body'] ?? context ?? 'body', ...segments];
}

/** Installs the one error handler: FastAPI-style 422s, `{detail, code}` for everything else, never a stack trace. */
export function registerErrorHandling(app: FastifyInstance) {
  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send({ detail: `No route ${request.method} ${request.url.split('?')[0]}`, code: 'NOT_FOUND' });
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof AppError) {
      // A 5xx says something on the server side failed: the log has it under the request's id.
      if (error.status >= 500) request.log.error({ err: error, code: error.code }, 'request failed on the server side');
      reply.headers(error.headers);
      const extra = Object.fromEntries(Object.entries(error.extra).map(([k, v]) => [k, typeof v === 'string' ? scrubServerPaths(v) : v]));
      return reply.status(error.status).send({ ...extra, detail: scrubServerPaths(error.message), code: error.code });
    }
    if (error instanceof RequestValidationError) {
      return reply.status(422).send(validationErrorBody(error.issues));
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const context = error.validationContext ?? 'body';
      const input = (request as unknown as Record<string, unknown>)[context === 'querystring' ? 'query' : context];
      const issues = error.validation.map((v): ValidationIssue => {
        const loc = toLoc(context, v.instancePath);
        // FastAPI reports an absent field as `missing`, whatever type it should have had.
        if (valueAt(input, loc.slice(1)) === undefined) return { loc, msg: 'Field required', type: 'missing' };
        return { loc, msg: v.message ?? 'Invalid value', type: issueType(v.keyword, v.params as Record<string, unknown>) };
      });
      return reply.status(422).send(validationErrorBody(issues));
    }
    if (error.validation) {
      const issues = error.validation.map((v) => ({
        loc: toLoc(error.validationContext, v.instancePath),
        msg: v.message ?? 'Invalid value',
        type: v.keyword,
      }));
      return reply.status(422).send(validationErrorBody(issues));
    }
    if (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError) {
      return reply
        .status(422)
        .send(validationErrorBody([{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }]));
    }
    if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
      return reply.status(422).send(validationErrorBody([{ loc: ['body'], msg: 'Field required', type: 'missing' }]));
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = CLIENT_ERROR_CODES[status] ?? 'BAD_REQUEST';
      return reply.status(status).send({ detail: scrubServerPaths(error.message), code });
    }
    if (isDiskFullError(error)) {
      request.log.error({ err: error }, 'the disk is full');
      return reply.status(507).send({ detail: "The server's disk is full: what this request was writing is not kept. Retry once there is room", code: 'DISK_FULL' });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.status(500).send({ detail: 'Internal server error', code: 'INTERNAL_ERROR' });
  });
}

/**
 * Fastify's `frameworkErrors`: what its router refuses before any route runs (a path that does not
 * decode, `'/%'`; a parameter too long), in Lakeport's shape rather than Fastify's own body.
 */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
  void reply.status(status).send({ detail: scrubServerPaths(error.message), code: CLIENT_ERROR_CODES[status] ?? 'BAD_REQUEST' });
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses before Fastify sees a request (a
 * raw, not percent-encoded, non-ASCII character in the URL; a malformed request line; headers too
 * large; a request that took too long), answered in Lakeport's shape on the bare socket.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  // The connection is gone: there is nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let body: { detail: string; code: ErrorCode };
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    body = { detail: 'The request was not received in time', code: 'REQUEST_TIMEOUT' };
  } else if (error.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    body = { detail: 'The request headers are over the server\'s limit', code: 'HEADERS_TOO_LARGE' };
  } else if (error.code === 'HPE_INVALID_URL') {
    body = {
      detail: "The URL holds a character that must be percent-encoded (a space, or a non-ASCII character such as ü: send $filter=city eq 'Z%C3%BCrich')",
      code: 'BAD_REQUEST',
    };
  } else {
    body = { detail: 'The request is not valid HTTP', code: 'BAD_REQUEST' };
  }
  if (socket.writable) {
    const text = JSON.stringify(body);
    const reason = status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Bad Request';
    socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(text)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${text}`);
  }
  socket.destroy(error);
}

const CLIENT_ERROR_CODES: Record<number, ErrorCode> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  408: 'REQUEST_TIMEOUT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
};
