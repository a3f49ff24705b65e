import { randomUUID } from 'node:crypto';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { expectCodedError, expectRateLimited, type Asserts } from '../helpers/shapes.js';
import { getTokenPair } from '../helpers/tokens.js';

// GET /api/License/ledger/{licenseKey} is for the access token of that license only: another
// license's token is 403 and learns nothing, not even whether a key exists; a revoked token is
// 401; the answer never carries the admin's fields. Its limit is history's
// (RATE_HISTORY_PER_MIN): one counter per license for both endpoints.

const LIMIT = 3;

function expectCounted(t: Asserts, res: Answer, r: number, what: string): void {
  t.equal(res.headers.get('ratelimit-policy'), `"history";q=${LIMIT};w=60`, `${what}: RateLimit-Policy`);
  t.match(res.headers.get('ratelimit') ?? '', new RegExp(`^"history";r=${r};t=\\d+$`), `${what}: RateLimit r=${r}`);
}

t.test('ledger security', async (t) => {
  const h = await startHarness(t, 'ledgersec', { ...NO_RATE_LIMITS, RATE_HISTORY_PER_MIN: String(LIMIT) });
  const mine = await h.createLicense({ totalQuota: 4 });
  const theirs = await h.createLicense({ totalQuota: 9 });
  const purchase = await h.admin('POST', `/admin/v1/licenses/${theirs.licenseKey}/quota`, {
    add: 11, expiresAt: new Date(Date.now() + 5 * 86_400_000).toISOString(), note: 'their invoice',
  });
  t.equal(purchase.status, 200, purchase.text);
  const myAccess = (await getTokenPair(h, mine)).accessToken;
  const theirAccess = (await getTokenPair(h, theirs)).accessToken;

  t.test('another license\'s token: 403 FORBIDDEN, nothing of either license; an unknown key answers the same', async (t) => {
    const foreign = await h.ledger(theirs.licenseKey, myAccess);
    expectCodedError(t, foreign, 403, 'FORBIDDEN', 'my token, their key');
    t.equal(foreign.body.error.message, 'Bu lisansın geçmişine erişim yetkiniz yok', 'history\'s message');
    for (const word of ['packages', 'items', 'totals', 'their invoice', '"11"']) t.notOk(foreign.text.includes(word), `no "${word}"`);
    const unknown = await h.ledger(randomUUID(), myAccess);
    t.equal(unknown.status, 403, 'an unknown key: 403 as well');
    t.equal(unknown.text, foreign.text, 'the same body: a key that exists is not told from one that does not');
    expectCodedError(t, await h.ledger(mine.licenseKey, theirAccess), 403, 'FORBIDDEN', 'their token, my key');
    t.same([foreign.headers.get('ratelimit'), foreign.headers.get('ratelimit-policy')], [null, null], 'refused before the count: no RateLimit fields');
  });

  t.test('each holder sees only its own packages and entries; no admin field', async (t) => {
    const a = await h.ledger(mine.licenseKey, myAccess);
    const b = await h.ledger(theirs.licenseKey, theirAccess);
    t.equal(a.status, 200, a.text);
    t.equal(b.status, 200, b.text);
    t.same(a.body.data.packages.map((p: { amount: number }) => p.amount), [4], 'mine: my one package');
    t.same(b.body.data.packages.map((p: { amount: number }) => p.amount), [11, 9], 'theirs: their two');
    t.same(a.body.data.totals.totalQuota, 4);
    for (const res of [a, b]) {
      for (const word of ['actor', 'note', 'balanceAfter', 'firmaId', 'licenseKey', 'organizationName', 'their invoice', 'day']) {
        t.notOk(res.text.includes(`"${word}"`), `no "${word}" in the answer`);
      }
    }
  });

  t.test('an access token revoked by a password change: 401 INVALID_TOKEN', async (t) => {
    const lic = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { password: 'a brand new password' })).status, 200);
    const revoked = await h.ledger(lic.licenseKey, accessToken);
    expectCodedError(t, revoked, 401, 'INVALID_TOKEN', 'revoked');
    t.notOk(revoked.text.includes('packages'));
  });

  t.test('history and the ledger share the license\'s count (RATE_HISTORY_PER_MIN); another license is not affected', async (t) => {
    const lic = await h.createLicense();
    const other = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    const { accessToken: otherAccess } = await getTokenPair(h, other);
    expectCounted(t, await h.history(lic.licenseKey, accessToken), 2, 'a history page');
    expectCounted(t, await h.ledger(lic.licenseKey, accessToken), 1, 'a ledger page');
    expectCounted(t, await h.history(lic.licenseKey, accessToken), 0, 'a history page');
    const over = await h.ledger(lic.licenseKey, accessToken);
    expectRateLimited(t, over, 'the 4th, a ledger page');
    t.equal(over.headers.get('cache-control'), 'no-store');
    t.equal(await h.redis.get(h.keys.forLicense(lic.firmaId).rateHistory), String(LIMIT + 1), 'one counter for both, the refusal counted');
    const theirs = await h.ledger(other.licenseKey, otherAccess);
    t.equal(theirs.status, 200, 'another license: answered');
    expectCounted(t, theirs, LIMIT - 1, 'another license: its own count');
  });
});
