import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import t from 'tap';
import { projectRoot } from '../../src/paths.js';
import { NO_RATE_LIMITS, startHarness, type Harness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { getTokenPair, redeemMany, signOne } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// The quota dashboard as a user sees it: headless Chromium (Debian's, driven by
// playwright-core as in cors.browser.test.ts) loads /dashboard from the service, a key is
// typed in, and what the page shows is compared with what the API answers: check-quota's
// figures, status and expiry; with an access token, history's redemptions in the table and
// per day in the chart, and the ledger's packages (expiring, expired) and entries. Then an admin change and a new redemption reach the open page
// without a reload, within QUOTA_CACHE_SECONDS. Screenshots go to dist/screenshots/.

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];
/** the page counts days in the browser's time zone: one far from UTC, so a UTC-day page would fail */
const TIME_ZONE = 'Europe/Istanbul';
const DAY_MS = 86_400_000;
const CHART_DAYS = 14;
const TABLE_ROWS = 20;
const SCREENSHOTS = path.join(projectRoot, 'dist', 'screenshots');

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

interface Item {
  tokenId: string;
  imzaTipi: number;
  usedAt: string;
  origin: string | null;
}

/** The local day (TIME_ZONE) of an instant, YYYY-MM-DD. */
const dayOf = (ms: number): string => new Intl.DateTimeFormat('en-CA', { timeZone: TIME_ZONE }).format(new Date(ms));

/** Every redemption of the license, newest first, through the API's pages. */
async function wholeHistory(h: Harness, licenseKey: string, accessToken: string): Promise<Item[]> {
  const items: Item[] = [];
  let cursor: string | null = null;
  do {
    const res = await h.history(licenseKey, accessToken, `?limit=37${cursor ? `&cursor=${cursor}` : ''}`);
    if (res.status !== 200) throw new Error(`history: ${res.status} ${res.text}`);
    items.push(...(res.body.data.items as Item[]));
    cursor = res.body.data.nextCursor as string | null;
  } while (cursor !== null);
  return items;
}

const text = (page: Page, selector: string): Promise<string> => page.$eval(selector, (e) => (e.textContent ?? '').trim());
const attr = (page: Page, selector: string, name: string): Promise<string | null> => page.$eval(selector, (e, n) => e.getAttribute(n), name);
const hidden = (page: Page, selector: string): Promise<boolean> => page.$eval(selector, (e) => (e as HTMLElement).hidden === true);

/** Waits until the element's attribute holds the value; returns what it held last (the assertion's "found"). */
async function attrBecomes(page: Page, selector: string, name: string, value: string, timeoutMs = 15_000): Promise<string | null> {
  return pollUntil(() => attr(page, selector, name).catch(() => null), (v) => v === value, { timeoutMs, intervalMs: 100 });
}

/** What a page did that it must not: a CSP violation, an uncaught error, the token in a URL. */
function watch(page: Page, secret: () => string): { problems: string[]; requests: { url: string; headers: Record<string, string> }[] } {
  const seen = { problems: [] as string[], requests: [] as { url: string; headers: Record<string, string> }[] };
  page.on('console', (msg) => {
    if (/Content.Security.Policy/i.test(msg.text())) seen.problems.push(`CSP: ${msg.text()}`);
  });
  page.on('pageerror', (err) => seen.problems.push(`page error: ${err.message}`));
  page.on('request', (req) => {
    void req.allHeaders().then((headers) => seen.requests.push({ url: req.url(), headers }));
    const token = secret();
    if (token !== '' && req.url().includes(token)) seen.problems.push(`the access token in a URL: ${req.url()}`);
  });
  page.on('framenavigated', (frame) => {
    const token = secret();
    if (token !== '' && frame.url().includes(token)) seen.problems.push(`the access token in the address: ${frame.url()}`);
  });
  return seen;
}

async function showKey(page: Page, licenseKey: string): Promise<void> {
  await page.fill('#license-key', licenseKey);
  await page.click('#key-form button[type=submit]');
}

