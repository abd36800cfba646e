/**
 * The browser test harness of the web console: a real Lakeport started as `npm start` is (port 0, a
 * temporary data directory, the console freshly built into a temporary directory it serves through
 * LAKEPORT_CONSOLE_DIR), Debian's Chromium driven by playwright-core, a signed-in page, a screenshot per
 * test under test-artifacts/console/, and axe-core on every page (serious or critical violations fail).
 *
 * Without /usr/bin/chromium the browser suites are skipped with a message (`.ci/run` installs it).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import axe from 'axe-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect } from 'vitest';
import { describeRun, lakeport } from '../e2e/cli.ts';
import { httpApi } from '../e2e/http.ts';
import { REPO_ROOT, startServer, type RunningServer } from '../e2e/server.ts';
import { buildConsole, CHROMIUM, launchChromium } from './browser.ts';

export { buildConsole, CHROMIUM, launchChromium } from './browser.ts';

export const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'console');

const hasChromium = fs.existsSync(CHROMIUM);

/** `describe` when Chromium is installed, else a skipped suite that says why. */
export function describeInBrowser(name: string, body: () => void): void {
  if (hasChromium) {
    describe(name, body);
    return;
  }
  console.warn(`[console tests] skipped "${name}": ${CHROMIUM} is missing (apt-get install -y chromium; .ci/run installs it)`);
  describe.skip(name, body);
}

export interface Credential {
  clientId: string;
  secret: string;
}

export interface ConsoleSuite {
  server: RunningServer;
  browser: Browser;
  /** A scratch directory of the suite. */
  work: string;
  /** The context and page of the current test: fresh cookies each test. */
  context: BrowserContext;
  page: Page;
  /** Messages the page logged as errors (CSP violations among them) during the current test. */
  pageErrors: string[];
  api: ReturnType<typeof httpApi>;
  /** A new credential of `identity`, made with the admin token. */
  credential(identity: string): Promise<Credential>;
  /** A bearer token of a credential (for seeding through the API). */
  token(credential: Credential): Promise<string>;
  /** `npx lakeport upload <file> --to <dataset> --accept …` as the credential. */
  upload(credential: Credential, file: string, dataset: string, extra?: string[]): Promise<string>;
}

/**
 * Registers hooks for a suite: server and browser once, a fresh browser context per test, and after
 * each test a screenshot named after it and the check that the page broke no Content-Security-Policy.
 */
export function consoleSuite(name: string, options: { env?: Record<string, string> } = {}): ConsoleSuite {
  const suite = { pageErrors: [] as string[] } as ConsoleSuite;
  beforeAll(async () => {
    suite.work = fs.mkdtempSync(path.join(os.tmpdir(), `lakeport-console-${name}-`));
    const consoleDir = path.join(suite.work, 'console');
    await buildConsole(consoleDir);
    suite.server = await startServer({ env: { LAKEPORT_STORAGE_URL: '', LAKEPORT_CONSOLE_DIR: consoleDir, ...options.env } });
    suite.api = httpApi(() => suite.server);
    suite.browser = await launchChromium();
    suite.credential = async (identity) => {
      const created = suite.api.expectStatus(await suite.api.call('POST', `/auth/clients/${identity}/credentials`, { admin: true, json: {} }), 200);
      return { clientId: identity, secret: created.secret };
    };
    suite.token = async (credential) => {
      const response = await fetch(`${suite.server.url}/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: credential.clientId, client_secret: credential.secret }),
      });
      const body = await response.json();
      expect(response.status, JSON.stringify(body)).toBe(200);
      return body.access_token as string;
    };
    suite.upload = async (credential, file, dataset, extra = []) => {
      const env = { ...process.env, LAKEPORT_URL: suite.server.url, LAKEPORT_CLIENT_ID: credential.clientId, LAKEPORT_CLIENT_SECRET: credential.secret };
      const run = await lakeport(['upload', file, '--to', dataset, '--accept', ...extra], env);
      expect(run.code, describeRun(run)).toBe(0);
      return run.stdout;
    };
  }, 240_000);
  afterAll(async () => {
    try {
      await suite.browser?.close();
      await suite.server?.stop();
    } finally {
      if (suite.work) fs.rmSync(suite.work, { recursive: true, force: true });
    }
  }, 60_000);
  beforeEach(async () => {
    suite.pageErrors = [];
    suite.context = await suite.browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    suite.page = await suite.context.newPage();
    suite.page.on('console', (message) => {
      if (message.type() === 'error') suite.pageErrors.push(message.text());
    });
    suite.page.on('pageerror', (error) => suite.pageErrors.push(`uncaught: ${error.message}`));
  });
  afterEach(async (context) => {
    const file = `${name}-${context.task.name}`.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '').toLowerCase();
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await suite.page?.screenshot({ path: path.join(ARTIFACTS, `${file}.png`), fullPage: true }).catch(() => undefined);
    await suite.context?.close();
    const csp = suite.pageErrors.filter((m) => /Content Security Policy/i.test(m));
    expect(csp, `the page broke its Content-Security-Policy: ${csp.join(' | ')}`).toEqual([]);
  });
  return suite;
}

/** Signs in on the sign-in page with a client id + secret and waits for `expectPath`. */
export async function signIn(page: Page, baseUrl: string, credential: Credential, from = '/'): Promise<void> {
  await page.goto(`${baseUrl}${from}`);
  await page.waitForURL(/\/sign-in/);
  await page.getByLabel('Client id').fill(credential.clientId);
  await page.getByLabel('Credential secret').fill(credential.secret);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** axe-core on the page as it is: fails on serious or critical violations, listing them. */
export async function expectAccessible(page: Page, label = page.url()): Promise<void> {
  // Evaluated over the DevTools protocol: the page's own CSP (no inline scripts) stays in force.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axe.source);
  const violations = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  const blocking = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(blocking, `axe on ${label}: ${JSON.stringify(blocking, null, 2)}`).toEqual([]);
}

/** The page at a 768 px tablet width: nothing wider than the window (no sideways scrolling of the page). */
export async function expectFitsTablet(page: Page): Promise<void> {
  await page.setViewportSize({ width: 768, height: 1024 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(overflow, 'the page scrolls sideways at 768 px').toBeLessThanOrEqual(0);
  await page.setViewportSize({ width: 1280, height: 800 });
}
