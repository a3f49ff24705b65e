import { randomUUID } from 'node:crypto';
import t from 'tap';
import { LIVE_COUNTS, startHarness, type Harness, type TestLicense } from '../helpers/harness.js';
import { claimsOf, craftJwt, HS256_HEADER } from '../helpers/jwt.js';
import { booksOf, ledgerOf, liveQuota, release, releasedBody, RELEASE_MSG, statusOf } from '../helpers/release.js';
import { MSG } from '../helpers/shapes.js';
import { TokenSource } from '../helpers/tokens.js';
import { sleep } from '../helpers/wait.js';

// POST /api/license/release, releases that succeed: the unit comes back (the answer's
// figures, check-quota, the admin view), once the usage worker has drained the ledger entry,
// the totals, the package's used count, the history and the audit trail show it; the unit
// goes back to the package it came from; an Idempotency-Key retry answers the same bytes and
// gives nothing more; a released token stays used for validate. Refusals:
// release.error.test.ts; races and abuse: release.security.test.ts.

const h = await startHarness(t, 'release-happy', LIVE_COUNTS);
const HOUR_MS = 3_600_000;

async function redeem(h: Harness, token: string): Promise<number> {
  const res = await h.validate(token);
  if (res.status !== 200) throw new Error(`validate: ${res.status} ${res.text}`);
  return res.body.usedQuota as number;
}

async function packagesOf(h: Harness, lic: TestLicense): Promise<[number, number][]> {
  const rows = await h.sql<{ no: number; used: number }[]>`
    select package_no::int as no, used::int as used from license_packages where firma_id = ${lic.firmaId} order by package_no`;
  return rows.map((r) => [r.no, r.used]);
}

t.test('a release gives the unit back: the answer, check-quota, then the ledger, packages, history and audit trail', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5, releasesPerDay: 3 });
  const source = new TokenSource(h, lic);
  const [a, b] = await source.many(2);
  t.equal(await redeem(h, a!), 1);
  t.equal(await redeem(h, b!), 2);

  const res = await release(h, a, 'kart çıkarıldı');
  t.equal(res.status, 200, res.text);
  t.strictSame(res.body, releasedBody(1, 4), 'used back down to 1, remaining up to 4');
  t.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const quota = await h.checkQuota(lic.licenseKey);
  t.same([quota.body?.data?.usedQuota, quota.body?.data?.remainingQuota, quota.body?.data?.totalQuota], [1, 4, 5], 'check-quota agrees');
  t.same(await liveQuota(h, lic), [1, 4], 'the admin view agrees');

  await h.drainWorker();
  const { items, totals } = await ledgerOf(h, lic);
  const releases = items.filter((i) => i.kind === 'release');
  t.equal(releases.length, 1, 'one release entry');
  t.match(releases[0], { kind: 'release', amount: 1, packageId: 1, actor: 'holder', note: 'kart çıkarıldı', day: null }, 'the release entry');
  t.equal(totals.released, 1, 'totals: 1 released');
  t.equal(totals.redeemed, 2, 'totals: 2 redeemed');
  t.equal(totals.totalQuota, totals.purchased + totals.corrected - totals.forfeited, 'totalQuota = purchased + corrected - forfeited');
  t.equal(totals.usedQuota, totals.redeemed - totals.released, 'usedQuota = redeemed - released');
  t.same([totals.totalQuota, totals.usedQuota], [5, 1], 'the totals are the license\'s figures');

  const books = await booksOf(h, lic);
  t.match(books, { total: 5, used: 1, redisUsed: 1, packageUsed: 1, packageBought: 5, usedRows: 1, releasedRows: 1, releases: 1 },
    'Postgres: used_quota 1, the package\'s used lowered, one released token');
  t.equal(await statusOf(h, a!), 'released', 'sign_tokens: a released');
  t.equal(await statusOf(h, b!), 'used', 'sign_tokens: b used');

  const history = await h.history(lic.licenseKey, await source.accessTokenOf());
  t.equal(history.status, 200, history.text);
  const byId = new Map((history.body.data.items as Record<string, unknown>[]).map((i) => [i.tokenId, i]));
  const itemA = byId.get(claimsOf(a!).token_id);
  t.type(itemA?.releasedAt, 'string', 'history: the released token carries releasedAt');
  t.ok(Date.parse(itemA?.releasedAt as string) >= Date.parse(itemA?.usedAt as string), 'released after its redemption');
  t.notOk('releasedAt' in (byId.get(claimsOf(b!).token_id) ?? {}), 'history: the other carries none');

  const again = await h.validate(a);
  t.equal(again.status, 400, 'a released token stays used for validate');
  t.strictSame(again.body, { success: false, message: MSG.USED });
  t.same(await liveQuota(h, lic), [1, 4], 'and takes nothing');
});

