/**
 * A real OpenID Connect provider (oidc-provider) on loopback for sign-in tests, its login and
 * consent interactions as plain HTML forms, and a cookie-jar browser that follows redirects.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
// @ts-expect-error oidc-provider ships no types (@types/oidc-provider is not installed)
import Provider from 'oidc-provider';
import { expect } from 'vitest';

export interface TestUser {
  email: string;
  emailVerified: boolean;
  preferredUsername: string;
  amr: string[];
  /** Seconds before now that the user authenticated (the ID token's auth_time). */
  authAgeSeconds: number;
  /** The ID token's `groups` claim, when the user has one. */
  groups?: string[];
}

export const CLIENT_ID = 'lakeport-test';
export const CLIENT_SECRET = 'a-client-secret-for-the-test-provider-0123456789';

function readBody(req: http.IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    let data = '';
    req.on('data', (chunk) => (data += chunk));
    req.on('end', () => resolve(new URLSearchParams(data)));
    req.on('error', reject);
  });
}

/** A real OpenID provider on loopback, its interactions (login, consent) as plain HTML forms. */
export async function startProvider(redirectUri: () => string, USERS: Record<string, TestUser>) {
  let provider: Provider | undefined;
  const server = http.createServer(async (req, res) => {
    try {
      if (!req.url!.startsWith('/interaction/')) return provider!.callback()(req, res);
      const details = await provider!.interactionDetails(req, res);
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/html' }).end(`<form method="post"><input name="${details.prompt.name === 'login' ? 'login' : 'confirm'}"></form>`);
        return;
      }
      const form = await readBody(req);
      let result;
      if (details.prompt.name === 'login') {
        const user = USERS[form.get('login') ?? ''];
        if (!user) return void res.writeHead(400).end('unknown user');
        result = { login: { accountId: form.get('login')!, amr: user.amr, ts: Math.floor(Date.now() / 1000) - user.authAgeSeconds } };
      } else {
        const grant = new provider!.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
        const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
        if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
        if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
        result = { consent: { grantId: await grant.save() } };
      }
      const location = await provider!.interactionResult(req, res, result, { mergeWithLastSubmission: false });
      res.writeHead(303, { location }).end();
    } catch (error) {
      res.writeHead(500).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const init = () => {
    provider = new Provider(issuer, {
      clients: [
        {
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          redirect_uris: [redirectUri()],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_post',
          require_auth_time: true,
        },
      ],
      cookies: { keys: ['a-cookie-signing-key-for-the-test'] },
      // Like Google and Entra, the ID token itself carries email and profile claims (and amr).
      conformIdTokenClaims: false,
      claims: { openid: ['sub', 'amr', 'groups'], email: ['email', 'email_verified'], profile: ['preferred_username', 'name'] },
      features: { devInteractions: { enabled: false } },
      findAccount: async (_ctx: unknown, sub: string) => {
        const user = USERS[sub];
        if (!user) return undefined;
        return {
          accountId: sub,
          claims: async () => ({ sub, email: user.email, email_verified: user.emailVerified, preferred_username: user.preferredUsername, name: sub, ...(user.groups ? { groups: user.groups } : {}) }),
        };
      },
    });
  };
  return { issuer, init, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A browser: a cookie jar per host:port, manual redirects. */
export class Browser {
  readonly jar = new Map<string, Map<string, string>>();
  /** Raw Set-Cookie headers of the last response. */
  lastSetCookies: string[] = [];

  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const u = new URL(url);
    const cookies = this.jar.get(u.host) ?? new Map<string, string>();
    const headers = new Headers(init.headers);
    if (cookies.size > 0) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    this.lastSetCookies = res.headers.getSetCookie();
    for (const line of this.lastSetCookies) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = value === '' || attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || attributes.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (expired) cookies.delete(name);
      else cookies.set(name, value);
    }
    this.jar.set(u.host, cookies);
    return res;
  }

  /** Follows redirects until a non-redirect response; returns it and its URL. */
  async follow(url: string, init: RequestInit = {}): Promise<{ res: Response; url: string; visited: string[] }> {
    const visited: string[] = [];
    let res = await this.request(url, init);
    while (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url).href;
      visited.push(url);
      res = await this.request(url);
    }
    return { res, url, visited };
  }

  cookie(host: string, name: string): string | undefined {
    return this.jar.get(host)?.get(name);
  }
}

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };


/**
 * At the provider: the login form (as `user`) and the consent form, then the redirect to Lakeport
 * (`lakeport`, its origin), whose callback is requested once and returned unfollowed.
 */
export async function loginAtProvider(browser: Browser, lakeport: string, authorizeUrl: string, user: string, accept?: string) {
  let { res, url } = await browser.follow(authorizeUrl);
  expect(res.status).toBe(200);
  expect(await res.text()).toContain('name="login"');
  let next = await browser.request(url, { method: 'POST', headers: FORM, body: new URLSearchParams({ login: user }) });
  // The provider's redirects up to the consent form, or straight to the callback.
  for (;;) {
    const location = new URL(next.headers.get('location')!, url).href;
    if (location.startsWith(lakeport)) {
      const callback = await browser.request(location, { headers: accept ? { accept } : {} });
      return { callback, callbackUrl: location, authorizeUrl };
    }
    url = location;
    next = await browser.request(url);
    if (next.status === 200) {
      expect(await next.text()).toContain('name="confirm"');
      next = await browser.request(url, { method: 'POST', headers: FORM, body: new URLSearchParams({ confirm: 'yes' }) });
    }
  }
}
