/**
 * In Chromium: govern. Alice (owner of `sales`, billing admin of Acme) grants bob a role, changes it,
 * downloads the effective permissions and revokes it by keyboard; an error shows its code. On the
 * account pages she invites a member, attaches a payment method and restores a workspace another
 * billing admin deleted, after the notifications bell told her; she adds a service account, creates
 * its credential (the secret shown once signs in) and revokes it; she previews and saves a sign-in
 * policy, and saves one that would lock her out only when she says so. Each change is checked through the API.
 */
import fs from 'node:fs';
import { beforeAll, expect, it } from 'vitest';
import { consoleSuite, describeInBrowser, expectAccessible, expectFitsTablet, signIn, type Credential } from './harness.ts';

describeInBrowser('console: govern', () => {
  const suite = consoleSuite('govern');
  let alice: Credential;
  let aliceToken: string;
  let bobToken: string;
  let accountId: string;

  const policies = async () => suite.api.expectStatus(await suite.api.call('GET', '/policy/v1/access/workspace/sales', { token: aliceToken }), 200).policies as { principal: { identity: string }; role: string; pattern: string }[];

  beforeAll(async () => {
    alice = await suite.credential('alice');
    aliceToken = await suite.token(alice);
    bobToken = await suite.token(await suite.credential('bob'));
    const { billing_account } = await suite.api.ownWorkspace(aliceToken, 'alice', 'sales');
    accountId = billing_account;
    // Bob joins Acme as a second billing admin and makes workspace `scratch` with alice as its owner.
    const { call, expectStatus } = suite.api;
    expectStatus(await call('POST', `/control/v1/accounts/${accountId}/members`, { token: aliceToken, json: { identity: 'bob', email: 'bob@example.com', role: 'billing_admin' } }), 201);
    expectStatus(await call('POST', `/control/v1/accounts/${accountId}/members/bob/accept`, { token: bobToken }), 200);
    expectStatus(await call('PUT', '/control/v1/workspaces/scratch', { token: bobToken, json: { billing_account: accountId, members: [{ identity: 'alice', role: 'owner' }] } }), 200);
  }, 120_000);

  it('grants, changes and revokes a policy; downloads the effective permissions', { timeout: 90_000 }, async () => {
    const { page } = suite;
    await signIn(page, suite.server.url, alice, '/govern');
    await page.getByRole('link', { name: 'sales', exact: true }).click();
    await page.getByRole('heading', { name: 'Access policies of sales' }).waitFor();
    const table = page.getByRole('region', { name: 'Policies of sales' });
    await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
    expect(await table.textContent()).toContain('owner');
    await expectAccessible(page, 'policies');

    // Grant: typed, and submitted with Enter.
    await page.getByLabel('Identity').fill('bob');
    await page.getByRole('combobox', { name: 'Role' }).selectOption('writer');
    await page.getByLabel(/^Pattern/).fill('sales.*');
    await page.getByLabel(/^Pattern/).press('Enter');
    const bobRow = table.locator('tbody tr', { hasText: 'bob' });
    await bobRow.waitFor();
    expect(await bobRow.textContent()).toContain('writer');
    expect((await policies()).find((p) => p.principal.identity === 'bob')).toMatchObject({ role: 'writer', pattern: 'sales.*' });

    // Change it to reader.
    await page.getByRole('button', { name: "Change bob's writer on sales.*" }).click();
    await page.getByRole('combobox', { name: 'Role of bob' }).selectOption('reader');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('button', { name: "Change bob's reader on sales.*" }).waitFor();
    expect((await policies()).find((p) => p.principal.identity === 'bob')?.role).toBe('reader');

    // An error is shown in plain words with its code: a pattern outside the workspace.
    await page.getByLabel('Identity').fill('carol');
    await page.getByLabel(/^Pattern/).fill('other.*');
    await page.getByRole('button', { name: 'Grant', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/[A-Z]+_[A-Z_]+/);
    console.log(`grant outside the workspace: ${await alert.textContent()}`);
    await page.getByRole('button', { name: 'Dismiss the error' }).click();

    // The effective-permissions CSV.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: /Download effective permissions/ }).click()]);
    expect(download.suggestedFilename()).toBe('sales-effective-permissions.csv');
    const csv = fs.readFileSync((await download.path())!, 'utf8');
    expect(csv.split('\n')[0]).toContain('policy_id');

    // Revoke by keyboard: the question takes the focus, Enter confirms.
    await bobRow.getByRole('button', { name: 'Revoke' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Yes, revoke');
    await page.keyboard.press('Enter');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
    expect((await policies()).map((p) => p.principal.identity)).toEqual(['alice']);

    // Tablet width: no sideways scrolling of the page.
    await page.setViewportSize({ width: 768, height: 900 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(768);
    await expectAccessible(page, 'policies at 768 px');
  });

  it('account pages: members and invites, payment method, a deleted workspace restored after the bell told of it', { timeout: 90_000 }, async () => {
    const { page } = suite;
    const { call, expectStatus } = suite.api;
    // Bob deletes `scratch`: alice, its owner, is notified.
    expectStatus(await call('DELETE', '/billing/v1/workspaces/scratch', { token: bobToken }), 200);

    await signIn(page, suite.server.url, alice, '/account/members');
    const members = page.getByRole('region', { name: 'Members' });
    await expect.poll(() => members.locator('tbody tr').count()).toBe(2);
    await page.getByLabel('Identity').fill('carol');
    await page.getByLabel('Email').fill('carol@example.com');
    await page.getByRole('button', { name: 'Invite' }).click();
    const carol = members.locator('tbody tr', { hasText: 'carol' });
    await carol.waitFor();
    expect(await carol.textContent()).toMatch(/invited.*expires in 6 d 23 h/);
    await expectAccessible(page, 'account: members');
    const listed = expectStatus(await call('GET', `/control/v1/accounts/${accountId}/members`, { token: aliceToken }), 200) as { identity: string; state: string }[];
    expect(listed.find((m) => m.identity === 'carol')?.state).toBe('pending');

    // Payment method (the sandbox processor's test card).
    await page.getByRole('link', { name: 'Payment method' }).click();
    await page.getByText('No payment method is attached.').waitFor();
    await page.getByLabel('Payment method id').fill('pm_card_visa');
    await page.getByLabel('Brand').fill('visa');
    await page.getByLabel('Last four digits').fill('4242');
    await page.getByRole('button', { name: 'Attach' }).click();
    await page.getByText('visa ending in 4242').waitFor();
    await page.getByText('No payments yet.').waitFor();
    // A payment made through the API is listed when the tab is opened again.
    expectStatus(await call('POST', `/control/v1/accounts/${accountId}/payments`, { token: aliceToken, json: { amount: 1999, description: 'April usage' } }), 201);
    await page.getByRole('link', { name: 'Domains' }).click();
    await page.getByRole('link', { name: 'Payment method' }).click();
    const payment = page.getByRole('region', { name: 'Payments' }).locator('tbody tr', { hasText: 'April usage' });
    await payment.waitFor();
    expect(await payment.textContent()).toMatch(/19\.99.*April usage.*succeeded.*alice/);
    await expectAccessible(page, 'account: payment');

    // The bell has the unread count (bob's accepted invite and the deletion); the workspace shows its grace countdown and is restored.
    const feed = expectStatus(await call('GET', '/control/v1/notifications', { token: aliceToken }), 200) as { unread: number; notifications: { type: string }[] };
    expect(feed.notifications.map((n) => n.type)).toContain('workspace.soft_deleted');
    const bell = page.getByRole('link', { name: `Notifications, ${feed.unread} unread` });
    await bell.waitFor();
    await page.getByRole('link', { name: 'Workspaces', exact: true }).click();
    const scratch = page.getByRole('region', { name: 'Workspaces' }).locator('tbody tr', { hasText: 'scratch' });
    await expect.poll(() => scratch.textContent()).toMatch(/deleted; restorable for 23 h 5\d min/);
    await expectAccessible(page, 'account: workspaces');
    await scratch.getByRole('button', { name: 'Restore scratch' }).click();
    await expect.poll(() => scratch.textContent()).toMatch(/^scratchactive/);
    // A new workspace, billed to Acme, alice its owner.
    await page.getByLabel(/Create a workspace/).fill('lab');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('region', { name: 'Workspaces' }).locator('tbody tr', { hasText: 'lab' }).waitFor();
    const workspaces = expectStatus(await call('GET', `/billing/v1/accounts/${accountId}/workspaces`, { token: aliceToken }), 200) as { name: string; state: string }[];
    expect(workspaces.find((w) => w.name === 'scratch')?.state).toBe('active');
    expect(workspaces.find((w) => w.name === 'lab')?.state).toBe('active');
    expect((expectStatus(await call('GET', '/policy/v1/access/workspace/lab', { token: aliceToken }), 200).policies as { principal: { identity: string }; role: string }[]).map((p) => [p.principal.identity, p.role])).toEqual([['alice', 'owner']]);
    await page.setViewportSize({ width: 768, height: 900 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(768);
    await expectAccessible(page, 'account: workspaces at 768 px');
    await page.setViewportSize({ width: 1280, height: 800 });

    await bell.click();
    await page.getByRole('heading', { name: 'Notifications' }).waitFor();
    await expect.poll(() => page.locator('.feed').textContent()).toContain('scratch');
    await expectAccessible(page, 'notifications');
    await page.getByRole('button', { name: 'Mark all read' }).click();
    await page.getByRole('link', { name: 'Notifications', exact: true }).waitFor();
  });

  it('an invitee accepts the invite from the notifications page', { timeout: 60_000 }, async () => {
    const { page } = suite;
    const { call, expectStatus } = suite.api;
    const dave = await suite.credential('dave');
    expectStatus(await call('POST', `/control/v1/accounts/${accountId}/members`, { token: aliceToken, json: { identity: 'dave', email: 'dave@example.com', role: 'member' } }), 201);
    await signIn(page, suite.server.url, dave, '/account');
    await page.getByText('You are not a member of a billing account').waitFor();
    await page.getByRole('link', { name: 'Notifications, 1 unread' }).click();
    await page.getByRole('button', { name: 'Accept the invite' }).click();
    await expect.poll(() => page.locator('.success').textContent()).toContain(`You joined account ${accountId}`);
    await expectAccessible(page, 'notifications: invite accepted');
    const members = expectStatus(await call('GET', `/control/v1/accounts/${accountId}/members`, { token: aliceToken }), 200) as { identity: string; state: string }[];
    expect(members.find((m) => m.identity === 'dave')?.state).toBe('active');
    await page.getByRole('link', { name: 'Open the account' }).click();
    await page.getByRole('region', { name: 'Members' }).locator('tbody tr', { hasText: 'dave' }).waitFor();
  });

  it('a service account: added, a credential created (its secret shown once signs in), then revoked', { timeout: 90_000 }, async () => {
    const { page } = suite;
    const { call, expectStatus } = suite.api;
    await signIn(page, suite.server.url, alice, '/account/service-accounts');
    await page.getByLabel('Add a service account (its client id)').fill('svc-loader');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByRole('region', { name: 'Service accounts' }).locator('tbody tr', { hasText: 'svc-loader' }).waitFor();

    await page.getByRole('button', { name: 'Credentials of svc-loader' }).click();
    const credentials = page.getByRole('region', { name: 'Credentials of svc-loader' });
    await credentials.getByText('No credentials: create one below.').waitFor();
    await page.getByLabel('Credential type').fill('ci');
    await page.getByRole('combobox', { name: 'Expires' }).selectOption('30');
    await page.getByRole('button', { name: 'Create a credential' }).click();
    const secretField = page.getByLabel('Secret', { exact: true });
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    expect(secret).toMatch(/^lpsk_/);
    await expectAccessible(page, 'account: a service account credential created');

    // The secret signs the service account in, on Acme.
    const token = await suite.token({ clientId: 'svc-loader', secret });
    expect(expectStatus(await call('GET', '/auth/me', { token }), 200)).toMatchObject({ identity: 'svc-loader', billing_account: accountId });
    const listed = expectStatus(await call('GET', `/control/v1/accounts/${accountId}/service-accounts/svc-loader/credentials`, { token: aliceToken }), 200) as { credential_id: string; type: string; expires_at: string | null }[];
    expect(listed).toHaveLength(1);
    expect(listed[0].type).toBe('ci');
    expect(Date.parse(listed[0].expires_at!) - Date.now()).toBeGreaterThan(29 * 86_400_000);

    // Done forgets the secret; the list shows the credential without it.
    await page.getByRole('button', { name: 'Done' }).click();
    await expect.poll(() => secretField.count()).toBe(0);
    const row = credentials.locator('tbody tr', { hasText: listed[0].credential_id });
    expect(await row.textContent()).toContain('ci');
    expect(await page.content()).not.toContain(secret);

    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('button', { name: 'Yes, revoke' }).click();
    await credentials.getByText('No credentials: create one below.').waitFor();
    const refused = await fetch(`${suite.server.url}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'svc-loader', client_secret: secret }),
    });
    expect(refused.status).toBe(401);
    await expectFitsTablet(page);
  });

  it('the sign-in policy: previewed, saved, and saved against the lock-out warning only when asked', { timeout: 90_000 }, async () => {
    const { page } = suite;
    const { call, expectStatus } = suite.api;
    const stored = async () => expectStatus(await call('GET', `/control/v1/accounts/${accountId}/idp-policy`, { token: aliceToken }), 200) as { version: number; enforced: boolean; require_mfa: boolean; max_auth_age_hours: number | null; providers: string[] | null; machine_credentials: { members_may_mint: boolean } | null };
    await signIn(page, suite.server.url, alice, '/account/sign-in-policy');
    await page.getByText('No policy is stored: every sign-in is admitted.').waitFor();
    await page.getByText('No refused sign-ins.').waitFor();
    await expectAccessible(page, 'account: sign-in policy');

    await page.getByLabel('Enforced (off: every sign-in is admitted)').check();
    await page.getByLabel('Require multi-factor authentication').check();
    await page.getByLabel('Re-authenticate at the provider every (hours)').fill('24');
    await page.getByRole('group', { name: /^Providers/ }).getByLabel('idp_a').check();
    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByRole('region', { name: 'Preview by member' });
    await preview.waitFor();
    // Nobody has signed in through a provider: every active member is judged at their first sign-in.
    expect(await page.getByRole('status').textContent()).toMatch(/0 admitted, 0 denied, \d+ never signed in/);
    expect(await preview.locator('tbody tr', { hasText: 'alice' }).textContent()).toContain('unknown');
    expect((await stored()).version).toBe(0);
    await expectAccessible(page, 'account: sign-in policy preview');

    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText(/^Version 1, changed/).waitFor();
    expect(await stored()).toMatchObject({ version: 1, enforced: true, require_mfa: true, max_auth_age_hours: 24, providers: ['idp_a'], machine_credentials: null });

    // Stopping members minting machine credentials would lock alice (signed in with one) out: 409 first.
    await page.getByLabel('Members may mint them').uncheck();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('IDP_POLICY_WOULD_DENY_YOU');
    expect((await stored()).version).toBe(1);
    await page.getByRole('button', { name: 'Save anyway' }).click();
    await page.getByText(/^Version 2, changed/).waitFor();
    expect((await stored()).machine_credentials).toEqual({ members_may_mint: false, max_lifetime_days: null });
    await expectFitsTablet(page);
  });
});
