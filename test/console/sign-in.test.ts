/**
 * In Chromium: a person signs in to the console through the organisation's identity provider — a real
 * OpenID provider (oidc-provider) on loopback, configured as `npm start` reads it (LAKEPORT_IDP_A_*).
 * The console's button starts the authorization-code flow, the provider's login and consent forms
 * are answered, and the callback lands back on the page the person asked for, signed in as the
 * identity mapped from the verified email. An account's sign-in policy that refuses the sign-in
 * shows the provider's page nothing and the person the reason, and makes no session.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLIENT_ID, CLIENT_SECRET, startProvider, type TestUser } from '../oidc-provider.ts';
import { consoleSuite, describeInBrowser, expectAccessible } from './harness.ts';
import type { Page } from 'playwright-core';

const USERS: Record<string, TestUser> = {
  ada: { email: 'ada@corp.example', emailVerified: true, preferredUsername: 'ada', amr: ['pwd', 'mfa'], authAgeSeconds: 0 },
  pat: { email: 'pat@corp.example', emailVerified: true, preferredUsername: 'pat', amr: ['pwd'], authAgeSeconds: 0 },
};

/**
 * Signs in from the console's sign-in page through "Corp IdP" as `login`: answers the provider's
 * plain forms (login, then consent when it asks; a field each, submitted with Enter) until it sends
 * the browser back to Lakeport. A provider that still has the person's session answers at once.
 */
async function signInWithProvider(page: Page, lakeport: string, issuer: string, login: string, from = '/'): Promise<void> {
  await page.goto(`${lakeport}${from}`);
  await page.waitForURL(/\/sign-in/);
  await page.getByRole('link', { name: 'Sign in with Corp IdP' }).click();
  await page.waitForURL((url) => !url.href.startsWith(`${lakeport}/sign-in`));
  for (let step = 0; step < 4 && page.url().startsWith(issuer); step++) {
    const field = page.locator('input[name="login"], input[name="confirm"]').first();
    const name = await field.getAttribute('name');
    await field.fill(name === 'login' ? login : 'yes');
    await Promise.all([page.waitForNavigation(), field.press('Enter')]);
  }
  expect(page.url().startsWith(lakeport), `still at ${page.url()}`).toBe(true);
}

describeInBrowser('console: sign-in through the identity provider', () => {
  const idpEnv: Record<string, string> = {};
  let provider: Awaited<ReturnType<typeof startProvider>>;
  beforeAll(async () => {
    provider = await startProvider(() => `${suite.server.url}/auth/callback`, USERS);
    Object.assign(idpEnv, { LAKEPORT_IDP_A_ISSUER: provider.issuer, LAKEPORT_IDP_A_CLIENT_ID: CLIENT_ID, LAKEPORT_IDP_A_CLIENT_SECRET: CLIENT_SECRET, LAKEPORT_IDP_A_NAME: 'Corp IdP' });
  });
  // Its server starts with idpEnv as filled in above (hooks run in the order they are registered).
  const suite = consoleSuite('sign-in', { env: idpEnv });
  beforeAll(() => provider.init());
  afterAll(() => provider?.close());

  it('signs in with the provider and returns to the page asked for', { timeout: 90_000 }, async () => {
    const { page } = suite;
    await page.goto(`${suite.server.url}/account`);
    await page.waitForURL(/\/sign-in/);
    await expectAccessible(page, 'sign-in with a provider');
    await signInWithProvider(page, suite.server.url, provider.issuer, 'ada', '/account');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/account');
    await page.getByRole('heading', { name: 'Account' }).waitFor();
    // The session is the cookie's: /auth/me from the page says who and how.
    const me = await page.evaluate(async () => (await fetch('/auth/me')).json());
    expect(me).toMatchObject({ identity: 'ada', idp: 'idp_a', amr: ['pwd', 'mfa'] });
    expect(await page.locator('header').textContent()).toContain('ada');
  });

  it("refused by the account's sign-in policy: the reason is shown and no session is made", { timeout: 90_000 }, async () => {
    const { page } = suite;
    const { call, expectStatus } = suite.api;
    // Owner's account invites pat, who signs in through the provider (password only) and accepts.
    const ownerToken = await suite.token(await suite.credential('owner'));
    const { billing_account: account } = await suite.api.ownWorkspace(ownerToken, 'owner', 'corp');
    expectStatus(await call('POST', `/control/v1/accounts/${account}/members`, { token: ownerToken, json: { identity: 'pat', email: 'pat@corp.example', role: 'member' } }), 201);
    await signInWithProvider(page, suite.server.url, provider.issuer, 'pat');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    const accepted = await page.evaluate(async (url) => {
      const csrf = decodeURIComponent(document.cookie.split('; ').find((c) => c.startsWith('lakeport_csrf='))!.slice('lakeport_csrf='.length));
      return (await fetch(url, { method: 'POST', headers: { 'x-csrf-token': csrf } })).status;
    }, `/billing/v1/accounts/${account}/members/pat/accept`);
    expect(accepted).toBe(200);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/sign-in/);

    // The account now requires MFA: pat's next sign-in is refused, with the rule and the reason.
    expectStatus(await call('PUT', `/control/v1/accounts/${account}/idp-policy`, { token: ownerToken, json: { enforced: true, require_mfa: true } }), 200);
    await signInWithProvider(page, suite.server.url, provider.issuer, 'pat');
    await page.getByRole('heading', { name: 'Sign-in refused' }).waitFor();
    expect(await page.locator('body').textContent()).toMatch(/requires multi-factor authentication.*SIGN_IN_REFUSED/);
    expect(await page.evaluate(async () => (await fetch('/auth/me')).status)).toBe(401);
    const denials = expectStatus(await call('GET', `/control/v1/accounts/${account}/idp-policy/denials`, { token: ownerToken }), 200) as { denials: { identity: string; code: string }[] };
    expect(denials.denials.map((d) => [d.identity, d.code])).toEqual([['pat', 'MFA_REQUIRED']]);
  });
});
