import crypto from 'node:crypto';
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
/** The CSRF cookie set beside it: readable by the page, which echoes it in `CSRF_HEADER` (double submit). */
export const CSRF_COOKIE = 'lakeport_csrf';
export const CSRF_HEADER = 'x-csrf-token';

type CookieReply = Pick<FastifyReply, 'setCookie' | 'clearCookie'>;

/**
 * Sets the browser session's cookies: the HttpOnly access token and a fresh CSRF value the page can
 * read (not HttpOnly; SameSite=Strict), both for `maxAgeSeconds`.
 */
export function setSessionCookies(reply: CookieReply, accessToken: string, maxAgeSeconds: number, secure: boolean): void {
  reply.setCookie(ACCESS_TOKEN_COOKIE, accessToken, { httpOnly: true, secure, sameSite: 'lax', path: '/', maxAge: maxAgeSeconds });
  reply.setCookie(CSRF_COOKIE, crypto.randomBytes(32).toString('base64url'), { httpOnly: false, secure, sameSite: 'strict', path: '/', maxAge: maxAgeSeconds });
}

export function clearSessionCookies(reply: CookieReply, secure: boolean): void {
  reply.clearCookie(ACCESS_TOKEN_COOKIE, { path: '/', httpOnly: true, secure, sameSite: 'lax' });
  reply.clearCookie(CSRF_COOKIE, { path: '/', httpOnly: false, secure, sameSite: 'strict' });
}

/** `scheme://host[:port]` normalized (default ports dropped), or undefined for what is not a URL. */
const originOf = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
};

const equalSecrets = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
};

/**
 * Why a state-changing request may not ride on the access cookie, or undefined when it may: it must
 * come from this origin (`Origin` naming the request's own scheme and host) and carry `X-CSRF-Token`
 * equal to the CSRF cookie. Another site can make a browser send the cookies, but neither read the
 * CSRF cookie nor forge `Origin`.
 */
function csrfRefusal(request: FastifyRequest, cookies: Record<string, string | undefined>): string | undefined {
  const origin = request.headers.origin;
  if (!origin) return 'the request has no Origin header';
  if (originOf(origin) === undefined || originOf(origin) !== originOf(`${request.protocol}://${request.host}`)) return `Origin ${origin} is not this server's`;
  const header = request.headers[CSRF_HEADER];
  const expected = cookies[CSRF_COOKIE];
  if (typeof header !== 'string' || header === '') return `the ${CSRF_HEADER} header is missing`;
  if (!expected || !equalSecrets(header, expected)) return `the ${CSRF_HEADER} header does not match the ${CSRF_COOKIE} cookie`;
  return undefined;
}

function challenge(error?: string, description?: string): Record<string, string> {
  const params = ['realm="lakeport"'];
  if (error) params.push(`error="${error}"`);
  if (description) params.push(`error_description="${description.replace(/["\\]/g, '')}"`);
  return { 'www-authenticate': `Bearer ${params.join(', ')}` };
}

/**
 * The bearer token of a request: the Authorization header, else the HttpOnly access-token cookie —
 * for safe methods (GET/HEAD) as it is, for any other method only with CSRF proof (`csrfRefusal`;
 * without it 403 CSRF_REJECTED), so another site can never make a browser change state.
 */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer\s+([^\s]+)\s*$/i.exec(header);
    if (!match) throw appError('INVALID_TOKEN', 'Authorization header must be "Bearer <token>"', { headers: challenge('invalid_request') });
    return match[1];
  }
  const cookies = (request as FastifyRequest & { cookies?: Record<string, string | undefined> }).cookies ?? {};
  const cookie = cookies[ACCESS_TOKEN_COOKIE];
  if (!cookie) return undefined;
  if (request.method === 'GET' || request.method === 'HEAD') return cookie;
  const refusal = csrfRefusal(request, cookies);
  if (refusal) throw appError('CSRF_REJECTED', `A state-changing request authenticated by the session cookie needs CSRF proof: ${refusal}`);
  return cookie;
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