t.test('a release without a reason, and with reason null: the ledger note is null', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3, releasesPerDay: 3 });
  const [a, b] = await new TokenSource(h, lic).many(2);
  await redeem(h, a!);
  await redeem(h, b!);
  t.strictSame((await release(h, a)).body, releasedBody(1, 2), 'no reason');
  t.strictSame((await release(h, b, null)).body, releasedBody(0, 3), 'reason null');
  await h.drainWorker();
  const releases = (await ledgerOf(h, lic)).items.filter((i) => i.kind === 'release');
  t.same(releases.map((r) => [r.amount, r.note, r.actor]), [[1, null, 'holder'], [1, null, 'holder']], 'two entries, no note');
  t.match(await booksOf(h, lic), { used: 0, packageUsed: 0, releases: 2, releasedRows: 2 });
});

t.test('the unit goes back to the package it came from', async (t) => {
  // package 1 (the license's own) expires with the license; package 2, of one unit, in an
  // hour: it is spent first
  const lic = await h.createLicense({ totalQuota: 10, releasesPerDay: 3 });
  const added = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 1, expiresAt: new Date(Date.now() + HOUR_MS).toISOString() });
  t.equal(added.status, 200, added.text);
  const [a, b, c, d] = await new TokenSource(h, lic).many(4);

  t.equal(await redeem(h, a!), 1, 'a spends package 2\'s only unit');
  t.equal(await redeem(h, b!), 2, 'b spends package 1');
  t.strictSame((await release(h, a, 'pin yanlış')).body, releasedBody(1, 10), 'a released');
  await h.drainWorker();
  t.same(await packagesOf(h, lic), [[1, 1], [2, 0]], 'package 2 has its unit back');

  t.equal(await redeem(h, c!), 2, 'c');
  await h.drainWorker();
  t.same(await packagesOf(h, lic), [[1, 1], [2, 1]], 'the next redemption spends package 2 again (the earlier expiring)');
  t.equal(await redeem(h, d!), 3, 'd');
  await h.drainWorker();
  t.same(await packagesOf(h, lic), [[1, 2], [2, 1]], 'then package 1');

  const releases = (await ledgerOf(h, lic)).items.filter((i) => i.kind === 'release');
  t.same(releases.map((r) => r.packageId), [2], 'the release entry names package 2');
  t.match(await booksOf(h, lic), { total: 11, used: 3, redisUsed: 3, packageUsed: 3, packageBought: 11 });
});

t.test('the unit goes back to the current package when it came from it', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10, releasesPerDay: 3 });
  t.equal((await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 3, expiresAt: new Date(Date.now() + HOUR_MS).toISOString() })).status, 200);
  const [a, b] = await new TokenSource(h, lic).many(2);
  await redeem(h, a!);
  t.strictSame((await release(h, a)).body, releasedBody(0, 13));
  await redeem(h, b!);
  await h.drainWorker();
  t.same(await packagesOf(h, lic), [[1, 0], [2, 1]], 'package 2 spent, released, spent again');
  t.same((await ledgerOf(h, lic)).items.filter((i) => i.kind === 'release').map((r) => r.packageId), [2]);
});

