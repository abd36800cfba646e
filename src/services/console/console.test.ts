/** The server's routing of the console: index.html at / and console paths only, hashed assets cached, security headers, a clear error unbuilt. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { REPO_ROOT } from '../../../test/processes.ts';
import { SERVICE_PREFIXES } from '../../app.ts';

const HTML = { accept: 'text/html,application/xhtml+xml' };
/** The view paths console/src/routes.ts declares. */
const consolePaths = () => [...fs.readFileSync(path.join(REPO_ROOT, 'console/src/routes.ts'), 'utf8').matchAll(/path: '([^']+)'/g)].map((m) => m[1]);

describe('the console at /', () => {
  let t: TestApp;
  let dir: string;

  beforeAll(async () => {
    // A build as Vite writes it: index.html and content-hashed files under _console/.
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-console-build-'));
    fs.mkdirSync(path.join(dir, '_console'));
    fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><html><head><script type="module" src="/_console/index-AbC123.js"></script></head><body></body></html>');
    fs.writeFileSync(path.join(dir, '_console', 'index-AbC123.js'), 'console.log(1)');
    t = await createTestApp({ console: { dir } });
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves index.html at / with a strict CSP and security headers', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/', headers: HTML });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-cache');
    const csp = String(res.headers['content-security-policy']);
    const directive = (name: string) => csp.split('; ').find((d) => d.startsWith(`${name} `));
    expect(directive('script-src')).toBe("script-src 'self'");
    expect(directive('frame-ancestors')).toBe("frame-ancestors 'none'");
    expect(directive('object-src')).toBe("object-src 'none'");
    const nonce = /'nonce-([^']+)'/.exec(directive('style-src') ?? '')?.[1];
    expect(nonce).toBeTruthy();
    expect(res.body).toContain(`<meta name="lakeport-csp-nonce" content="${nonce}" />`);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    const again = await t.app.inject({ method: 'GET', url: '/', headers: HTML });
    expect(again.headers['content-security-policy']).not.toBe(res.headers['content-security-policy']);
  });

  it('answers index.html for every view path of console/src/routes.ts, none under a service prefix', async () => {
    const paths = consolePaths();
    expect(paths.length).toBeGreaterThan(3);
    for (const view of paths) {
      expect(SERVICE_PREFIXES.some((p) => view === p || view.startsWith(`${p}/`)), view).toBe(false);
      const url = view.replace(/:\w+/g, 'x');
      const res = await t.app.inject({ method: 'GET', url, headers: HTML });
      expect(res.statusCode, url).toBe(200);
      expect(res.body, url).toContain('/_console/index-AbC123.js');
    }
  });

  it('never shadows the services or the operational routes', async () => {
    for (const prefix of SERVICE_PREFIXES) {
      const res = await t.app.inject({ method: 'GET', url: `${prefix}/no-such-page`, headers: HTML });
      expect(res.statusCode, prefix).not.toBe(200);
      expect(res.body, prefix).not.toContain('<!doctype html>');
    }
    expect((await t.app.inject({ method: 'GET', url: '/healthz', headers: HTML })).json()).toEqual({ status: 'ok' });
    expect((await t.app.inject({ method: 'GET', url: '/auth/me', headers: HTML })).json().code).toBe('UNAUTHORIZED');
    expect((await t.app.inject({ method: 'GET', url: '/metrics/x', headers: HTML })).statusCode).toBe(404);
    // Not a page request (an API client): the API's 404, not the console.
    const api = await t.app.inject({ method: 'GET', url: '/browse/x', headers: { accept: 'application/json' } });
    expect(api.statusCode).toBe(404);
    expect(api.json().code).toBe('NOT_FOUND');
  });

  it('serves hashed assets for a year, immutable; a missing asset is a 404, not the page', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/_console/index-AbC123.js' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toMatch(/max-age=31536000/);
    expect(res.headers['cache-control']).toMatch(/immutable/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const missing = await t.app.inject({ method: 'GET', url: '/_console/gone-123.js', headers: HTML });
    expect(missing.statusCode).toBe(404);
    expect(missing.body).not.toContain('<!doctype html>');
  });
});

describe('a console that was not built', () => {
  let t: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-console-empty-'));
    t = await createTestApp({ console: { dir } });
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 CONSOLE_NOT_BUILT saying how to build it', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/', headers: HTML });
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('CONSOLE_NOT_BUILT');
    expect(res.json().detail).toMatch(/npm run build:console/);
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});
