import { randomBytes } from 'node:crypto';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness, type Harness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { bearer, craftAccessToken, nowSeconds } from '../helpers/jwt.js';
import { expectCodedError, expectRateLimited, RATE_MESSAGE, type Asserts } from '../helpers/shapes.js';
import { oneRequestPerConnection } from '../helpers/sockets.js';
import { getTokenPair, redeemMany } from '../helpers/tokens.js';
import { sleep } from '../helpers/wait.js';

// GET /api/License/history/{licenseKey} is for the access token of that license only: 401
// INVALID_TOKEN for anything else that is not a valid access token, 403 for another
// license's, and nothing of the history leaks. Its rate limit (RATE_HISTORY_PER_MIN) is
// per license and shared by every process: one holder paging hard is refused with 429
// before Postgres is read, and spends no other license's count; requests refused before any
// look-up (malformed, no valid access token, another license's token) count nothing.

t.test('history security', async (t) => {
  const h = await startHarness(t, 'historysec', { RATE_GET_TOKEN_PER_MIN: '0', RATE_SIGN_TOKEN_PER_MIN: '0', RATE_VALIDATE_PER_MIN: '0' });

  t.test('401 INVALID_TOKEN without a valid access token', async (t) => {
    const lic = await h.createLicense();
    const got = await h.getToken(lic.licenseKey, lic.password, 0);
    const path = `/api/License/history/${lic.licenseKey}`;
    expectCodedError(t, await h.request('GET', path), 401, 'INVALID_TOKEN');
    expectCodedError(t, await h.request('GET', path, undefined, bearer('garbage')), 401, 'INVALID_TOKEN');
    expectCodedError(t, await h.request('GET', path, undefined, { authorization: `Basic ${got.body.accessToken}` }), 401, 'INVALID_TOKEN');
    const now = nowSeconds();
    const expired = craftAccessToken(lic.firmaId, h.config.jwtKeys[0]!.secret, { iat: now - 1000, exp: now - 100 });
    expectCodedError(t, await h.history(lic.licenseKey, expired), 401, 'INVALID_TOKEN');
    const foreign = craftAccessToken(lic.firmaId, randomBytes(32).toString('hex'));
    expectCodedError(t, await h.history(lic.licenseKey, foreign), 401, 'INVALID_TOKEN');
    expectCodedError(t, await h.history(lic.licenseKey, got.body.signToken), 401, 'INVALID_TOKEN');
    // the same request with the real access token is fine
    t.equal((await h.history(lic.licenseKey, got.body.accessToken)).status, 200);
  });


  t.test('403 with another license\'s access token', async (t) => {
    const mine = await h.createLicense();
    const theirs = await h.createLicense();
    const myAccess = (await h.getToken(mine.licenseKey, mine.password, 0)).body.accessToken as string;
    await redeemMany(h, myAccess, 1);
    const theirAccess = (await h.getToken(theirs.licenseKey, theirs.password, 0)).body.accessToken as string;
    await h.drainWorker();
    const res = await h.history(mine.licenseKey, theirAccess);
    t.equal(res.status, 403);
    t.equal(res.body?.success, false);
    t.type(res.body?.error?.code, 'string');
    t.notOk(res.text.includes('tokenId'), 'no items leak');
  });

});

const LIMIT = 3;
const historyPath = (licenseKey: string, query = '') => `/api/License/history/${licenseKey}${query}`;

/** The "history" RateLimit fields of a counted answer: the policy as configured, r as given, t within the window. */
function expectCounted(t: Asserts, res: Answer, r: number, what: string): number {
  t.equal(res.headers.get('ratelimit-policy'), `"history";q=${LIMIT};w=60`, `${what}: RateLimit-Policy`);
  const fields = /^"history";r=(\d+);t=(\d+)$/.exec(res.headers.get('ratelimit') ?? '');
  t.equal(fields?.[1], String(r), `${what}: RateLimit r=${r} (${res.headers.get('ratelimit')})`);
  const seconds = Number(fields?.[2]);
  t.ok(seconds >= 1 && seconds <= 60, `${what}: t within the window (${seconds})`);
  return seconds;
}

