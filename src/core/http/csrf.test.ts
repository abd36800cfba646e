/** Cookie-authenticated state changes need CSRF proof: a same-origin Origin and X-CSRF-Token = the lakeport_csrf cookie. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { signIn } from '../../../test/clients.ts';

describe('CSRF protection of the session cookie', () => {
  let t: TestApp;
  let cookies: { access: string; csrf: string };
  const ORIGIN = 'http://localhost';

  beforeAll(async () => {
    t = await createTestApp();
    const user = await signIn(t.app, t.adminToken, 'carol');
    const created = await t.app.inject({ method: 'POST', url: '/auth/clients/carol/credentials', headers: { authorization: `Bearer ${user.token}` }, payload: {} });
    const res = await t.app.inject({
      method: 'POST',
      url: '/auth/token?set_cookie=true',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ client_id: 'carol', client_secret: created.json().secret }).toString(),
    });
    expect(res.statusCode).toBe(200);
    const set = [res.headers['set-cookie']].flat().map(String);
    const value = (name: string) => set.find((c) => c.startsWith(`${name}=`))!.split(';')[0].slice(name.length + 1);
    const csrfCookie = set.find((c) => c.startsWith('lakeport_csrf='))!;
    expect(csrfCookie).not.toMatch(/HttpOnly/);
    expect(csrfCookie).toMatch(/SameSite=Strict/);
    cookies = { access: value('lakeport_access_token'), csrf: value('lakeport_csrf') };
  });
  afterAll(() => t?.close());

  const put = (headers: Record<string, string>) =>
    t.app.inject({ method: 'PUT', url: '/jobs/api/v1/variables/limit', headers: { 'content-type': 'application/json', ...headers }, payload: { type: 'number', value: 5 } });
  const cookieHeader = (csrf = cookies.csrf) => `lakeport_access_token=${cookies.access}; lakeport_csrf=${csrf}`;

  it('accepts a same-origin request whose X-CSRF-Token matches the cookie', async () => {
    const res = await put({ cookie: cookieHeader(), origin: ORIGIN, 'x-csrf-token': cookies.csrf });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('still accepts the cookie alone on GET', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/jobs/api/v1/variables', headers: { cookie: cookieHeader() } });
    expect(res.statusCode).toBe(200);
  });

  it.each([
    ['the header is missing', { origin: ORIGIN }, /x-csrf-token header is missing/],
    ['the header does not match the cookie', { origin: ORIGIN, 'x-csrf-token': 'forged-value' }, /does not match/],
    ['the request comes from another site', { origin: 'https://evil.example', 'x-csrf-token': 'COOKIE' }, /Origin https:\/\/evil\.example is not this server's/],
    ['another port of this host', { origin: 'http://localhost:8081', 'x-csrf-token': 'COOKIE' }, /is not this server's/],
    ['there is no Origin header', { 'x-csrf-token': 'COOKIE' }, /no Origin header/],
    ['Origin is null (a sandboxed or opaque origin)', { origin: 'null', 'x-csrf-token': 'COOKIE' }, /is not this server's/],
  ])('refuses with 403 CSRF_REJECTED when %s', async (_case, headers: Record<string, string>, reason) => {
    const withCookie = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v === 'COOKIE' ? cookies.csrf : v]));
    const res = await put({ cookie: cookieHeader(), ...withCookie });
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json().code).toBe('CSRF_REJECTED');
    expect(res.json().detail).toMatch(reason);
  });

  it('refuses a value planted in both cookie and header when the request is cross-origin', async () => {
    // Double submit alone cannot tell a value the attacker planted in both places: the Origin check can.
    const res = await put({ cookie: cookieHeader('planted'), origin: 'https://evil.example', 'x-csrf-token': 'planted' });
    expect(res.statusCode).toBe(403);
  });

  it('does not ask a bearer token for CSRF proof', async () => {
    const user = await signIn(t.app, t.adminToken, 'dave');
    const res = await t.app.inject({ method: 'PUT', url: '/jobs/api/v1/variables/x', headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' }, payload: { type: 'string', value: 'y' } });
    expect(res.statusCode).toBe(200);
  });

  it('sign-out clears both cookies', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/logout', headers: { cookie: cookieHeader() } });
    expect(res.statusCode).toBe(204);
    const set = [res.headers['set-cookie']].flat().map(String);
    expect(set.some((c) => /^lakeport_access_token=;/.test(c))).toBe(true);
    expect(set.some((c) => /^lakeport_csrf=;/.test(c))).toBe(true);
  });
});
