import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { servePages, type PageServer } from '../helpers/pageServer.js';
import { getTokenPair } from '../helpers/tokens.js';

// CORS as a browser sees it (cors.test.ts sends the same requests by hand): headless
// Chromium (Debian's, driven by playwright-core, which never downloads one) loads a page
// from an origin of CORS_ORIGINS and from one that is not, and the page's script calls the
// service with fetch. A JSON POST is not a "simple" request, so Chromium sends a preflight
// first and enforces the answer's CORS headers itself.

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];
const RATE_GET_TOKEN = 10;

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

/** What the page's script saw of one fetch: the answer as the page may read it, or the error it threw. */
type Seen =
  | { ok: true; status: number; body: Record<string, unknown> | null; rateLimit: string | null; rateLimitPolicy: string | null; nosniff: string | null }
  | { ok: false; name: string; message: string };

// The page's own script: one fetch with a JSON body, reported as Seen.
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>imza</title><script>
window.callService = async (url, body) => {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const text = await res.text();
    let parsed = null;
    try { parsed = JSON.parse(text); } catch {}
    return { ok: true, status: res.status, body: parsed, rateLimit: res.headers.get('RateLimit'),
      rateLimitPolicy: res.headers.get('RateLimit-Policy'), nosniff: res.headers.get('X-Content-Type-Options') };
  } catch (err) {
    return { ok: false, name: err.name, message: String(err.message) };
  }
};
</script></head><body>imza</body></html>`;

/** A page server of the test's own, on a free port of 127.0.0.1. */
function pageServer(): Promise<PageServer> {
  return servePages((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
  });
}

async function browserTests(): Promise<void> {
  const allowedPages = await pageServer();
  t.teardown(allowedPages.close);
  const otherPages = await pageServer();
  t.teardown(otherPages.close);
  const A = allowedPages.port;
  const h = await startHarness(t, 'cors-browser', {
    CORS_ORIGINS: `http://127.0.0.1:${A}, http://*.localhost:${A}`,
    RATE_GET_TOKEN_PER_MIN: String(RATE_GET_TOKEN),
    RATE_VALIDATE_PER_MIN: '100',
  });
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  t.teardown(() => browser.close());

  /** Loads the page from `pageOrigin` and lets its script POST `body` to the service's `path`. */
  async function fromPage(pageOrigin: string, path: string, body: unknown): Promise<Seen> {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${pageOrigin}/`, { timeout: 30_000 });
      return await page.evaluate(([url, b]) => (window as unknown as { callService(u: string, b: unknown): Promise<Seen> })
        .callService(url as string, b), [`${h.url}${path}`, body] as const);
    } finally {
      await context.close();
    }
  }

  /** get-token then validate from one page origin: both answered and readable by the page. */
  async function redeemFrom(t: TestT, pageOrigin: string): Promise<void> {
    const lic = await h.createLicense({ totalQuota: 5 });
    const got = await fromPage(pageOrigin, '/api/v1/auth/get-token', { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 });
    t.ok(got.ok, `get-token from ${pageOrigin}: the fetch succeeds (${JSON.stringify(got)})`);
    if (!got.ok) return;
    t.equal(got.status, 200, 'get-token: 200');
    t.equal(got.body?.success, true, 'the page reads the JSON body: success true');
    t.match(got.body?.signToken, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'the page reads a signToken');
    t.equal(got.rateLimitPolicy, `"get-token";q=${RATE_GET_TOKEN};w=60`, 'the page reads the exposed RateLimit-Policy');
    t.match(got.rateLimit ?? '', new RegExp(`^"get-token";r=${RATE_GET_TOKEN - 1};t=\\d+$`), 'the page reads the exposed RateLimit');
    t.equal(got.nosniff, null, 'a header the service does not expose stays hidden from the page');

    const redeemed = await fromPage(pageOrigin, '/api/license/validate', { token: got.body?.signToken });
    t.ok(redeemed.ok, `validate from ${pageOrigin}: the fetch succeeds (${JSON.stringify(redeemed)})`);
    if (!redeemed.ok) return;
    t.equal(redeemed.status, 200, 'validate: 200, a real redemption');
    t.equal(redeemed.body?.success, true, 'validate: success true');
    t.equal(redeemed.body?.remainingQuota, 4, 'validate: one unit spent, read by the page');
    t.match(redeemed.rateLimit ?? '', /^"validate";r=\d+;t=\d+$/, 'validate: the page reads RateLimit');
    const quota = await h.checkQuota(lic.licenseKey);
    t.equal(quota.body?.data?.usedQuota, 1, 'the service counted the redemption');
  }

  t.test('from an allowed origin the page calls get-token and validate and reads the answers', async (t) => {
    await redeemFrom(t, `http://127.0.0.1:${A}`);
  });

  t.test('from a subdomain of localhost (wildcard entry) the same', async (t) => {
    await redeemFrom(t, `http://app.localhost:${A}`);
  });

  t.test('from an origin not allowed the preflight is refused: TypeError, and get-token never ran', async (t) => {
    const lic = await h.createLicense();
    const seen = await fromPage(`http://127.0.0.1:${otherPages.port}`, '/api/v1/auth/get-token',
      { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 });
    t.strictSame(seen.ok ? seen : { ok: false, name: seen.name }, { ok: false, name: 'TypeError' },
      `the fetch fails with a TypeError, blocked by CORS (${JSON.stringify(seen)})`);
    // the first counted get-token of this license's window: the browser's POST never reached the route
    const direct = await h.getToken(lic.licenseKey, lic.password);
    t.equal(direct.status, 200, 'get-token without a browser still works');
    t.match(direct.headers.get('ratelimit') ?? '', new RegExp(`^"get-token";r=${RATE_GET_TOKEN - 1};t=\\d+$`),
      'the license\'s get-token count shows no earlier request: nothing was issued to the refused page');
  });

  t.test('a wildcard entry does not open another port of the same host', async (t) => {
    const lic = await h.createLicense();
    const { signToken } = await getTokenPair(h, lic);
    const seen = await fromPage(`http://app.localhost:${otherPages.port}`, '/api/license/validate', { token: signToken });
    t.equal(seen.ok ? 'answered' : seen.name, 'TypeError', `blocked by CORS (${JSON.stringify(seen)})`);
    const after = await h.validate(signToken);
    t.equal(after.status, 200, `the token was not spent by the refused page: it redeems now (${after.text})`);
  });
}

if (!existsSync(CHROMIUM)) {
  t.fail(`${CHROMIUM} is missing: the browser test needs Debian's chromium; install it with \`sudo apt-get install -y chromium\` (make test does it when it may)`);
} else {
  await browserTests();
}
