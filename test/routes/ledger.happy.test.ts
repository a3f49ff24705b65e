import t from 'tap';
import type { LedgerEntry } from '@license-service/client';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { sdkOf } from '../helpers/sdk.js';
import { getTokenPair, redeemMany } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// GET /api/License/ledger/{licenseKey}: the holder's view of the license's packages and
// ledger, for the access token of that license, on the service as deployed. Purchases with
// their own expiry and note, redemptions spending the package that expires first, a package
// expiring with units left forfeiting them; the answer shows the packages, the entries newest
// first in keyset pages, and totals that sum to the license's figures, and never an entry's
// actor nor a purchase's note.

const DAY_MS = 86_400_000;
const NOTE = 'Fatura 2026/118 gizli not';
const SHORT_NOTE = 'kısa paket notu';

t.test('ledger', async (t) => {
  const h = await startHarness(t, 'ledger', NO_RATE_LIMITS);
  const sdk = sdkOf(h);

  const lic = await h.createLicense({ totalQuota: 10 });
  const { accessToken } = await getTokenPair(h, lic);
  // a package expiring in 3 s (spent first, then forfeiting what it left) and one in 10 days
  const soon = new Date(Date.now() + 3000).toISOString();
  const inTenDays = new Date(Date.now() + 10 * DAY_MS).toISOString();
  const short = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 5, expiresAt: soon, note: SHORT_NOTE });
  t.equal(short.status, 200, short.text);
  const long = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 100, expiresAt: inTenDays, note: NOTE });
  t.equal(long.status, 200, long.text);
  await redeemMany(h, accessToken, 3);
  await h.drainWorker();
  // the forfeit sweep settles the expired package within seconds; the worker writes it
  const settled = await pollUntil(() => h.ledger(lic.licenseKey, accessToken), (r) => r.body?.data?.items?.[0]?.kind === 'forfeit',
    { timeoutMs: 20_000, intervalMs: 250 });

  t.test('packages, entries newest first and totals; no actor, no note', async (t) => {
    const raw = settled;
    t.equal(raw.status, 200, raw.text);
    t.equal(raw.headers.get('cache-control'), 'no-store');
    t.same(Object.keys(raw.body).sort(), ['data', 'success'], 'the wire: {success, data}');
    t.equal(raw.body.success, true);
    const data = raw.body.data;
    t.same(Object.keys(data).sort(), ['items', 'nextCursor', 'packages', 'totals']);

    t.same(data.packages.map((p: { id: number }) => p.id), [3, 2, 1], 'every package, newest first');
    for (const p of data.packages) t.same(Object.keys(p).sort(), ['amount', 'createdAt', 'expiresAt', 'forfeited', 'id', 'remaining', 'used']);
    const [p3, p2, p1] = data.packages;
    t.same([p2.amount, p2.used, p2.forfeited, p2.remaining], [5, 3, 2, 0], 'the package expiring first funded the 3 redemptions, and forfeited the 2 left');
    t.equal(p2.expiresAt, soon, 'its own expiry');
    t.same([p3.amount, p3.used, p3.forfeited, p3.remaining], [100, 0, 0, 100]);
    t.equal(p3.expiresAt, inTenDays);
    t.same([p1.amount, p1.used, p1.forfeited, p1.remaining], [10, 0, 0, 10], 'the license\'s first package, untouched');
    t.equal(p1.expiresAt, (await h.checkQuota(lic.licenseKey)).body.data.expiryDate, 'the first package expires with the license');

    t.same(data.items.map((i: LedgerEntry) => [i.kind, i.amount, i.packageId]),
      [['forfeit', -2, 2], ['purchase', 100, 3], ['purchase', 5, 2], ['purchase', 10, 1]], 'the entries, newest first; no day\'s spending');
    for (const i of data.items) {
      t.same(Object.keys(i).sort(), ['amount', 'at', 'kind', 'packageId'], 'an entry: kind, at, amount, packageId only');
      t.match(i.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    t.equal(data.nextCursor, null, 'one page');

    const quota = (await h.checkQuota(lic.licenseKey)).body.data;
    t.same(data.totals, { purchased: 115, corrected: 0, forfeited: 2, released: 0, redeemed: 3, totalQuota: 113, usedQuota: 3 });
    t.equal(data.totals.totalQuota, quota.totalQuota, 'totalQuota is the license\'s');
    t.equal(data.totals.usedQuota, quota.usedQuota, 'usedQuota is the license\'s');
    t.equal(data.totals.purchased + data.totals.corrected - data.totals.forfeited, data.totals.totalQuota, 'purchased + corrected - forfeited');
    t.equal(data.totals.redeemed - data.totals.released, data.totals.usedQuota, 'redeemed - released');

    const admin = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}/ledger`);
    t.equal(admin.status, 200, admin.text);
    t.same(data.totals, admin.body.data.totals, 'the admin\'s totals');
    const actors = new Set<string>(admin.body.data.items.map((i: { actor: string | null }) => i.actor).filter((a: string | null) => a !== null));
    t.ok(actors.size >= 2, `the admin view names actors (${[...actors].join(', ')})`);
    for (const word of ['actor', 'note', 'balanceAfter', NOTE, SHORT_NOTE, ...[...actors].filter((a) => a.length > 6)]) {
      t.notOk(raw.text.includes(word), `"${word}" appears nowhere in the holder's answer`);
    }
  });

  t.test('keyset pages: limit 1 walks every entry once, newest first; the SDK resolves to the data', async (t) => {
    const whole = (await sdk.ledger(lic.licenseKey, accessToken)) ;
    t.same(whole, settled.body.data, 'the SDK\'s page is the answer\'s data');
    const seen: LedgerEntry[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await sdk.ledger(lic.licenseKey, accessToken, { limit: 1, cursor });
      t.equal(page.items.length, 1);
      t.same(page.packages, whole.packages, 'every page carries the packages');
      t.same(page.totals, whole.totals, 'and the totals');
      seen.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined && ++pages < 10);
    t.same(seen, whole.items, 'every entry once, in order');
    const two = await sdk.ledger(lic.licenseKey, accessToken, { limit: 2 });
    const rest = await sdk.ledger(lic.licenseKey, accessToken, { limit: 2, cursor: two.nextCursor ?? undefined });
    t.same([...two.items, ...rest.items], whole.items, '2 + 2');
    t.equal(rest.nextCursor, null, 'no next page when the page holds the last entry');
  });

  t.test('the path matches in any case, the key in any case', async (t) => {
    const res = await h.request('GET', `/api/license/LEDGER/${lic.licenseKey.toUpperCase()}`, undefined, { authorization: `Bearer ${accessToken}` });
    t.equal(res.status, 200, res.text);
    t.same(res.body.data, settled.body.data);
  });

  t.test('a license with only its first package', async (t) => {
    const fresh = await h.createLicense({ totalQuota: 7 });
    const { accessToken: access } = await getTokenPair(h, fresh);
    const page = await sdk.ledger(fresh.licenseKey, access);
    t.same(page.items.map((i) => [i.kind, i.amount, i.packageId]), [['purchase', 7, 1]]);
    t.same(page.packages.map((p) => [p.id, p.amount, p.remaining]), [[1, 7, 7]]);
    t.same(page.totals, { purchased: 7, corrected: 0, forfeited: 0, released: 0, redeemed: 0, totalQuota: 7, usedQuota: 0 });
  });
});
