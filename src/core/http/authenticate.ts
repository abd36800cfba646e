import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../authz/principal.ts';
import { appError } from '../errors/index.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** Verifies an access token; throws `InvalidTokenError` for anything that must not authenticate. */
export interface TokenVerifier {
  verify(token: string): Promise<Principal>;
}

export class InvalidTokenError extends Error {}

/** The access-token cookie that `POST /auth/token?set_cookie=true` sets. */
export const ACCESS_TOKEN_COOKIE = 'lakeport_access_token';

function challenge(error?: string, description?: string): Record<string, string> {
  const params = ['realm="lakeport"'];
  if (error) params.push(`error="${error}"`);
  if (description) params.push(`error_description="${description.replace(/["\\]/g, '')}"`);
  return { 'www-authenticate': `Bearer ${params.join(', ')}` };
}

/**
 * The bearer token of a request: the Authorization header, or for safe methods (GET/HEAD) the
 * HttpOnly access-token cookie, so a state-changing request can never ride on a browser cookie.
 */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer\s+([^\s]+)\s*$/i.exec(header);
    if (!match) throw appError('INVALID_TOKEN', 'Authorization header must be "Bearer <token>"', { headers: challenge('invalid_request') });
    return match[1];
  }
  if (request.method === 'GET' || request.method === 'HEAD') {
    const cookie = (request as FastifyRequest & { cookies?: Record<string, string | undefined> }).cookies?.[ACCESS_TOKEN_COOKIE];
    if (cookie) return cookie;
  }
  return undefined;
}

export async function authenticateRequest(verifier: TokenVerifier, request: FastifyRequest): Promise<Principal> {
  const token = bearerToken(request);
  if (!token) throw appError('UNAUTHORIZED', 'Not authenticated: send "Authorization: Bearer <access token>"', { headers: challenge() });
  try {
    return await verifier.verify(token);
  } catch (error) {
    if (error instanceof InvalidTokenError) {
      throw appError('INVALID_TOKEN', `Invalid access token: ${error.message}`, { headers: challenge('invalid_token', error.message) });
    }
    throw error;
  }
}

/** Authenticates the request and, when `scope` is given, requires the token to carry it. */
export async function authenticateScoped(verifier: TokenVerifier, request: FastifyRequest, scope?: string): Promise<Principal> {
  const principal = await authenticateRequest(verifier, request);
  if (scope && !principal.scopes.includes(scope)) {
    throw appError('INSUFFICIENT_SCOPE', `This token lacks the '${scope}' scope`, {
      headers: challenge('insufficient_scope', `requires scope ${scope}`),
    });
  }
  return principal;
}

/**
 * An onRequest hook that authenticates (see `authenticateScoped`) and sets `request.principal`;
 * it runs before the body is parsed, so an unauthenticated caller learns nothing from validation.
 */
export function requireAuth(verifier: TokenVerifier, scope?: string): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async function authenticate(request: FastifyRequest, _reply: FastifyReply) {
    request.principal = await authenticateScoped(verifier, request, scope);
  };
}

/** The principal set by `requireAuth`; a route behind it always has one. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw appError('UNAUTHORIZED', 'Not authenticated', { headers: challenge() });
  return request.principal;
}
