/** In Chromium: the query view — run, check underlines, cancel, paging, downloads, parameters, recent queries. */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, beforeEach, expect, it } from 'vitest';
import { consoleSuite, describeInBrowser, expectAccessible, expectFitsTablet, signIn, type Credential } from './harness.ts';

describeInBrowser('console: query', () => {
  const suite = consoleSuite('query');
  let bob: Credential;

  beforeAll(async () => {
    bob = await suite.credential('bob');
    await suite.api.ownWorkspace(await suite.token(bob), 'bob', 'lab');
    const file = path.join(suite.work, 'events.csv');
    fs.writeFileSync(file, `id,kind,score\n${Array.from({ length: 120 }, (_, i) => `${i + 1},${['a', 'b', 'c'][i % 3]},${i * 3}`).join('\n')}\n`);
    await suite.upload(bob, file, 'lab.raw.events', ['--message', 'seed']);
  }, 120_000);

  beforeEach(async () => {
    await signIn(suite.page, suite.server.url, bob, '/query');
    await suite.page.locator('.cm-content').waitFor();
  });

  const typeSql = async (text: string) => {
    const editor = suite.page.locator('.cm-content');
    await editor.click();
    await suite.page.keyboard.press('ControlOrMeta+a');
    await suite.page.keyboard.press('Delete');
    await editor.pressSequentially(text);
    // Close the completion popup typing opened (its listbox is reached from the editor with the arrow keys).
    await suite.page.keyboard.press('Escape');
  };

  it('runs a query with Ctrl+Enter, shows status and elapsed time, and pages through the results on the server', async () => {
    const { page } = suite;
    await typeSql('SELECT id, kind, score FROM lab.raw.events ORDER BY id');
    const served: string[] = [];
    page.on('request', (r) => r.url().includes('/results') && served.push(r.url()));
    await page.keyboard.press('Control+Enter');
    await expect.poll(() => page.getByTestId('job-status').textContent(), { timeout: 20_000 }).toMatch(/^succeeded · \d+\.\d s · 120 rows/);
    expect(await page.getByTestId('page-range').textContent()).toBe('Rows 1–50 of 120');
    expect(await page.getByTestId('results').locator('tbody tr').count()).toBe(50);
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => page.getByTestId('page-range').textContent()).toBe('Rows 51–100 of 120');
    expect(await page.getByTestId('results').locator('tbody tr').first().locator('td').first().textContent()).toBe('51');
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => page.getByTestId('page-range').textContent()).toBe('Rows 101–120 of 120');
    // Each page was its own request for 50 rows at its offset.
    expect(served.map((u) => new URL(u).searchParams.get('offset'))).toEqual(['0', '50', '100']);
    expect(served.every((u) => new URL(u).searchParams.get('num_rows') === '50')).toBe(true);
    await expect.poll(() => page.getByTestId('recent').textContent()).toContain('SELECT id, kind, score FROM lab.raw.events');
    await expectAccessible(page, 'query results');
    await expectFitsTablet(page);
  });

  it('underlines an error where check places it, as one types', async () => {
    const { page } = suite;
    await typeSql('SELECT id, nope FROM lab.raw.events');
    const underlined = page.locator('.cm-lintRange-error');
    await expect.poll(() => underlined.allTextContents(), { timeout: 10_000 }).toEqual(['nope']);
    await underlined.first().hover();
    await expect.poll(() => page.locator('.cm-tooltip-lint').textContent()).toMatch(/nope/);
    // Fixed, the underline goes.
    await typeSql('SELECT id, kind FROM lab.raw.events');
    await expect.poll(() => underlined.count(), { timeout: 10_000 }).toBe(0);
    await expectAccessible(page, 'query with an error');
  });

  it('completes dataset columns from check', async () => {
    const { page } = suite;
    await typeSql('SELECT sco FROM lab.raw.events');
    await page.waitForTimeout(1500); // the check (debounced) tells the editor the relation's columns
    await page.keyboard.press('Home');
    for (let i = 0; i < 'SELECT sco'.length; i++) await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Control+Space');
    await expect.poll(() => page.locator('.cm-tooltip-autocomplete').textContent()).toContain('score');
  });

  it('cancels a long query', async () => {
    const { page } = suite;
    await typeSql('SELECT count(*) FROM range(100000) a, range(100000) b, range(1000) c');
    await page.getByRole('button', { name: 'Run' }).click();
    await expect.poll(() => page.getByTestId('job-status').textContent(), { timeout: 20_000 }).toMatch(/^running/);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => page.getByTestId('job-status').textContent(), { timeout: 20_000 }).toMatch(/^cancelled/);
    await expectAccessible(page, 'cancelled query');
  });

  it('downloads the result as CSV', async () => {
    const { page } = suite;
    await typeSql("SELECT id, kind FROM lab.raw.events WHERE kind = 'b' ORDER BY id");
    await page.keyboard.press('Control+Enter');
    await expect.poll(() => page.getByTestId('job-status').textContent(), { timeout: 20_000 }).toMatch(/^succeeded/);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'CSV' }).click()]);
    const file = path.join(suite.work, 'download.csv');
    await download.saveAs(file);
    const lines = fs.readFileSync(file, 'utf8').trim().split(/\r?\n/);
    expect(lines[0]).toBe('id,kind');
    expect(lines).toHaveLength(41);
    expect(lines[1]).toBe('2,b');
  });

  it('fills :name parameters in a form and saves one as a variable', async () => {
    const { page } = suite;
    await typeSql('SELECT count(*) AS n FROM lab.raw.events WHERE score >= :low');
    const low = page.getByLabel(':low');
    await low.fill('300');
    await page.getByRole('button', { name: 'Save as variable' }).click();
    await expect.poll(() => page.getByText(':low').last().locator('..').textContent()).toContain('300');
    await page.keyboard.press('Control+Enter');
    await page.locator('.cm-content').click();
    await page.keyboard.press('Control+Enter');
    await expect.poll(() => page.getByTestId('job-status').textContent(), { timeout: 20_000 }).toMatch(/^succeeded/);
    expect(await page.getByTestId('results').locator('tbody td').first().textContent()).toBe('20');
  });
});
