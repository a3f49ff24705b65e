import { randomBytes } from 'node:crypto';
import t from 'tap';
import { adminOk } from '../helpers/admin.js';
import { LIVE_COUNTS, startHarness, type Harness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { craftJwt, decodeJwt, HS256_HEADER } from '../helpers/jwt.js';
import { liveQuota, release, releasedBody, RELEASE_MSG, RELEASE_PATH } from '../helpers/release.js';
import { expectMessageError, MSG, NOT_AN_OBJECT, type Asserts } from '../helpers/shapes.js';
import { TokenSource } from '../helpers/tokens.js';
import { sleep } from '../helpers/wait.js';

// POST /api/license/release refusals, every row of its error table: status and exactly
// {success:false, message} (the 429 with retryAfter and Retry-After too); bad input of
// every kind; a refusal changes nothing: the quota stays where it was and the token can
// still be released once the cause is gone.

const h = await startHarness(t, 'release-error', LIVE_COUNTS);
const secret = Buffer.from(h.config.jwtKeys[0]!.secret);

/** A refusal: the status, exactly {success:false, message}, as JSON. */
function refused(t: Asserts, res: Answer, status: number, message: string, what: string): void {
  t.equal(res.status, status, `${what}: status ${status}`);
  t.strictSame(res.body, { success: false, message }, `${what}: body`);
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON`);
}

/** A 400 naming the field. */
function namesField(t: Asserts, res: Answer, field: string, what: string): void {
  t.equal(res.status, 400, `${what}: 400`);
  t.equal(res.body?.success, false, `${what}: success false`);
  t.match(String(res.body?.message), field, `${what}: the message names ${field}: ${res.text}`);
}

async function redeemed(h: Harness, source: TokenSource): Promise<string> {
  const token = await source.next();
  const res = await h.validate(token);
  if (res.status !== 200) throw new Error(`validate: ${res.status} ${res.text}`);
  return token;
}

t.test('400 never redeemed: an issued token is refused, and still redeems and releases afterwards', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3, releasesPerDay: 3 });
  const token = await new TokenSource(h, lic).next();
  refused(t, await release(h, token, 'kart çıkarıldı'), 400, RELEASE_MSG.NOT_REDEEMED, 'issued, not redeemed');
  refused(t, await release(h, token), 400, RELEASE_MSG.NOT_REDEEMED, 'again');
  t.same(await liveQuota(h, lic), [0, 3], 'nothing given: used 0, remaining 3');
  t.equal((await h.validate(token)).status, 200, 'the token redeems');
  t.strictSame((await release(h, token)).body, releasedBody(0, 3), 'and then releases');
});

t.test('400 released before: a second release gives nothing', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3, releasesPerDay: 5 });
  const source = new TokenSource(h, lic);
  const a = await redeemed(h, source);
  await redeemed(h, source);
  t.strictSame((await release(h, a)).body, releasedBody(1, 2), 'the first release');
  refused(t, await release(h, a), 400, RELEASE_MSG.ALREADY_RELEASED, 'the second');
  refused(t, await release(h, a, 'başka'), 400, RELEASE_MSG.ALREADY_RELEASED, 'the third, with a reason');
  refused(t, await release(h, a, undefined, 'yeni-anahtar'), 400, RELEASE_MSG.ALREADY_RELEASED, 'with a fresh Idempotency-Key');
  t.same(await liveQuota(h, lic), [1, 2], 'one unit back, no more');
});

t.test('403 releases off: releasesPerDay 0 (the default); in force once the admin allows them', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3 });
  const view = await adminOk(h, 'GET', `/admin/v1/licenses/${lic.licenseKey}`);
  t.equal(view.releasesPerDay, 0, 'the default is 0');
  const source = new TokenSource(h, lic);
  const a = await redeemed(h, source);
  refused(t, await release(h, a, 'kart çıkarıldı'), 403, RELEASE_MSG.OFF, 'off by default');
  t.same(await liveQuota(h, lic), [1, 2], 'nothing given');
  const patched = await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { releasesPerDay: 1 });
  t.equal(patched.releasesPerDay, 1, 'the License shows releasesPerDay 1');
  t.strictSame((await release(h, a)).body, releasedBody(0, 3), 'allowed now: the refused token releases');
  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { releasesPerDay: 0 });
  const b = await redeemed(h, source);
  refused(t, await release(h, b), 403, RELEASE_MSG.OFF, 'off again once patched back to 0');
  t.same(await liveQuota(h, lic), [1, 2]);
});

t.test('429 the day\'s allowance used: Retry-After to the next UTC midnight, nothing changed', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5, releasesPerDay: 1 });
  const source = new TokenSource(h, lic);
  const a = await redeemed(h, source);
  const b = await redeemed(h, source);
  t.strictSame((await release(h, a)).body, releasedBody(1, 4), 'the first release of the day');
  const before = Date.now();
  const res = await release(h, b, 'ikinci');
  const toMidnight = Math.ceil((86_400_000 - (before % 86_400_000)) / 1000);
  t.equal(res.status, 429, 'the second: 429');
  t.strictSame(res.body, { success: false, message: RELEASE_MSG.ALLOWANCE_USED, retryAfter: res.body?.retryAfter }, 'body');
  const retryAfter = res.body?.retryAfter as number;
  t.ok(Number.isInteger(retryAfter) && retryAfter > 0, `retryAfter a positive integer (${retryAfter})`);
  t.ok(retryAfter <= toMidnight + 1 && retryAfter >= toMidnight - 5, `retryAfter is the seconds to the next UTC midnight (${retryAfter} vs ${toMidnight})`);
  t.equal(res.headers.get('retry-after'), String(retryAfter), 'Retry-After says the same');
  t.same(await liveQuota(h, lic), [1, 4], 'nothing changed');
  t.same(await liveQuota(h, lic), [1, 4], 'nothing changed (read again)');
  t.equal((await release(h, b)).status, 429, 'still 429');

  // the allowance counts per license: another license is not touched
  const other = await h.createLicense({ totalQuota: 2, releasesPerDay: 1 });
  const c = await redeemed(h, new TokenSource(h, other));
  t.strictSame((await release(h, c)).body, releasedBody(0, 2), 'another license releases its own');

  // the refused token was not burned: a higher allowance lets it through the same day
  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { releasesPerDay: 2 });
  t.strictSame((await release(h, b)).body, releasedBody(0, 5), 'releasesPerDay 2: the second release');
  const d = await redeemed(h, source);
  t.equal((await release(h, d)).status, 429, 'the third of the day: 429 again');
  t.same(await liveQuota(h, lic), [1, 4]);
});

t.test('401 Geçersiz token and 400 Token boş olamaz', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3, releasesPerDay: 3 });
  const source = new TokenSource(h, lic);
  const real = await redeemed(h, source);
  const { payload: claims } = decodeJwt(real);
  const [h64, p64, s64] = real.split('.') as [string, string, string];
  const invalid: [string, string][] = [
    ['garbage', 'not-a-token'],
    ['three garbage parts', 'abc.def.ghi'],
    ['signature changed', `${h64}.${p64}.${s64.slice(0, -2)}${s64.endsWith('AA') ? 'BB' : 'AA'}`],
    ['signed with another secret', craftJwt(HS256_HEADER, claims, randomBytes(32).toString('hex'))],
    ['alg none', craftJwt({ alg: 'none', typ: 'JWT' }, claims, secret, null)],
    ['firma_id of no company', craftJwt(HS256_HEADER, { ...claims, firma_id: 'nosuchcompany000' }, secret)],
    ['typ access on sign claims', craftJwt(HS256_HEADER, { ...claims, typ: 'access' }, secret)],
    ['an access token', await source.accessTokenOf()],
  ];
  for (const [what, token] of invalid) refused(t, await release(h, token), 401, MSG.INVALID, what);
  const now = Math.floor(Date.now() / 1000);
  const longExpired = craftJwt(HS256_HEADER, { ...claims, iat: now - 7200, exp: now - 3600 }, secret);
  refused(t, await release(h, longExpired), 401, MSG.EXPIRED, 'expired longer ago than the release window');

  for (const [what, body] of [
    ['no token field', {}], ['only a reason', { reason: 'x' }], ['empty', { token: '' }], ['null', { token: null }],
    ['blank', { token: '   ' }], ['whitespace', { token: ' \t\n ' }],
  ] as [string, unknown][]) {
    refused(t, await h.request('POST', RELEASE_PATH, body), 400, MSG.EMPTY, what);
  }
  t.same(await liveQuota(h, lic), [1, 2], 'nothing given');
  t.strictSame((await release(h, real)).body, releasedBody(0, 3), 'the real token releases after them all');
});

t.test('400 for a body that is not a JSON object, a field of the wrong type, a bad reason or Idempotency-Key', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3, releasesPerDay: 3 });
  const source = new TokenSource(h, lic);
  const real = await redeemed(h, source);
  for (const [what, raw] of NOT_AN_OBJECT) {
    expectMessageError(t, await h.request('POST', RELEASE_PATH, raw), [400], what);
  }
  for (const [what, body] of [
    ['token a number', { token: 42 }], ['token an object', { token: { jwt: real } }], ['token an array', { token: [real] }],
    ['token true', { token: true }],
  ] as [string, unknown][]) {
    expectMessageError(t, await h.request('POST', RELEASE_PATH, body), [400, 401], what);
  }
  for (const [what, reason] of [
    ['a NUL', 'kart\u0000çıkarıldı'], ['a tab', 'kart\tçıkarıldı'], ['a line break', 'kart\nçıkarıldı'], ['a DEL', 'x\u007f'],
    ['a lone surrogate', 'a\ud800b'], ['501 characters', 'x'.repeat(501)], ['a number', 42], ['an object', { why: 'x' }],
    ['an array', ['x']], ['true', true],
  ] as [string, unknown][]) {
    namesField(t, await release(h, real, reason), 'reason', `reason ${what}`);
  }
  const longKey = await h.request('POST', RELEASE_PATH, { token: real }, { 'idempotency-key': 'x'.repeat(256) });
  namesField(t, longKey, 'Idempotency-Key', 'an Idempotency-Key of 256 characters');
  t.same(await liveQuota(h, lic), [1, 2], 'none of them gave anything');
  const longest = await release(h, real, 'ğ'.repeat(500));
  t.strictSame([longest.status, longest.body], [200, releasedBody(0, 3)], 'a reason of exactly 500 characters is taken');
});

t.test('422 the Idempotency-Key of another token\'s release', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3, releasesPerDay: 3 });
  const source = new TokenSource(h, lic);
  const a = await redeemed(h, source);
  const b = await redeemed(h, source);
  t.strictSame((await release(h, a, undefined, 'iade-1')).body, releasedBody(1, 2), 'a released with iade-1');
  refused(t, await release(h, b, undefined, 'iade-1'), 422, RELEASE_MSG.KEY_REUSED, 'b with iade-1');
  t.same(await liveQuota(h, lic), [1, 2], 'b gave nothing');
  t.strictSame((await release(h, b, undefined, 'iade-2')).body, releasedBody(0, 3), 'b with a key of its own');
});

t.test('400 the package the unit came from expired between redemption and release', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5, releasesPerDay: 3 });
  const expiry = Date.now() + 3_000;
  const added = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 2, expiresAt: new Date(expiry).toISOString() });
  t.equal(added.status, 200, added.text);
  const source = new TokenSource(h, lic);
  const a = await redeemed(h, source); // the short package is spent first
  const b = await redeemed(h, source);
  await sleep(Math.max(0, expiry - Date.now() + 300));
  const [usedBefore] = await liveQuota(h, lic);
  refused(t, await release(h, a, 'kart çıkarıldı'), 400, RELEASE_MSG.PACKAGE_EXPIRED, 'a');
  refused(t, await release(h, b), 400, RELEASE_MSG.PACKAGE_EXPIRED, 'b');
  t.equal((await liveQuota(h, lic))[0], usedBefore, 'nothing given');
  // a unit of the license's own package (expiring with the license) still comes back
  const c = await redeemed(h, source);
  const res = await release(h, c);
  t.equal(res.status, 200, `a token of the package still running releases: ${res.text}`);
  t.equal(res.body?.usedQuota, usedBefore, 'used back to where it was');
});

t.test('401 Geçersiz token once the license is inactive or expired; the token releases once it is back', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3, releasesPerDay: 3 });
  const a = await redeemed(h, new TokenSource(h, lic));
  const path = `/admin/v1/licenses/${lic.licenseKey}`;
  await adminOk(h, 'PATCH', path, { isActive: false });
  refused(t, await release(h, a), 401, MSG.INVALID, 'inactive');
  await adminOk(h, 'PATCH', path, { isActive: true, expiryDate: new Date(Date.now() - 86_400_000).toISOString() });
  refused(t, await release(h, a), 401, MSG.INVALID, 'expired');
  await adminOk(h, 'PATCH', path, { expiryDate: new Date(Date.now() + 30 * 86_400_000).toISOString() });
  t.same(await liveQuota(h, lic), [1, 2], 'nothing given');
  t.strictSame((await release(h, a)).body, releasedBody(0, 3), 'released once the license is back');
});

t.test('400 the release window passed (RELEASE_WINDOW_SECONDS 2)', async (t) => {
  const w = await startHarness(t, 'release-window', { ...LIVE_COUNTS, RELEASE_WINDOW_SECONDS: '2' });
  const lic = await w.createLicense({ totalQuota: 3, releasesPerDay: 3 });
  const source = new TokenSource(w, lic);
  const a = await redeemed(w, source);
  await sleep(2_500);
  refused(t, await release(w, a, 'geç kaldı'), 400, RELEASE_MSG.WINDOW_PASSED, '2.5 s after the redemption');
  refused(t, await release(w, a, undefined, 'gec-1'), 400, RELEASE_MSG.WINDOW_PASSED, 'with an Idempotency-Key');
  t.same(await liveQuota(w, lic), [1, 2], 'nothing given');
  const b = await redeemed(w, source);
  t.strictSame((await release(w, b)).body, releasedBody(1, 2), 'a token redeemed just now releases');
});
