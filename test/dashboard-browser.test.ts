import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from './support/browser';
import { ADMIN_TEST_TOKEN, buildForwarding, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';

const SCREENSHOT = path.resolve(__dirname, 'artifacts', 'dashboard.png');
const platform = new FakePlatform();
let f: ForwardingHarness;
let server: Server;
let browser: Browser;

beforeAll(async () => {
  f = buildForwarding(platform, [{ name: 'ledger', url: 'http://127.0.0.1:9/unused', events: ['payment.result'] }]);
  await platform.send(f.receiver.app, platform.signed('fx.result', { body: 'not json' })).expect(200);
  server = f.admin.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  browser = await launchChromium();
}, 60000);
afterAll(async () => {
  await browser?.close();
  server?.close();
  await f?.close();
});

it('the dashboard loads in a real browser and lists every queue', async () => {
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const page = await browser.newPage({ extraHTTPHeaders: { authorization: `Bearer ${ADMIN_TEST_TOKEN}` } });
  const response = await page.goto(`${base}/admin/queues`);
  expect(response?.status()).toBe(200);

  for (const name of ['payment.result', 'remittance.incoming', 'quarantine', 'deliver.ledger']) {
    await page.getByText(name, { exact: true }).first().waitFor({ timeout: 15000 });
  }
  await page.getByText('Loading...').waitFor({ state: 'detached', timeout: 15000 });
  await page.waitForLoadState('networkidle');
  mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
  const png = await page.screenshot({ path: SCREENSHOT, fullPage: true });
  expect(png.length).toBeGreaterThan(20_000); // a rendered board, not a blank page

  const anonymous = await browser.newPage();
  expect((await anonymous.goto(`${base}/admin/queues`))?.status()).toBe(401);
}, 60000);
