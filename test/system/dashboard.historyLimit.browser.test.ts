import { existsSync } from 'node:fs';
import { chromium, type Page } from 'playwright-core';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { getTokenPair } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// The quota dashboard meeting history's rate limit (RATE_HISTORY_PER_MIN), in headless
// Chromium as dashboard.browser.test.ts drives it (a file of its own: that one is long
// enough): the published message with its Retry-After, the token kept, and no request to
// history before Retry-After has passed, although the page's own refresh comes sooner.

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];
const LIMIT = 60;

const text = (page: Page, selector: string): Promise<string> => page.$eval(selector, (e) => (e.textContent ?? '').trim());
const attr = (page: Page, selector: string, name: string): Promise<string | null> => page.$eval(selector, (e, n) => e.getAttribute(n), name);
const hidden = (page: Page, selector: string): Promise<boolean> => page.$eval(selector, (e) => (e as HTMLElement).hidden === true);

async function historyLimitTest(): Promise<void> {
  t.test('history\'s 429: the wait shown, the token kept, asked again only after Retry-After', async (t) => {
    const h = await startHarness(t, 'dashboard-h429', { ...NO_RATE_LIMITS, RATE_HISTORY_PER_MIN: String(LIMIT), QUOTA_CACHE_SECONDS: '1' });
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    t.teardown(() => browser.close());
    const page = await (await browser.newContext({ timezoneId: 'Europe/Istanbul' })).newPage();
    const historyStatuses: number[] = [];
    page.on('response', (res) => {
      if (res.url().includes('/api/License/history/')) historyStatuses.push(res.status());
    });
    const lic = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    await page.goto(`${h.url}/dashboard?key=${lic.licenseKey}`);
    await pollUntil(() => attr(page, '#status', 'data-status').catch(() => null), (s) => s === 'active', { intervalMs: 100 });
    t.equal(await attr(page, 'body', 'data-refresh-seconds'), '4', `${LIMIT} history and ledger pages a minute: the page asks every 4 s (half of them, two a refresh)`);

    // the license's requests of this window spent elsewhere (another tab, the web application),
    // and the window shortened to 6 s: Retry-After is longer than the page's refresh, and short
    for (let i = 0; i < LIMIT; i++) t.equal((await h.history(lic.licenseKey, accessToken, '?limit=1')).status, 200, `request ${i + 1} elsewhere`);
    t.equal(await h.redis.pexpire(h.keys.forLicense(lic.firmaId).rateHistory, 6000), 1, 'the license\'s counter (history\'s and the ledger\'s)');
    await page.fill('#access-token', accessToken);
    await page.click('#token-form button[type=submit]');
    const message = await pollUntil(() => text(page, '#history-message'), (m) => m !== '', { intervalMs: 50 });
    t.match(message, /^Çok fazla istek\. Lütfen bekleyiniz\. [1-6] saniye sonra yeniden denenecek \(429\)\.$/,
      `the published message, Retry-After and the status (${message})`);
    t.equal(await hidden(page, '#token-state'), false, 'the token is kept');

    const shown = await pollUntil(() => hidden(page, '#history'), (isHidden) => !isHidden, { timeoutMs: 20_000, intervalMs: 100 });
    t.equal(shown, false, 'the history shown once the window has reset');
    t.equal(await text(page, '#history-message'), '', 'the notice gone');
    t.same(historyStatuses.slice(0, 2), [429, 200],
      `one 429, and the page's next request to history waited for Retry-After: answered (${historyStatuses.join(',')})`);
  });
}

if (!existsSync(CHROMIUM)) {
  t.fail(`${CHROMIUM} is missing: the browser test needs Debian's chromium; install it with \`sudo apt-get install -y chromium\` (make test does it when it may)`);
} else {
  await historyLimitTest();
}
