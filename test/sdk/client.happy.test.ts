import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { LicenseClient, type HistoryItem } from '@license-service/client';
import t from 'tap';
import { adminView } from '../helpers/admin.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { countingFetch } from '../helpers/sdk.js';
import { ISO_UTC } from '../helpers/shapes.js';
import { redeemMany } from '../helpers/tokens.js';

// The client SDK (packages/client), imported by the package's name, against a real server: each
// method resolves to the answer's body exactly as the service sent it, history walks every
// page once, and validate and release with an Idempotency-Key answer a retry with the first
// answer.

const h = await startHarness(t, 'sdk-happy', NO_RATE_LIMITS);

t.test('@license-service/client: the built SDK, ES modules for import and CommonJS for require, each importing only its own modules', async (t) => {
  const entry = fileURLToPath(import.meta.resolve('@license-service/client'));
  t.match(entry, /\/packages\/client\/dist\/esm\/index\.js$/, 'import resolves to the ES modules');
  const required = createRequire(import.meta.url).resolve('@license-service/client');
  t.match(required, /\/packages\/client\/dist\/cjs\/index\.js$/, 'require resolves to the CommonJS build');
  const modules = ['index', 'client', 'errors', 'handoff', 'types', 'verify', 'claims', 'keyset', 'encoding', 'members'];
  for (const file of modules) {
    const text = await readFile(entry.replace(/index\.js$/, `${file}.js`), 'utf8');
    const imports = [...text.matchAll(/^(?:import|export)\b[^;]*?from\s+'([^']+)'/gm)].map((m) => m[1] as string);
    t.ok(imports.every((spec) => /^\.\/[a-z]+\.js$/.test(spec)), `esm/${file}.js imports only ./*.js (${imports.join(', ') || 'nothing'})`);
    const cjs = await readFile(required.replace(/index\.js$/, `${file}.js`), 'utf8');
    const requires = [...cjs.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1] as string);
    t.ok(requires.every((spec) => /^\.\/[a-z]+\.js$/.test(spec)), `cjs/${file}.js requires only ./*.js (${requires.join(', ') || 'nothing'})`);
  }
  const { LicenseClient: Required } = createRequire(import.meta.url)('@license-service/client') as { LicenseClient: unknown };
  t.equal(typeof Required, 'function', 'require() gives the same API');
  t.not(Required, LicenseClient, 'a class of its own: the dual-package hazard docs/sdk.md warns of');
});

t.test('getToken, signToken, validate, checkQuota: the published bodies, running arithmetic', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5, organizationName: 'Şifa Eczanesi', domains: ['eczane.example.com'] });
  const sdk = new LicenseClient({ baseUrl: `${h.url}/` }); // a trailing slash is fine
  const pair = await sdk.getToken({ licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 1 });
  t.strictSame(pair, {
    success: true, accessToken: pair.accessToken, signToken: pair.signToken, accessExpiresIn: 900, signExpiresIn: 300, remainingQuota: 5,
  });
  t.equal(claimsOf(pair.signToken).imza_tipi, 1, 'a sign token of the type asked for');

  const more = await sdk.signToken(pair.accessToken, { imzaTipi: 0 });
  t.strictSame(more, { success: true, signToken: more.signToken, signExpiresIn: 300, remainingQuota: 5 });
  t.equal(claimsOf(more.signToken).imza_tipi, 0);

  const first = await sdk.validate({ token: pair.signToken, origin: 'https://eczane.example.com/imza' });
  t.strictSame(first, { success: true, message: 'Token doğrulandı, imza kotası düşüldü', usedQuota: 1, remainingQuota: 4 });
  const second = await sdk.validate({ token: more.signToken, origin: 'eczane.example.com' });
  t.strictSame(second, { ...first, usedQuota: 2, remainingQuota: 3 });

  const quota = await sdk.checkQuota(lic.licenseKey);
  t.strictSame(quota, {
    success: true,
    data: {
      licenseKey: lic.licenseKey, remainingQuota: 3, totalQuota: 5, usedQuota: 2, quotaPercentage: 60,
      expiryDate: quota.data.expiryDate, isActive: true, organizationName: 'Şifa Eczanesi',
    },
    message: 'Kota bilgisi başarıyla getirildi',
    timestamp: quota.timestamp,
  });
  t.match(quota.timestamp, ISO_UTC);
  t.match(quota.data.expiryDate, ISO_UTC);
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 2, 'what the admin API sees');
});