function expectUncounted(t: Asserts, res: Answer, what: string): void {
  t.same([res.headers.get('ratelimit-policy'), res.headers.get('ratelimit')], [null, null], `${what} (${res.status}): no RateLimit fields`);
}

t.test('rate limit: RATE_HISTORY_PER_MIN per license, shared by every process', async (t) => {
  const h: Harness = await startHarness(t, 'history-ratelimit', { ...NO_RATE_LIMITS, RATE_HISTORY_PER_MIN: String(LIMIT) });

  t.test('the 4th request in the window is a 429 in the published shape; another license is not affected', async (t) => {
    const lic = await h.createLicense();
    const other = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    const { accessToken: otherAccess } = await getTokenPair(h, other);
    for (let i = 0; i < LIMIT; i++) {
      const res = await h.history(lic.licenseKey, accessToken, i % 2 === 0 ? '' : '?limit=1');
      t.equal(res.status, 200, `request ${i + 1}: 200 (${res.text})`);
      expectCounted(t, res, LIMIT - 1 - i, `request ${i + 1}`);
    }
    const over = await h.history(lic.licenseKey, accessToken, '?limit=500');
    expectRateLimited(t, over, 'the 4th');
    t.equal(over.headers.get('cache-control'), 'no-store', 'no-store, as every history answer');
    const wait = expectCounted(t, over, 0, 'the 4th');
    t.equal(String(wait), over.headers.get('retry-after'), 'RateLimit t = Retry-After = retryAfter');
    expectRateLimited(t, await h.history(lic.licenseKey, accessToken), 'the 5th: still refused');

    const theirs = await h.history(other.licenseKey, otherAccess);
    t.equal(theirs.status, 200, 'another license is not limited');
    expectCounted(t, theirs, LIMIT - 1, 'another license: its own count');

    const counter = h.keys.forLicense(lic.firmaId).rateHistory;
    t.equal(await h.redis.get(counter), String(LIMIT + 2), 'one counter for the license, refusals counted');
    const ttl = await h.redis.pttl(counter);
    t.ok(ttl > 0 && ttl <= 60_000, `the counter expires with the window (${ttl} ms left)`);
  });

  t.test(`per license across the processes: ${3 * LIMIT} requests at once, each on its own connection, exactly ${LIMIT} answered`, async (t) => {
    const lic = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    const pids = h.deployment?.children() ?? [];
    const answers = await oneRequestPerConnection(h.service.port, pids, Array.from({ length: 3 * LIMIT }, () => ({
      method: 'GET', path: historyPath(lic.licenseKey), headers: bearer(accessToken),
    })));
    t.equal(new Set(answers.map((a) => a.pid)).size, pids.length, `the requests reached every process (${pids.length})`);
    t.same(answers.map((a) => a.status).sort(), [...Array(LIMIT).fill(200), ...Array(2 * LIMIT).fill(429)], `${LIMIT} answered, the rest 429`);
    const remaining = answers.filter((a) => a.status === 200).map((a) => Number(/;r=(\d+);/.exec(a.headers.ratelimit ?? '')?.[1]));
    t.same(remaining.sort(), [0, 1, 2], 'RateLimit r counts one license\'s requests down, whichever process answered');
    for (const a of answers.filter((x) => x.status === 429)) {
      t.match(a.headers['retry-after'], /^[1-9]\d*$/, 'each 429 with Retry-After in whole seconds');
      t.same(JSON.parse(a.body), { success: false, message: RATE_MESSAGE, retryAfter: Number(a.headers['retry-after']) },
        'and the published body');
    }
  });

  t.test('refused before any look-up, or with another license\'s token: not counted, no RateLimit fields', async (t) => {
    const lic = await h.createLicense();
    const other = await h.createLicense();
    const pair = await getTokenPair(h, lic);
    const { accessToken: otherAccess } = await getTokenPair(h, other);
    const now = nowSeconds();
    const expired = craftAccessToken(lic.firmaId, h.config.jwtKeys[0]!.secret, { iat: now - 1000, exp: now - 100 });
    const refusals: [string, number, () => Promise<Answer>][] = [
      ['no access token', 401, () => h.request('GET', historyPath(lic.licenseKey))],
      ['a malformed access token', 401, () => h.history(lic.licenseKey, 'not.a.token')],
      ['an expired access token', 401, () => h.history(lic.licenseKey, expired)],
      ['a sign token as Bearer', 401, () => h.history(lic.licenseKey, pair.signToken)],
      ['a key that is no UUID', 400, () => h.history('not-a-uuid', pair.accessToken)],
      ['limit 0', 400, () => h.history(lic.licenseKey, pair.accessToken, '?limit=0')],
      ['a cursor not handed out', 400, () => h.history(lic.licenseKey, pair.accessToken, `?cursor=${'A'.repeat(82)}`)],
      ['another license\'s access token', 403, () => h.history(lic.licenseKey, otherAccess)],
    ];
    for (let round = 0; round < 2; round++) {
      for (const [what, status, send] of refusals) {
        const res = await send();
        expectCodedError(t, res, status, null, what);
        expectUncounted(t, res, what);
      }
    }
    t.equal(await h.redis.exists(h.keys.forLicense(lic.firmaId).rateHistory, h.keys.forLicense(other.firmaId).rateHistory), 0,
      `${2 * refusals.length} refusals, nothing counted in Redis`);
    const first = await h.history(lic.licenseKey, pair.accessToken);
    t.equal(first.status, 200, 'the holder is answered');
    expectCounted(t, first, LIMIT - 1, 'the holder\'s first counted request');
    const theirs = await h.history(other.licenseKey, otherAccess);
    expectCounted(t, theirs, LIMIT - 1, 'the other license\'s first counted request (its 403s spent nothing of its own either)');
  });

  t.test('a held 429 (history, ledger) counts Retry-After from its answer, not from before its hold', async (t) => {
    const lic = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    for (let i = 0; i < LIMIT; i++) t.equal((await h.history(lic.licenseKey, accessToken)).status, 200);
    const counter = h.keys.forLicense(lic.firmaId).rateHistory;
    for (const read of [() => h.history(lic.licenseKey, accessToken), () => h.ledger(lic.licenseKey, accessToken)]) {
      // asked with N s and ~400 ms of the window left: held 0.75-1.25 s, answered with under N s left
      const pttl = await h.redis.pttl(counter);
      await sleep((pttl % 1000 + 600) % 1000);
      const refused = await read();
      const leftMs = await h.redis.pttl(counter);
      expectRateLimited(t, refused, 'over the limit');
      const retryAfter = Number(refused.headers.get('retry-after'));
      t.ok(retryAfter <= Math.ceil(leftMs / 1000), `Retry-After ${retryAfter} s: the window ends ${leftMs} ms after the answer`);
      t.equal(expectCounted(t, refused, 0, 'held'), retryAfter, 'RateLimit t = Retry-After');
      t.equal(refused.body.retryAfter, retryAfter, 'retryAfter = Retry-After');
    }
  });

  t.test('an access token revoked by a password change reaches the count: 401 with the fields', async (t) => {
    const lic = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { password: 'a brand new password' })).status, 200);
    const revoked = await h.history(lic.licenseKey, accessToken);
    expectCodedError(t, revoked, 401, 'INVALID_TOKEN', 'revoked');
    expectCounted(t, revoked, LIMIT - 1, 'revoked');
  });
});

t.test('RATE_HISTORY_PER_MIN=0 switches the limit off: past the default 60, every request answered, none counted', async (t) => {
  const h = await startHarness(t, 'history-nolimit', { RATE_HISTORY_PER_MIN: '0' });
  const lic = await h.createLicense();
  const { accessToken } = await getTokenPair(h, lic);
  const statuses: number[] = [];
  let withFields = 0;
  for (let i = 0; i < 65; i++) {
    const res = await h.history(lic.licenseKey, accessToken, '?limit=1');
    statuses.push(res.status);
    if (res.headers.get('ratelimit') !== null || res.headers.get('ratelimit-policy') !== null) withFields++;
  }
  t.same(statuses, Array(65).fill(200), '65 requests in a minute, all 200');
  t.equal(withFields, 0, 'no RateLimit fields on any');
  t.equal(await h.redis.exists(h.keys.forLicense(lic.firmaId).rateHistory), 0, 'no counter in Redis');
});
