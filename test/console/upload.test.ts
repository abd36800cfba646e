/**
 * In Chromium: the upload wizard. A CSV chosen with the file picker is negotiated (a plan with an
 * INFERRED_DECIMAL warning), accepted, sent with a progress bar and committed; a second CSV dropped
 * onto the drop zone has a value its column's type cannot store, and the 409 shows the column, row
 * and value. The rows are checked through OData afterwards.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { beforeAll, expect, it } from 'vitest';
import { writeParquet } from '../parquet.ts';
import { ARTIFACTS, consoleSuite, describeInBrowser, expectAccessible, signIn, type Credential } from './harness.ts';

const ROWS = 20_000;

describeInBrowser('console: upload wizard', () => {
  const suite = consoleSuite('upload');
  let alice: Credential;
  let token: string;

  const rowCount = async () => {
    const reply = await suite.api.call('GET', '/odata/api/v4/sales/orders/daily?$count=true&$top=0', { token });
    return suite.api.expectStatus(reply, 200)['@odata.count'] as number;
  };

  beforeAll(async () => {
    alice = await suite.credential('alice');
    token = await suite.token(alice);
    await suite.api.ownWorkspace(token, 'alice', 'sales');
  }, 120_000);

  it('negotiates, shows the plan with a warning, accepts, sends with progress and commits', { timeout: 90_000 }, async () => {
    const { page } = suite;
    const file = path.join(suite.work, 'orders.csv');
    // ~500 KB, sampled whole; amounts with two decimals are inferred DECIMAL, with a warning.
    fs.writeFileSync(file, `id,region,amount\n${Array.from({ length: ROWS }, (_, i) => `${i + 1},${i % 2 ? 'north' : 'south'},${((i * 7) % 1000) + 0.25}`).join('\n')}\n`);
    await signIn(page, suite.server.url, alice, '/load');
    await page.getByRole('heading', { name: 'Upload a file' }).waitFor();
    await expectAccessible(page, 'upload: choose');

    await page.getByLabel(/Destination dataset/).fill('sales.orders.daily');
    await page.locator('input[type=file]').setInputFiles(file);
    await page.getByRole('button', { name: 'Check the file' }).click();

    const plan = page.getByRole('region', { name: 'Columns of the plan' });
    await plan.waitFor();
    expect(await plan.locator('tbody tr').count()).toBe(3);
    expect(await plan.locator('tbody tr', { hasText: 'amount' }).textContent()).toMatch(/DECIMAL/);
    const warnings = page.getByRole('region', { name: 'Warnings issues' });
    expect(await warnings.textContent()).toContain('INFERRED_DECIMAL');
    await page.screenshot({ path: path.join(ARTIFACTS, 'upload-plan-with-a-warning.png'), fullPage: true });
    expect(await page.locator('.wizard').textContent()).toContain('contract proposed');
    await expectAccessible(page, 'upload: plan');

    // Leave `region` out: the contract is planned again (PATCH), still proposed, the warning stays.
    await page.getByRole('checkbox', { name: 'Load region' }).uncheck();
    await page.getByRole('button', { name: 'Apply column changes' }).click();
    await expect.poll(() => plan.locator('tbody tr', { hasText: 'region' }).textContent()).toContain('ignored');
    expect(await warnings.textContent()).toContain('INFERRED_DECIMAL');

    // Narrow (tablet) layout: the plan table scrolls inside its box, the page does not.
    await page.setViewportSize({ width: 768, height: 900 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(768);
    await page.setViewportSize({ width: 1280, height: 800 });

    await page.getByRole('button', { name: 'Accept the plan' }).click();
    const send = page.getByRole('button', { name: 'Send orders.csv' });
    await send.waitFor();

    // Slow the upload down so its progress can be seen between 0 and the end.
    const cdp = await suite.context.newCDPSession(page);
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 20, downloadThroughput: -1, uploadThroughput: 150_000 });
    await send.click();
    const progress = page.locator('progress');
    await progress.waitFor();
    const seen: number[] = [];
    while (await progress.isVisible().catch(() => false)) {
      const value = await progress.getAttribute('value').catch(() => null);
      if (value !== null) seen.push(Number(value));
      await page.waitForTimeout(100);
    }
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    console.log(`progress values seen while sending ${fs.statSync(file).size} bytes: ${seen.length} (${seen.slice(0, 5).join(', ')}…)`);
    expect(seen.some((v) => v > 0 && v < fs.statSync(file).size)).toBe(true);

    await expect.poll(() => page.getByRole('status').first().textContent()).toContain(`Sent: ${ROWS} rows`);
    await page.getByLabel(/Commit message/).fill('first load from the console');
    await page.getByRole('button', { name: 'Commit' }).click();
    await expect.poll(() => page.locator('.success').textContent()).toContain(`Committed ${ROWS} rows to sales.orders.daily`);
    await expectAccessible(page, 'upload: committed');
    expect(await rowCount()).toBe(ROWS);
    const first = suite.api.expectStatus(await suite.api.call('GET', '/odata/api/v4/sales/orders/daily?$top=1&$orderby=id', { token }), 200);
    expect(Object.keys(first.value[0]).filter((k) => !k.startsWith('_')).sort()).toEqual(['amount', 'id']);
  });

  it('shows the column, row and value of a refused value (409) and stores nothing', { timeout: 60_000 }, async () => {
    const { page } = suite;
    await signIn(page, suite.server.url, alice, '/load');
    await page.getByLabel(/Destination dataset/).fill('sales.orders.daily');
    // Dropped onto the drop zone, as a person drags a file in.
    const csv = 'id,region,amount\n1,north,1.25\n2,south,2.50\n3,north,abc\n4,south,4.75\n';
    const transfer = await page.evaluateHandle((text) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], 'bad.csv', { type: 'text/csv' }));
      return dt;
    }, csv);
    await page.locator('.dropzone').dispatchEvent('drop', { dataTransfer: transfer });
    expect(await page.locator('.dropzone').textContent()).toContain('bad.csv');
    await page.getByRole('button', { name: 'Check the file' }).click();

    // The dataset declares the types, so the contract is accepted at once.
    const send = page.getByRole('button', { name: 'Send bad.csv' });
    await send.waitFor();
    await send.click();
    await page.getByRole('heading', { name: 'The value that was refused' }).waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('VALUE_NOT_STORABLE');
    const facts = await page.locator('dl.facts').textContent();
    expect(facts).toContain('Columnamount');
    expect(facts).toMatch(/Row4/);
    expect(facts).toContain('"abc"');
    await expectAccessible(page, 'upload: refused');
    await page.screenshot({ path: path.join(ARTIFACTS, 'upload-refused-value-409.png'), fullPage: true });
    expect(await rowCount()).toBe(ROWS);

    // One of the ways the answer offers: leave such records out, send again, commit the other three.
    await page.getByRole('button', { name: 'Leave such records out and send again' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Sent: 3 rows');
    await page.getByRole('button', { name: 'Commit' }).click();
    await expect.poll(() => page.locator('.success').textContent()).toContain('Committed 3 rows');
    expect(await rowCount()).toBe(ROWS + 3);

    // Another file refused, then the wizard started over: the contract is abandoned, the first step shows again.
    await page.getByRole('button', { name: 'Upload another file' }).click();
    await page.getByRole('button', { name: 'Check the file' }).waitFor();
  });

  it('uploads a Parquet file: the negotiation reads its footer', { timeout: 60_000 }, async () => {
    const { page } = suite;
    const duck = await DuckDBInstance.create(':memory:');
    const connection = await duck.connect();
    const file = await writeParquet(connection, "SELECT i AS id, 'item ' || i AS name, DATE '2024-01-01' + CAST(i AS INTEGER) AS day FROM range(5000) t(i)", path.join(suite.work, 'items.parquet'));
    connection.closeSync();
    await signIn(page, suite.server.url, alice, '/load');
    await page.getByLabel(/Destination dataset/).fill('sales.catalog.items');
    await page.locator('input[type=file]').setInputFiles(file);
    await page.getByRole('button', { name: 'Check the file' }).click();
    const plan = page.getByRole('region', { name: 'Columns of the plan' });
    await plan.waitFor();
    expect(await plan.locator('tbody tr', { hasText: 'day' }).textContent()).toContain('DATE');
    await page.getByRole('button', { name: 'Accept the plan' }).click();
    await page.getByRole('button', { name: 'Send items.parquet' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Sent: 5000 rows');
    await page.getByRole('button', { name: 'Commit' }).click();
    await expect.poll(() => page.locator('.success').textContent()).toContain('Committed 5000 rows to sales.catalog.items');
    const reply = await suite.api.call('GET', '/odata/api/v4/sales/catalog/items?$count=true&$top=0', { token });
    expect(suite.api.expectStatus(reply, 200)['@odata.count']).toBe(5000);
  });
});
