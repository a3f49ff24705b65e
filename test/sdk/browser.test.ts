import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness, type Harness } from '../helpers/harness.js';
import { servePages, type PageServer } from '../helpers/pageServer.js';
import { licensePayload, receiptPayload, signerOf } from '../helpers/artefacts.js';
import { TEST_SIGNING_KEY } from '../helpers/signingKeys.js';

// The built SDK (the ES modules of @license-service/client, as its package ships them) in a
// browser: headless Chromium loads a page whose module script imports it as it is, and the
// page calls the service (an origin of CORS_ORIGINS) through it: every method, a typed
// error, the idempotent replay, history across pages, the hand-off payload and license
// tokens and receipts verified offline (Ed25519 in the browser's WebCrypto). It runs there
// because it uses nothing of Node's (packages/client/tsconfig.json compiles it without
// Node's types).

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

const SDK_DIR = dirname(fileURLToPath(import.meta.resolve('@license-service/client')));
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>imza</title>
<script type="module">import * as sdk from '/sdk/index.js'; window.sdk = sdk; window.sdkReady = true;</script>
</head><body>imza</body></html>`;

/** The page and the SDK's modules, on a free port of 127.0.0.1. */
function pageServer(): Promise<PageServer> {
  return servePages((req, res) => {
    const module = /^\/sdk\/([a-z]+\.js)$/.exec(req.url ?? '');
    if (req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    } else if (module) {
      readFile(join(SDK_DIR, module[1] as string)).then(
        (js) => res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(js),
        () => res.writeHead(404).end(),
      );
    } else {
      res.writeHead(404).end();
    }
  });
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the page's window.sdk is the module, untyped there */
async function browserTests(): Promise<void> {
  const pages = await pageServer();
  t.teardown(pages.close);
  const h = await startHarness(t, 'sdk-browser', { ...NO_RATE_LIMITS, CORS_ORIGINS: pages.origin });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  t.teardown(() => browser.close());
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${pages.origin}/`, { timeout: 30_000 });
  await page.waitForFunction(() => (window as any).sdkReady === true, undefined, { timeout: 30_000 });

  await t.test('every method from a page, through the built SDK', async (t) => pageFlow(t, h, page));
  await t.test('license tokens and receipts verified in the page (WebCrypto Ed25519), the JWKS fetched from the service', async (t) => pageVerify(t, h, page));
}

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

async function pageFlow(t: TestT, h: Harness, page: Page): Promise<void> {
  const lic = await h.createLicense({ totalQuota: 5, organizationName: 'Tarayıcı Eczanesi' });
  const seen = await page.evaluate(async ({ base, licenseKey, password }) => {
    const { LicenseClient, LicenseApiError, encodeHandoff, decodeHandoff } = (window as any).sdk;
    const api = new LicenseClient({ baseUrl: base });
    const pair = await api.getToken({ licenseKey, password, imzaTipi: 0 });
    const more = await api.signToken(pair.accessToken, { imzaTipi: 1 });
    const first = await api.validate({ token: pair.signToken }, { idempotencyKey: 'browser-1' });
    const again = await api.validate({ token: pair.signToken }, { idempotencyKey: 'browser-1' });
    let used: unknown = null;
    try {
      await api.validate({ token: pair.signToken });
    } catch (e: any) {
      used = { apiError: e instanceof LicenseApiError, status: e.status, code: e.code, message: e.message };
    }
    const second = await api.validate({ token: more.signToken });
    const quota = await api.checkQuota(licenseKey);
    const handoff = decodeHandoff(JSON.stringify(encodeHandoff({ signMethod: 1, token: more.signToken, pinCode: '', xmlFile: ['<ç/>'] })));
    return { accessToken: pair.accessToken, first, again, used, second, quota: quota.data, handoff, handoffToken: handoff.token === more.signToken };
  }, { base: h.url, licenseKey: lic.licenseKey, password: lic.password });

  t.strictSame(seen.first, { success: true, message: 'Token doğrulandı, imza kotası düşüldü', usedQuota: 1, remainingQuota: 4 }, 'validate');
  t.strictSame(seen.again, seen.first, 'the same key and token: the first answer again');
  t.strictSame(seen.used, { apiError: true, status: 400, code: 'TOKEN_ALREADY_USED', message: 'Bu token zaten kullanılmış. Yeni token alınız.' },
    'a refusal is a LicenseApiError in the page too');
  t.equal(seen.second.usedQuota, 2, 'the sign-token token redeemed');
  t.match(seen.quota, { licenseKey: lic.licenseKey, usedQuota: 2, remainingQuota: 3, organizationName: 'Tarayıcı Eczanesi' }, 'checkQuota');
  t.match(seen.handoff, { signMethod: 1, pinCode: '', xmlFile: ['<ç/>'] }, 'the hand-off round-trips');
  t.ok(seen.handoffToken, 'with its token');

  await h.drainWorker();
  const items = await page.evaluate(async ({ base, licenseKey, accessToken }) => {
    const api = new (window as any).sdk.LicenseClient({ baseUrl: base });
    const out: number[] = [];
    for await (const item of api.history(licenseKey, accessToken, { limit: 1 })) out.push(item.imzaTipi);
    return out;
  }, { base: h.url, licenseKey: lic.licenseKey, accessToken: seen.accessToken as string });
  t.same(items, [1, 0], 'history, a page per item, newest first');
}
async function pageVerify(t: TestT, h: Harness, page: Page): Promise<void> {
  const { signer } = signerOf(TEST_SIGNING_KEY);
  const license = licensePayload();
  const receipt = receiptPayload();
  const seen = await page.evaluate(async ({ base, licenseToken, receiptToken }) => {
    const { KeySet, verifyLicenseToken, verifyReceipt, receiptDigest, ArtefactVerificationError } = (window as any).sdk;
    const keySet = new KeySet({ baseUrl: base });
    const claims = await verifyLicenseToken(licenseToken, { keySet });
    const receiptClaims = await verifyReceipt(receiptToken, { keySet });
    let refused: unknown = null;
    try {
      await verifyLicenseToken(receiptToken, { keySet });
    } catch (e: any) {
      refused = { typed: e instanceof ArtefactVerificationError, reason: e.reason };
    }
    return { claims, receiptClaims, refused, digest: await receiptDigest(receiptToken) };
  }, { base: h.url, licenseToken: signer.sign(JSON.stringify(license)), receiptToken: signer.sign(JSON.stringify(receipt)) });
  t.strictSame(seen.claims, license, 'the license token\'s claims');
  t.strictSame(seen.receiptClaims, receipt, 'the receipt\'s claims');
  t.strictSame(seen.refused, { typed: true, reason: 'WRONG_ARTEFACT' }, 'a receipt is no license token in the page either');
  t.equal(seen.digest, createHash('sha256').update(JSON.stringify(receipt)).digest('hex'), 'receiptDigest');
}
/* eslint-enable @typescript-eslint/no-explicit-any */

if (!existsSync(CHROMIUM)) {
  t.fail(`${CHROMIUM} is missing: the browser test needs Debian's chromium; install it with \`sudo apt-get install -y chromium\` (make test does it when it may)`);
} else {
  await browserTests();
}
