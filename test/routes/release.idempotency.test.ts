import t from 'tap';
import { createRedis } from '../../src/redis/client.js';
import { IDEMPOTENCY_WINDOW_MS } from '../../src/redis/keys.js';
import { Outcome } from '../../src/redis/outcomes.js';
import { runScript } from '../../src/redis/scriptCall.js';
import { scripts } from '../../src/redis/scriptBuilders.js';
import { LIVE_COUNTS, startHarness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { claimsOf } from '../helpers/jwt.js';
import { documentNamed, receiptParts, sign, verifiesWith, type Jwk } from '../helpers/receipts.js';
import { expectExactBooks, liveQuota, release, releasedBody } from '../helpers/release.js';
import { MSG } from '../helpers/shapes.js';
import { mintTokens } from '../helpers/tokens.js';

// A retry with an Idempotency-Key after its redemption was released: the unit is back and
// nothing is spent, so the retry is answered as one without the key (400 already used), at
// validate and at sign, never the first 200 ("spent") again. Races between a release and
// keyed retries keep the books exact, and a receipt of a released redemption still verifies
// offline while the history says it was released.

const h = await startHarness(t, 'release-idem', LIVE_COUNTS);
const USED = { success: false, message: MSG.USED };

const validate = (token: string, key: string): Promise<Answer> =>
  h.request('POST', '/api/license/validate', { token }, { 'idempotency-key': key });

t.test('validate, release, then the keyed retry: 400 already used, nothing spent', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10, releasesPerDay: 10 });
  const [token] = (await mintTokens(h, lic, 1)).tokens as [string];
  const first = await validate(token, 'is-4711');
  t.strictSame(first.body, { success: true, message: first.body?.message, usedQuota: 1, remainingQuota: 9 }, 'redeemed');
  t.equal((await validate(token, 'is-4711')).text, first.text, 'a retry before the release: the first 200');
  t.strictSame((await release(h, token, 'kart çıkarıldı')).body, releasedBody(0, 10), 'released');

  const retried = await validate(token, 'is-4711');
  t.equal(retried.status, 400, 'the keyed retry after the release: 400');
  t.strictSame(retried.body, USED, 'already used, as without the key');
  t.strictSame((await h.validate(token)).body, USED, 'without the key: the same');
  t.same(await liveQuota(h, lic), [0, 10], 'nothing spent');
  t.equal((await h.checkQuota(lic.licenseKey)).body?.data?.usedQuota, 0, 'check-quota: 0 used');
  t.equal((await validate(token, 'another-key')).status, 400, 'the token with a new key: already used too');
  await expectExactBooks(t, h, lic, 0, 1);
});

t.test('sign, release, then the keyed retry: 400, no receipt; the receipt still verifies and the history says released', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5, releasesPerDay: 10 });
  const { accessToken, tokens } = await mintTokens(h, lic, 1);
  const token = tokens[0] as string;
  const documents = [documentNamed('recete.pdf')];
  const signed = await sign(h, { token, documents }, 'imza-1');
  t.equal(signed.status, 200, 'signed');
  const receipt = signed.body?.receipt as string;
  t.strictSame((await release(h, token, 'PIN yanlış')).body, releasedBody(0, 5), 'released');

  const retried = await sign(h, { token, documents }, 'imza-1');
  t.equal(retried.status, 400, 'the keyed retry after the release: 400');
  t.strictSame(retried.body, USED, 'already used, no receipt handed back');
  t.same(await liveQuota(h, lic), [0, 5], 'nothing spent');

  const jwks = (await h.request('GET', '/.well-known/jwks.json')).body as { keys: Jwk[] };
  t.ok(verifiesWith(receipt, jwks.keys), 'the receipt of the released redemption still verifies offline');
  await h.drainWorker();
  const jti = receiptParts(receipt).payload.jti;
  const items = (await h.history(lic.licenseKey, accessToken)).body?.data?.items as { tokenId: string; releasedAt?: string }[];
  const item = items.find((i) => i.tokenId === jti);
  t.ok(item?.releasedAt !== undefined && !Number.isNaN(Date.parse(item.releasedAt)), 'the history item of the receipt\'s jti carries releasedAt');
  const [row] = await h.sql<{ n: number }[]>`select count(*)::int as n from token_releases where token_id = ${jti as string}`;
  t.equal(row?.n, 1, 'Postgres: one token_releases row for the jti');
  await expectExactBooks(t, h, lic, 0, 1);
});

