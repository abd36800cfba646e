import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../../core/authz/index.ts';
import { AppError, isAppError } from '../../core/errors/index.ts';
import { authenticateScoped, type TokenVerifier } from '../../core/http/index.ts';
import { odataError } from './errors.ts';

/** Checks a machine credential's client_id and secret (as the token endpoint does, throttled per client and source address). */
export interface ClientAuthenticator {
  authenticateClient(clientId: string, clientSecret: string, sourceAddress: string | undefined): Promise<{
    client_id: string;
    credential_id: string;
    scopes: string[];
    permissions: Principal['permissions'];
    expires_at: Date | null;
  }>;
}

/** BI tools speak either scheme, so a 401 offers both. */
const CHALLENGE = { 'www-authenticate': 'Bearer realm="lakeport", Basic realm="lakeport", charset="UTF-8"' };
const SCOPE = 'odata';

function unauthorized(detail: string, code: 'UNAUTHORIZED' | 'INVALID_TOKEN' | 'INVALID_CREDENTIALS' = 'UNAUTHORIZED'): AppError {
  return odataError(code, detail, { headers: CHALLENGE });
}

async function basicPrincipal(clients: ClientAuthenticator, encoded: string, sourceAddress: string | undefined): Promise<Principal> {
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0 || decoded.includes('\u0000')) throw unauthorized('Basic credentials must be base64("<client_id>:<credential secret>"), without NUL characters', 'INVALID_CREDENTIALS');
  let credential;
  try {
    credential = await clients.authenticateClient(decoded.slice(0, colon), decoded.slice(colon + 1), sourceAddress);
  } catch (error) {
    if (error instanceof AppError && error.status === 401) throw unauthorized('Unknown client, wrong secret, or a revoked or expired credential', 'INVALID_CREDENTIALS');
    // Throttled (429 + Retry-After): Lakeport's {detail, code}, without the token endpoint's OAuth fields.
    if (isAppError(error, 'TOO_MANY_REQUESTS')) throw odataError('TOO_MANY_REQUESTS', error.message, { headers: error.headers });
    throw error;
  }
  if (!credential.scopes.includes(SCOPE)) throw odataError('INSUFFICIENT_SCOPE', `This credential lacks the '${SCOPE}' scope`);
  return {
    identity: credential.client_id,
    scopes: credential.scopes,
    permissions: credential.permissions,
    credentialId: credential.credential_id,
    tokenId: `basic:${credential.credential_id}`,
    expiresAt: credential.expires_at ?? new Date(8.64e15),
  };
}

/**
 * The OData services' onRequest hook: a bearer access token with the odata scope, or HTTP Basic
 * with a machine credential's client_id and secret (what Power BI and Excel can store).
 */
export function requireODataAuth(verifier: TokenVerifier, clients: ClientAuthenticator) {
  // BI tools send Basic credentials with every page: each is authenticated as the token endpoint
  // does it, which keeps what it verified (docs/auth.md, "Performance and caching").
  return async function authenticate(request: FastifyRequest, _reply: FastifyReply) {
    const header = request.headers.authorization;
    const basic = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    if (basic) {
      request.principal = await basicPrincipal(clients, basic[1], request.ip);
      return;
    }
    try {
      request.principal = await authenticateScoped(verifier, request, SCOPE);
    } catch (error) {
      if (isAppError(error, 'UNAUTHORIZED', 'INVALID_TOKEN')) throw unauthorized(error.message, error.code);
      throw error;
    }
  };
}
