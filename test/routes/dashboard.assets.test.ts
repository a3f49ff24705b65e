import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { DASHBOARD_CSP, DASHBOARD_DIR, refreshSeconds, renderPage } from '../../src/routes/dashboard.js';
import { startHarness, testEnv } from '../helpers/harness.js';
import { expectCodedError } from '../helpers/shapes.js';

// GET /dashboard and its assets over plain HTTP (what the browser does with them is
// test/system/dashboard.browser.test.ts): each answered from memory with its Content-Type,
// a strict Content-Security-Policy and no Referer; HEAD answers the same without a body;
// paths beside the assets are 404, other methods 405.

const JS = 'text/javascript; charset=utf-8';
const FILES = [
  { path: '/dashboard/dashboard.js', file: 'dashboard.js', type: JS },
  { path: '/dashboard/api.js', file: 'api.js', type: JS },
  { path: '/dashboard/chart.js', file: 'chart.js', type: JS },
  { path: '/dashboard/view.js', file: 'view.js', type: JS },
  { path: '/dashboard/dashboard.css', file: 'dashboard.css', type: 'text/css; charset=utf-8' },
  { path: '/dashboard/icon.svg', file: 'icon.svg', type: 'image/svg+xml' },
];

t.test('the dashboard and its assets', async (t) => {
  const h = await startHarness(t, 'dashboard-assets', { QUOTA_CACHE_SECONDS: '7', RATE_CHECK_QUOTA_PER_MIN: '10' });

  t.test('GET /dashboard: the page, with this instance\'s refresh settings, and only same-origin assets', async (t) => {
    const res = await h.request('GET', '/dashboard');
    t.equal(res.status, 200);
    t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    t.equal(res.headers.get('content-security-policy'), DASHBOARD_CSP);
    t.match(DASHBOARD_CSP, /^default-src 'self';/, 'everything from the service itself by default');
    t.notMatch(DASHBOARD_CSP, /unsafe-inline|unsafe-eval|\*|data:|https?:/, 'no inline code, no eval, no other origin');
    t.match(DASHBOARD_CSP, /frame-ancestors 'none'/, 'not framed by other sites');
    t.equal(res.headers.get('referrer-policy'), 'no-referrer');
    t.equal(res.headers.get('x-content-type-options'), 'nosniff');
    t.equal(res.headers.get('cache-control'), 'no-cache');
    t.match(res.text, /<body data-cache-seconds="7" data-refresh-seconds="12">/,
      'QUOTA_CACHE_SECONDS in the page, and the refresh: 7 s, slowed to 12 s by 10 check-quotas a minute (half of them)');
    t.notMatch(res.text, /\{\{/, 'no placeholder left');
    t.notMatch(res.text, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    t.notMatch(res.text, /<style|\sstyle=|\son[a-z]+=/i, 'no inline style or event handler attributes');
    const refs = [...res.text.matchAll(/\s(?:src|href)="([^"]*)"/g)].map((m) => m[1] as string);
    t.same(refs.sort(), ['/dashboard/dashboard.css', '/dashboard/dashboard.js', '/dashboard/icon.svg'], 'its assets, by absolute path');
  });

  t.test('every file of src/dashboard/ but the page is an asset checked here', async (t) => {
    t.same(readdirSync(DASHBOARD_DIR).filter((f) => f !== 'index.html').sort(), FILES.map((f) => f.file).sort());
  });

  for (const asset of FILES) {
    t.test(`GET ${asset.path}: the file of src/dashboard/, ${asset.type}`, async (t) => {
      const res = await h.request('GET', asset.path);
      t.equal(res.status, 200);
      t.equal(res.headers.get('content-type'), asset.type);
      t.equal(res.headers.get('content-security-policy'), DASHBOARD_CSP);
      t.equal(res.headers.get('referrer-policy'), 'no-referrer');
      t.equal(res.headers.get('x-content-type-options'), 'nosniff');
      t.equal(res.text, readFileSync(path.join(DASHBOARD_DIR, asset.file), 'utf8'), 'byte for byte');
    });
  }

  t.test('HEAD: the same status and headers, no body; paths match case-insensitively', async (t) => {
    for (const { path: p, type } of [{ path: '/dashboard', type: 'text/html; charset=utf-8' }, ...FILES]) {
      const res = await h.request('HEAD', p);
      t.equal(res.status, 200, `HEAD ${p}: 200`);
      t.equal(res.headers.get('content-type'), type, `HEAD ${p}: its Content-Type`);
      t.equal(res.headers.get('content-security-policy'), DASHBOARD_CSP, `HEAD ${p}: the CSP`);
      t.equal(res.text, '', `HEAD ${p}: no body`);
    }
    t.equal((await h.request('GET', '/Dashboard')).status, 200, '/Dashboard is /dashboard');
  });

  t.test('paths beside the assets are 404 (no file is read by request path); other methods 405', async (t) => {
    // the page with a trailing slash is no path beside it: a redirect to the page (its relative links need the page's own address)
    for (const method of ['GET', 'HEAD']) {
      const slashed = await h.request(method, '/dashboard/');
      t.equal(slashed.status, 308, `${method} /dashboard/: 308`);
      t.equal(slashed.headers.get('location'), '../dashboard', `${method} /dashboard/: to the page`);
    }
    for (const p of ['/dashboard/index.html', '/dashboard/nope.js', '/dashboard/dashboard.js/x',
      '/dashboard/%2e%2e/package.json', '/dashboard/..%2fsrc%2fconfig.ts', '/dashboard/dashboard.js%00', '/dashboardx']) {
      const res = await h.request('GET', p);
      expectCodedError(t, res, 404, 'NOT_FOUND');
      t.equal((await h.request('HEAD', p)).status, 404, `HEAD ${p}: 404`);
    }
    for (const method of ['POST', 'PATCH', 'PUT', 'DELETE']) {
      const res = await h.request(method, '/dashboard', {});
      expectCodedError(t, res, 405, 'METHOD_NOT_ALLOWED');
      t.equal(res.headers.get('allow'), 'GET, HEAD', `${method}: Allow names GET and HEAD`);
    }
  });
});

t.test('the refresh interval: the cache window, never over half the per-key check-quota limit nor half the history limit (which the ledger shares)', async (t) => {
  const config = (cache: string, rate: string, history = '0') =>
    loadConfig(testEnv('x', { QUOTA_CACHE_SECONDS: cache, RATE_CHECK_QUOTA_PER_MIN: rate, RATE_HISTORY_PER_MIN: history }));
  t.equal(refreshSeconds(loadConfig(testEnv('x'))), 30, 'defaults: the 30 s cache window (2 of 10 check-quotas, 4 of 60 history and ledger pages a minute)');
  t.equal(refreshSeconds(config('30', '10')), 30, 'the 30 s cache window (2 of 10 a minute)');
  t.equal(refreshSeconds(config('1', '0')), 1, 'no limit: the cache window');
  t.equal(refreshSeconds(config('0', '0')), 10, 'no cache: every 10 s');
  t.equal(refreshSeconds(config('5', '10')), 12, '5 s would be 12 a minute: slowed to 5 a minute');
  t.equal(refreshSeconds(config('1', '1000')), 1, 'a high limit leaves the window as it is');
  t.equal(refreshSeconds(config('1', '7')), 18, 'whole seconds, rounded up');
  t.equal(refreshSeconds(config('1', '0', '60')), 4, 'history\'s default 60 a minute: at most 15 refreshes a minute, a history and a ledger page each');
  t.equal(refreshSeconds(config('5', '0', '10')), 24, 'history 10 a minute: slowed to 2.5 refreshes a minute');
  t.equal(refreshSeconds(config('5', '60', '24')), 10, 'the slower of the two limits wins');
  t.equal(refreshSeconds(config('5', '10', '48')), 12, 'the slower of the two limits wins, either way');
});

t.test('renderPage refuses a placeholder it does not know (a typo would reach the browser)', async (t) => {
  const config = loadConfig(testEnv('x'));
  t.equal(renderPage('<b data-x="{{CACHE_SECONDS}}">', config), '<b data-x="30">');
  t.throws(() => renderPage('<b data-x="{{CACHE_SECOND}}">', config), /unknown placeholder \{\{CACHE_SECOND\}\}/);
});