async function screenshot(t: TestT, page: Page, name: string, fullPage = true): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, name);
  await page.screenshot({ path: file, fullPage });
  t.comment(`screenshot: ${file}`);
}

async function browserTests(): Promise<void> {
  // QUOTA_CACHE_SECONDS=1 and no check-quota limit: the page asks every second
  const h = await startHarness(t, 'dashboard-browser', { ...NO_RATE_LIMITS, QUOTA_CACHE_SECONDS: '1' });
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  t.teardown(() => browser.close());
  const newContext = (width = 1100): Promise<BrowserContext> =>
    browser.newContext({ timezoneId: TIME_ZONE, locale: 'tr-TR', viewport: { width, height: 900 } });

  // the license of the main scenario: 120 redemptions, some moved back to earlier days
  const expiryDate = new Date(Date.now() + 20.5 * DAY_MS).toISOString();
  const lic = await h.createLicense({ totalQuota: 200, expiryDate, organizationName: 'Deneme Eczanesi A.Ş.' });
  const { accessToken } = await getTokenPair(h, lic);
  const ids = await redeemMany(h, accessToken, 120, (i) => (i % 3 === 0 ? 'https://eczane.example.com' : undefined));
  await pollUntil(() => wholeHistory(h, lic.licenseKey, accessToken), (items) => items.length === 120, { timeoutMs: 20_000 });
  // the 5 oldest 20 days back (outside the chart), 10 three days back, 30 yesterday, 75 today;
  // the earlier ones at 01:30 Istanbul time, which is the day before in UTC
  const midnight = Date.parse(`${dayOf(Date.now())}T00:00:00+03:00`); // Turkey keeps +03:00 all year
  for (const [from, to, days] of [[0, 5, 20], [5, 15, 3], [15, 45, 1]] as const) {
    for (const [i, id] of ids.slice(from, to).entries()) {
      const usedAt = new Date(midnight - days * DAY_MS + 90 * 60_000 + i * 1000);
      await h.sql`update token_redemptions set used_at = ${usedAt} where token_id = ${id}::uuid`;
    }
  }

  const context = await newContext();
  t.teardown(() => context.close());
  const page = await context.newPage();
  let secret = '';
  const seen = watch(page, () => secret);
  await page.goto(`${h.url}/dashboard`, { timeout: 30_000 });

  t.test('a license key: the gauge, used, total, remaining, percentage, expiry and status are check-quota\'s', async (t) => {
    await showKey(page, lic.licenseKey);
    const quota = await h.checkQuota(lic.licenseKey);
    t.equal(quota.status, 200);
    const data = quota.body.data;
    t.equal(data.usedQuota, 120, 'the API counted the 120 redemptions');
    t.equal(await attrBecomes(page, '#used', 'data-value', String(data.usedQuota)), String(data.usedQuota), 'the page shows the used quota');
    t.equal(await text(page, '#used'), '120');
    t.equal(await text(page, '#total'), String(data.totalQuota));
    t.equal(await attr(page, '#total', 'data-value'), String(data.totalQuota));
    t.equal(await text(page, '#remaining'), String(data.remainingQuota));
    t.equal(await attr(page, '#remaining', 'data-value'), String(data.remainingQuota));
    t.equal(await attr(page, '#percentage', 'data-value'), String(data.quotaPercentage));
    t.equal(await text(page, '#percentage'), `%${data.quotaPercentage}`, 'the percentage, Turkish style');
    t.equal(await text(page, '#gauge-value'), `%${data.quotaPercentage}`, 'the gauge\'s figure');
    t.equal(await attr(page, '#gauge-fill', 'stroke-dasharray'), `${data.quotaPercentage} 100`, 'the arc: that share of the gauge');
    t.equal(await attr(page, '#gauge', 'role'), 'meter');
    t.equal(await attr(page, '#gauge', 'aria-valuenow'), String(data.remainingQuota), 'the meter\'s value: remaining');
    t.equal(await attr(page, '#gauge', 'aria-valuemax'), String(data.totalQuota), 'the meter\'s maximum: total');
    t.equal(await attr(page, '#gauge', 'aria-valuetext'), `${data.totalQuota} imzadan ${data.remainingQuota} kaldı (%${data.quotaPercentage})`);
    t.equal(await attr(page, '#expiry', 'datetime'), data.expiryDate, 'the expiry date');
    t.equal(data.expiryDate, expiryDate);
    t.equal(await attr(page, '#days-left', 'data-value'), '20', '20.5 days ahead: 20 whole days left');
    t.equal(await text(page, '#days-left'), '(20 gün kaldı)');
    t.equal(await attr(page, '#status', 'data-status'), 'active');
    t.equal(await text(page, '#status'), 'Aktif');
    t.equal(await text(page, '#org-name'), data.organizationName);
    t.match(await attr(page, '#updated-at', 'datetime'), /^\d{4}-\d\d-\d\dT/, 'updated at: the answer\'s timestamp');
    t.equal(await text(page, '#refresh-every'), '1', 'refreshed every QUOTA_CACHE_SECONDS');
    t.equal(new URL(page.url()).searchParams.get('key'), lic.licenseKey, 'the key in the address, for a bookmark');
    t.equal(await hidden(page, '#history'), true, 'no history without an access token');
  });

  t.test('an access token: the table is history\'s newest redemptions, the chart its counts per day', async (t) => {
    const items = await wholeHistory(h, lic.licenseKey, accessToken);
    secret = accessToken;
    await page.fill('#access-token', accessToken);
    await page.click('#token-form button[type=submit]');
    const rows = await pollUntil(() => page.$$eval('#redemptions tbody tr', (trs) => trs.length), (n) => n === TABLE_ROWS, { intervalMs: 100 });
    t.equal(rows, TABLE_ROWS, `the ${TABLE_ROWS} newest redemptions`);
    const shown = await page.$$eval('#redemptions tbody tr', (trs) => trs.map((tr) => ({
      tokenId: (tr as HTMLElement).dataset.tokenId, usedAt: tr.querySelector('time')?.getAttribute('datetime'),
      cells: [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim()),
    })));
    const types: Record<number, string> = { 0: 'Medula', 1: 'İBYS' };
    t.same(shown.map((r) => ({ ...r, cells: r.cells.slice(1) })), items.slice(0, TABLE_ROWS).map((i) => ({
      tokenId: i.tokenId, usedAt: i.usedAt, cells: [`${i.imzaTipi} · ${types[i.imzaTipi]}`, i.origin ?? '—', i.tokenId],
    })), 'each row: the time, imzaTipi, origin and tokenId of history\'s item, in its order');
    t.ok(shown.every((r) => /\d{1,2}:\d\d:\d\d/.test(r.cells[0] ?? '')), 'every row shows its time as a local time of day');

    const bars = await page.$$eval('#chart rect.bar', (rects) => rects.map((r) => ({ day: r.getAttribute('data-day'), count: Number(r.getAttribute('data-count')) })));
    const today = dayOf(Date.now());
    const days = Array.from({ length: CHART_DAYS }, (_, i) => dayOf(Date.parse(`${today}T12:00:00Z`) - (CHART_DAYS - 1 - i) * DAY_MS));
    t.same(bars.map((b) => b.day), days, `one bar per day of the last ${CHART_DAYS}, in ${TIME_ZONE}, today last`);
    const expected = days.map((day) => ({ day, count: items.filter((i) => dayOf(Date.parse(i.usedAt)) === day).length }));
    t.same(bars, expected, 'each bar: the redemptions of its day in history (both pages of the page\'s paging)');
    t.same(expected.filter((d) => d.count > 0).map((d) => d.count), [10, 30, 75], '3 days back, yesterday, today; the 20-day-old ones outside');
    const heights = await page.$$eval('#chart rect.bar', (rects) => rects.map((r) => Number(r.getAttribute('height'))));
    t.equal(heights[CHART_DAYS - 1], Math.max(...heights), 'the busiest day has the tallest bar');
    t.equal(await text(page, '#chart-summary'), `Son ${CHART_DAYS} günde 115 kullanım; en yoğun gün ${await page.evaluate(() =>
      new Intl.DateTimeFormat('tr-TR', { day: 'numeric', month: 'short' }).format(new Date()))} (75).`);

    t.equal(await page.inputValue('#access-token'), '', 'the token is not left in the form');
    t.notOk((await page.content()).includes(accessToken), 'nor anywhere in the document');
    t.equal(await page.evaluate(() => sessionStorage.length + localStorage.length + document.cookie.length), 0, 'nor in storage or cookies');
    const historyCalls = seen.requests.filter((r) => r.url.includes('/api/License/history/'));
    t.ok(historyCalls.length >= 2, 'history asked page after page');
    t.ok(historyCalls.every((r) => r.headers.authorization === `Bearer ${accessToken}`), 'the token goes in the Authorization header');
    t.ok(seen.requests.every((r) => r.headers.referer === undefined), 'no request names the page (Referrer-Policy: no-referrer)');
    await screenshot(t, page, 'dashboard.png');
  });

  t.test('the open page follows an admin change and a new redemption, without a reload', async (t) => {
    await page.evaluate(() => { (window as unknown as { marker: number }).marker = 1; });
    const added = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 50 });
    t.equal(added.status, 200, added.text);
    t.equal(await attrBecomes(page, '#total', 'data-value', '250'), '250', 'the page shows the purchased package');
    t.equal(await attr(page, '#remaining', 'data-value'), '130');
    t.equal(await attr(page, '#gauge', 'aria-valuenow'), '130');

    const token = await signOne(h, accessToken, 1);
    t.equal((await h.validate(token, 'https://yeni.example.com')).status, 200);
    const tokenId = claimsOf(token).token_id;
    await pollUntil(() => wholeHistory(h, lic.licenseKey, accessToken), (items) => items[0]?.tokenId === tokenId, { timeoutMs: 20_000 });
    t.equal(await attrBecomes(page, '#redemptions tbody tr', 'data-token-id', tokenId), tokenId, 'the new redemption heads the table');
    t.equal(await text(page, '#redemptions tbody tr td:nth-child(3)'), 'https://yeni.example.com');
    t.equal(await attrBecomes(page, `#chart rect[data-day="${dayOf(Date.now())}"]`, 'data-count', '76'), '76', 'and today\'s bar counts it');
    t.equal(await attrBecomes(page, '#used', 'data-value', '121'), '121', 'and the used quota');
    t.equal(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 1, 'the same page all along: no reload');
  });

  t.test('an unknown key, an expired, an inactive and a used-up license: status and the published message', async (t) => {
    const cases = [
      { what: 'unknown', key: randomUUID(), status: 'not-found', label: 'Bulunamadı', details: false },
      { what: 'not a UUID', key: 'abc', status: 'invalid', label: 'Geçersiz anahtar', details: false },
    ];
    const expired = await h.createLicense({ expiryDate: new Date(Date.now() - 3.5 * DAY_MS).toISOString() });
    const inactive = await h.createLicense({ isActive: false });
    const usedUp = await h.createLicense({ totalQuota: 2 });
    const pair = await getTokenPair(h, usedUp);
    await redeemMany(h, pair.accessToken, 2);
    const more = [
      { what: 'expired', key: expired.licenseKey, status: 'expired', label: 'Süresi dolmuş', details: true },
      { what: 'inactive', key: inactive.licenseKey, status: 'inactive', label: 'Aktif değil', details: true },
      { what: 'used up', key: usedUp.licenseKey, status: 'exhausted', label: 'Kota doldu', details: true },
    ];
    for (const c of [...cases, ...more]) {
      const api = await h.checkQuota(c.key);
      await showKey(page, c.key);
      t.equal(await attrBecomes(page, '#status', 'data-status', c.status), c.status, `${c.what}: status ${c.status}`);
      t.equal(await text(page, '#status'), c.label, `${c.what}: "${c.label}"`);
      t.equal(await text(page, '#quota-message'), api.body.error.message, `${c.what}: the published message (${api.status} ${api.body.error.code})`);
      t.equal(await hidden(page, '#quota-details'), !c.details, `${c.what}: figures ${c.details ? 'shown' : 'hidden'}`);
      t.equal(await hidden(page, '#history'), true, `${c.what}: the previous license's history is gone, its token forgotten`);
      if (c.status === 'expired') {
        t.equal(await attr(page, '#expiry', 'datetime'), api.body.data.expiryDate);
        t.equal(await text(page, '#days-left'), `(${api.body.data.daysExpired} gün önce sona erdi)`);
        t.equal(api.body.data.daysExpired, 3);
      }
      if (c.status === 'exhausted') {
        t.same([await text(page, '#remaining'), await text(page, '#used'), await text(page, '#total')], ['0', '2', '2'], 'used up: 0 left of 2');
        t.equal(await attr(page, '#gauge', 'aria-valuenow'), '0');
      }
    }
    t.equal(await text(page, '#notice'), '', 'no transport error on the way');
  });

  t.test('an expired or foreign access token: history\'s 401 or 403, said so, and the token dropped', async (t) => {
    await showKey(page, lic.licenseKey);
    await attrBecomes(page, '#status', 'data-status', 'active');
    const other = await h.createLicense();
    const foreign = (await getTokenPair(h, other)).accessToken;
    for (const [token, status] of [['not.a.token', 401], [foreign, 403]] as const) {
      const api = await h.history(lic.licenseKey, token);
      t.equal(api.status, status);
      await page.fill('#access-token', token);
      await page.click('#token-form button[type=submit]');
      const message = await pollUntil(() => text(page, '#history-message'), (m) => m !== '', { intervalMs: 100 });
      t.match(message, `${api.body.error.message} (${status})`, `${status}: the published message and the status`);
      t.equal(await hidden(page, '#history'), true, `${status}: no history shown`);
      t.equal(await hidden(page, '#token-state'), true, `${status}: the token is forgotten`);
    }
  });

  t.test('at 360 px wide nothing overflows', async (t) => {
    const narrow = await newContext(360);
    const small = await narrow.newPage();
    const narrowSeen = watch(small, () => accessToken);
    await small.goto(`${h.url}/dashboard?key=${lic.licenseKey}`);
    await attrBecomes(small, '#status', 'data-status', 'active');
    t.equal(await small.inputValue('#license-key'), lic.licenseKey, '?key= fills the key in and shows it');
    await small.fill('#access-token', accessToken);
    await small.click('#token-form button[type=submit]');
    await pollUntil(() => small.$$eval('#redemptions tbody tr', (trs) => trs.length), (n) => n === TABLE_ROWS, { intervalMs: 100 });
    const widths = await small.evaluate(() => ({ scroll: document.documentElement.scrollWidth, view: window.innerWidth }));
    t.ok(widths.scroll <= widths.view, `no horizontal scrolling (${widths.scroll} <= ${widths.view})`);
    await small.setViewportSize({ width: 360, height: 1500 });
    await small.evaluate(() => window.scrollTo(0, 0));
    await screenshot(t, small, 'dashboard-narrow.png', false);
    t.same(narrowSeen.problems, [], 'no CSP violation, page error or token in a URL');
    await narrow.close();
  });

  t.test('an access token: the packages table is the ledger\'s, one expiring within 30 days and one expired marked; purchases and forfeits listed', async (t) => {
    const pk = await h.createLicense({ totalQuota: 10, organizationName: 'Paketli Eczane' });
    const short = await h.admin('POST', `/admin/v1/licenses/${pk.licenseKey}/quota`, { add: 5, expiresAt: new Date(Date.now() + 3000).toISOString(), note: 'kısa' });
    t.equal(short.status, 200, short.text);
    const soon = await h.admin('POST', `/admin/v1/licenses/${pk.licenseKey}/quota`, {
      add: 20, expiresAt: new Date(Date.now() + 10 * DAY_MS).toISOString(), note: 'Fatura gizli not',
    });
    t.equal(soon.status, 200, soon.text);
    const { accessToken: pkAccess } = await getTokenPair(h, pk);
    await redeemMany(h, pkAccess, 2); // from the package expiring first, which then forfeits its 3 left
    const api = await pollUntil(() => h.ledger(pk.licenseKey, pkAccess), (r) => r.body?.data?.items?.[0]?.kind === 'forfeit',
      { timeoutMs: 20_000, intervalMs: 250 });
    const ledger = api.body.data as { packages: { id: number; amount: number; used: number; remaining: number; forfeited: number; expiresAt: string }[];
      items: { kind: string; amount: number; packageId: number | null }[] };
    t.same(ledger.packages.map((p) => [p.id, p.used, p.remaining, p.forfeited]), [[3, 0, 20, 0], [2, 2, 0, 3], [1, 0, 10, 0]], 'the API: three packages');

    await showKey(page, pk.licenseKey);
    t.equal(await attrBecomes(page, '#status', 'data-status', 'active'), 'active');
    secret = pkAccess;
    await page.fill('#access-token', pkAccess);
    await page.click('#token-form button[type=submit]');
    const rows = await pollUntil(() => page.$$eval('#packages tbody tr', (trs) => trs.length), (n) => n === 3, { intervalMs: 100 });
    t.equal(rows, 3, 'a row per package');
    t.equal(await hidden(page, '#ledger'), false, 'the packages card shown');
    t.equal(await text(page, '#ledger-heading'), 'Paketler');
    t.same(await page.$$eval('#packages thead th', (ths) => ths.map((th) => [th.getAttribute('scope'), (th.textContent ?? '').trim()])),
      [['col', 'Paket'], ['col', 'Miktar'], ['col', 'Kullanılan'], ['col', 'Kalan'], ['col', 'Bitiş']], 'column headers');
    t.equal(await text(page, '#packages caption'), 'Paketler, en yenisi önce', 'the table is labelled');
    const shown = await page.$$eval('#packages tbody tr', (trs) => trs.map((tr) => ({
      id: (tr as HTMLElement).dataset.packageId, state: (tr as HTMLElement).dataset.state,
      values: [...tr.querySelectorAll('td[data-value]')].map((td) => Number((td as HTMLElement).dataset.value)),
      expiresAt: tr.querySelector('time')?.getAttribute('datetime'), text: (tr.lastElementChild?.textContent ?? '').trim(),
      labels: [...tr.querySelectorAll('td')].map((td) => (td as HTMLElement).dataset.label),
    })));
    t.same(shown.map((r) => ({ id: r.id, values: r.values, expiresAt: r.expiresAt })),
      ledger.packages.map((p) => ({ id: String(p.id), values: [p.amount, p.used, p.remaining], expiresAt: p.expiresAt })),
      'each row: the package\'s amount, used, remaining and expiry, newest first');
    t.same(shown.map((r) => r.state), ['expiring', 'expired', ''], 'in 10 days: expiring; past: expired; in a year: neither');
    t.match(shown[0]?.text, /\(9 gün içinde sona eriyor\)$/, `the expiring one says so (${shown[0]?.text})`);
    t.match(shown[1]?.text, /\(süresi doldu, 3 kontör yandı\)$/, `the expired one, with its forfeit (${shown[1]?.text})`);
    t.notMatch(shown[2]?.text ?? '', /\(/, 'the other, its expiry alone');
    t.same(shown[0]?.labels, ['Paket', 'Miktar', 'Kullanılan', 'Kalan', 'Bitiş'], 'cells labelled for the narrow layout');

    const entries = await page.$$eval('#entries tbody tr', (trs) => trs.map((tr) => ({
      kind: (tr as HTMLElement).dataset.kind, amount: Number((tr.querySelector('td[data-value]') as HTMLElement | null)?.dataset.value),
      cells: [...tr.querySelectorAll('td')].slice(1).map((td) => (td.textContent ?? '').trim()),
    })));
    t.same(entries.map((e) => [e.kind, e.amount]), ledger.items.map((i) => [i.kind, i.amount]), 'the entries: the ledger\'s, newest first');
    t.same(entries.map((e) => e.cells[0]), ['Süresi doldu, yandı', 'Satın alma', 'Satın alma', 'Satın alma']);
    t.same(entries.map((e) => e.cells[2]), ['#2', '#3', '#2', '#1'], 'each with its package');
    t.equal(entries[1]?.cells[1], '+20');
    t.notOk((await page.content()).includes('gizli not'), 'no purchase note on the page');
    const ledgerCalls = seen.requests.filter((r) => r.url.includes(`/api/License/ledger/${pk.licenseKey}`));
    t.ok(ledgerCalls.length >= 1 && ledgerCalls.every((r) => r.headers.authorization === `Bearer ${pkAccess}`),
      'the ledger asked with the token in the Authorization header');
    await screenshot(t, page, 'dashboard-packages.png');
  });

  t.test('the page broke no rule along the way', async (t) => {
    t.same(seen.problems, [], 'no CSP violation, page error or token in a URL');
  });
}