t.test('a release racing keyed retries: a 200 only for a retry before it, the books exact', async (t) => {
  const TOKENS = 12;
  const RETRIES = 6;
  const lic = await h.createLicense({ totalQuota: 100, releasesPerDay: 100 });
  const { tokens } = await mintTokens(h, lic, TOKENS);
  const firsts = await Promise.all(tokens.map((token, i) => i % 2 === 0
    ? validate(token, `k-${i}`)
    : sign(h, { token, documents: [documentNamed(`belge-${i}.pdf`)] }, `k-${i}`)));
  t.same(firsts.map((a) => a.status), Array(TOKENS).fill(200), 'every token redeemed once');
  t.same(await liveQuota(h, lic), [TOKENS, 100 - TOKENS]);

  // the sign retries must send the same documents: read them back from each first receipt
  const documentsOf = (i: number): unknown => receiptParts(firsts[i]?.body?.receipt as string).payload.documents;
  const retry = (i: number): Promise<Answer> => i % 2 === 0
    ? validate(tokens[i] as string, `k-${i}`)
    : sign(h, { token: tokens[i], documents: documentsOf(i) }, `k-${i}`);
  const raced = await Promise.all(tokens.map(async (token, i) => {
    const answers = await Promise.all([release(h, token, 'yarış'), ...Array.from({ length: RETRIES }, () => retry(i))]);
    return { released: answers[0] as Answer, retries: answers.slice(1) };
  }));
  t.same(raced.map((r) => r.released.status), Array(TOKENS).fill(200), 'every release 200');
  let replays = 0;
  raced.forEach((r, i) => {
    for (const a of r.retries) {
      if (a.status === 200) {
        replays++;
        t.equal(a.text, firsts[i]?.text, `token ${i}: a 200 is the first answer, byte for byte (a retry the release came after)`);
      } else {
        t.strictSame([a.status, a.body], [400, USED], `token ${i}: otherwise already used`);
      }
    }
  });
  t.comment(`${replays} of ${TOKENS * RETRIES} retries ran before their release`);
  const after = await Promise.all(tokens.map((_, i) => retry(i)));
  t.same(after.map((a) => [a.status, a.body]), Array(TOKENS).fill([400, USED]), 'once released, every keyed retry: already used');
  t.same(await liveQuota(h, lic), [0, 100], 'every unit back, none spent by a retry');
  const ids = tokens.map((token) => claimsOf(token).token_id);
  await expectExactBooks(t, h, lic, 0, TOKENS);
  const [rows] = await h.sql<{ n: number }[]>`select count(*)::int as n from token_redemptions where token_id = any(${ids}::uuid[])`;
  t.equal(rows?.n, TOKENS, 'one redemption row per token');
});

t.test('servers\' clocks a few ms apart across a window boundary: a keyed release retried through the one behind gets its answer again (release.lua called directly)', async (t) => {
  const redis = createRedis(h.config, 'test-release-skew');
  t.teardown(() => redis.quit());
  const lic = await h.createLicense({ totalQuota: 10, releasesPerDay: 10 });
  const [token, other] = (await mintTokens(h, lic, 2)).tokens as [string, string];
  t.equal((await validate(token, 'r-skew')).status, 200, 'redeemed');
  t.equal((await validate(other, 'r-other')).status, 200, 'another redeemed');
  const releaseAt = (jwt: string, nowMs: number) => {
    const c = claimsOf(jwt);
    const k = h.keys.forLicense(c.firma_id);
    return runScript(redis, scripts.release(k, {
      markers: k.markers(c.exp * 1000).key, today: k.releasesToday(nowMs), nowMs, tokenId: c.token_id, firmaId: c.firma_id,
      windowMs: 3_600_000, reason: '', idempotency: k.releaseIdempotency('rel-skew', nowMs),
    }));
  };
  const boundary = (Math.floor(Date.now() / IDEMPOTENCY_WINDOW_MS) + 1) * IDEMPOTENCY_WINDOW_MS;
  t.same(await releaseAt(token, boundary + 1), [Outcome.DONE, 1, 9], 'released by the server ahead, just past the boundary');
  t.same(await releaseAt(token, boundary - 4), [Outcome.DONE, 1, 9], 'the retry through the server 5 ms behind: the same answer');
  t.same(await releaseAt(other, boundary - 4), [Outcome.IDEMPOTENCY_KEY_REUSED, 0, 0], 'the key with another token there: refused');
  t.same(await liveQuota(h, lic), [1, 9], 'one unit back');
});
