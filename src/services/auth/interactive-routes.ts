import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../core/errors/index.ts';
import { ACCESS_TOKEN_COOKIE, bearerToken, clearSessionCookies, setSessionCookies, type PublicUrl } from '../../core/http/index.ts';
import { sha256Hex } from '../../core/crypto/index.ts';
import { authError } from './errors.ts';
import type { InteractiveSignIn } from './interactive.ts';
import type { AuthRepo } from './repo.ts';
import { isWellFormedSecret, REFRESH_TOKEN_PREFIX } from './secrets.ts';
import type { AccessTokenVerifier, TokenService } from './tokens.ts';

/** The interactive session's refresh token: HttpOnly, only sent to /auth, never cross-site. */
export const REFRESH_TOKEN_COOKIE = 'lakeport_refresh_token';

export interface InteractiveRouteDeps {
  signIn: InteractiveSignIn;
  tokens: TokenService;
  verifier: AccessTokenVerifier;
  repo: AuthRepo;
  publicUrl: PublicUrl;
  refreshTokenTtlDays: number;
}

const LoginQuery = z.object({
  provider: z.string().max(32).describe('`idp_a` or `idp_b`: a configured identity provider'),
  return_to: z.string().max(4096).optional().describe('Where to go after signing in: a path on this server (`/…`); anything else means `/`'),
});

/** What the provider appends (RFC 6749 §4.1.2, RFC 9207 `iss`); openid-client reads the raw query. */
const CallbackQuery = z.looseObject({
  code: z.string().max(4096).optional(),
  state: z.string().max(512).optional(),
  iss: z.string().max(2048).optional(),
  error: z.string().max(256).optional(),
  error_description: z.string().max(2048).optional(),
});

const Redirect = z.null().describe('Redirect: see the Location header');

const ProvidersResponse = z.object({
  providers: z.array(z.object({ id: z.enum(['idp_a', 'idp_b']), name: z.string(), issuer: z.string(), login_url: z.string() })),
  redirect_uri: z.string(),
});

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A browser gets a plain page; a client that asked for JSON (and not HTML) gets `{detail, code}`. */
function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}

function htmlPage(title: string, message: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p><p><a href="/">Back</a></p></body></html>
`;
}

export const interactiveRoutes =
  (deps: InteractiveRouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { signIn, tokens, verifier, repo, publicUrl } = deps;
    const secure = () => publicUrl.value.startsWith('https:');

    const clearCookies = (reply: FastifyReply) => {
      clearSessionCookies(reply, secure());
      reply.clearCookie(REFRESH_TOKEN_COOKIE, { path: '/auth', httpOnly: true, secure: secure(), sameSite: 'strict' });
    };

    app.get(
      '/providers',
      { schema: { summary: 'The identity providers people can sign in with (interactive sign-in)', response: { 200: ProvidersResponse } } },
      async () => ({
        providers: signIn.list().map((p) => ({ ...p, login_url: `${publicUrl.service('/auth')}/login?provider=${p.id}` })),
        redirect_uri: signIn.redirectUri(),
      }),
    );

    app.get(
      '/login',
      { schema: { summary: 'Start an interactive sign-in: redirects (302) to the identity provider', querystring: LoginQuery, response: { 302: Redirect } } },
      async (request, reply) => {
        const url = await signIn.start(request.query.provider, request.query.return_to);
        return reply.header('cache-control', 'no-store').redirect(url.href, 302);
      },
    );

    app.get(
      '/callback',
      { schema: { summary: 'The identity provider returns here: completes the sign-in, sets the session cookies and redirects (302)', querystring: CallbackQuery, response: { 302: Redirect } } },
      async (request, reply) => {
        reply.header('cache-control', 'no-store');
        const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '';
        try {
          const signedIn = await signIn.complete(query);
          if (!signedIn.verdict.allowed) {
            throw authError('SIGN_IN_REFUSED', `Sign-in refused for '${signedIn.identity}': ${signedIn.verdict.reason}`, {
              extra: { reason_code: signedIn.verdict.code },
            });
          }
          const expiresAt = new Date(Date.now() + deps.refreshTokenTtlDays * 86_400_000);
          const credentialId = await signIn.createSession(signedIn, expiresAt);
          const issued = await tokens.issueInteractive(signedIn, credentialId, expiresAt);
          setSessionCookies(reply, issued.access_token, issued.expires_in, secure());
          reply.setCookie(REFRESH_TOKEN_COOKIE, issued.refresh_token!, {
            httpOnly: true,
            secure: secure(),
            sameSite: 'strict',
            path: '/auth',
            maxAge: deps.refreshTokenTtlDays * 86_400,
          });
          return reply.redirect(signedIn.returnTo, 302);
        } catch (error) {
          if (!(error instanceof AppError) || wantsJson(request)) throw error;
          const title = error.code === 'SIGN_IN_REFUSED' ? 'Sign-in refused' : 'Sign-in failed';
          // A browser's error page: HTML instead of the JSON error the schema's error handler writes.
          return (reply as FastifyReply).status(error.status).type('text/html; charset=utf-8').send(htmlPage(title, `${error.message} (${error.code})`));
        }
      },
    );

    app.post(
      '/logout',
      { schema: { summary: 'Sign out: ends the interactive session (or revokes the access cookie of a sign-in with a credential secret) and clears the cookies (204)', response: { 204: z.null().describe('Signed out') } } },
      async (request, reply) => {
        // The session: the refresh cookie (SameSite=Strict), else a bearer access token of it.
        let session: { clientId: string; credentialId: string } | undefined;
        const cookie = request.cookies[REFRESH_TOKEN_COOKIE];
        if (cookie && isWellFormedSecret(cookie, REFRESH_TOKEN_PREFIX)) {
          const row = await repo.findRefreshToken(sha256Hex(cookie));
          if (row?.session_id) session = { clientId: row.client_id, credentialId: row.credential_id };
        }
        if (!session && request.headers.authorization) {
          const token = bearerToken(request);
          const principal = token ? await verifier.verify(token).catch(() => undefined) : undefined;
          const row = principal ? await repo.findInteractiveSession(principal.credentialId) : undefined;
          if (principal && row) session = { clientId: principal.identity, credentialId: principal.credentialId };
        }
        if (session) await repo.revokeCredential(session.clientId, session.credentialId);
        // A sign-in with a credential secret (the console's): its access cookie is revoked, so a copy
        // of the cookie stops working at once here and elsewhere within LAKEPORT_AUTH_CACHE_SECONDS.
        const accessCookie = request.cookies[ACCESS_TOKEN_COOKIE];
        if (!session && accessCookie) await tokens.revoke(accessCookie, undefined, verifier);
        clearCookies(reply);
        return reply.status(204).header('cache-control', 'no-store').send(null);
      },
    );
  };
