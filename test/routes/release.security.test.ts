import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { LIVE_COUNTS, startHarness, type Harness } from '../helpers/harness.js';
import { craftJwt, decodeJwt, HS256_HEADER } from '../helpers/jwt.js';
import { FUZZ_SEED, controlChar, nastyString } from '../helpers/fuzz.js';
import { expectExactBooks, liveQuota, release, releasedBody, RELEASE_MSG, RELEASE_PATH } from '../helpers/release.js';
import { mintTokens, TokenSource } from '../helpers/tokens.js';

// POST /api/license/release against abuse: a token gives at most one unit back however many
// releases race for it (with and without one Idempotency-Key), releases racing redemptions
// keep the books exact, a token of another license changes only that license, and no body
// at all (fuzzed) gets a 5xx or moves a quota.

const h = await startHarness(t, 'release-security', LIVE_COUNTS);
const secret = Buffer.from(h.config.jwtKeys[0]!.secret);

async function redeemAll(h: Harness, tokens: string[]): Promise<void> {
  for (const token of tokens) {
    const res = await h.validate(token);
    if (res.status !== 200) throw new Error(`validate: ${res.status} ${res.text}`);
  }
}

t.test('20 concurrent releases of one token give exactly one unit back', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10, releasesPerDay: 100 });
  const { tokens } = await mintTokens(h, lic, 3);
  await redeemAll(h, tokens);
  const [a] = tokens as [string];
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => release(h, a, `yarış ${i}`)));
  const ok = answers.filter((r) => r.status === 200);
  t.equal(ok.length, 1, 'one 200');
  t.strictSame(ok[0]?.body, releasedBody(2, 8), 'used 3 -> 2');
  t.same(answers.filter((r) => r.status !== 200).map((r) => [r.status, r.body?.message]),
    Array.from({ length: 19 }, () => [400, RELEASE_MSG.ALREADY_RELEASED]), 'the other 19: already released');
  t.same(await liveQuota(h, lic), [2, 8], 'one unit back');
  await expectExactBooks(t, h, lic, 2, 1);
});

t.test('20 concurrent releases of one token with one Idempotency-Key: identical 200s, one unit back', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10, releasesPerDay: 100 });
  const { tokens } = await mintTokens(h, lic, 3);
  await redeemAll(h, tokens);
  const [a, b] = tokens as [string, string];
  const answers = await Promise.all(Array.from({ length: 20 }, () => release(h, a, 'kart çıkarıldı', 'tek-anahtar')));
  t.same(answers.map((r) => r.status), Array.from({ length: 20 }, () => 200), 'every one 200');
  t.same(new Set(answers.map((r) => r.text)).size, 1, 'byte for byte the same');
  t.strictSame(answers[0]?.body, releasedBody(2, 8));
  // the key with another token, racing: refused, every one
  const others = await Promise.all(Array.from({ length: 10 }, () => release(h, b, undefined, 'tek-anahtar')));
  t.same(others.map((r) => r.status), Array.from({ length: 10 }, () => 422), 'the key with another token: 422');
  t.same(await liveQuota(h, lic), [2, 8], 'one unit back');
  await expectExactBooks(t, h, lic, 2, 1);
});

t.test('20 concurrent releases of one token, each with a key of its own: one 200', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10, releasesPerDay: 100 });
  const { tokens } = await mintTokens(h, lic, 2);
  await redeemAll(h, tokens);
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => release(h, tokens[0], undefined, `anahtar-${i}`)));
  t.equal(answers.filter((r) => r.status === 200).length, 1, 'one 200');
  t.equal(answers.filter((r) => r.status === 400 && r.body?.message === RELEASE_MSG.ALREADY_RELEASED).length, 19, '19 already released');
  t.same(await liveQuota(h, lic), [1, 9]);
});