t.test('ledger: the packages, a page of entries and the totals, as the service sent them; the same from the CommonJS build', async (t) => {
  const lic = await h.createLicense({ totalQuota: 4 });
  const added = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 6, expiresAt: new Date(Date.now() + 86_400_000).toISOString(), note: 'not' });
  t.equal(added.status, 200, added.text);
  const sdk = new LicenseClient({ baseUrl: h.url });
  const { accessToken } = await sdk.getToken({ licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 });
  const raw = await h.ledger(lic.licenseKey, accessToken);
  t.equal(raw.status, 200, raw.text);
  const page = await sdk.ledger(lic.licenseKey, accessToken);
  t.strictSame(page, raw.body.data, 'the answer\'s data');
  t.same(page.packages.map((p) => [p.id, p.amount, p.remaining]), [[2, 6, 6], [1, 4, 4]], 'newest first');
  t.same(page.items.map((i) => [i.kind, i.amount, i.packageId]), [['purchase', 6, 2], ['purchase', 4, 1]]);
  t.same(page.totals, { purchased: 10, corrected: 0, forfeited: 0, released: 0, redeemed: 0, totalQuota: 10, usedQuota: 0 });
  const first = await sdk.ledger(lic.licenseKey, accessToken, { limit: 1 });
  t.same(first.items, page.items.slice(0, 1));
  const next = await sdk.ledger(lic.licenseKey, accessToken, { limit: 1, cursor: first.nextCursor ?? undefined });
  t.same(next.items, page.items.slice(1), 'the cursor of the page before');
  t.equal(next.nextCursor, null);
  const { LicenseClient: Required } = createRequire(import.meta.url)('@license-service/client') as { LicenseClient: typeof LicenseClient };
  t.strictSame(await new Required({ baseUrl: h.url }).ledger(lic.licenseKey, accessToken), page, 'the CommonJS build\'s ledger');
});

t.test('history follows nextCursor: every page fetched once, every item once, newest first', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const sdk = new LicenseClient({ baseUrl: h.url });
  const { accessToken } = await sdk.getToken({ ...lic, imzaTipi: 0 });
  const ids = await redeemMany(h, accessToken, 7, (i) => (i === 3 ? 'hastane.example.org' : undefined));
  await h.drainWorker();

  const counter = countingFetch();
  const counted = new LicenseClient({ baseUrl: h.url, fetch: counter.fetch });
  const items: HistoryItem[] = [];
  for await (const item of counted.history(lic.licenseKey, accessToken, { limit: 3 })) items.push(item);
  t.same(items.map((i) => i.tokenId), [...ids].reverse(), 'every redemption, newest first');
  t.equal(counter.sent.length, 3, 'three pages: 3, 3, 1');
  t.equal(new Set(counter.sent).size, 3, 'each page asked for once');
  t.match(counter.sent[0], /\?limit=3$/, 'the first page has no cursor');
  t.ok(counter.sent.slice(1).every((s) => /\?limit=3&cursor=[A-Za-z0-9_-]+$/.test(s)), 'the next ones follow nextCursor');
  const fourth = items[3];
  t.strictSame(fourth, { tokenId: ids[3], imzaTipi: 1, usedAt: fourth?.usedAt, origin: 'hastane.example.org' }, 'an item as published');
  t.equal(items[0]?.origin, null, 'origin null when none was sent');

  const pages = [];
  for await (const page of sdk.historyPages(lic.licenseKey, accessToken, { limit: 3 })) pages.push(page);
  t.same(pages.map((p) => p.items.length), [3, 3, 1]);
  t.equal(pages[2]?.nextCursor, null, 'the last page says so');
  t.same(pages.flatMap((p) => p.items), items, 'pages and items agree');

  // stopping early fetches no more pages
  const early = countingFetch();
  for await (const item of new LicenseClient({ baseUrl: h.url, fetch: early.fetch }).history(lic.licenseKey, accessToken, { limit: 3 })) {
    if (item.tokenId === ids[4]) break;
  }
  t.equal(early.sent.length, 1, 'one page for the first three items');

  const resumed = await sdk.historyPage(lic.licenseKey, accessToken, { limit: 2, cursor: pages[0]?.nextCursor ?? undefined });
  t.same(resumed.items.map((i) => i.tokenId), [ids[3], ids[2]], 'a cursor starts a walk where a page ended');
  const empty = await h.createLicense();
  const emptyAccess = (await sdk.getToken({ ...empty, imzaTipi: 0 })).accessToken;
  const none = [];
  for await (const item of sdk.history(empty.licenseKey, emptyAccess)) none.push(item);
  t.same(none, [], 'no redemptions: nothing');
});

