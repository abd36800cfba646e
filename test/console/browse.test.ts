/** In Chromium: sign in with a credential, browse workspaces → collections → a dataset and see its details. */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { consoleSuite, describeInBrowser, expectAccessible, expectFitsTablet, signIn, type Credential } from './harness.ts';

describeInBrowser('console: sign in and browse', () => {
  const suite = consoleSuite('browse');
  let alice: Credential;

  beforeAll(async () => {
    alice = await suite.credential('alice');
    await suite.api.ownWorkspace(await suite.token(alice), 'alice', 'sales');
    const file = path.join(suite.work, 'orders.csv');
    fs.writeFileSync(file, `id,region,amount\n${Array.from({ length: 40 }, (_, i) => `${i + 1},${i % 2 ? 'north' : 'south'},${(i * 2.5).toFixed(2)}`).join('\n')}\n`);
    await suite.upload(alice, file, 'sales.eu.orders', ['--message', 'first load']);
  }, 120_000);

  it('signs in with a client id and credential secret', async () => {
    const { page } = suite;
    await page.goto(`${suite.server.url}/`);
    await page.waitForURL(/\/sign-in/);
    await expectAccessible(page, 'sign-in');
    // A wrong secret is shown in plain words with its code.
    await page.getByLabel('Client id').fill('alice');
    await page.getByLabel('Credential secret').fill('lpsk_wrong');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('INVALID_CLIENT');
    await page.getByLabel('Credential secret').fill(alice.secret);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await page.locator('.identity').textContent()).toBe('alice');
    // The token lives only in the HttpOnly cookie.
    const cookies = await suite.context.cookies();
    expect(cookies.find((c) => c.name === 'lakeport_access_token')?.httpOnly).toBe(true);
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))).not.toMatch(/eyJ/);
    expect(await page.evaluate(() => document.cookie)).not.toContain('lakeport_access_token');
  });

  it('browses to a dataset: schema, statistics, snapshot author and message, preview, OData URL', async () => {
    const { page } = suite;
    await signIn(page, suite.server.url, alice);
    await page.getByRole('link', { name: 'sales' }).click();
    await page.getByRole('link', { name: 'eu' }).click();
    await expectAccessible(page, 'collection');
    await page.getByRole('link', { name: 'orders' }).click();
    await page.waitForURL(/\/browse\/sales\/eu\/orders$/);
    const schema = page.getByTestId('schema');
    await schema.waitFor();
    await expect.poll(() => schema.locator('tbody tr').count()).toBe(3);
    expect(await schema.locator('tbody tr').first().textContent()).toMatch(/id.*(BIGINT|INTEGER|Int64)/);
    const facts = page.getByTestId('dataset-facts');
    expect(await facts.textContent()).toContain('40');
    expect(await facts.textContent()).toContain('alice');
    expect(await facts.textContent()).toContain('first load');
    await expect.poll(() => page.getByTestId('preview').locator('tbody tr').count()).toBe(20);
    await expect.poll(() => page.getByTestId('snapshots').locator('tbody tr').first().textContent()).toContain('first load');
    expect(await page.getByLabel('OData feed').inputValue()).toBe(`${suite.server.url}/odata/api/v4/sales/eu/orders`);
    await expectAccessible(page, 'dataset');
    await expectFitsTablet(page);
  });

  it('signs out: the cookies are gone and the console asks to sign in again', async () => {
    const { page } = suite;
    await signIn(page, suite.server.url, alice);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/sign-in$/);
    const cookies = await suite.context.cookies();
    expect(cookies.map((c) => c.name)).not.toContain('lakeport_access_token');
    await page.goto(`${suite.server.url}/browse/sales`);
    await page.waitForURL(/\/sign-in\?next=%2Fbrowse%2Fsales$/);
    await expectAccessible(page, 'sign-in after sign-out');
  });

  it('an expired session returns to sign-in and, signed in again, to the same page', async () => {
    const { page } = suite;
    await signIn(page, suite.server.url, alice, '/browse/sales/eu');
    await page.waitForURL(/\/browse\/sales\/eu$/);
    // The page has loaded (else its listing, still in flight, meets the 401 first and there is no link to click).
    await page.getByRole('link', { name: 'orders' }).waitFor({ timeout: 10_000 });
    // The access cookie expires (as it does after its Max-Age): the next API call answers 401.
    await suite.context.clearCookies({ name: 'lakeport_access_token' });
    await page.getByRole('link', { name: 'orders' }).click();
    await page.waitForURL(/\/sign-in\?next=%2Fbrowse%2Fsales%2Feu%2Forders$/, { timeout: 10_000 });
    await page.getByText('Your session ended').waitFor({ timeout: 10_000 });
    // The old page's other requests end (401s of the old session) before a person would type.
    await page.waitForLoadState('networkidle');
    await page.getByLabel('Client id').fill(alice.clientId);
    await page.getByLabel('Credential secret').fill(alice.secret);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(/\/browse\/sales\/eu\/orders$/, { timeout: 10_000 });
    await page.getByTestId('schema').waitFor({ timeout: 10_000 });
  });
});
