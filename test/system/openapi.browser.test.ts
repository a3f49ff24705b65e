import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';

// The documentation as a browser sees it: headless Chromium (Debian's, driven by
// playwright-core, as in cors.browser.test.ts) opens /docs, the reference page, which runs
// no script and lists every operation; its link of GET /healthz leads to Swagger UI
// (/docs/interactive) opened on that operation, which renders the operations of
// /openapi.json under the page's Content-Security-Policy without a single violation and
// without asking any other host, and "Try it out" calls this very service. The same for the
// admin API: /admin/docs, then its Swagger UI on /admin/openapi.json with the files of /docs/.

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

/** The paths Swagger UI shows, without the zero-width spaces it breaks them with. */
async function renderedPaths(page: Page): Promise<string[]> {
  await page.waitForSelector('.opblock', { timeout: 30_000 });
  const paths = await page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.getAttribute('data-path') ?? e.textContent ?? ''));
  return paths.map((p) => p.replace(/\u200b/g, ''));
}

async function browserTests(): Promise<void> {
  const h = await startHarness(t, 'openapi-browser');
  const origin = new URL(h.url).origin;
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  t.teardown(() => browser.close());
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await context.newPage();
  // CSP violations as each page reports them (an init script runs outside the page's
  // policy), kept here across the pages visited
  const violations: string[] = [];
  await page.exposeFunction('reportViolation', (v: string) => violations.push(v));
  await page.addInitScript(() => {
    const report = (window as unknown as { reportViolation: (v: string) => void }).reportViolation;
    document.addEventListener('securitypolicyviolation', (e) => report(`${location.pathname}: ${e.violatedDirective} ${e.blockedURI}`));
  });
  const requested: string[] = [];
  page.on('request', (req) => requested.push(req.url()));
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });

  t.test('/docs: the reference page lists the operations and loads no script', async (t) => {
    const res = await page.goto(`${h.url}/docs`, { timeout: 30_000 });
    t.equal(res?.status(), 200, '/docs: 200');
    const listed = await page.$$eval('.operations code', (els) => els.map((e) => e.textContent ?? ''));
    for (const path of ['/api/v1/auth/get-token', '/api/license/validate', '/api/license/check-quota/{licenseKey}', '/healthz']) {
      t.ok(listed.includes(path), `${path} is listed`);
    }
    t.notOk(listed.some((p) => p.startsWith('/admin/')), 'and nothing of the admin API');
    t.same(await page.$$eval('script', (els) => els.length), 0, 'no script');
    t.notOk(requested.some((url) => url.endsWith('.js') || url.endsWith('/openapi.json')), 'neither Swagger UI nor the document loaded');
    t.equal(await page.evaluate(() => getComputedStyle(document.querySelector('.method-get') as Element).color), 'rgb(255, 255, 255)', 'its style sheet applies');
  });

  t.test('its link of GET /healthz opens Swagger UI on that operation', async (t) => {
    await page.locator('a[href$="#/operations/getHealthz"]').click();
    await page.waitForURL(/\/docs\/interactive#\/operations\/getHealthz$/, { timeout: 30_000 });
    const paths = await renderedPaths(page);
    for (const path of ['/api/v1/auth/get-token', '/api/license/validate', '/api/license/check-quota/{licenseKey}', '/healthz']) {
      t.ok(paths.includes(path), `${path} is rendered`);
    }
    t.notOk(paths.some((p) => p.startsWith('/admin/')), 'nothing of the admin API');
    t.match(await page.textContent('.info .title') ?? '', /License and sign-token service/, 'the title of the document');
    const op = page.locator('#operations-operations-getHealthz');
    await op.locator('button.try-out__btn').waitFor({ timeout: 15_000 });
    t.ok(await op.locator('button.try-out__btn').isVisible(), 'the linked operation is open');
  });

  t.test('"Try it out" on GET /healthz calls this service', async (t) => {
    const op = page.locator('#operations-operations-getHealthz');
    await op.locator('button.try-out__btn').click();
    await op.locator('button.execute').click();
    const status = op.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor({ timeout: 30_000 });
    t.equal((await status.textContent())?.trim(), '200', 'the live answer is 200');
    t.match(await op.locator('.live-responses-table .microlight').first().textContent() ?? '', /"redis": "ok"/, 'and its body is shown');
  });

  t.test('/admin/docs and its Swagger UI: the admin API, on /admin/openapi.json, with the files of /docs/', async (t) => {
    await page.goto(`${h.url}/admin/docs`, { timeout: 30_000 });
    const listed = await page.$$eval('.operations code', (els) => els.map((e) => e.textContent ?? ''));
    t.ok(listed.includes('/admin/v1/licenses') && listed.includes('/admin/v1/audit'), 'the admin API is listed');
    await page.locator('a[href$="#/admin/getAdminV1Audit"]').click();
    await page.waitForURL(/\/admin\/docs\/interactive#\/admin\/getAdminV1Audit$/, { timeout: 30_000 });
    const paths = await renderedPaths(page);
    t.ok(paths.includes('/admin/v1/licenses/{licenseKey}'), 'the admin API is rendered');
    t.notOk(paths.includes('/healthz'), 'and nothing of the public API');
    t.ok(requested.includes(`${origin}/admin/openapi.json`), 'from /admin/openapi.json');
    t.ok(requested.includes(`${origin}/docs/swagger-ui-bundle.js`), 'with the files of /docs/');
  });

  t.test('nothing broke the policy, and only this service was asked', async (t) => {
    t.same(violations, [], 'no Content-Security-Policy violation on any page');
    t.same(errors, [], 'no script error');
    t.same(requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:')), [], 'no other host (no CDN)');
    t.ok(requested.includes(`${origin}/openapi.json`), 'the page loaded /openapi.json');
  });
}

if (!existsSync(CHROMIUM)) {
  t.fail(`${CHROMIUM} is missing: the browser test needs Debian's chromium; install it with \`sudo apt-get install -y chromium\` (make test does it when it may)`);
} else {
  await browserTests();
}
