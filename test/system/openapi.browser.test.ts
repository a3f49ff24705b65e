import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';

// /docs as a browser sees it: headless Chromium (Debian's, driven by playwright-core, as in
// cors.browser.test.ts) loads the page, Swagger UI renders the operations of /openapi.json
// under the page's Content-Security-Policy without a single violation and without asking
// any other host, and "Try it out" on GET /healthz calls this very service.

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

interface Seen {
  violations: string[];
}

async function browserTests(): Promise<void> {
  const h = await startHarness(t, 'openapi-browser');
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  t.teardown(() => browser.close());
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await context.newPage();
  // CSP violations as the page reports them (an init script runs outside the page's policy)
  await page.addInitScript(() => {
    const seen = { violations: [] as string[] };
    (window as unknown as { seen: Seen }).seen = seen;
    document.addEventListener('securitypolicyviolation', (e) => seen.violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const requested: string[] = [];
  page.on('request', (req) => requested.push(req.url()));
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });

  const res = await page.goto(`${h.url}/docs`, { timeout: 30_000 });
  t.equal(res?.status(), 200, '/docs: 200');

  t.test('Swagger UI renders the operations of the document', async (t) => {
    await page.waitForSelector('.opblock', { timeout: 30_000 });
    const paths = await page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.getAttribute('data-path') ?? e.textContent ?? ''));
    for (const path of ['/api/v1/auth/get-token', '/api/license/validate', '/api/license/check-quota/{licenseKey}', '/admin/v1/licenses', '/healthz']) {
      t.ok(paths.some((p) => p.replace(/\u200b/g, '') === path), `${path} is rendered`);
    }
    t.match(await page.textContent('.info .title') ?? '', /License and sign-token service/, 'the title of the document');
  });

  t.test('"Try it out" on GET /healthz calls this service', async (t) => {
    const op = page.locator('#operations-operations-getHealthz');
    await op.locator('.opblock-summary').click();
    await op.locator('button.try-out__btn').click();
    await op.locator('button.execute').click();
    const status = op.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor({ timeout: 30_000 });
    t.equal((await status.textContent())?.trim(), '200', 'the live answer is 200');
    t.match(await op.locator('.live-responses-table .microlight').first().textContent() ?? '', /"redis": "ok"/, 'and its body is shown');
  });

  t.test('nothing broke the policy, and only this service was asked', async (t) => {
    const seen = await page.evaluate(() => (window as unknown as { seen: Seen }).seen);
    t.same(seen.violations, [], 'no Content-Security-Policy violation');
    t.same(errors, [], 'no script error');
    const origin = new URL(h.url).origin;
    t.same(requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:')), [], 'no other host (no CDN)');
    t.ok(requested.includes(`${origin}/openapi.json`), 'the page loaded /openapi.json');
  });
}

if (!existsSync(CHROMIUM)) {
  t.fail(`${CHROMIUM} is missing: the browser test needs Debian's chromium; install it with \`sudo apt-get install -y chromium\` (make test does it when it may)`);
} else {
  await browserTests();
}
