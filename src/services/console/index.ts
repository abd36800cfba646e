/**
 * The web console (console/, built by `npm ci` into dist/console): the one place the server routes
 * it. `/` and every console path answer index.html; `/_console/*` are Vite's content-hashed assets,
 * cached for a year. Paths under the service prefixes and the operational routes are never the
 * console's: there an unknown path stays the API's 404.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { appError } from '../../core/errors/index.ts';

/** Where `npm run build:console` writes the console (Vite's outDir). */
export const CONSOLE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../dist/console');
/** The assets folder inside it (Vite's build.assetsDir) and the URL prefix it is served at. */
export const CONSOLE_ASSETS = '_console';

/**
 * The Content-Security-Policy of the console: scripts only from this origin (no inline script, no
 * eval); stylesheets from this origin, plus the <style> element CodeMirror writes, which carries the
 * page's nonce (index.html's `lakeport-csp-nonce` meta); never framed.
 */
export function consoleCsp(styleNonce?: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    `style-src 'self'${styleNonce ? ` 'nonce-${styleNonce}'` : ''}`,
    // CodeMirror sets a few style attributes (positions of its layers).
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Headers of every console response. */
export const CONSOLE_SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': consoleCsp(),
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

export interface ConsoleOptions {
  /** The built console (default CONSOLE_DIST). */
  dir?: string;
  /** Path prefixes that are not the console's (the service prefixes, /healthz…). */
  reserved: readonly string[];
}

const underPrefix = (pathname: string, prefix: string) => pathname === prefix || pathname.startsWith(`${prefix}/`);

export async function registerConsole(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  const dir = options.dir ?? CONSOLE_DIST;
  const indexFile = path.join(dir, 'index.html');
  const reserved = [...options.reserved, `/${CONSOLE_ASSETS}`];
  const built = fs.existsSync(indexFile);
  // Read once: the build does not change under a running server.
  const indexHtml = built ? fs.readFileSync(indexFile, 'utf8') : undefined;

  if (built) {
    await app.register(fastifyStatic, {
      root: path.join(dir, CONSOLE_ASSETS),
      prefix: `/${CONSOLE_ASSETS}/`,
      index: false,
      list: false,
      dotfiles: 'deny',
      // The build writes .br and .gz beside each file (console/vite.config.ts).
      preCompressed: true,
      // Every file here has its content hash in its name.
      immutable: true,
      maxAge: '365d',
      setHeaders: (res) => {
        res.headers(CONSOLE_SECURITY_HEADERS);
      },
    });
  }

  const page = async (request: FastifyRequest, reply: FastifyReply) => {
    const pathname = request.url.split('?')[0];
    const accept = request.headers.accept ?? '';
    if (pathname !== '/' && (reserved.some((prefix) => underPrefix(pathname, prefix)) || !accept.includes('text/html'))) return reply.callNotFound();
    if (!indexHtml) {
      throw appError('CONSOLE_NOT_BUILT', `The web console was not built (no ${indexFile}): run \`npm run build:console\` (npm ci runs it)`);
    }
    // A fresh nonce per page: only the console's own code can add a <style> element.
    const nonce = crypto.randomBytes(18).toString('base64');
    reply.headers({ ...CONSOLE_SECURITY_HEADERS, 'content-security-policy': consoleCsp(nonce) });
    const html = indexHtml.replace('<head>', `<head>\n    <meta name="lakeport-csp-nonce" content="${nonce}" />`);
    return reply.header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(html);
  };
  app.get('/', { schema: { hide: true } }, page);
  app.get('/*', { schema: { hide: true } }, page);
}
