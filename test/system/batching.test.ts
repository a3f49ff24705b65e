import t from 'tap';
import type { Redis } from 'ioredis';
import { createRedis, type RedisClient } from '../../src/redis/client.js';
import { RedisClock } from '../../src/redis/clock.js';
import { RedisRestarts } from '../../src/redis/restarts.js';
import { createLogger } from '../../src/log.js';
import { bucketOf, KeySpace } from '../../src/redis/keys.js';
import { Outcome } from '../../src/redis/outcomes.js';
import { redeemLayout, type Redeemed, type Redemption } from '../../src/redis/batchScripts.js';
import { SlotBatcher } from '../../src/redis/slotBatcher.js';
import { runScript } from '../../src/redis/scriptCall.js';
import { scripts } from '../../src/redis/scriptBuilders.js';
import { NO_RATE_LIMITS, startHarness, type Harness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { expectCodedError, MSG } from '../helpers/shapes.js';
import { mintTokens } from '../helpers/tokens.js';

// Redemptions (and issuances) that reach the server in one event-loop turn and share a hash
// slot go to Redis as one redeem.lua (issue.lua) call. Each must come out exactly as
// if it had gone alone.

const h = await startHarness(t, 'batching', NO_RATE_LIMITS);

/** What validate hands the batcher for a sign token: no limit, origin, Idempotency-Key or receipt. */
function redemptionOf(keys: KeySpace, token: string): Redemption {
  const c = claimsOf(token);
  const k = keys.forLicense(c.firma_id);
  return {
    keys: k, markers: k.markers(c.exp * 1000).key, limit: 0, host: '', tokenId: c.token_id,
    firmaId: c.firma_id, imzaTipi: c.imza_tipi, iatMs: c.iat * 1000, origin: null, idempotency: null, receiptPrefix: '',
  };
}

/** Two licenses whose keys share one hash slot (bucket), so their redemptions batch together. */
async function twoLicensesInOneBucket(h: Harness, a: object, b: object) {
  const seen = new Map<number, Awaited<ReturnType<Harness['createLicense']>>>();
  for (let i = 0; i < 60; i++) {
    const lic = await h.createLicense(a);
    const bucket = bucketOf(lic.firmaId);
    const twin = seen.get(bucket);
    if (twin) {
      // the second license of the bucket gets b's settings
      const patched = await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, b);
      if (patched.status !== 200) throw new Error(`PATCH: ${patched.status} ${patched.text}`);
      return { first: twin, second: lic, bucket };
    }
    seen.set(bucket, lic);
  }
  throw new Error('no two licenses in one bucket after 60 tries');
}

t.test('a burst in one slot: every token answered as if alone, duplicates spend once, origins kept', async (t) => {
  const { first: a, second: b } = await twoLicensesInOneBucket(h, { totalQuota: 100 }, { domains: ['example.com'] });
  t.equal((await h.admin('GET', `/admin/v1/licenses/${b.licenseKey}`)).body.data.domains[0], 'example.com', 'b has a domain');
  const aTokens = (await mintTokens(h, a, 70)).tokens;
  const bTokens = (await mintTokens(h, b, 5)).tokens;

  const bOrigins = ['https://example.com', 'example.com', 'http://EXAMPLE.com:8080/x', 'evil.com', ''];
  const answers = await Promise.all([
    ...aTokens.map((token) => h.validate(token)),
    h.validate(aTokens[0]), h.validate(aTokens[0]),
    ...bTokens.map((token, i) => h.validate(token, bOrigins[i])),
  ]);
  const aAnswers = answers.slice(0, 72);
  const bAnswers = answers.slice(72);

  const aOk = aAnswers.filter((x) => x.status === 200);
  t.equal(aOk.length, 70, '70 distinct tokens of a: 70 redemptions');
  t.same(aOk.map((x) => x.body.usedQuota as number).sort((x, y) => x - y), Array.from({ length: 70 }, (_, i) => i + 1),
    'usedQuota values 1..70, each once');
  t.ok(aOk.every((x) => x.body.usedQuota + x.body.remainingQuota === 100), 'used + remaining = 100 in every answer');
  const aRefused = aAnswers.filter((x) => x.status !== 200);
  t.equal(aRefused.length, 2, 'the two extra copies of one token are refused');
  t.ok(aRefused.every((x) => x.status === 400 && x.body.message === MSG.USED), 'as already used');

  t.same(bAnswers.map((x) => x.status), [200, 200, 200, 401, 401], 'b: good origins redeem, bad ones are refused');
  t.same(bAnswers.slice(3).map((x) => x.body), [{ success: false, message: MSG.ORIGIN }, { success: false, message: MSG.ORIGIN }]);
  t.same(bAnswers.slice(0, 3).map((x) => x.body.usedQuota as number).sort(), [1, 2, 3]);

  await h.drainWorker();
  const licenses = await h.sql`select firma_id, used_quota::int as used from licenses where firma_id in (${a.firmaId}, ${b.firmaId})`;
  t.same(Object.fromEntries(licenses.map((r) => [r.firma_id, r.used])), { [a.firmaId]: 70, [b.firmaId]: 3 }, 'Postgres: 70 and 3 used');
  const used = await h.sql`select token_id, origin from sign_tokens where firma_id = ${b.firmaId} and status = 'used'`;
  const originOf = new Map(used.map((r) => [r.token_id as string, r.origin as string | null]));
  t.same(bTokens.slice(0, 3).map((tok) => originOf.get(claimsOf(tok).token_id)), bOrigins.slice(0, 3),
    'each used token of b records the origin its client sent');
});

