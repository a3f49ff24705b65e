import t from 'tap';
import type { HistoryPage } from '@license-service/client';
import { startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { sdkOf } from '../helpers/sdk.js';
import { redeemMany } from '../helpers/tokens.js';
import { sleep } from '../helpers/wait.js';

// GET /api/License/history/{licenseKey}: the license's redemptions, newest
// first, for the Bearer access token of that license; ?limit= and ?cursor= paging. Through
// the client SDK, but for the check of the answer's envelope on the wire.

const NO_LIMITS = { RATE_GET_TOKEN_PER_MIN: '0', RATE_SIGN_TOKEN_PER_MIN: '0', RATE_VALIDATE_PER_MIN: '0' };

t.test('history', async (t) => {
  const h = await startHarness(t, 'history', NO_LIMITS);
  const sdk = sdkOf(h);
  const accessOf = async (lic: { licenseKey: string; password: string }, imzaTipi: 0 | 1 = 0) =>
    (await sdk.getToken({ licenseKey: lic.licenseKey, password: lic.password, imzaTipi })).accessToken;

  t.test('items newest first, as redeemed, with origin as sent; unredeemed tokens absent', async (t) => {
    const lic = await h.createLicense({ totalQuota: 20 });
    const got = await sdk.getToken({ ...lic, imzaTipi: 1 });
    const access = got.accessToken;
    const origins = ['https://Eczane.Example.com:8443/imza?x=1', undefined, 'hastane.example.org'];
    const sent: { tokenId: string; imzaTipi: number; origin: string | null; before: number; after: number }[] = [];
    for (const [i, origin] of origins.entries()) {
      const imzaTipi = i % 2 === 0 ? 0 : 1;
      const issued = await sdk.signToken(access, { imzaTipi });
      const before = Date.now();
      const res = await sdk.validate({ token: issued.signToken, origin });
      const after = Date.now();
      t.equal(res.usedQuota, i + 1);
      sent.push({ tokenId: claimsOf(issued.signToken).token_id, imzaTipi, origin: origin ?? null, before, after });
      await sleep(3);
    }
    // issued, never redeemed: the get-token sign token and one more
    const unused = await sdk.signToken(access, { imzaTipi: 0 });

    await h.drainWorker();
    const raw = await h.history(lic.licenseKey, access);
    t.equal(raw.status, 200, raw.text);
    t.same(Object.keys(raw.body).sort(), ['data', 'success'], 'the wire: {success, data}');
    t.equal(raw.body.success, true);
    const page = await sdk.historyPage(lic.licenseKey, access);
    t.same(Object.keys(page).sort(), ['items', 'nextCursor']);
    t.equal(page.nextCursor, null);
    t.same(page, raw.body.data, 'the SDK\'s page is the answer\'s data');
    const items = page.items;
    t.equal(items.length, 3, 'only redemptions');
    const expected = [...sent].reverse();
    for (const [i, item] of items.entries()) {
      const want = expected[i];
      if (!want) break;
      t.same(Object.keys(item).sort(), ['imzaTipi', 'origin', 'tokenId', 'usedAt']);
      t.equal(item.tokenId, want.tokenId, `item ${i} is the ${i === 0 ? 'newest' : 'next'} redemption`);
      t.equal(item.imzaTipi, want.imzaTipi);
      t.equal(item.origin, want.origin, 'origin exactly as sent, null when none');
      t.match(item.usedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/, 'usedAt is ISO 8601 UTC');
      const at = Date.parse(item.usedAt);
      t.ok(at >= want.before - 1000 && at <= want.after + 1000, 'usedAt is the redemption time');
    }
    const ids = items.map((i) => i.tokenId);
    t.notOk(ids.includes(claimsOf(unused.signToken).token_id), 'issued-but-unused token absent');
    t.notOk(ids.includes(claimsOf(got.signToken).token_id), 'get-token\'s unused token absent');
  });

  t.test('a license without redemptions has an empty history', async (t) => {
    const lic = await h.createLicense();
    const access = await accessOf(lic);
    await h.drainWorker();
    t.same(await sdk.historyPage(lic.licenseKey, access), { items: [], nextCursor: null });
  });

  t.test('only the license\'s own redemptions', async (t) => {
    const a = await h.createLicense();
    const b = await h.createLicense();
    const accessA = await accessOf(a);
    const accessB = await accessOf(b);
    const idsA = await redeemMany(h, accessA, 2);
    const idsB = await redeemMany(h, accessB, 3);
    await h.drainWorker();
    const pageA = await sdk.historyPage(a.licenseKey, accessA);
    const pageB = await sdk.historyPage(b.licenseKey, accessB);
    t.same(pageA.items.map((i) => i.tokenId), [...idsA].reverse());
    t.same(pageB.items.map((i) => i.tokenId), [...idsB].reverse());
  });

  t.test('cursor paging walks every item once: 7 items, limit 3 -> 3, 3, 1', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const access = await accessOf(lic);
    const ids = await redeemMany(h, access, 7);
    await h.drainWorker();

    const pages: HistoryPage[] = [];
    for await (const page of sdk.historyPages(lic.licenseKey, access, { limit: 3 })) {
      pages.push(page);
      if (page.nextCursor !== null) t.type(page.nextCursor, 'string');
      if (pages.length >= 10) break;
    }
    const seen = pages.flatMap((p) => p.items.map((i) => i.tokenId));
    t.same(pages.map((p) => p.items.length), [3, 3, 1]);
    t.equal(new Set(seen).size, seen.length, 'no duplicates');
    t.same(seen, [...ids].reverse(), 'every item, newest first');

    const exact = await sdk.historyPage(lic.licenseKey, access, { limit: 7 });
    t.equal(exact.items.length, 7);
    t.equal(exact.nextCursor, null, 'no next page when the page holds the last item');
  });

  t.test('?limit: default 50, at most 500', async (t) => {
    const lic = await h.createLicense({ totalQuota: 60 });
    const access = await accessOf(lic);
    await redeemMany(h, access, 52);
    await h.drainWorker();

    const byDefault = await sdk.historyPage(lic.licenseKey, access);
    t.equal(byDefault.items.length, 50, 'default page of 50');
    t.type(byDefault.nextCursor, 'string');
    const rest = await sdk.historyPage(lic.licenseKey, access, { cursor: byDefault.nextCursor ?? undefined });
    t.equal(rest.items.length, 2);
    t.equal(rest.nextCursor, null);

    const max = await sdk.historyPage(lic.licenseKey, access, { limit: 500 });
    t.equal(max.items.length, 52);
    t.equal(max.nextCursor, null);
    const one = await sdk.historyPage(lic.licenseKey, access, { limit: 1 });
    t.equal(one.items.length, 1);
  });
});