t.test('concurrent releases beyond the day\'s allowance: exactly the allowance given back', async (t) => {
  const lic = await h.createLicense({ totalQuota: 20, releasesPerDay: 3 });
  const { tokens } = await mintTokens(h, lic, 10);
  await redeemAll(h, tokens);
  const answers = await Promise.all(tokens.map((token) => release(h, token)));
  t.equal(answers.filter((r) => r.status === 200).length, 3, 'three 200s');
  t.equal(answers.filter((r) => r.status === 429).length, 7, 'seven 429s');
  t.same(await liveQuota(h, lic), [7, 13]);
  await expectExactBooks(t, h, lic, 7, 3);
});

t.test('releases racing redemptions on one license keep the books exact', async (t) => {
  const lic = await h.createLicense({ totalQuota: 60, releasesPerDay: 1000 });
  t.equal((await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 10, expiresAt: new Date(Date.now() + 3_600_000).toISOString() })).status, 200);
  const source = new TokenSource(h, lic);
  const first = await source.many(20);
  await redeemAll(h, first);
  const fresh = await source.many(20);
  const calls: Promise<{ kind: 'release' | 'redeem'; status: number }>[] = [];
  for (let i = 0; i < 20; i++) {
    calls.push(h.validate(fresh[i]).then((r) => ({ kind: 'redeem', status: r.status })));
    if (i % 2 === 0) {
      // each of these twice: one of the two gives the unit back
      calls.push(release(h, first[i], `r${i}`).then((r) => ({ kind: 'release', status: r.status })));
      calls.push(release(h, first[i], `r${i}`).then((r) => ({ kind: 'release', status: r.status })));
    }
  }
  const results = await Promise.all(calls);
  const releases = results.filter((r) => r.kind === 'release' && r.status === 200).length;
  const redemptions = results.filter((r) => r.kind === 'redeem' && r.status === 200).length;
  t.equal(releases, 10, 'ten releases, one per token');
  t.equal(redemptions, 20, 'twenty redemptions');
  t.same(results.filter((r) => r.status !== 200).map((r) => r.status), Array.from({ length: 10 }, () => 400), 'the duplicates refused');
  t.same(await liveQuota(h, lic), [30, 40], 'used 20 + 20 - 10');
  await expectExactBooks(t, h, lic, 30, 10);
});

t.test('a token of another license changes only that license', async (t) => {
  const mine = await h.createLicense({ totalQuota: 5, releasesPerDay: 5 });
  const theirs = await h.createLicense({ totalQuota: 5, releasesPerDay: 5 });
  const [m1, m2] = (await mintTokens(h, mine, 2)).tokens as [string, string];
  const [o1] = (await mintTokens(h, theirs, 1)).tokens as [string];
  await redeemAll(h, [m1, m2, o1]);

  t.strictSame((await release(h, o1)).body, releasedBody(0, 5), 'their token releases their unit');
  t.same(await liveQuota(h, mine), [2, 3], 'mine untouched');
  t.same(await liveQuota(h, theirs), [0, 5], 'theirs back to 0');

  // their token with my firma_id (re-signed with a secret only the service holds): forged
  const { payload } = decodeJwt(m1);
  const forgedFirma = craftJwt(HS256_HEADER, { ...decodeJwt(o1).payload, firma_id: payload.firma_id }, randomBytes(32).toString('hex'));
  t.equal((await release(h, forgedFirma)).status, 401, 'their token moved to my license, wrongly signed: 401');
  // a properly signed token naming my license with their token id: my license never redeemed it
  const crossed = craftJwt(HS256_HEADER, { ...payload, token_id: decodeJwt(o1).payload.token_id }, secret);
  const res = await release(h, crossed);
  t.equal(res.status, 400, `their (released) token id under my license: refused (${res.body?.message})`);
  t.same(await liveQuota(h, mine), [2, 3], 'mine still untouched');

  // one Idempotency-Key on two licenses: each license's keys are its own
  const [key1, key2] = [await release(h, m1, undefined, 'ortak'), await release(h, (await mintTokens(h, theirs, 1)).tokens[0], undefined, 'ortak')];
  t.strictSame(key1.body, releasedBody(1, 4), 'mine with the key');
  t.equal(key2.status, 400, 'theirs with the same key: judged on its own (not redeemed), not as a reuse');
  t.equal(key2.body?.message, RELEASE_MSG.NOT_REDEEMED);
  t.same(await liveQuota(h, mine), [1, 4]);
  t.same(await liveQuota(h, theirs), [0, 5]);
  await expectExactBooks(t, h, mine, 1, 1);
  await expectExactBooks(t, h, theirs, 0, 1);
});