t.test('the batcher: one turn of one slot is one redeem.lua call per 64 tokens, results in order', async (t) => {
  const lic = await h.createLicense({ totalQuota: 1000 });
  const tokens = (await mintTokens(h, lic, 131)).tokens;
  const redis = createRedis(h.config, 'test-batcher');
  t.teardown(() => redis.quit());
  const calls: number[] = []; // tokens per call
  const redeemCall = redis.redeem.bind(redis);
  redis.redeem = (numKeys, ...args) => { calls.push((numKeys - 3) / 4); return redeemCall(numKeys, ...args); };

  const keys = new KeySpace(h.prefix);
  const clock = new RedisClock(redis, h.config.redisCommandTimeoutMs);
  await clock.start();
  t.teardown(() => clock.stop());
  const restarts = new RedisRestarts(redis, keys, createLogger('silent'));
  const batcher = new SlotBatcher(redis, redeemLayout, 60_000, clock, restarts);
  const redeem = (token: string): Promise<Redeemed> => batcher.call(redemptionOf(keys, token));

  const burst = await Promise.all(tokens.slice(0, 130).map(redeem));
  t.same(calls, [64, 64, 2], '130 tokens of one turn: three calls (64 + 64 + 2)');
  // [outcome, used, remaining, rate-limit remaining, reset, limit, receipt]: the limit is off here (0, 0, 0), no receipt (validate)
  t.same(burst, Array.from({ length: 130 }, (_, i) => [Outcome.DONE, i + 1, 1000 - i - 1, 0, 0, 0, '']), 'each token redeemed, in the order given');

  const lone = await redeem(tokens[130] as string);
  t.same(calls, [64, 64, 2, 1], 'a lone redemption is a call of the same script, a batch of one');
  t.same(lone, [Outcome.DONE, 131, 869, 0, 0, 0, '']);
  const again = await Promise.all([redeem(tokens[130] as string), redeem(tokens[0] as string)]);
  t.same(again, [[Outcome.TOKEN_SPENT, 0, 0, 0, 0, 0, ''], [Outcome.TOKEN_SPENT, 0, 0, 0, 0, 0, '']], 'spent tokens are refused in a batch too');
});

t.test('an answer that arrived while the process was busy past the command timeout is read, not failed as timed out', async (t) => {
  // the stall of a loaded machine: the call is sent, then this process runs nothing else for
  // longer than the timeout while Redis answers; what was spent must be answered as spent
  const timeoutMs = 1000;
  const lic = await h.createLicense({ totalQuota: 10 });
  const token = (await mintTokens(h, lic, 1)).tokens[0] as string;
  const redis = createRedis(h.config, 'test-stalled', { commandTimeoutMs: timeoutMs });
  t.teardown(() => redis.quit());
  const keys = new KeySpace(h.prefix);
  const clock = new RedisClock(redis, timeoutMs);
  await clock.start();
  t.teardown(() => clock.stop());
  const batcher = new SlotBatcher(redis, redeemLayout, 60_000, clock, new RedisRestarts(redis, keys, createLogger('silent')));
  const redeem = () => batcher.call(redemptionOf(keys, token));

  const answer = redeem().then((r) => r, (err: Error) => err);
  await new Promise((resolve) => setImmediate(resolve)); // the batcher's turn has sent the call
  const busyUntil = Date.now() + timeoutMs * 2.5;
  while (Date.now() < busyUntil) { /* the process stalls; Redis runs the script within its deadline */ }
  const result = await answer;
  t.same(result, [Outcome.DONE, 1, 9, 0, 0, 0, ''], 'the redemption is answered as spent (not "Command timed out", a 503 for a spent unit)');
  t.same(await redeem(), [Outcome.TOKEN_SPENT, 0, 0, 0, 0, 0, ''], 'and the token is spent, once');
});

