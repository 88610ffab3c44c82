import { copyFileSync, mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './support/browser';
import { eventDetail } from '../src/operations/event-detail';
import { consoleWorld, OPERATOR, REQUEST_ID, VIEWER, type ConsoleWorld } from './support/console-event';
import { waitUntil } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';

/** Written on every run; with UPDATE_DOCS_SCREENSHOT=1 also copied to the README's image. */
const SCREENSHOT = path.resolve(__dirname, 'artifacts', 'console-event.png');
const DOCS_SCREENSHOT = path.resolve(__dirname, '..', 'docs', 'images', 'console-event.png');
const platform = new FakePlatform();
let w: ConsoleWorld;
let server: Server;
let browser: Browser;
let base: string;

beforeAll(async () => {
  w = await consoleWorld(platform);
  server = w.f.admin.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
}, 60000);
afterAll(async () => {
  await browser?.close();
  server?.close();
  await w?.close();
});

/** A browser signed in with basic auth (the browser answers the 401 challenge), recording every request its pages make. */
async function signedIn(
  credentials: { username: string; password: string },
  viewport = { width: 1280, height: 900 },
): Promise<{ context: BrowserContext; page: Page; requested: string[] }> {
  const context = await browser.newContext({ httpCredentials: credentials, viewport });
  const requested: string[] = [];
  context.on('request', (r) => requested.push(r.url()));
  return { context, page: await context.newPage(), requested };
}

/** Serious or critical accessibility violations on the page, by rule and the elements concerned. */
async function seriousViolations(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

const seriesCount = async () =>
  (await eventDetail(w.f.pipeline, w.eventId, (p) => p))!.deliveries.map((d) => d.series.length);

describe('the console in a real browser', () => {
  it('a viewer sees no action; a forged POST without the CSRF token is refused 403 and changes nothing', async () => {
    const { context, page } = await signedIn(VIEWER);
    for (const url of [
      `/admin/console/events/${w.eventId}`,
      '/admin/console/targets',
      `/admin/console/events?target=erp&state=dead_letter`,
    ]) {
      expect((await page.goto(`${base}${url}`))?.status()).toBe(200);
      expect(
        await page
          .locator(
            'a[href*="/admin/console/confirm/"], form[method="post"], button:not([type="submit"][form]):has-text("Confirm")',
          )
          .count(),
      ).toBe(0);
      await page.getByText('auditor').first().waitFor();
    }
    const before = { series: await seriesCount(), ledger: w.ledger.requests.length, erp: w.erp.requests.length };

    // The viewer's own browser, and the operator's browser without the form's token.
    const viewerPost = await page.evaluate(
      async (id) =>
        (await fetch('/admin/console/actions/resend', { method: 'POST', body: new URLSearchParams({ event: id }) }))
          .status,
      w.eventId,
    );
    expect(viewerPost).toBe(403);
    const operator = await browser.newContext({ httpCredentials: OPERATOR });
    const forged = await operator.request.post(`${base}/admin/console/actions/resend`, { form: { event: w.eventId } });
    expect(forged.status()).toBe(403);
    expect(await forged.text()).toContain('token is missing');
    await new Promise((r) => setTimeout(r, 300));
    expect({ series: await seriesCount(), ledger: w.ledger.requests.length, erp: w.erp.requests.length }).toEqual(
      before,
    );
    expect(w.f.adminLogs.find((l) => l.action === 'event.resend')).toBeUndefined();
    await operator.close();
    await context.close();
  }, 60000);

  it('an operator finds the event by request_id, reads each target’s attempts and resends it with the confirmation; every request stays on the admin port', async () => {
    const { context, page, requested } = await signedIn(OPERATOR);
    expect((await page.goto(`${base}/admin/console`))?.status()).toBe(200);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('request_id, event id or webhook-id').fill(REQUEST_ID);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/\/admin\/console\/events\?q=PAY20261121000001/);
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('link', { name: w.eventId }).first().click();
    await page.waitForURL(`${base}/admin/console/events/${w.eventId}`);
    const ledger = page.locator('section[data-target="ledger"]');
    const erp = page.locator('section[data-target="erp"]');
    expect(await ledger.locator('h3 .badge').textContent()).toBe('delivered');
    expect(await erp.locator('h3 .badge').textContent()).toBe('dead letter');
    expect(await erp.locator('tbody tr:not(.series)').count()).toBe(2); // both failed attempts
    expect(await erp.textContent()).toContain('ledger period closed');
    expect(await ledger.locator('tbody tr:not(.series)').count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);

    w.setErpUp(true);
    await page.getByRole('link', { name: 'Resend to every target…' }).click();
    await page.getByRole('heading', { name: 'Resend an event?' }).waitFor();
    await page.getByRole('button', { name: /^Confirm/ }).click();
    await page.waitForURL(`${base}/admin/console/events/${w.eventId}?done=resend`);
    await page.getByRole('status').waitFor();
    for (const section of [ledger, erp]) {
      const mark = section.locator('tr.series').nth(1);
      expect(await mark.locator('[data-trigger]').textContent()).toBe('resend');
      expect(await mark.locator('[data-by]').textContent()).toBe('basic:ops');
    }
    await waitUntil(
      () => w.erp.successes().length === 1 && w.ledger.successes().length === 2,
      10000,
      'both targets got the resend',
    );
    await waitUntil(
      async () => (await w.f.pipeline.deliveryQueue('erp')!.getJobState(w.eventId)) === 'completed',
      5000,
      'erp delivered',
    );
    await page.reload();
    expect(await erp.locator('h3 .badge').textContent()).toBe('delivered');
    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    const png = await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(png.length).toBeGreaterThan(20_000);
    if (process.env.UPDATE_DOCS_SCREENSHOT === '1') copyFileSync(SCREENSHOT, DOCS_SCREENSHOT);
    expect(w.f.adminLogs.find((l) => l.action === 'event.resend')).toMatchObject({
      audit: true,
      principal: 'basic:ops',
      items: [w.eventId],
    });

    await page.getByRole('link', { name: 'Targets' }).click();
    await page.getByRole('heading', { name: 'Targets' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    // Bull Board, linked from the console, is held to our origin too: its page links to web fonts elsewhere.
    await page.getByRole('link', { name: 'Queues (Bull Board)' }).click();
    await page.getByText('deliver.erp', { exact: true }).first().waitFor({ timeout: 15000 });
    await page.waitForLoadState('networkidle');

    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((url) => new URL(url).origin !== base)).toEqual([]);
    await context.close();
  }, 90000);

  it('reads on a phone-width screen: nothing wider than the screen but the tables, which scroll', async () => {
    const { context, page } = await signedIn(OPERATOR, { width: 375, height: 740 });
    for (const url of [
      `/admin/console/events/${w.eventId}`,
      '/admin/console/targets',
      `/admin/console/events?q=${REQUEST_ID}`,
    ]) {
      await page.goto(`${base}${url}`);
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    }
    await context.close();
  }, 60000);

  it('at 1280 × 800 and 390 × 844, every page keeps its primary actions inside the screen and passes axe', async () => {
    const pages = [
      '/admin/console/events',
      `/admin/console/events?q=${REQUEST_ID}`,
      '/admin/console/events?target=erp&state=dead_letter',
      `/admin/console/events/${w.eventId}`,
      '/admin/console/targets',
      `/admin/console/confirm/replay?id=${encodeURIComponent(`erp/${w.eventId}`)}`,
    ];
    // The links and controls a page is for: navigation, search, and every action button.
    const primary = 'header nav a, main a.button, main button, form.search input, form.search select';
    const problems: string[] = [];
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      const { context, page } = await signedIn(OPERATOR, viewport);
      for (const url of pages) {
        await page.goto(`${base}${url}`);
        const outside = await page.$$eval(
          primary,
          (elements, width) =>
            elements
              .map((e) => ({ e, r: e.getBoundingClientRect() }))
              .filter(({ r }) => r.width > 0 && (r.left < -0.5 || r.right > width + 0.5))
              .map(({ e, r }) => `${(e.textContent ?? '').trim() || e.getAttribute('name')} at ${r.left}–${r.right}`),
          viewport.width,
        );
        expect(outside.length + (await page.$$(primary)).length).toBeGreaterThan(0);
        for (const o of outside) problems.push(`${viewport.width} px ${url}: ${o} outside the screen`);
        const scrollWidth = await page.evaluate('document.documentElement.scrollWidth');
        if (Number(scrollWidth) > viewport.width)
          problems.push(`${viewport.width} px ${url}: page ${scrollWidth} px wide`);
        const axe = await new AxeBuilder({ page }).analyze();
        for (const v of axe.violations) problems.push(`${viewport.width} px ${url}: axe ${v.id} (${v.impact})`);
      }
      await context.close();
    }
    expect(problems).toEqual([]);
  }, 120000);
});