t.test('validate with an idempotency key: the same key and token answer the first redemption again', async (t) => {
  const lic = await h.createLicense({ totalQuota: 4 });
  const sdk = new LicenseClient({ baseUrl: h.url });
  const { accessToken, signToken } = await sdk.getToken({ ...lic, imzaTipi: 0 });
  const first = await sdk.validate({ token: signToken }, { idempotencyKey: 'belge-2026-0001' });
  t.strictSame(first, { success: true, message: 'Token doğrulandı, imza kotası düşüldü', usedQuota: 1, remainingQuota: 3 });
  const other = await sdk.signToken(accessToken, { imzaTipi: 0 });
  t.equal((await sdk.validate({ token: other.signToken })).usedQuota, 2, 'another redemption in between');
  const again = await sdk.validate({ token: signToken }, { idempotencyKey: 'belge-2026-0001' });
  t.strictSame(again, first, 'the first answer, figures of then');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 2, 'nothing more spent');
});

t.test('release: the unit of a failed signing back, the answer as published; a retry with the key answers it again; history and ledger show it', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3, releasesPerDay: 2, domains: ['*.ornek.com.tr'] });
  const sdk = new LicenseClient({ baseUrl: h.url });
  const { accessToken, signToken } = await sdk.getToken({ ...lic, imzaTipi: 0 });
  t.equal((await sdk.validate({ token: signToken, origin: 'https://imza.ornek.com.tr' })).remainingQuota, 2, 'one unit spent');

  const back = await sdk.release({ token: signToken, reason: 'kart çıkarıldı' }, { idempotencyKey: 'iade-2026-0001' });
  t.strictSame(back, { success: true, message: 'Token iade edildi, imza kotası geri verildi', usedQuota: 0, remainingQuota: 3 });
  const again = await sdk.release({ token: signToken, reason: 'kart çıkarıldı' }, { idempotencyKey: 'iade-2026-0001' });
  t.strictSame(again, back, 'the same key and token: the first answer');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'one unit back, not two');

  await h.drainWorker();
  const items: HistoryItem[] = [];
  for await (const item of sdk.history(lic.licenseKey, accessToken)) items.push(item);
  t.strictSame(items, [{
    tokenId: claimsOf(signToken).token_id, imzaTipi: 0, usedAt: items[0]?.usedAt, origin: 'https://imza.ornek.com.tr', releasedAt: items[0]?.releasedAt,
  }], 'the redemption, with when it was released');
  t.match(items[0]?.releasedAt, ISO_UTC);
  const ledger = await sdk.ledger(lic.licenseKey, accessToken);
  t.match(ledger.items[0], { kind: 'release', amount: 1, packageId: 1 }, 'the newest ledger entry: the release');
  t.match(ledger.totals, { redeemed: 1, released: 1, usedQuota: 0, totalQuota: 3 });
});