t.test('sign-token bursts in one slot: each token issued as if alone, refusals where due', async (t) => {
  const { first: a, second: b } = await twoLicensesInOneBucket(h, { totalQuota: 100 }, { organizationName: 'B Ltd.' });
  const aAccess = (await mintTokens(h, a, 1)).accessToken;
  const bAccess = (await mintTokens(h, b, 1)).accessToken;
  t.equal((await h.admin('PATCH', `/admin/v1/licenses/${b.licenseKey}`, { isActive: false })).status, 200, 'b deactivated');

  const answers = await Promise.all([
    ...Array.from({ length: 70 }, (_, i) => h.signToken(aAccess, (i % 2) as 0 | 1)),
    ...Array.from({ length: 3 }, () => h.signToken(bAccess, 0)),
  ]);
  const aAnswers = answers.slice(0, 70);
  t.ok(aAnswers.every((x) => x.status === 200), `a: 70 issued (${aAnswers.find((x) => x.status !== 200)?.text ?? ''})`);
  t.ok(aAnswers.every((x) => x.body.remainingQuota === 100), 'issuing spends nothing: remainingQuota 100 in every answer');
  const claims = aAnswers.map((x) => claimsOf(x.body.signToken));
  t.equal(new Set(claims.map((c) => c.token_id)).size, 70, '70 distinct token ids');
  t.same(claims.map((c) => c.imza_tipi), Array.from({ length: 70 }, (_, i) => i % 2), 'each token carries its own request\'s imzaTipi');
  t.ok(claims.every((c) => c.firma_id === a.firmaId && c.firma_adi === 'Test A.Ş.'), 'and its license');
  // b's deactivation revoked its access token: refused within the same batches
  for (const x of answers.slice(70)) expectCodedError(t, x, 401, 'INVALID_TOKEN');

  const redeemed = await Promise.all(aAnswers.map((x) => h.validate(x.body.signToken)));
  t.ok(redeemed.every((x) => x.status === 200), 'every issued token redeems');
  await h.drainWorker();
  const rows = await h.sql`select status, count(*)::int as n from sign_tokens where firma_id = ${a.firmaId} group by status`;
  t.same(Object.fromEntries(rows.map((r) => [r.status, r.n])), { used: 70, issued: 1 }, 'Postgres: 70 used, get-token\'s one still issued');
});

t.test('script calls of one turn leave in a write per sixteen, each answered as if alone (src/redis/turnWrites.ts)', async (t) => {
  const redis = createRedis(h.config, 'test-turn-writes');
  t.teardown(() => redis.quit());
  await redis.ping();
  const socket = (redis as RedisClient & Redis).stream;
  let writes = 0;
  const write = socket._write.bind(socket);
  const writev = socket._writev?.bind(socket);
  socket._write = (...args: Parameters<typeof write>) => { writes++; write(...args); };
  if (writev) socket._writev = (...args: Parameters<typeof writev>) => { writes++; writev(...args); };

  // eight license keys, five check-quota counts each at a limit of 5: each key's counts come
  // back 4, 3, 2, 1, 0 in the order they were made, whatever write carried them
  const keys = new KeySpace(h.prefix);
  const licenseKeys = Array.from({ length: 8 }, (_, i) => `00000000-0000-4000-8000-00000000000${i}`);
  const order = Array.from({ length: 40 }, (_, i) => licenseKeys[i % 8] as string);
  const checked = await Promise.all(order.map((key) => runScript(redis, scripts.checkQuota(keys, key, 'turn', 5, 60_000, false))));
  t.equal(writes, 3, '40 calls of one turn: three writes (16 + 16 + 8)');
  t.same(checked.map((c) => c.rate.remaining), Array.from({ length: 40 }, (_, i) => 4 - Math.floor(i / 8)), 'each call its own count, in order');
  t.ok(checked.every((c) => c.outcome === Outcome.DONE && c.version === ''), 'no copy: each answered DONE with no version');

  t.equal(socket.writableCorked, 0, 'nothing is held past the turn');
  const over = await runScript(redis, scripts.checkQuota(keys, licenseKeys[0] as string, 'turn', 5, 60_000, false));
  t.equal(over.outcome, Outcome.OVER_RATE_LIMIT, 'a lone call of a later turn is sent at once: the sixth count is over the limit');
  t.equal(writes, 4, 'in a write of its own');
});
