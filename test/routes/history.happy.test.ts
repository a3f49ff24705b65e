import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { redeemMany } from '../helpers/tokens.js';
import { sleep } from '../helpers/wait.js';

// GET /api/License/history/{licenseKey} (CONTRACT.md): the license's redemptions, newest
// first, for the Bearer access token of that license; ?limit= and ?cursor= paging.

interface Item {
  tokenId: string;
  imzaTipi: number;
  usedAt: string;
  origin: string | null;
}

const NO_LIMITS = { RATE_GET_TOKEN_PER_MIN: '0', RATE_SIGN_TOKEN_PER_MIN: '0', RATE_VALIDATE_PER_MIN: '0' };

t.test('history', async (t) => {
  const h = await startHarness(t, 'history', NO_LIMITS);

  t.test('items newest first, as redeemed, with origin as sent; unredeemed tokens absent', async (t) => {
    const lic = await h.createLicense({ totalQuota: 20 });
    const got = await h.getToken(lic.licenseKey, lic.password, 1);
    const access = got.body.accessToken as string;
    const origins = ['https://Eczane.Example.com:8443/imza?x=1', undefined, 'hastane.example.org'];
    const sent: { tokenId: string; imzaTipi: number; origin: string | null; before: number; after: number }[] = [];
    for (const [i, origin] of origins.entries()) {
      const issued = await h.signToken(access, i % 2);
      const before = Date.now();
      const res = await h.validate(issued.body.signToken, origin);
      const after = Date.now();
      t.equal(res.status, 200);
      sent.push({ tokenId: claimsOf(issued.body.signToken).token_id, imzaTipi: i % 2, origin: origin ?? null, before, after });
      await sleep(3);
    }
    // issued, never redeemed: the get-token sign token and one more
    const unused = await h.signToken(access, 0);
    t.equal(unused.status, 200);

    await h.drainWorker();
    const res = await h.history(lic.licenseKey, access);
    t.equal(res.status, 200, res.text);
    t.same(Object.keys(res.body).sort(), ['data', 'success']);
    t.equal(res.body.success, true);
    t.same(Object.keys(res.body.data).sort(), ['items', 'nextCursor']);
    t.equal(res.body.data.nextCursor, null);
    const items = res.body.data.items as Item[];
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
    t.notOk(ids.includes(claimsOf(unused.body.signToken).token_id), 'issued-but-unused token absent');
    t.notOk(ids.includes(claimsOf(got.body.signToken).token_id), 'get-token\'s unused token absent');
  });

  t.test('a license without redemptions has an empty history', async (t) => {
    const lic = await h.createLicense();
    const got = await h.getToken(lic.licenseKey, lic.password, 0);
    await h.drainWorker();
    const res = await h.history(lic.licenseKey, got.body.accessToken);
    t.equal(res.status, 200);
    t.same(res.body, { success: true, data: { items: [], nextCursor: null } });
  });

  t.test('only the license\'s own redemptions', async (t) => {
    const a = await h.createLicense();
    const b = await h.createLicense();
    const accessA = (await h.getToken(a.licenseKey, a.password, 0)).body.accessToken as string;
    const accessB = (await h.getToken(b.licenseKey, b.password, 0)).body.accessToken as string;
    const idsA = await redeemMany(h, accessA, 2);
    const idsB = await redeemMany(h, accessB, 3);
    await h.drainWorker();
    const resA = await h.history(a.licenseKey, accessA);
    const resB = await h.history(b.licenseKey, accessB);
    t.same((resA.body.data.items as Item[]).map((i) => i.tokenId), [...idsA].reverse());
    t.same((resB.body.data.items as Item[]).map((i) => i.tokenId), [...idsB].reverse());
  });

  t.test('cursor paging walks every item once: 7 items, limit 3 -> 3, 3, 1', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const access = (await h.getToken(lic.licenseKey, lic.password, 0)).body.accessToken as string;
    const ids = await redeemMany(h, access, 7);
    await h.drainWorker();

    const sizes: number[] = [];
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? '?limit=3' : `?limit=3&cursor=${encodeURIComponent(cursor)}`;
      const res = await h.history(lic.licenseKey, access, query);
      t.equal(res.status, 200, res.text);
      const items = res.body.data.items as Item[];
      sizes.push(items.length);
      seen.push(...items.map((i) => i.tokenId));
      cursor = res.body.data.nextCursor as string | null;
      if (cursor !== null) t.type(cursor, 'string');
      pages++;
    } while (cursor !== null && pages < 10);
    t.same(sizes, [3, 3, 1]);
    t.equal(new Set(seen).size, seen.length, 'no duplicates');
    t.same(seen, [...ids].reverse(), 'every item, newest first');

    const exact = await h.history(lic.licenseKey, access, '?limit=7');
    t.equal(exact.body.data.items.length, 7);
    t.equal(exact.body.data.nextCursor, null, 'no next page when the page holds the last item');
  });

  t.test('?limit: default 50, at most 500', async (t) => {
    const lic = await h.createLicense({ totalQuota: 60 });
    const access = (await h.getToken(lic.licenseKey, lic.password, 0)).body.accessToken as string;
    await redeemMany(h, access, 52);
    await h.drainWorker();

    const byDefault = await h.history(lic.licenseKey, access);
    t.equal(byDefault.status, 200);
    t.equal(byDefault.body.data.items.length, 50, 'default page of 50');
    t.type(byDefault.body.data.nextCursor, 'string');
    const rest = await h.history(lic.licenseKey, access, `?cursor=${encodeURIComponent(byDefault.body.data.nextCursor)}`);
    t.equal(rest.body.data.items.length, 2);
    t.equal(rest.body.data.nextCursor, null);

    const max = await h.history(lic.licenseKey, access, '?limit=500');
    t.equal(max.status, 200);
    t.equal(max.body.data.items.length, 52);
    t.equal(max.body.data.nextCursor, null);
    const one = await h.history(lic.licenseKey, access, '?limit=1');
    t.equal(one.status, 200);
    t.equal(one.body.data.items.length, 1);
  });
});