/** A 429 from check-quota: said so with its Retry-After, the figures already shown kept. */
async function rateLimitTest(): Promise<void> {
  t.test('check-quota\'s 429: the wait shown, the figures kept', async (t) => {
    const h = await startHarness(t, 'dashboard-429', { ...NO_RATE_LIMITS, RATE_CHECK_QUOTA_PER_MIN: '1', QUOTA_CACHE_SECONDS: '1' });
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    t.teardown(() => browser.close());
    const page = await (await browser.newContext({ timezoneId: TIME_ZONE })).newPage();
    const lic = await h.createLicense({ totalQuota: 9 });
    await page.goto(`${h.url}/dashboard?key=${lic.licenseKey}`);
    t.equal(await attrBecomes(page, '#total', 'data-value', '9'), '9', 'the first lookup of the minute: shown');
    t.equal(await attr(page, 'body', 'data-refresh-seconds'), '120', 'one check-quota a minute: the page asks every 2 minutes');
    await showKey(page, lic.licenseKey); // the second of the minute
    const notice = await pollUntil(() => text(page, '#notice'), (m) => m !== '', { intervalMs: 100 });
    t.match(notice, /^Çok fazla istek\. Lütfen bekleyiniz\. \d+ saniye sonra yeniden denenecek \(429\)\.$/, `the published message, Retry-After and the status (${notice})`);
    const api = await h.checkQuota(lic.licenseKey);
    t.equal(api.status, 429, 'check-quota is still limited');
    const wait = Number(api.headers.get('retry-after'));
    t.ok(Number(/(\d+) saniye/.exec(notice)?.[1]) >= wait, `the page's wait is Retry-After's (${notice}; now ${wait})`);
    t.equal(await attr(page, '#total', 'data-value'), '9', 'the figures shown stay');
    t.equal(await attr(page, '#status', 'data-status'), 'active');
  });
}

if (!existsSync(CHROMIUM)) {
  t.fail(`${CHROMIUM} is missing: the browser test needs Debian's chromium; install it with \`sudo apt-get install -y chromium\` (make test does it when it may)`);
} else {
  await browserTests();
  await rateLimitTest();
}