t.test('fuzzed release bodies: never a 5xx, never a quota moved', async (t) => {
  // the tokens the bodies may carry: released already, issued and never redeemed, redeemed on
  // a license that allows no releases, one of another license's: no body can release anything
  const open = await h.createLicense({ totalQuota: 10, releasesPerDay: 100 });
  const off = await h.createLicense({ totalQuota: 10 });
  const openSource = new TokenSource(h, open);
  const [releasedToken, issued] = await openSource.many(2);
  await redeemAll(h, [releasedToken!]);
  t.equal((await release(h, releasedToken)).status, 200, 'the released token');
  const [offToken] = (await mintTokens(h, off, 1)).tokens as [string];
  await redeemAll(h, [offToken]);
  const before = [await liveQuota(h, open), await liveQuota(h, off)];

  // up to some 7,500 bytes of JSON: within the body limit (BODY_LIMIT_BYTES, 8192 by default)
  const hugeReason = fc.constantFrom<[string, number]>(['x', 1], ['ğ', 2], ['\u0000', 6], ['😀', 4])
    .chain(([c, bytes]) => fc.integer({ min: 501, max: Math.floor(7_500 / bytes) }).map((n) => c.repeat(n)));
  const text = fc.oneof(nastyString, fc.array(controlChar, { minLength: 1, maxLength: 4 }).map((c) => `kart${c.join('')}`), hugeReason);
  const token = fc.oneof(
    fc.constantFrom(releasedToken!, issued!, offToken),
    fc.constantFrom(releasedToken!, issued!, offToken).chain((tk) => fc.oneof(
      controlChar.map((c) => `${tk}${c}`), controlChar.map((c) => `${c}${tk}`), fc.constant(` ${tk} `), fc.constant(tk.toUpperCase()),
    )),
    text, fc.jsonValue({ maxDepth: 3 }),
  );
  const reason = fc.oneof(text, fc.jsonValue({ maxDepth: 2 }), fc.constant(undefined));
  const body = fc.oneof(
    { weight: 6, arbitrary: fc.record({ token, reason }, { requiredKeys: [] }) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 1, arbitrary: fc.dictionary(fc.oneof(fc.constantFrom('token', 'reason', '__proto__', 'constructor'), fc.string()), fc.jsonValue({ maxDepth: 2 })) },
    { weight: 1, arbitrary: nastyString.map((s) => ({ raw: s })) },
  );
  const key = fc.option(fc.oneof(fc.constantFrom('k-1', 'k-2'), fc.string({ maxLength: 20 }).filter((s) => /^[\x21-\x7e]*$/.test(s))), { nil: undefined });
  const RUNS = 150;
  const statuses = new Map<number, number>();
  await fc.assert(fc.asyncProperty(body, key, async (b, k) => {
    const raw = typeof b === 'object' && b !== null && 'raw' in b && Object.keys(b).length === 1 ? (b as { raw: string }).raw : JSON.stringify(b);
    const headers: Record<string, string> = k === undefined || k === '' ? {} : { 'idempotency-key': k };
    const res = await h.request('POST', RELEASE_PATH, raw ?? 'null', headers);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    if (res.status >= 500) throw new Error(`${res.status}: ${res.text}`);
    if (res.status === 200) throw new Error(`a release was given: ${res.text}`);
    if (res.body?.success !== false || typeof res.body?.message !== 'string') throw new Error(`not the message shape: ${res.text}`);
  }), { seed: FUZZ_SEED, numRuns: RUNS, includeErrorInReport: true });
  t.pass(`${RUNS} bodies, seed ${FUZZ_SEED}: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.same([await liveQuota(h, open), await liveQuota(h, off)], before, 'no quota moved');
});