t.test('an Idempotency-Key retry answers the same 200 byte for byte and gives nothing more', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5, releasesPerDay: 3 });
  const source = new TokenSource(h, lic);
  const [a, b, c] = await source.many(3);
  await redeem(h, a!);
  await redeem(h, b!);
  const first = await release(h, a, 'kart çıkarıldı', 'iade-a-1');
  t.equal(first.status, 200, first.text);
  t.strictSame(first.body, releasedBody(1, 4));
  // the license moves on: the retry still answers what the release answered
  await redeem(h, c!);
  for (let i = 0; i < 3; i++) {
    const retry = await release(h, a, 'kart çıkarıldı', 'iade-a-1');
    t.equal(retry.status, 200, `retry ${i + 1}: 200`);
    t.equal(retry.text, first.text, `retry ${i + 1}: the same bytes`);
  }
  const other = await release(h, a, 'başka bir neden', 'iade-a-1');
  t.equal(other.text, first.text, 'a retry with another reason answers the first release too');
  const unkeyed = await release(h, a, 'kart çıkarıldı');
  t.strictSame([unkeyed.status, unkeyed.body], [400, { success: false, message: RELEASE_MSG.ALREADY_RELEASED }], 'without the key: already released');
  t.same(await liveQuota(h, lic), [2, 3], 'one unit given back: used 2 after three redemptions');

  // the key of a validate is not the key of a release: each endpoint keeps its own
  const d = await source.next();
  const keyed = await h.request('POST', '/api/license/validate', { token: d }, { 'idempotency-key': 'ortak-anahtar' });
  t.equal(keyed.status, 200, 'validate with a key');
  const released = await release(h, d, undefined, 'ortak-anahtar');
  t.strictSame([released.status, released.body], [200, releasedBody(2, 3)], 'the release of that token with the same key is a release of its own');

  await h.drainWorker();
  t.match(await booksOf(h, lic), { used: 2, redisUsed: 2, packageUsed: 2, releases: 2, releasedRows: 2, usedRows: 2 }, 'one release per token in Postgres');
  t.equal((await ledgerOf(h, lic)).items.filter((i) => i.kind === 'release').length, 2, 'one ledger entry per token');
});

t.test('a release retried without a key after its answer was lost: already released, the books unchanged', async (t) => {
  const lic = await h.createLicense({ totalQuota: 2, releasesPerDay: 5 });
  const [a] = await new TokenSource(h, lic).many(1);
  await redeem(h, a!);
  t.equal((await release(h, a)).status, 200);
  for (let i = 0; i < 3; i++) t.equal((await release(h, a)).status, 400, `retry ${i + 1} refused`);
  t.same(await liveQuota(h, lic), [0, 2]);
});

// a window of 3 s and half a second's wait leave a loaded machine 2.5 s for the release to
// arrive within it
t.test('with a short release window (RELEASE_WINDOW_SECONDS 3)', async (t) => {
  const w = await startHarness(t, 'release-window-ok', { ...LIVE_COUNTS, RELEASE_WINDOW_SECONDS: '3' });
  const lic = await w.createLicense({ totalQuota: 3, releasesPerDay: 3 });
  const [a, b] = await new TokenSource(w, lic).many(2);
  await redeem(w, a!);
  await redeem(w, b!);
  await sleep(500);
  const res = await release(w, a, 'half a second after');
  t.strictSame([res.status, res.body], [200, releasedBody(1, 2)], 'half a second after its redemption, within 3 s: released');
  await sleep(3000);
  const late = await release(w, b);
  t.strictSame([late.status, late.body], [400, { success: false, message: RELEASE_MSG.WINDOW_PASSED }], '3.5 s after: too late');
  t.same(await liveQuota(w, lic), [1, 2], 'only the first came back');
});

t.test('a token past its exp but within the release window is still releasable', async (t) => {
  // sign tokens live 5 minutes: a token of this service's own making with a near exp,
  // registered as issued exactly as the real token beside it (its marker copied), redeems
  // and then passes its exp
  const lic = await h.createLicense({ totalQuota: 3, releasesPerDay: 3 });
  const real = await new TokenSource(h, lic).next();
  const claims = claimsOf(real);
  const k = h.keys.forLicense(lic.firmaId);
  const issued = await h.redis.hget(k.markers(claims.exp * 1000).key, claims.token_id);
  t.match(issued, /^i/, 'the real token\'s marker says issued');
  const now = Math.floor(Date.now() / 1000);
  const shortClaims = { ...claims, token_id: randomUUID(), iat: now - 290, exp: now + 2 };
  const short = craftJwt(HS256_HEADER, shortClaims as unknown as Record<string, unknown>, Buffer.from(h.config.jwtKeys[0]!.secret));
  const markers = k.markers(shortClaims.exp * 1000).key;
  await h.redis.hset(markers, shortClaims.token_id, issued as string);
  await h.redis.pexpire(markers, 3_600_000);
  t.equal(await redeem(h, short), 1, 'redeemed before its exp');
  await sleep(Math.max(0, shortClaims.exp * 1000 - Date.now() + 500));
  const late = await h.validate(short);
  t.equal(late.status, 401, 'past its exp: validate says expired');
  const res = await release(h, short, 'süresi geçti, iade edildi');
  t.strictSame([res.status, res.body], [200, releasedBody(0, 3)], 'past its exp, within the window: released');
  t.same(await liveQuota(h, lic), [0, 3]);
});
